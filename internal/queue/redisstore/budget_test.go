package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestCommandBudget counts the commands Redis runs inside the hot scripts
// (INFO commandstats on a Redis of its own, FCALL itself not counted) and
// fails when one needs more than its budget: a feature that adds a command
// to every enter or poll says so in its diff, by raising a number here with
// its reason. Issue 24 asks for at most 7 per enter.
func TestCommandBudget(t *testing.T) {
	rdb := redisOfItsOwn(t)
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
	runBudgets(t, rdb, []commandBudget{
		{"enter, a newcomer", 9, "config and admission state (one HMGET: one hash, keys.go), TIME, the line's length (ZCARD); " +
			"not already in line, in the shadow line or holding a token (ZSCORE, ZSCORE, HGET; an opening's pre-queue only while one is in play); " +
			"the ticket (INCR) and the place (ZADD); when it was taken and the wait shown (HSET of K.joined: issue 38's time in line and estimate accuracy)",
			func(i int) error { _, err := st.Enter(ctx, "q", user(n+i)); return err }},
		{"enter, again while waiting", 5, "config and admission state, TIME, ZCARD; the ticket (ZSCORE) and the place (ZRANK)",
			func(i int) error { _, err := st.Enter(ctx, "q", user(i)); return err }},
		{"status, waiting", 5, "config and admission state, TIME, ZCARD; the ticket (ZSCORE) and the place (ZRANK)",
			func(i int) error { _, err := st.Status(ctx, "q", user(i)); return err }},
		{"status, not in line", 7, "config and admission state, TIME, ZCARD; not in line nor in the shadow line (ZSCORE, ZSCORE), no token (HGET); " +
			"whether the place moved to another session (EXISTS of the moved mark, issue 55: only for one holding nothing)",
			func(i int) error { _, err := st.Status(ctx, "q", "nobody"); return err }},
		{"snapshot", 7, "config and admission state, TIME, ZCARD, the last ticket (GET), the places cleared from the shadow line (ZCARD: " +
			"they stand ahead of the head, which is the lowest ticket, and the snapshot lists them), the head (ZRANGE), the leavers above it (ZRANGEBYSCORE)",
			func(int) error { _, err := st.Snapshot(ctx, "q"); return err }},
		{"admission tick, not due", 7, "tick.lua alone (nothing to apply): config, TIME, ZCARD, the live tokens (ZCOUNT), the tick state (HMGET of the same hash: the whole config and TICK, too many to read as one list's indexes), " +
			"the front (ZRANGE) and its seen marks (ZMSCORE)",
			func(int) error { _, err := st.Admit(ctx, "q", queue.NewTokens(c.BatchSize)); return err }},
	})
}

// commandBudget is the most Redis commands one call may run on average,
// and why that many.
type commandBudget struct {
	name   string
	budget float64
	why    string
	call   func(i int) error
}

