package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/testenv"
)

// persistentRedis is a private redis-server that keeps what it was told
// (appendfsync always), so a Stop and Restart is an outage, not data loss:
// a paused queue is paused again when it is back.
func persistentRedis(t *testing.T) *testenv.RedisServer {
	t.Helper()
	return testenv.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
}

// TestGatewayOnStoreError: --on-store-error in gateway mode, against a
// real upstream, with the line's Redis killed. Under admit the protected
// route reaches the upstream without a token, marked X-Waitroom-Degraded:
// store-unavailable (a client's own value replaced), without
// X-Waitroom-User or X-Waitroom-Entry; /readyz stays 200 and shows the
// breaker open; under wait it answers 503 + Retry-After and nothing reaches
// the upstream. When Redis is back the breaker closes (its probe, once a
// second) and an entry is needed again. That an open breaker answers
// without asking the store, and probes once a second, internal/breaker's
// tests check with a call count and a clock of their own. A
// client-sent X-Waitroom-Degraded never reaches the upstream, in any
// spelling, in either mode, with the store up or down.
func TestGatewayOnStoreError(t *testing.T) {
	t.Parallel()
	for _, mode := range []degraded.Mode{degraded.Admit, degraded.Wait} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			redis := persistentRedis(t)
			shop := apptest.NewUpstreamShop(t, 100)
			p := apptest.BootProxy(t, apptest.Backend{Name: "private redis"}, shop, func(c *app.Config) {
				c.RedisURL, c.KeyPrefix, c.OnStoreError = redis.URL(), "wr:", string(mode)
			})
			const readyz = apptest.GatewayPrefix + "/readyz"
			forged := []string{"X-Waitroom-Degraded", "forged", "X_Waitroom_Degraded", "forged"}
			p.SetPaused(true) // nobody is let straight in: a buyer needs an entry
			if r := p.Buy("before", "", forged...); r.Status != http.StatusForbidden || len(shop.BuyCalls()) != 0 {
				t.Fatalf("no entry, store up: %d %s (%d calls reached the shop), want 403", r.Status, r.Raw, len(shop.BuyCalls()))
			}
			if r := p.Do("GET", "/catalogue", "", nil, forged...); r.Status != http.StatusAccepted {
				t.Fatalf("unprotected: %d", r.Status)
			}
			noForgery(t, "an unprotected request, store up", shop.LastSeen().Header)
			token := p.Admitted("holder")
			if r := p.Buy("holder", token, forged...); r.Status != http.StatusCreated {
				t.Fatalf("with an entry: %d %s", r.Status, r.Raw)
			}
			noForgery(t, "a request with an entry", shop.BuyCalls()[0].Header)

			redis.Stop()
			first := time.Now()
			r := p.Buy("during", "", forged...)
			took := time.Since(first)
			if r := p.Readiness(readyz); r.Status != 200 || r.Str("storeBreaker") != "open" || r.Str("onStoreError") != string(mode) {
				t.Errorf("readyz with the breaker open: %d %s, want 200, storeBreaker open, onStoreError %s", r.Status, r.Raw, mode)
			}
			var during []time.Duration
			for range 20 {
				began := time.Now()
				r = p.Buy("during", "", forged...)
				during = append(during, time.Since(began))
				if mode == degraded.Admit && r.Status != http.StatusCreated || mode == degraded.Wait && (r.Status != 503 || r.Header.Get("Retry-After") == "") {
					t.Fatalf("with Redis down under %s: %d (Retry-After %q) %s", mode, r.Status, r.Header.Get("Retry-After"), r.Raw)
				}
			}
			t.Logf("with Redis down under %s: the first protected request %v (it met the failure), the next 20 took %v", mode, took, during)
			calls := shop.BuyCalls()[1:]
			if mode == degraded.Wait {
				if len(calls) != 0 {
					t.Errorf("under wait %d protected requests reached the shop with Redis down", len(calls))
				}
			} else {
				if len(calls) != 21 {
					t.Errorf("under admit %d of 21 protected requests reached the shop", len(calls))
				}
				for _, c := range calls {
					if got := c.Header.Values(degraded.Header); len(got) != 1 || got[0] != degraded.HeaderValue {
						t.Fatalf("%s = %q, want [%s]", degraded.Header, got, degraded.HeaderValue)
					}
					if c.Header.Get("X-Waitroom-User") != "" || c.Header.Get("X-Waitroom-Entry") != "" || c.Header.Get("X_Waitroom_Degraded") != "" {
						t.Fatalf("a degraded request carried the line's headers or the client's: %v", c.Header)
					}
				}
				m := apptest.Metrics(t, p.Base+apptest.GatewayPrefix)
				if m["waitroom_store_breaker_open"] != 1 || m[`waitroom_degraded_admissions_total{via="gateway"}`] != 21 {
					t.Errorf("metrics: waitroom_store_breaker_open %v, degraded admissions via gateway %v; want 1 and 21",
						m["waitroom_store_breaker_open"], m[`waitroom_degraded_admissions_total{via="gateway"}`])
				}
			}
			if r := p.Do("GET", "/catalogue", "", nil, forged...); r.Status != http.StatusAccepted {
				t.Fatalf("unprotected, store down: %d", r.Status)
			}
			noForgery(t, "an unprotected request, store down", shop.LastSeen().Header)

			// Back with what it had (the queue paused): the breaker's next
			// probe closes it and an entry is needed again (about a second;
			// a minute on a loaded machine is still no failure).
			redis.Restart()
			back := time.Now()
			n := len(shop.BuyCalls())
			for deadline := back.Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				r := p.Buy("after", "", forged...)
				if r.Status == http.StatusForbidden {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a minute after Redis came back the protected route still answers %d %s", r.Status, r.Raw)
				}
			}
			t.Logf("entries needed again %v after Redis came back", time.Since(back))
			for _, c := range shop.BuyCalls()[n:] {
				if c.Header.Get(degraded.Header) == "" {
					t.Errorf("a request without an entry reached the shop unmarked after Redis came back")
				}
			}
			if r := p.Readiness(readyz); r.Str("storeBreaker") != "closed" {
				t.Errorf("readyz once Redis is back: %s, want storeBreaker closed", r.Raw)
			}
		})
	}
}

// noForgery fails when X-Waitroom-Degraded, in any spelling, reached the
// upstream on a request the gateway did not forward degraded: a client's
// own never does.
func noForgery(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k, v := range h {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), degraded.Header) {
			t.Errorf("%s: the upstream saw %s: %q", what, k, v)
		}
	}
}
