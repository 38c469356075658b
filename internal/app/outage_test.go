package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestRedisOutageRecovers: with Redis gone the line answers 503 with
// Retry-After and /readyz fails (serve mode can serve nothing without its
// store, unlike a gateway: TestGatewayOutlivesItsStore); when Redis is back, the same instance
// serves again and admission resumes, with no restart.
func TestRedisOutageRecovers(t *testing.T) {
	t.Parallel()
	in, redis := bootOnPrivateRedis(t)
	if r := in.do("POST", "/api/v1/queues/default/entries", in.as("before"), nil); r.status != 200 {
		t.Fatalf("before the outage: %d %s", r.status, r.raw)
	}
	in.waitReady("default", "before")

	redis.Stop()
	in.waitStatus("/readyz", 503)
	for _, probe := range []struct{ method, path string }{
		{"POST", "/api/v1/queues/default/entries"},
		{"GET", "/api/v1/queues/default/entries/me"},
		{"GET", "/readyz"},
		{"GET", "/readyz?strict=1"},
	} {
		began := time.Now()
		r := in.do(probe.method, probe.path, in.as("during"), nil)
		t.Logf("%s %s during the outage: %d in %v", probe.method, probe.path, r.status, time.Since(began))
		if r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Errorf("%s %s during the outage: %d (Retry-After %q) %s, want 503 with Retry-After",
				probe.method, probe.path, r.status, r.header.Get("Retry-After"), r.raw)
		}
	}
	if r := in.do("GET", "/healthz", "", nil); r.status != 200 {
		t.Errorf("/healthz during the outage: %d, want 200 (the process is alive)", r.status)
	}

	// Same port, fresh and empty: as after a failover to a replica that lost
	// everything, including the script cache.
	redis.Restart()
	deadline := time.Now().Add(patience)
	for {
		r := in.do("GET", "/readyz", "", nil)
		if r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready %v after Redis came back: %d %s", patience, r.status, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// An empty Redis has no queues: the operator recreates the queue (as a
	// restore would), and the running admission loops pick it up.
	if r := in.do("PUT", "/admin/v1/queues/default", in.adminAuth(), `{}`); r.status != 200 {
		t.Fatalf("recreating the queue: %d %s", r.status, r.raw)
	}
	if r := in.do("POST", "/api/v1/queues/default/entries", in.as("after"), nil); r.status != 200 {
		t.Fatalf("after recovery: %d %s", r.status, r.raw)
	}
	in.waitReady("default", "after")
}

// waitStatus polls path until it answers status (within patience):
// readiness follows the store's health check, made every second, not each
// probe.
func (in *instance) waitStatus(path string, status int) {
	in.t.Helper()
	deadline := time.Now().Add(patience)
	for r := in.do("GET", path, "", nil); r.status != status; r = in.do("GET", path, "", nil) {
		if time.Now().After(deadline) {
			in.t.Fatalf("GET %s: %d %s after %v, want %d", path, r.status, r.raw, patience, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readiness is one /readyz answer (path: "/readyz", or with its prefix and
// query) and what it says of the store.
type readiness struct {
	response
	store    string
	degraded []string
}

func (in *instance) readiness(path string) readiness {
	in.t.Helper()
	r := in.do("GET", path, "", nil)
	rd := readiness{response: r, store: r.str("store")}
	for _, q := range anySlice(r.body["degradedQueues"]) {
		s, _ := q.(string)
		rd.degraded = append(rd.degraded, s)
	}
	return rd
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

// waitReadiness polls path until until says yes, failing the test on the
// first answer that is not 200 (the instance must stay ready throughout)
// or after patience.
func (in *instance) waitReadiness(path, what string, until func(readiness) bool) readiness {
	in.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		r := in.readiness(path)
		if r.status != http.StatusOK {
			in.t.Fatalf("%s while waiting for %s: %d %s, want 200 throughout", path, what, r.status, r.raw)
		}
		if until(r) {
			return r
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("%s: no %s within %v; last %s", path, what, patience, r.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

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
	shop := &upstreamShop{srv: httptest.NewServer(mux)}
	t.Cleanup(shop.srv.Close)
	p := bootProxy(t, backend{name: "private redis"}, shop, func(c *app.Config) { c.RedisURL, c.KeyPrefix = redis.URL(), "wr:" })
	const readyz = gwPrefix + "/readyz"

	if r := p.readiness(readyz); r.status != 200 || r.store != "up" || r.str("upstream") != "reachable" {
		t.Fatalf("before the outage: %d %s", r.status, r.raw)
	}
	if r := p.buy("before", ""); r.status != http.StatusCreated {
		t.Fatalf("a quiet line lets a buyer straight through: %d %s", r.status, r.raw)
	}

	redis.Stop()
	r := p.waitReadiness(readyz, `store "down"`, func(r readiness) bool { return r.store == "down" && r.degraded == nil })
	t.Logf("readyz with Redis stopped: %d %s", r.status, r.raw)
	for _, path := range []string{"/", "/catalogue"} {
		if r := p.do("GET", path, "", nil); r.status != 200 {
			t.Errorf("GET %s with Redis stopped: %d %s, want 200 from the shop", path, r.status, r.raw)
		}
	}
	if r := p.buy("during", ""); r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("the protected route with Redis stopped: %d (Retry-After %q) %s, want 503 with Retry-After",
			r.status, r.header.Get("Retry-After"), r.raw)
	}
	if r := p.readiness(readyz + "?strict=1"); r.status != 503 || r.errorCode() != "unavailable" || r.header.Get("Retry-After") == "" {
		t.Errorf("readyz?strict=1 with Redis stopped: %d %s, want 503 unavailable with Retry-After", r.status, r.raw)
	}
	if m := scrape(t, &instance{t: t, base: p.base + gwPrefix}); m["waitroom_store_up"] != 0 || m[`waitroom_store_queue_up{queue="default"}`] != 0 {
		t.Errorf("metrics with Redis stopped: store_up %v, default's store_queue_up %v, want 0 and 0",
			m["waitroom_store_up"], m[`waitroom_store_queue_up{queue="default"}`])
	}

	// Back, empty (as a replica that lost everything): the admission loop
	// creates the default queue again, and buyers get through.
	redis.Restart()
	p.waitReadiness(readyz, `store "up"`, func(r readiness) bool { return r.store == "up" })
	deadline := time.Now().Add(patience)
	for r := p.buy("after", ""); r.status != http.StatusCreated; r = p.buy("after", "") {
		if time.Now().After(deadline) {
			t.Fatalf("the protected route %v after Redis came back: %d %s", patience, r.status, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.waitStatus(readyz+"?strict=1", 200)

	// The upstream gone: nothing can be forwarded, so not ready (within
	// the two seconds the last forwarded request's answer is trusted).
	shop.srv.Close()
	deadline = time.Now().Add(patience)
	for {
		r := p.readiness(readyz)
		if r.status == 503 {
			if r.errorCode() != "not_ready" || !strings.Contains(r.raw, "cannot forward") {
				t.Errorf("readyz with the upstream gone: %s, want not_ready saying it cannot forward", r.raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz %v after the upstream went: %d %s", patience, r.status, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
