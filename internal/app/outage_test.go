package app_test

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/testenv"
)

// startRedis runs a private redis-server on a free loopback port, so a test
// can take it away and bring it back. It returns the port and a stop func.
func startRedis(t *testing.T, port int) func() {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testenv.InCI() {
			t.Fatal("redis-server is required under CI")
		}
		t.Skip("no redis-server on PATH")
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(stop)
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return stop
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("redis-server did not start")
	return nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRedisOutageRecovers: with Redis gone the line answers 503 with
// Retry-After and /readyz fails; when Redis is back, the same instance
// serves again and admission resumes, with no restart.
func TestRedisOutageRecovers(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	stop := startRedis(t, port)
	in := boot(t, backend{name: "private redis"}, func(c *app.Config) {
		c.RedisURL = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
		c.KeyPrefix = "wr:"
	})
	if r := in.do("POST", "/api/v1/queues/default/entries", in.as("before"), nil); r.status != 200 {
		t.Fatalf("before the outage: %d %s", r.status, r.raw)
	}
	in.waitReady("default", "before")

	stop()
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
	startRedis(t, port)
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
