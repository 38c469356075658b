package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestGatewayOutlivesItsStore: in gateway mode the line's store is not the
// shop. With Redis stopped the gateway stays ready (200, the store reported
// down in the body and in waitroom_store_up), forwards every unprotected
// route, and answers the protected one 503 + Retry-After; ?strict=1 keeps
// the all-or-nothing 503. With Redis back the protected route lets people
// through again. An upstream that takes no connections is what makes a
// gateway unready: it can forward nothing.
func TestGatewayOutlivesItsStore(t *testing.T) {
	t.Parallel()
	redis := testenv.StartRedis(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "home") })
	mux.HandleFunc("GET /catalogue", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tees") })
	mux.HandleFunc("POST /buy", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	shop := &apptest.UpstreamShop{Server: httptest.NewServer(mux)}
	t.Cleanup(shop.Server.Close)
	p := apptest.BootProxy(t, apptest.Backend{Name: "private redis"}, shop, func(c *app.Config) { c.RedisURL, c.KeyPrefix = redis.URL(), "wr:" })
	const readyz = apptest.GatewayPrefix + "/readyz"

	if r := p.Readiness(readyz); r.Status != 200 || r.Store != "up" || r.Str("upstream") != "reachable" {
		t.Fatalf("before the outage: %d %s", r.Status, r.Raw)
	}
	if r := p.Buy("before", ""); r.Status != http.StatusCreated {
		t.Fatalf("a quiet line lets a buyer straight through: %d %s", r.Status, r.Raw)
	}

	redis.Stop()
	r := p.WaitReadiness(readyz, `store "down"`, func(r apptest.Readiness) bool { return r.Store == "down" && r.Degraded == nil })
	t.Logf("readyz with Redis stopped: %d %s", r.Status, r.Raw)
	for _, path := range []string{"/", "/catalogue"} {
		if r := p.Do("GET", path, "", nil); r.Status != 200 {
			t.Errorf("GET %s with Redis stopped: %d %s, want 200 from the shop", path, r.Status, r.Raw)
		}
	}
	if r := p.Buy("during", ""); r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Errorf("the protected route with Redis stopped: %d (Retry-After %q) %s, want 503 with Retry-After",
			r.Status, r.Header.Get("Retry-After"), r.Raw)
	}
	if r := p.Readiness(readyz + "?strict=1"); r.Status != 503 || r.ErrorCode() != "unavailable" || r.Header.Get("Retry-After") == "" {
		t.Errorf("readyz?strict=1 with Redis stopped: %d %s, want 503 unavailable with Retry-After", r.Status, r.Raw)
	}
	if m := apptest.Metrics(t, p.Base+apptest.GatewayPrefix); m["waitroom_store_up"] != 0 || m[`waitroom_store_queue_up{queue="default"}`] != 0 {
		t.Errorf("metrics with Redis stopped: store_up %v, default's store_queue_up %v, want 0 and 0",
			m["waitroom_store_up"], m[`waitroom_store_queue_up{queue="default"}`])
	}

	// Back, empty (as a replica that lost everything): the admission loop
	// creates the default queue again, and buyers get through.
	redis.Restart()
	p.WaitReadiness(readyz, `store "up"`, func(r apptest.Readiness) bool { return r.Store == "up" })
	deadline := time.Now().Add(apptest.Patience)
	for r := p.Buy("after", ""); r.Status != http.StatusCreated; r = p.Buy("after", "") {
		if time.Now().After(deadline) {
			t.Fatalf("the protected route %v after Redis came back: %d %s", apptest.Patience, r.Status, r.Raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.WaitStatus(readyz+"?strict=1", 200)

	// The upstream gone: nothing can be forwarded, so not ready (within
	// the two seconds the last forwarded request's answer is trusted).
	shop.Server.Close()
	deadline = time.Now().Add(apptest.Patience)
	for {
		r := p.Readiness(readyz)
		if r.Status == 503 {
			if r.ErrorCode() != "not_ready" || !strings.Contains(r.Raw, "cannot forward") {
				t.Errorf("readyz with the upstream gone: %s, want not_ready saying it cannot forward", r.Raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz %v after the upstream went: %d %s", apptest.Patience, r.Status, r.Raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
