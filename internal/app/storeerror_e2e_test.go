package app_test

import (
	"fmt"
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

// TestAPIOnStoreError: --on-store-error in serve mode, Redis killed. Under
// admit, enter and status answer READY with degraded: true and the user's
// degraded token, which buys once (the orders table's unique key), never
// below zero stock, only for its own user, and is worth nothing once Redis
// is back; /readyz stays 200 with the breaker open. Under wait enter
// answers 503 + Retry-After, /readyz 503, and a degraded token (made with
// the same secret) buys nothing.
func TestAPIOnStoreError(t *testing.T) {
	t.Parallel()
	for _, mode := range []degraded.Mode{degraded.Admit, degraded.Wait} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			redis := persistentRedis(t)
			in := apptest.Boot(t, apptest.Backend{Name: "private redis"}, func(c *app.Config) {
				c.RedisURL, c.KeyPrefix, c.OnStoreError = redis.URL(), "wr:", string(mode)
			})
			product := fmt.Sprintf("degraded-tee-%s", mode)
			if r := in.Do("PUT", "/admin/v1/products/"+product, in.AdminAuth(), map[string]any{"name": "tee", "stock": 2}); r.Status != 200 {
				t.Fatalf("product: %d %s", r.Status, r.Raw)
			}
			buy := func(user, token, key string) apptest.Response {
				return in.Do("POST", "/api/v1/orders", in.As(user), map[string]any{"productId": product, "quantity": 1},
					"X-Entry-Token", token, "Idempotency-Key", key)
			}
			redis.Stop()
			entries := "/api/v1/queues/default/entries"
			r := in.Do("POST", entries, in.As("ann"), nil)
			if mode == degraded.Wait {
				if r.Status != 503 || r.Header.Get("Retry-After") == "" {
					t.Fatalf("enter under wait with Redis down: %d %s, want 503 with Retry-After", r.Status, r.Raw)
				}
				in.WaitStatus("/readyz", 503)
				token, _ := degraded.New(degraded.Admit, open{}, []byte(in.AuthSecret), 5*time.Minute, nil).Issue("default", "ann")
				if r := buy("ann", token, "k1"); r.Status != 503 {
					t.Errorf("a degraded token under wait: %d %s, want 503 (the store is asked, and is away)", r.Status, r.Raw)
				}
				return
			}
			if r.Status != 200 || r.Str("status") != "READY" || r.Body["degraded"] != true || !strings.HasPrefix(r.Str("token"), "wrd1.") {
				t.Fatalf("enter under admit with Redis down: %d %s, want READY, degraded, a degraded token", r.Status, r.Raw)
			}
			token := r.Str("token")
			if s := in.Do("GET", entries+"/me", in.As("ann"), nil); s.Str("token") != token || s.Body["degraded"] != true {
				t.Errorf("status under admit: %s, want the same degraded token", s.Raw)
			}
			if r := in.Readiness("/readyz"); r.Status != 200 || r.Str("storeBreaker") != "open" {
				t.Errorf("readyz under admit with Redis down: %d %s, want 200 with the breaker open", r.Status, r.Raw)
			}
			if r := buy("bob", token, "k0"); r.Status == 201 {
				t.Errorf("ann's degraded token bought for bob")
			}
			if r := buy("ann", token, "k1"); r.Status != 201 {
				t.Fatalf("ann's order on her degraded token: %d %s", r.Status, r.Raw)
			}
			if r := buy("ann", token, "k2"); r.Status != 403 {
				t.Errorf("a second order on the same degraded token: %d %s, want 403 (one order per token)", r.Status, r.Raw)
			}
			tokenOf := func(user string) string {
				return in.Do("POST", entries, in.As(user), nil).Str("token")
			}
			if r := buy("cid", tokenOf("cid"), "k3"); r.Status != 201 {
				t.Errorf("cid: %d %s", r.Status, r.Raw)
			}
			if r := buy("dee", tokenOf("dee"), "k4"); r.Status != 409 || r.ErrorCode() != "out_of_stock" {
				t.Errorf("a third buyer of two: %d %s, want 409 out_of_stock", r.Status, r.Raw)
			}
			eve := tokenOf("eve")
			m := apptest.Metrics(t, in.Base)
			// Attempts let past the line: ann's two, cid's, dee's.
			if m[`waitroom_degraded_admissions_total{via="order"}`] != 4 {
				t.Errorf("degraded order attempts counted %v, want 4", m[`waitroom_degraded_admissions_total{via="order"}`])
			}

			redis.Restart()
			in.WaitReadiness("/readyz", "the breaker closed", func(r apptest.Readiness) bool { return r.Str("storeBreaker") == "closed" })
			if r := buy("eve", eve, "k5"); r.Status != 403 {
				t.Errorf("a degraded token with Redis back: %d %s, want 403", r.Status, r.Raw)
			}
			if r := in.Do("GET", "/api/v1/products/"+product, in.As("ann"), nil); r.Num("stock") != 0 {
				t.Errorf("stock after the outage: %s, want 0", r.Raw)
			}
		})
	}
}

// open is an outage of every queue.
type open struct{}

func (open) Open(string) bool { return true }
