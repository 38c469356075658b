package gateway_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestGatewaySoldOutAndRestockCommands: the backend's X-Waitroom-Command
// sold-out, on an unprotected route (the routes name one queue) or on a
// protected one, sells the queue out: whoever waits is told SOLD_OUT and a
// newcomer is refused 410; restock reopens it with every place kept, and
// "restock; units=N" tells the stock. A command that cannot be read
// changes nothing. The header never reaches the client.
func TestGatewaySoldOutAndRestockCommands(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			up := commandUpstream(t)
			p := apptest.BootGateway(t, b, up.URL, []string{"--protect", "POST /buy"}, nil)
			if r := p.Do("PATCH", apptest.GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), map[string]any{
				"maxActiveTokens": 1, "tokenTtlSeconds": 300}); r.Status != 200 {
				t.Fatalf("settings: %d %s", r.Status, r.Raw)
			}
			for _, u := range []string{"cmd-a", "cmd-b", "cmd-c"} {
				if r := p.Do("POST", apptest.GatewayPrefix+"/api/v1/queues/default/entries", p.As(u), nil); r.Status != 200 {
					t.Fatalf("enter %s: %d %s", u, r.Status, r.Raw)
				}
			}
			tokenA := waitState(p, "cmd-a", "READY")
			before := map[string]float64{}
			for _, u := range []string{"cmd-b", "cmd-c"} {
				before[u] = waitStanding(p, u, "WAITING").Num("position")
			}
			visit := func(path, cmd string) {
				t.Helper()
				r := p.Do("GET", path+"?spell=X-Waitroom-Command&cmd="+url.QueryEscape(cmd), p.As("cmd-a"), nil)
				if r.Status != 200 || r.Raw != "done" {
					t.Fatalf("%s with %q: %d %s", path, cmd, r.Status, r.Raw)
				}
				if h := commandHeaders(r.Header); h != nil {
					t.Fatalf("the client saw %v", h)
				}
			}
			stock := func() (any, bool) {
				t.Helper()
				r := p.Do("GET", apptest.GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), nil)
				sold, _ := r.Body["soldOut"].(bool)
				return r.Body["unitsLeft"], sold
			}

			visit("/info", "sold-out")
			if units, sold := stock(); !sold || units != 0.0 {
				t.Fatalf("after sold-out on an unprotected route: unitsLeft %v, soldOut %v", units, sold)
			}
			for _, u := range []string{"cmd-b", "cmd-c"} {
				if r := waitStanding(p, u, "SOLD_OUT"); r.Num("pollAfterSeconds") < 20 {
					t.Errorf("%s sold out: %s, want pollAfterSeconds of 20 or more", u, r.Raw)
				}
			}
			if r := p.Do("POST", apptest.GatewayPrefix+"/api/v1/queues/default/entries", p.As("cmd-late"), nil); r.Status != http.StatusGone || r.ErrorCode() != "sold_out" {
				t.Fatalf("a newcomer while sold out: %d %s, want 410 sold_out", r.Status, r.Raw)
			}
			if got := p.UserStatus("cmd-a"); got != "READY" {
				t.Fatalf("cmd-a, READY before the sale ended: %s", got)
			}

			visit("/info", "restock")
			if units, sold := stock(); sold || units != nil {
				t.Fatalf("after restock: unitsLeft %v, soldOut %v; want not known", units, sold)
			}
			for _, u := range []string{"cmd-b", "cmd-c"} {
				if r := waitStanding(p, u, "WAITING"); r.Num("position") != before[u] {
					t.Errorf("%s after restock: %s, want position %v as before", u, r.Raw, before[u])
				}
			}

			// On the protected route, through a use of cmd-a's entry.
			r := p.Do("POST", "/buy?spell=X-Waitroom-Command&cmd=sold-out", p.As("cmd-a"), nil, "X-Entry-Token", tokenA, "Accept", "application/json")
			if r.Status != 200 || commandHeaders(r.Header) != nil {
				t.Fatalf("sold-out on the protected route: %d %v", r.Status, r.Header)
			}
			if _, sold := stock(); !sold {
				t.Fatal("sold-out on the protected route did not sell the queue out")
			}
			visit("/info", "restock; units=5")
			if units, sold := stock(); sold || units != 5.0 {
				t.Fatalf("after restock; units=5: unitsLeft %v, soldOut %v", units, sold)
			}
			visit("/info", "restock; units=lots")
			visit("/info", "sold-out; queue=no-such-queue")
			if units, sold := stock(); sold || units != 5.0 {
				t.Fatalf("after commands that cannot be carried out: unitsLeft %v, soldOut %v; want 5 as before", units, sold)
			}

			// Each change is logged as the admin API logs one; a repeat of
			// the stock last told is not logged again at once.
			visit("/info", "restock; units=5")
			logs := p.Logs.String()
			for want, n := range map[string]int{
				`msg="queue stock changed" queue=default command=sold-out unitsLeft=0 soldOut=true via=X-Waitroom-Command`:     2,
				`msg="queue stock changed" queue=default command=restock unitsLeft=<nil> soldOut=false via=X-Waitroom-Command`: 1,
				`msg="queue stock changed" queue=default command=restock unitsLeft=5 soldOut=false via=X-Waitroom-Command`:     1,
			} {
				if got := strings.Count(logs, want); got != n {
					t.Errorf("%d lines %s, want %d", got, want, n)
				}
			}
		})
	}
}
