package app_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestRedisOutageRecovers: with Redis gone the line answers 503 with
// Retry-After and /readyz fails (serve mode can serve nothing without its
// store, unlike a gateway: internal/gateway's TestGatewayOutlivesItsStore);
// when Redis is back, the same instance serves again and admission
// resumes, with no restart.
func TestRedisOutageRecovers(t *testing.T) {
	t.Parallel()
	in, redis := apptest.BootOnPrivateRedis(t)
	if r := in.Do("POST", "/api/v1/queues/default/entries", in.As("before"), nil); r.Status != 200 {
		t.Fatalf("before the outage: %d %s", r.Status, r.Raw)
	}
	in.WaitReady("default", "before")

	redis.Stop()
	in.WaitStatus("/readyz", 503)
	for _, probe := range []struct{ method, path string }{
		{"POST", "/api/v1/queues/default/entries"},
		{"GET", "/api/v1/queues/default/entries/me"},
		{"GET", "/readyz"},
		{"GET", "/readyz?strict=1"},
	} {
		began := time.Now()
		r := in.Do(probe.method, probe.path, in.As("during"), nil)
		t.Logf("%s %s during the outage: %d in %v", probe.method, probe.path, r.Status, time.Since(began))
		if r.Status != 503 || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s during the outage: %d (Retry-After %q) %s, want 503 with Retry-After",
				probe.method, probe.path, r.Status, r.Header.Get("Retry-After"), r.Raw)
		}
	}
	if r := in.Do("GET", "/healthz", "", nil); r.Status != 200 {
		t.Errorf("/healthz during the outage: %d, want 200 (the process is alive)", r.Status)
	}

	// Same port, fresh and empty: as after a failover to a replica that lost
	// everything, including the script cache.
	redis.Restart()
	deadline := time.Now().Add(apptest.Patience)
	for {
		r := in.Do("GET", "/readyz", "", nil)
		if r.Status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready %v after Redis came back: %d %s", apptest.Patience, r.Status, r.Raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// An empty Redis has no queues: the operator recreates the queue (as a
	// restore would), and the running admission loops pick it up.
	if r := in.Do("PUT", "/admin/v1/queues/default", in.AdminAuth(), `{}`); r.Status != 200 {
		t.Fatalf("recreating the queue: %d %s", r.Status, r.Raw)
	}
	if r := in.Do("POST", "/api/v1/queues/default/entries", in.As("after"), nil); r.Status != 200 {
		t.Fatalf("after recovery: %d %s", r.Status, r.Raw)
	}
	in.WaitReady("default", "after")
}