// runBudgets makes each budget's call 50 times on a Redis of its own
// (redisOfItsOwn) and holds the commands it ran to the budget.
func runBudgets(t *testing.T, rdb *redis.Client, budgets []commandBudget) {
	ctx := context.Background()
	for _, b := range budgets {
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

// redisOfItsOwn is a client to a redis-server started for the test alone,
// so its command counts are the test's.
func redisOfItsOwn(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.StartRedis(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// commandsRun is how many commands Redis ran since CONFIG RESETSTAT, not
// counting the scripts' FCALL and the measurement's own, and which.
func commandsRun(t *testing.T, rdb *redis.Client) (int64, string) {
	t.Helper()
	var n int64
	var which []string
	for name, cs := range commandStats(t, rdb) {
		switch {
		case name == "fcall", strings.HasPrefix(name, "function"), name == "info", strings.HasPrefix(name, "config"):
			continue
		}
		n += cs.calls
		which = append(which, fmt.Sprintf("%s %d", name, cs.calls))
	}
	return n, strings.Join(which, ", ")
}

// TestFarStatusBudget: a poll from far back in line is answered from this
// instance's snapshot of the line (queue.Service's snapshots), so Redis runs
// a snapshot's commands once per snapshot period, not per poll: issue 24's
// budget is at most 0.05 commands per far poll, scripts counted. Here 1,000
// polls share two snapshots: the age is long, and an enter through this
// instance halfway makes the first stale (its commands counted too).
func TestFarStatusBudget(t *testing.T) {
	rdb := redisOfItsOwn(t)
	ctx := context.Background()
	store, line := redisstore.New(rdb, ""), signals.New()
	svc := queue.NewService(store, time.Minute, line)
	c := queue.DefaultConfig()
	c.Paused = true
	if err := operate.New(store, line).PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	user := func(i int) string { return fmt.Sprintf("u%05d", i) }
	for i := range n {
		if _, err := svc.Enter(ctx, "q", user(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Status(ctx, "q", user(n-1)); err != nil { // the snapshot taken
		t.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const polls = 1000
	for i := range polls {
		if i == polls/2 { // a change through this instance: the next poll takes a new snapshot
			if _, err := svc.Enter(ctx, "q", user(n)); err != nil {
				t.Fatal(err)
			}
		}
		u := 100 + i%(n-100) // beyond the front's two batches
		if v, err := svc.Status(ctx, "q", user(u)); err != nil || v.Position != int64(u+1) {
			t.Fatalf("%s: %+v, %v; want position %d", user(u), v, err, u+1)
		}
	}
	got, list := commandsRun(t, rdb)
	evals := commandStats(t, rdb)["fcall"].calls
	const budget = 0.05
	if per := float64(got+evals) / polls; per > budget {
		t.Errorf("%.3f commands per far poll (%s; %d scripts), budget %v", per, list, evals, budget)
	} else {
		t.Logf("%.3f commands per far poll (%s; %d scripts), budget %v", per, list, evals, budget)
	}
}

// TestAdmissionTickBudget: one admission tick that lets a batch in costs
// Redis a bounded number of commands, its read (tick.lua) and its apply
// (admit.lua) together, and per user let in.
func TestAdmissionTickBudget(t *testing.T) {
	rdb := redisOfItsOwn(t)
	ctx := context.Background()
	st := redisstore.New(rdb, "")
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 10_000, 10, time.Millisecond
	if err := st.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if _, err := st.Enter(ctx, "q", fmt.Sprintf("u%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	tick := func() int {
		t.Helper()
		for range 100 {
			time.Sleep(3 * c.Interval) // due, nearly always at the first try
			a, err := st.Admit(ctx, "q", queue.NewTokens(c.BatchSize))
			if err != nil {
				t.Fatal(err)
			}
			if a.Ticked {
				return len(a.Admitted)
			}
		}
		t.Fatal("no tick came due in 100 tries")
		return 0
	}
	tick() // every script loaded
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const ticks = 20
	admitted := 0
	for range ticks {
		admitted += tick()
	}
	got, list := commandsRun(t, rdb)
	stats := commandStats(t, rdb)
	notDue := stats["fcall"].calls - 2*ticks // tick.lua alone when the tick was not due
	got -= notDue * 7                        // what "admission tick, not due" costs (TestCommandBudget)
	if admitted != ticks*c.BatchSize {
		t.Fatalf("%d ticks admitted %d, want %d", ticks, admitted, ticks*c.BatchSize)
	}
	// tick.lua's read, 7 (TestCommandBudget), and admit.lua's apply: the
	// claim (HGET next), the counters added to (HINCRBY), the line as planned
	// (ZMSCORE), per user let in ZREM from the line and from the seen marks,
	// HSET of the token and ZADD of its expiry, then the admitted count
	// (HINCRBY) and the tick's state (HSET), and the places' takings read
	// for the admitted (HMGET) and dropped (HDEL; issue 38): 14 a tick and
	// 4 a user.
	budget := float64(14 + 4*c.BatchSize)
	if per := float64(got) / ticks; per > budget {
		t.Errorf("%.1f commands per tick of %d (%s, less %d reads not due), budget %v", per, c.BatchSize, list, notDue, budget)
	} else {
		t.Logf("%.1f commands per tick of %d (%s, less %d reads not due), budget %v", per, c.BatchSize, list, notDue, budget)
	}
}

// TestLaneCommandBudget: a queue with lanes (issue 53) costs its public
// lane's people what a queue without costs everyone (TestCommandBudget),
// and a place in another lane a few commands more: it is a band of one
// sorted set (keys.go), its rank and length two ZCOUNTs.
func TestLaneCommandBudget(t *testing.T) {
	rdb := redisOfItsOwn(t)
	ctx := context.Background()
	st := redisstore.New(rdb, "")
	c := queue.DefaultConfig()
	c.Paused = true
	c.Lanes = lane.List{{Name: "members", Claim: "tier=gold", Share: 0.3}, {Name: lane.Public, Share: 0.7}}
	if err := st.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	user := func(i int) string { return fmt.Sprintf("u%05d", i) }
	member := func(i int) string { return fmt.Sprintf("m%05d", i) }
	const n = 200
	for i := range n {
		if _, err := st.Enter(ctx, "q", user(i)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Join(ctx, "q", member(i), lane.Join{Lane: "members"}); err != nil {
			t.Fatal(err)
		}
	}
	runBudgets(t, rdb, []commandBudget{
		{"status, waiting in the public lane", 6, "as without lanes: config and admission state, TIME, ZCARD; the ticket (ZSCORE) and the place (ZRANK); " +
			"the other lanes' length (ZCARD: stalled is the whole line's)",
			func(i int) error { _, err := st.Status(ctx, "q", user(i)); return err }},
		{"status, waiting in another lane", 9, "config and admission state, TIME, ZCARD; not in the public line (ZSCORE), the lane's score (ZSCORE), " +
			"the lane's name (HGET), the rank and the length in its band (ZCOUNT, ZCOUNT), the other lanes' length (ZCARD: stalled is the whole line's)",
			func(i int) error { _, err := st.Status(ctx, "q", member(i)); return err }},
		{"join, a newcomer in another lane", 16, "enter's reads (8 with the other lanes' ZSCORE), the lanes' length for capacity (ZCARD), " +
			"the ticket (INCR), the lane's id (HGET), the place (ZADD) and its gap in the public line (ZADD), its standing (HGET, ZCOUNT, ZCOUNT), " +
			"when it was taken (HSET)",
			func(i int) error { _, err := st.Join(ctx, "q", member(n+i), lane.Join{Lane: "members"}); return err }},
	})
}
