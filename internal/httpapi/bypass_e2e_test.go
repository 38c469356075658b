package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// staffKey is the bypass header's secret in these tests.
const staffKey = "staff-0123456789abcdef-key"

// bypassCount is waitroom_bypassed_total for the rule labelled so (-1: no
// such series).
func bypassCount(t *testing.T, base, rule string) float64 {
	t.Helper()
	m := apptest.Metrics(t, base)
	v, ok := m[`waitroom_bypassed_total{rule="`+rule+`"}`]
	if !ok {
		return -1
	}
	return v
}

// Through the API, a bypassed enter is READY at once, with a token the
// order API takes from the same staff, and none of it shows in the line.
func TestBypassedEnterIsReady(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, func(c *app.Config) {
				c.Bypass = []string{"header X-Staff-Key=" + staffKey}
			})}
			q, product := in.NewSale(10, map[string]any{"paused": true, "maxActiveTokens": 1})
			staff := []string{"X-Staff-Key", staffKey}

			r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("clerk"), nil, staff...)
			if r.Status != http.StatusOK || r.Str("status") != "READY" || r.Str("token") == "" || r.Str("expiresAt") == "" {
				t.Fatalf("bypassed enter in a paused queue: %d %s", r.Status, r.Raw)
			}
			token := r.Str("token")
			if st := in.Do("GET", "/api/v1/queues/"+q+"/entries/me", in.As("clerk"), nil, staff...); st.Str("status") != "READY" {
				t.Errorf("bypassed status: %s", st.Raw)
			}
			if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("shopper"), nil, "X-Staff-Key", "wrong"); r.Str("status") != "WAITING" {
				t.Errorf("a wrong key enters the paused line as anyone: %s", r.Raw)
			}
			stats := in.Do("GET", "/admin/v1/queues/"+q, in.AdminAuth(), nil)
			if stats.Num("admittedTotal") != 0 || stats.Num("activeTokens") != 0 || stats.Num("length") != 1 {
				t.Errorf("the bypass showed in the line (want nothing admitted, no live token, the shopper alone waiting): %s", stats.Raw)
			}

			// The order API takes the token from staff, once.
			if r := in.Order("clerk", token, product, staff...); r.Status != http.StatusCreated {
				t.Fatalf("staff order: %d %s", r.Status, r.Raw)
			}
			wantOrderError(t, "the same token again", in.Order("clerk", token, product, staff...), http.StatusForbidden, "entry_token_invalid")
			// Without the rule the token is worth nothing.
			wantOrderError(t, "the token without the key", in.Order("clerk", in.Do("POST", "/api/v1/queues/"+q+"/entries",
				in.As("clerk"), nil, staff...).Str("token"), product), http.StatusForbidden, "entry_token_invalid")
			if got := in.Stock(product); got != 9 {
				t.Errorf("stock %d, want 9", got)
			}
			if n := bypassCount(t, in.Base, "header X-Staff-Key"); n != 5 {
				t.Errorf("waitroom_bypassed_total = %v, want 5 (two enters, a status, two orders)", n)
			}
		})
	}
}
