package gateway_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/queue"
)

// suspectSignals trusts the test's connections as the edge, which scores
// clients in Cf-Bot-Score, and makes 203.0.113.0/24 a suspect range.
func suspectSignals(t *testing.T, c *app.Config) {
	ranges := filepath.Join(t.TempDir(), "ranges.txt")
	if err := os.WriteFile(ranges, []byte("203.0.113.0/24\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.TrustedProxies = "127.0.0.1,::1"
	c.BotScoreHeader, c.BotScoreBelow = "Cf-Bot-Score", 30
	c.SuspectRanges = []string{ranges}
}

// TestGatewaySuspectsGoThroughThePage: on a quiet line that lets everyone
// straight in (entry any), a likely bot is never let straight in, signed
// in or not: an API client is sent to the line, a browser to the waiting
// page, where it is judged as any entrant. A person walks in.
func TestGatewaySuspectsGoThroughThePage(t *testing.T) {
	t.Parallel()
	shop := apptest.NewUpstreamShop(t, 100)
	p := apptest.BootProxy(t, apptest.Backends[0], shop, func(c *app.Config) {
		suspectSignals(t, c)
		c.Queue.Join = queue.JoinAny
	})
	person := []string{"X-Forwarded-For", "198.51.100.10", "Cf-Bot-Score", "90"}
	for _, bot := range [][]string{{"X-Forwarded-For", "198.51.100.11", "Cf-Bot-Score", "2"}, {"X-Forwarded-For", "203.0.113.4"}} {
		if r := p.Buy("farm-account", "", bot...); r.Status != http.StatusForbidden || r.ErrorCode() != "entry_token_invalid" {
			t.Errorf("a signed-in suspect (%v) on a quiet line: %d %s, want sent to the line", bot, r.Status, r.Raw)
		}
		res, _ := p.BrowserVisitWith("/checkout", bot...)
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), apptest.GatewayPrefix+"/q/default") {
			t.Errorf("a suspect's browser (%v): %d to %q, want the waiting page", bot, res.StatusCode, res.Header.Get("Location"))
		}
	}
	if len(shop.BuyCalls()) != 0 {
		t.Fatalf("%d suspect buys reached the shop", len(shop.BuyCalls()))
	}
	if r := p.Buy("member", "", person...); r.Status != http.StatusCreated {
		t.Errorf("a person on a quiet line: %d %s, want let straight in", r.Status, r.Raw)
	}
	if res, _ := p.BrowserVisitWith("/checkout", person...); res.StatusCode != http.StatusOK {
		t.Errorf("a person's browser on a quiet line: %d, want let straight in", res.StatusCode)
	}
}

// TestGatewaySuspectDegraded: under --on-store-error admit with the store
// away, a person's protected request goes through marked degraded and a
// likely bot's is answered 503 + Retry-After, reaching nothing.
func TestGatewaySuspectDegraded(t *testing.T) {
	t.Parallel()
	redis := persistentRedis(t)
	shop := apptest.NewUpstreamShop(t, 100)
	p := apptest.BootProxy(t, apptest.Backend{Name: "private redis"}, shop, func(c *app.Config) {
		suspectSignals(t, c)
		c.RedisURL, c.KeyPrefix, c.OnStoreError = redis.URL(), "wr:", string(degraded.Admit)
	})
	p.SetPaused(true)
	redis.Stop()
	if r := p.Buy("person", "", "X-Forwarded-For", "198.51.100.10"); r.Status != http.StatusCreated {
		t.Fatalf("a person with the store away: %d %s, want through, degraded", r.Status, r.Raw)
	}
	before := len(shop.BuyCalls())
	for _, bot := range [][]string{{"X-Forwarded-For", "198.51.100.11", "Cf-Bot-Score", "2"}, {"X-Forwarded-For", "203.0.113.4"}} {
		r := p.Buy("bot", "", bot...)
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Errorf("a suspect (%v) with the store away: %d %s, want 503 with Retry-After", bot, r.Status, r.Raw)
		}
	}
	if n := len(shop.BuyCalls()) - before; n != 0 {
		t.Errorf("%d suspect buys reached the shop with the store away", n)
	}
}
