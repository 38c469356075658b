package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// TestRedisLosesItsData: Redis forgets everything (FLUSHALL, as a restart
// without AOF or a failover to an empty replica would) while users wait.
// /readyz fails while the default queue is missing, the admission loop
// creates it again with the configured defaults, /readyz recovers, and a
// user the store no longer holds is told NOT_IN_QUEUE, never the place
// this instance remembered from the old line, even once the new line has
// someone holding the same ticket.
func TestRedisLosesItsData(t *testing.T) {
	t.Parallel()
	in, srv := apptest.BootOnPrivateRedis(t)
	in.PatchQueue("default", map[string]any{"paused": true})
	for i := range 50 {
		in.Do("POST", entriesPath("default"), in.As(fmt.Sprintf("u%d", i)), nil)
	}
	for range 2 { // the second answer comes from this instance's snapshot
		checkWaitingAt(t, in.Do("GET", mePath("default"), in.As("u40"), nil), 41)
	}

	// Everything goes; writes are held for 10 s (far longer than the
	// health check takes to see it, a second or two however busy the
	// machine), so the instance cannot create the queue again before its
	// readiness is seen failing.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	if _, err := rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		p.FlushAll(context.Background())
		p.Do(context.Background(), "CLIENT", "PAUSE", 10000, "WRITE")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	in.WaitStatus("/readyz", 503) // readiness follows the store's health check, made every second
	if r := in.Do("GET", "/readyz", "", nil); r.Status != 503 || r.ErrorCode() != "not_ready" ||
		!strings.Contains(r.Raw, "default queue is missing") {
		t.Errorf("/readyz with the default queue gone: %d %s, want 503 not_ready saying why", r.Status, r.Raw)
	}
	for deadline := time.Now().Add(apptest.Patience); ; time.Sleep(50 * time.Millisecond) {
		r := in.Do("GET", "/readyz", "", nil)
		if r.Status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %s %v after the data was lost", r.Status, r.Raw, apptest.Patience)
		}
	}
	// Back with the configured defaults: not paused, empty.
	if st := in.QueueStats("default"); st.Body["paused"] != false || st.Num("length") != 0 || st.Num("ratePerSecond") != 100 {
		t.Errorf("the default queue came back as %s", st.Raw)
	}

	// A new crowd fills the new line (paused, so nobody moves): ticket 41
	// is n40's now, far enough from the front for a snapshot to answer.
	in.PatchQueue("default", map[string]any{"paused": true})
	for i := range 60 {
		in.Do("POST", entriesPath("default"), in.As(fmt.Sprintf("n%d", i)), nil)
	}
	checkNotInQueue(t, in.Do("GET", mePath("default"), in.As("u40"), nil))
	checkWaitingAt(t, in.Do("GET", mePath("default"), in.As("n50"), nil), 51)
}

// checkWaitingAt fails unless r is WAITING at position pos.
func checkWaitingAt(t *testing.T, r apptest.Response, pos float64) {
	t.Helper()
	if r.Status != 200 || r.Str("status") != "WAITING" || r.Num("position") != pos {
		t.Fatalf("want WAITING at %v, got %d %s", pos, r.Status, r.Raw)
	}
}

// TestRedisThatMayEvictOurKeys: a Redis whose maxmemory-policy can evict
// keys without a TTL (allkeys-*), or whose policy cannot be read (CONFIG
// disabled, as on managed services), is reported in /readyz and refused
// under --redis-strict-eviction; noeviction and volatile-* are fine.
func TestRedisThatMayEvictOurKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		args   []string
		report string // "" when nothing is wrong
	}{
		{"noeviction", nil, ""},
		{"volatile-lru", []string{"--maxmemory-policy", "volatile-lru"}, ""},
		{"allkeys-lru", []string{"--maxmemory-policy", "allkeys-lru"}, "allkeys-lru"},
		{"CONFIG disabled", []string{"--rename-command", "CONFIG", `""`}, "cannot be checked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in, srv := apptest.BootOnPrivateRedis(t, c.args...)
			r := in.Do("GET", "/readyz", "", nil)
			warnings, _ := r.Body["warnings"].([]any)
			switch {
			case r.Status != 200:
				t.Errorf("/readyz: %d %s, want 200", r.Status, r.Raw)
			case c.report == "" && len(warnings) > 0:
				t.Errorf("/readyz warns about a safe Redis: %s", r.Raw)
			case c.report != "" && (len(warnings) != 1 || !strings.Contains(fmt.Sprint(warnings[0]), c.report)):
				t.Errorf("/readyz: %s, want a warning saying %q", r.Raw, c.report)
			}

			cfg, err := app.Parse([]string{"--addr", "127.0.0.1:0", "--redis-url", srv.URL(), "--redis-strict-eviction", "--drain-delay", "0",
				"--data-dir", t.TempDir(), "--auth-secret", strings.Repeat("s", 32), "--admin-token", strings.Repeat("a", 32)}, func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			m := &app.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
			err = m.Run(context.Background())
			if err == nil {
				m.Close()
			}
			if c.report == "" && err != nil {
				t.Errorf("strict start on a safe Redis: %v", err)
			}
			if c.report != "" && (err == nil || !strings.Contains(err.Error(), c.report)) {
				t.Errorf("strict start: %v, want a refusal saying %q", err, c.report)
			}
		})
	}
}
