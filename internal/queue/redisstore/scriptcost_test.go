package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestScriptCost reports what Redis itself spends on the hot scripts —
// enter (a new user joins), status (a waiting user's place) and snapshot —
// with WAITROOM_SCRIPT_COST_USERS in line: FCALL's usec from INFO
// commandstats per call of the store (concurrent enters share one FCALL:
// enterbatch.go), and the commands each call runs inside Redis. It is a
// measurement more than a check (the budget is TestCommandBudget): given
// WAITROOM_SCRIPT_COST_URL, a Redis of its own that it flushes, it measures
// at WAITROOM_SCRIPT_COST_USERS; without, it starts a redis-server and runs
// small, so CI keeps it working (each call one FCALL at most). It uses nothing but
// the store's exported methods and testenv, so the same file measures an
// older commit too (docs/benchmarks.md, "The prelude's cost"):
//
//	WAITROOM_SCRIPT_COST_URL=redis://127.0.0.1:PORT/0 WAITROOM_SCRIPT_COST_USERS=100000 \
//	  go test -run TestScriptCost -v ./internal/queue/redisstore/
func TestScriptCost(t *testing.T) {
	url, users := os.Getenv("WAITROOM_SCRIPT_COST_URL"), 1_000
	if url == "" {
		url = "redis://" + testenv.StartRedis(t).Addr() + "/0"
	} else if n, err := strconv.Atoi(os.Getenv("WAITROOM_SCRIPT_COST_USERS")); err == nil && n > 0 {
		users = n
	} else {
		users = 100_000
	}
	calls := min(users, 20_000)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.PoolSize = 16
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	st := redisstore.New(rdb, "cost:")
	c := queue.DefaultConfig()
	c.Paused, c.Capacity = true, 100_000_000 // the line only grows
	if err := st.PutConfig(ctx, "cost", c); err != nil {
		t.Fatal(err)
	}
	user := func(i int) string { return fmt.Sprintf("cost-u%07d", i) }
	parallel(t, users, func(i int) error { _, err := st.Enter(ctx, "cost", user(i)); return err })

	for _, s := range []struct {
		name string
		call func(i int) error
	}{
		{"enter", func(i int) error { _, err := st.Enter(ctx, "cost", user(users+i)); return err }},
		{"status", func(i int) error { _, err := st.Status(ctx, "cost", user(i*7919%users)); return err }},
		{"snapshot", func(int) error { _, err := st.Snapshot(ctx, "cost"); return err }},
	} {
		if err := s.call(calls); err != nil { // loads the script (FCALL, not found, FUNCTION LOAD) outside the window
			t.Fatal(err)
		}
		// In batches, each with its own reset: a batch the machine's other
		// work preempted reads high, so the minimum and the median say more
		// than the mean of one long run.
		const batches = 10
		var usec []float64
		var scripts float64
		var stats map[string]commandStat
		for k := range batches {
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			per := calls / batches
			parallel(t, per, func(i int) error { return s.call(k*per + i) })
			stats = commandStats(t, rdb)
			ev := stats["fcall"]
			if ev.calls == 0 || ev.calls > int64(per) {
				t.Fatalf("%s: %d FCALL for %d calls, want one at most each", s.name, ev.calls, per)
			}
			// Per call of the store: concurrent enters share one FCALL.
			usec = append(usec, ev.usecPerCall*float64(ev.calls)/float64(per))
			scripts += float64(ev.calls) / float64(per) / batches
		}
		sort.Float64s(usec)
		var inside []string
		var n int64
		for name, cs := range stats {
			if name != "fcall" && !strings.HasPrefix(name, "function") && name != "info" && !strings.HasPrefix(name, "config") && name != "hello" && !strings.HasPrefix(name, "client") {
				n += cs.calls
				inside = append(inside, fmt.Sprintf("%s %.2f", name, float64(cs.calls)/float64(calls/batches)))
			}
		}
		sort.Strings(inside)
		t.Logf("COST %s: %d in line, %d batches of %d calls: fcall µs per call min %.2f median %.2f; %.2f commands inside per call: %s; %.2f FCALL per call",
			s.name, users, batches, calls/batches, usec[0], usec[batches/2], float64(n)/float64(calls/batches), strings.Join(inside, ", "), scripts)
	}
}

// parallel calls call(0..n-1) from 16 goroutines.
func parallel(t *testing.T, n int, call func(i int) error) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := call(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

type commandStat struct {
	calls       int64
	usecPerCall float64
}

// commandStats reads INFO commandstats: per command, its calls and usec_per_call.
func commandStats(t testing.TB, rdb *redis.Client) map[string]commandStat {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]commandStat{}
	for _, line := range strings.Split(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var cs commandStat
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				cs.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec_per_call":
				cs.usecPerCall, _ = strconv.ParseFloat(v, 64)
			}
		}
		out[name] = cs
	}
	return out
}
