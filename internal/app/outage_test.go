package app_test

import (
	"testing"
	"time"
)

// TestRedisOutageRecovers: with Redis gone the line answers 503 with
// Retry-After and /readyz fails; when Redis is back, the same instance
// serves again and admission resumes, with no restart.
func TestRedisOutageRecovers(t *testing.T) {
	t.Parallel()
	in, redis := bootOnPrivateRedis(t)
	if r := in.do("POST", "/api/v1/queues/default/entries", in.as("before"), nil); r.status != 200 {
		t.Fatalf("before the outage: %d %s", r.status, r.raw)
	}
	in.waitReady("default", "before")

	redis.Stop()
	for _, probe := range []struct{ method, path string }{
		{"POST", "/api/v1/queues/default/entries"},
		{"GET", "/api/v1/queues/default/entries/me"},
		{"GET", "/readyz"},
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
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := in.do("GET", "/readyz", "", nil)
		if r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready 15 s after Redis came back: %d %s", r.status, r.raw)
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
