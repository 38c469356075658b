package gateway_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// TestGatewayEntryRules: the gateway's new sessions and quiet-line walk-ins
// obey the same join policy and per-address limits as the API: under
// challenge an anonymous session is never let straight in; under any, its
// walk-ins count against the address; signed-in users are not limited.
func TestGatewayEntryRules(t *testing.T) {
	t.Parallel()
	s := apptest.NewUpstreamShop(t, 100)
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, s, func(c *app.Config) {
		c.AddressEntryBurst, c.AddressEntryRate = 2, 0.01
		c.AddressSessionBurst, c.AddressSessionRate = 2, 0.01
	})
	for i := range 2 {
		if res, _ := p.BrowserVisit("/checkout"); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("first visit %d on a quiet line under challenge: %d, want 303 to the waiting page", i, res.StatusCode)
		}
	}
	if res, _ := p.BrowserVisit("/checkout"); res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a third new session from one address: %d Retry-After %q, want 429", res.StatusCode, res.Header.Get("Retry-After"))
	}
	anonBuy := func() apptest.Response {
		return p.Do("POST", "/buy", "", nil, "Cookie", p.SessionCookie(), "Accept", "application/json")
	}
	// An API client with a session is told where to join, not let in.
	if r := anonBuy(); r.Status != 403 || r.ErrorCode() != "entry_token_invalid" {
		t.Fatalf("anonymous API walk-in under challenge: %d %s", r.Status, r.Raw)
	}
	if n := len(s.BuyCalls()); n != 0 {
		t.Fatalf("%d anonymous calls reached the upstream under challenge", n)
	}
	if r := p.Do("PATCH", apptest.GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), map[string]any{"entry": "any"}); r.Status != 200 {
		t.Fatalf("entry any: %d %s", r.Status, r.Raw)
	}
	for i := range 2 {
		if r := anonBuy(); r.Status != 201 {
			t.Fatalf("anonymous walk-in %d under any: %d %s", i, r.Status, r.Raw)
		}
	}
	if r := anonBuy(); r.Status != 429 || r.ErrorCode() != "too_many_entries" {
		t.Fatalf("a third anonymous walk-in from one address: %d %s", r.Status, r.Raw)
	}
	for i := range 5 {
		if r := p.Buy(fmt.Sprintf("member-%d", i), ""); r.Status != 201 {
			t.Fatalf("signed-in walk-in %d: %d %s", i, r.Status, r.Raw)
		}
	}
}
