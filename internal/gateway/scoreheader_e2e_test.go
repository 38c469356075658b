package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// The fronts deploy/ ships clear a client's own bot score header (issue
// 51): waitroom believes --bot-score-header from --trusted-proxies, which
// name the front, so whatever a client sends as X-Bot-Score, in any
// spelling ("_" or "-" at either place), must reach neither waitroom (its decision, its own routes, a
// place taken) nor the backend. Through nginx (deploy/nginx-auth-request.conf)
// and Caddy (deploy/Caddyfile) as shipped, with a recorder between the
// front and waitroom; waitroom proxy itself is TestGatewayHeadersAndCookies's.
func TestFrontsClearTheBotScore(t *testing.T) {
	t.Parallel()
	for _, f := range apptest.Fronts {
		if !f.Decides() {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			s := apptest.NewUpstreamShop(t, 10)
			p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, s, func(c *app.Config) {
				c.TrustedProxies, c.BotScoreHeader = "127.0.0.1", "X-Bot-Score"
			})
			p.SetPaused(true)
			rec := apptest.NewRecorder(t, p.Main.Addr())
			p.Base = f.StartBefore(t, rec.Addr, s.Server.Listener.Addr().String(), nil)
			// Go's client (and any Go proxy between) canonicalises x-bot_score
			// to X-Bot_score, which Caddy's -X_Bot_Score does not remove.
			score := []string{"X-Bot-Score", "99", "X_Bot_Score", "98", "X-Bot_Score", "97", "X_Bot-Score", "96"}

			if r := p.Do("GET", "/anything", "", nil, score...); r.Status != http.StatusAccepted {
				t.Errorf("an unprotected page: %d %s", r.Status, r.Raw)
			}
			if r := p.Do("POST", apptest.GatewayPrefix+"/api/v1/queues/default/entries", p.As("scored"), nil, score...); r.Str("status") != "WAITING" {
				t.Errorf("taking a place through the front: %d %s", r.Status, r.Raw)
			}
			if r := p.Do("POST", "/buy", p.As("scored"), nil, append(score, "Accept", "application/json")...); r.Status != http.StatusForbidden {
				t.Errorf("a protected route without an entry: %d %s", r.Status, r.Raw)
			}

			paths := map[string]bool{}
			for _, c := range rec.Seen() {
				paths[c.Path] = true
				if k := scoreHeader(c.Header); k != "" {
					t.Errorf("%s %s reached waitroom with the client's %s: %q", c.Method, c.Path, k, c.Header[k])
				}
			}
			for _, want := range []string{apptest.GatewayPrefix + "/api/v1/queues/default/entries"} {
				if !paths[want] {
					t.Errorf("waitroom was never asked %s through the front (it saw %v)", want, paths)
				}
			}
			if len(paths) < 2 {
				t.Errorf("waitroom saw only %v: no decision was asked", paths)
			}
			shop := append(s.Seen(), s.BuyCalls()...)
			if len(shop) == 0 {
				t.Fatal("nothing reached the backend")
			}
			for _, c := range shop {
				if k := scoreHeader(c.Header); k != "" {
					t.Errorf("%s %s reached the backend with the client's %s: %q", c.Method, c.Path, k, c.Header[k])
				}
			}
		})
	}
}

// scoreHeader names the bot score header in h, in any spelling a backend
// may read as it ("" when there is none).
func scoreHeader(h http.Header) string {
	for k := range h {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "X-Bot-Score") {
			return k
		}
	}
	return ""
}
