package httpapi_test

import (
	"fmt"
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

func (open) Open(string) bool { return true }

// TestAPIOnStoreError: --on-store-error in serve mode, Redis killed. Under
// admit, enter and status answer READY with degraded: true and the user's
// degraded token, which buys once (the orders table's unique key), never
// below zero stock, only for its own user, and is worth nothing once Redis
// is back; /readyz stays 200 with the breaker open. Under wait enter
// answers 503 + Retry-After, /readyz 503, and a degraded token (made with
// the same secret) buys nothing. A queue with lanes is answered alike, a
// member too: their lane is not sought under admit, and under wait a
// member whose lane cannot be known is refused, never placed as the public.
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
			lanes := entriesPath(laneQueue(t, in))
			redis.Stop()
			entries := "/api/v1/queues/default/entries"
			r := in.Do("POST", entries, in.As("ann"), nil)
			member := in.Do("POST", lanes, asGold(in, "gil"), nil)
			if mode == degraded.Wait {
				if r.Status != 503 || r.Header.Get("Retry-After") == "" {
					t.Fatalf("enter under wait with Redis down: %d %s, want 503 with Retry-After", r.Status, r.Raw)
				}
				if member.Status != 503 {
					t.Errorf("a member entering a queue with lanes under wait with Redis down: %d %s, want 503 (their lane cannot be known)", member.Status, member.Raw)
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
			// A queue with lanes as any other: the lane is not sought (it
			// would read the queue's config from the store) for a
			// degraded READY, whether or not the body holds a code.
			if member.Status != 200 || member.Body["degraded"] != true {
				t.Errorf("a member entering a queue with lanes under admit with Redis down: %d %s, want a degraded READY", member.Status, member.Raw)
			}
			if r := in.Do("POST", lanes, in.As("cody"), map[string]string{"accessCode": "0000-0000-0000-0000"}); r.Status != 200 || r.Body["degraded"] != true {
				t.Errorf("entering with a code under admit with Redis down: %d %s, want a degraded READY", r.Status, r.Raw)
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
