package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestCommandBudget counts the commands Redis runs inside the hot scripts
// (INFO commandstats on a Redis of its own, EVALSHA itself not counted) and
// fails when one needs more than its budget: a feature that adds a command
// to every enter or poll says so in its diff, by raising a number here with
// its reason. Issue 24 asks for at most 7 per enter.
func TestCommandBudget(t *testing.T) {
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	st := redisstore.New(rdb, "")
	c := queue.DefaultConfig()
	c.Paused = true          // the line stands still while it is measured
	c.Interval = time.Minute // and admission's first tick is its only one
	if err := st.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	user := func(i int) string { return fmt.Sprintf("u%05d", i) }
	const n = 200
	for i := range n { // the line, and every script loaded
		if _, err := st.Enter(ctx, "q", user(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Status(ctx, "q", user(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Snapshot(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Admit(ctx, "q", queue.NewTokens(c.BatchSize)); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		name   string
		budget float64
		why    string
		call   func(i int) error
	}{
		{"enter, a newcomer", 7, "config and admission state (one HMGET: one hash, keys.go), TIME, the line's length (ZCARD); " +
			"not already in line or holding a token (ZSCORE, HGET; an opening's pre-queue only while one is in play); " +
			"the ticket (INCR) and the place (ZADD)",
			func(i int) error { _, err := st.Enter(ctx, "q", user(n+i)); return err }},
		{"enter, again while waiting", 5, "config and admission state, TIME, ZCARD; the ticket (ZSCORE) and the place (ZRANK)",
			func(i int) error { _, err := st.Enter(ctx, "q", user(i)); return err }},
		{"status, waiting", 5, "config and admission state, TIME, ZCARD; the ticket (ZSCORE) and the place (ZRANK)",
			func(i int) error { _, err := st.Status(ctx, "q", user(i)); return err }},
		{"status, not in line", 5, "config and admission state, TIME, ZCARD; not in line (ZSCORE), no token (HGET)",
			func(i int) error { _, err := st.Status(ctx, "q", "nobody"); return err }},
		{"snapshot", 6, "config and admission state, TIME, ZCARD, the last ticket (GET), the head (ZRANGE), the leavers above it (ZRANGEBYSCORE)",
			func(int) error { _, err := st.Snapshot(ctx, "q"); return err }},
		{"admission tick, not due", 7, "tick.lua alone (nothing to apply): config, TIME, ZCARD, the live tokens (ZCOUNT), the tick state (HMGET of the same hash: the whole config and TICK, too many to read as one list's indexes), " +
			"the front (ZRANGE) and its seen marks (ZMSCORE)",
			func(int) error { _, err := st.Admit(ctx, "q", queue.NewTokens(c.BatchSize)); return err }},
	} {
		t.Run(b.name, func(t *testing.T) {
			const calls = 50
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for i := range calls {
				if err := b.call(i); err != nil {
					t.Fatal(err)
				}
			}
			got, list := commandsRun(t, rdb)
			if per := float64(got) / calls; per > b.budget {
				t.Errorf("%.2f commands per call (%s), budget %v: %s", per, list, b.budget, b.why)
			} else {
				t.Logf("%.2f commands per call (%s), budget %v", per, list, b.budget)
			}
		})
	}
}

// commandsRun is how many commands Redis ran since CONFIG RESETSTAT, not
// counting the scripts' EVALSHA and the measurement's own, and which.
func commandsRun(t *testing.T, rdb *redis.Client) (int64, string) {
	t.Helper()
	var n int64
	var which []string
	for name, cs := range commandStats(t, rdb) {
		switch {
		case name == "evalsha", name == "eval", name == "info", strings.HasPrefix(name, "config"):
			continue
		}
		n += cs.calls
		which = append(which, fmt.Sprintf("%s %d", name, cs.calls))
	}
	return n, strings.Join(which, ", ")
}
