package app_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/telemetry"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestMetricsAddUp runs a scripted crowd through every way in and out of
// the line and checks that /metrics balances exactly:
// entered = waiting + admitted + left + abandoned; admitted = consumed + active + expired + returned.
// Tokens run out on a queue of their own, with a one-second TTL, so that no
// other check races the clock: the crowd's tokens last ten minutes.
func TestMetricsAddUp(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			q := "metrics"
			if r := in.Do("PUT", "/admin/v1/queues/"+q, in.AdminAuth(),
				`{"ratePerSecond":1000,"batchSize":100,"intervalMs":100,"tokenTtlSeconds":600,"paused":true,"admitPerUnit":0}`); r.Status != 200 {
				t.Fatalf("queue: %d %s", r.Status, r.Raw)
			}
			if r := in.Do("PUT", "/admin/v1/products/metrics-tee", in.AdminAuth(),
				map[string]any{"name": "tee", "stock": 5, "queue": q}); r.Status != 200 {
				t.Fatalf("product: %d %s", r.Status, r.Raw)
			}
			users := make([]string, 30)
			for i := range users {
				users[i] = fmt.Sprintf("m-user-%d", i)
				if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(users[i]), nil); r.Status != 200 {
					t.Fatalf("enter: %d %s", r.Status, r.Raw)
				}
				in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(users[i]), nil) // re-entry: not a new join
			}
			for _, u := range users[25:] { // 5 leave the line
				if r := in.Do("DELETE", "/api/v1/queues/"+q+"/entries/me", in.As(u), nil); r.Status != 204 {
					t.Fatalf("leave: %d", r.Status)
				}
			}
			in.Do("PATCH", "/admin/v1/queues/"+q, in.AdminAuth(), `{"paused":false}`)
			tokens := map[string]string{}
			for _, u := range users[:25] {
				tokens[u] = in.WaitReady(q, u)
			}
			var buys []apptest.Call
			for _, u := range users[:10] { // 10 try to buy 5: 5 created, 5 out of stock
				buys = append(buys, apptest.Call{Method: "POST", Path: "/api/v1/orders", Auth: in.As(u),
					Body: map[string]any{"productId": "metrics-tee", "quantity": 1}, Headers: []string{"X-Entry-Token", tokens[u]}})
			}
			in.FireAll(buys)
			for _, u := range users[10:13] { // 3 give their token back
				in.Do("DELETE", "/api/v1/queues/"+q+"/entries/me", in.As(u), nil)
			}
			in.Do("POST", "/api/v1/queues/"+q+"/entries", "", nil) // one unauthenticated rejection

			series := func(name string) string { return name + `{queue="` + q + `"}` }
			publicLength := `waitroom_queue_length{lane="public",queue="` + q + `"}` // a queue without lanes is one lane
			m := apptest.Metrics(t, in.Base)
			want := map[string]float64{
				series("waitroom_entered_total"):                    30,
				series("waitroom_left_total"):                       5,
				series("waitroom_admitted_total"):                   25,
				publicLength:                                        0,
				series("waitroom_tokens_consumed_total"):            5,
				series("waitroom_tokens_returned_total"):            3,
				`waitroom_orders_total{result="created"}`:           5,
				`waitroom_orders_total{result="out_of_stock"}`:      5,
				`waitroom_rejected_total{reason="out_of_stock"}`:    5,
				`waitroom_rejected_total{reason="unauthenticated"}`: 1,
				`waitroom_store_up`:                                 1,
				series("waitroom_tokens_cap"):                       0,
				series("waitroom_abandoned_total"):                  0,
				series("waitroom_admission_rate"):                   1000,
				series("waitroom_prequeue_length"):                  0,
				series("waitroom_shadow_length"):                    0,
				`waitroom_status_held`:                              0,
			}
			for k, v := range want {
				if got, ok := m[k]; !ok || got != v {
					t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
				}
			}
			balance := func(q string, m map[string]float64) {
				t.Helper()
				series := func(name string) float64 { return m[name+`{queue="`+q+`"}`] }
				entered, waiting, admitted, left := series("waitroom_entered_total"), m[`waitroom_queue_length{lane="public",queue="`+q+`"}`],
					series("waitroom_admitted_total"), series("waitroom_left_total")
				left += series("waitroom_abandoned_total") // skipped as no-shows: out of line like leavers
				consumed, active, expired, returned := series("waitroom_tokens_consumed_total"), series("waitroom_tokens_active"),
					series("waitroom_tokens_expired_total"), series("waitroom_tokens_returned_total")
				if entered != waiting+admitted+left {
					t.Errorf("%s: entered %v ≠ waiting %v + admitted %v + left %v", q, entered, waiting, admitted, left)
				}
				if admitted != consumed+active+expired+returned {
					t.Errorf("%s: admitted %v ≠ consumed %v + active %v + expired %v + returned %v", q, admitted, consumed, active, expired, returned)
				}
			}
			balance(q, m)
			if m[series("waitroom_tokens_active")] != 17 {
				t.Errorf("active tokens %v, want 17 (25 admitted − 5 consumed − 3 returned)", m[series("waitroom_tokens_active")])
			}

			// Tokens that run out: four admitted to a queue whose tokens
			// live a second, none of them used; counted as expired once
			// their second is over, whenever the machine gets to it.
			const expiring = "metrics-expiring"
			in.PutQueue(expiring, map[string]any{"ratePerSecond": 1000, "batchSize": 100, "intervalMs": 100, "tokenTtlSeconds": 1})
			for i := range 4 {
				in.Do("POST", "/api/v1/queues/"+expiring+"/entries", in.As(fmt.Sprintf("m-expiring-%d", i)), nil)
			}
			expired := func(name string) float64 { return m[name+`{queue="`+expiring+`"}`] }
			for deadline := time.Now().Add(apptest.Patience); ; time.Sleep(200 * time.Millisecond) {
				m = apptest.Metrics(t, in.Base)
				if expired("waitroom_tokens_expired_total") == 4 || time.Now().After(deadline) {
					break
				}
			}
			balance(expiring, m)
			if expired("waitroom_admitted_total") != 4 || expired("waitroom_tokens_expired_total") != 4 || expired("waitroom_tokens_active") != 0 {
				t.Errorf("%s: admitted %v, expired %v, active %v; want 4, 4 and 0", expiring, expired("waitroom_admitted_total"),
					expired("waitroom_tokens_expired_total"), expired("waitroom_tokens_active"))
			}
			balance(q, m) // the crowd's queue still balances, its tokens still live
			if m[`waitroom_http_request_duration_seconds_count{code="200",route="POST /api/v1/queues/{queue}/entries"}`] < 64 {
				t.Errorf("HTTP histogram did not count the 64 enters: %v", m)
			}
			for k := range m {
				if strings.Contains(k, "m-user-") {
					t.Fatalf("a user id leaked into a label: %s", k)
				}
			}
		})
	}
}

// TestScrapesAreCheapAndReadOnly: on a Redis of its own, with expired
// tokens that no admission tick has swept yet, 100 scrapes of /metrics on
// --metrics-addr write nothing (Redis's count of changes stands still, the
// tokens stay unswept yet count as expired) and cost Redis one reading of
// the queues a second, not one per scrape (INFO's command count, the
// commands run inside scripts included). /metrics is not on the public
// listener then; the profiler is on the private one with --pprof.
func TestScrapesAreCheapAndReadOnly(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	in := apptest.Boot(t, apptest.Backend{Name: "private redis"}, func(c *app.Config) {
		c.RedisURL, c.KeyPrefix = srv.URL(), "wr:"
		c.Queue.RatePerSecond, c.Queue.Interval = 0.1, time.Minute // the default queue ticks once a minute
		c.HistoryInterval = time.Minute
		c.MetricsAddr, c.Pprof = "127.0.0.1:0", true
		// Ticks at their due time: the loop's jitter (up to half an
		// interval, 30 s at a minute) would only delay the setup below.
		c.AdmissionJitter = false
	})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()

	// Six users admitted; then the queue, too, ticks once a minute, and the
	// tokens' time is made up (their expiry moved into the past in Redis,
	// which is what running out is to every script), so no tick sweeps them
	// during the scrapes however slow the machine is.
	in.PutQueue("m1", map[string]any{"paused": true, "ratePerSecond": 6, "batchSize": 10, "intervalMs": 1000, "tokenTtlSeconds": 60})
	for i := range 6 {
		in.Do("POST", entriesPath("m1"), in.As(fmt.Sprintf("m1-%d", i)), nil)
	}
	in.PatchQueue("m1", map[string]any{"paused": false})
	waitFor(t, "six admitted", func() bool { return in.QueueStats("m1").Num("admittedTotal") == 6 })
	in.PatchQueue("m1", map[string]any{"ratePerSecond": 0.1})
	// Keys as docs/operations.md lays them out.
	nextTickIn := func(q string) time.Duration {
		next, _ := rdb.HGet(ctx, "wr:{"+q+"}:cfg", "next").Int64()
		now, _ := rdb.Time(ctx).Result()
		return time.Duration(next-now.UnixMilli()) * time.Millisecond
	}
	// Both queues tick once now and then not for a minute: a one-second
	// interval brings the next tick forward, and the minute is back for the
	// one after it.
	for _, q := range []string{"m1", "default"} {
		in.PatchQueue(q, map[string]any{"intervalMs": 1000})
	}
	// (A tick has run once the next one is ahead again.)
	waitFor(t, "ticks a second apart", func() bool { return nextTickIn("m1") > 0 && nextTickIn("default") > 0 })
	for _, q := range []string{"m1", "default"} {
		in.PatchQueue(q, map[string]any{"intervalMs": 60000})
	}
	waitFor(t, "no tick due for 50 s", func() bool { return nextTickIn("m1") > 50*time.Second && nextTickIn("default") > 50*time.Second })
	// Every wake of a queue's loop runs the janitor, which would sweep the
	// tokens made to expire below. A tick due in 50 s does not mean no wake
	// is pending: each loop adopts the minute-long interval only at its
	// next discovery (every second) and wakes for it then, and a loop that
	// ticked on the one-second interval still wakes a second later. So wait
	// until the loops are quiet: Redis's count of changes standing still
	// for three discovery periods (a tick writes its next due time; the
	// events detector reads every queue each second, as a scrape does, and
	// writes its row of the minute only when the queue's numbers moved).
	changes := func() int64 {
		stats, _ := rdb.Info(ctx, "persistence").Result()
		_, rest, _ := strings.Cut(stats, "rdb_changes_since_last_save:")
		v, _ := strconv.ParseInt(strings.TrimSpace(strings.SplitN(rest, "\r\n", 2)[0]), 10, 64)
		return v
	}
	quietFor := func(what string) {
		quiet, last := time.Now(), changes()
		waitFor(t, what, func() bool {
			if n := changes(); n != last {
				quiet, last = time.Now(), n
			}
			return time.Since(quiet) >= 3*time.Second
		})
	}
	quietFor("the admission loops to be quiet")
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range rdb.ZRange(ctx, "wr:{m1}:texp", 0, -1).Val() {
		rdb.ZAddXX(ctx, "wr:{m1}:texp", redis.Z{Score: float64(now.UnixMilli() - 1000), Member: u})
	}
	waitFor(t, "the tokens to count as expired", func() bool { return in.QueueStats("m1").Num("activeTokens") == 0 })
	quietFor("the detector to write the expiries into the queue's row")
	unswept := func() int64 { return rdb.ZCard(ctx, "wr:{m1}:texp").Val() }
	if n := unswept(); n != 6 {
		t.Fatalf("%d expired tokens left unswept, want 6 (something swept them: the test shows nothing)", n)
	}

	private := &apptest.Instance{T: t, Base: "http://" + in.Main.MetricsAddr()}
	info := func() (commands, changes int64) {
		stats, _ := rdb.Info(ctx, "stats", "persistence").Result()
		field := func(name string) int64 {
			_, rest, _ := strings.Cut(stats, name+":")
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.SplitN(rest, "\r\n", 2)[0]), 10, 64)
			return v
		}
		return field("total_commands_processed"), field("rdb_changes_since_last_save")
	}
	cmds0, changes0 := info()
	m := apptest.Metrics(t, private.Base) // the first reading
	cmds1, _ := info()
	began := time.Now()
	for range 99 {
		m = apptest.Metrics(t, private.Base)
	}
	elapsed := time.Since(began)
	cmds2, changes2 := info()

	if changes2 != changes0 || unswept() != 6 {
		t.Errorf("scrapes wrote to Redis: %d changes, %d tokens left unswept of 6", changes2-changes0, unswept())
	}
	series := func(name string) float64 { return m[name+`{queue="m1"}`] }
	if series("waitroom_tokens_expired_total") != 6 || series("waitroom_tokens_active") != 0 || series("waitroom_admitted_total") != 6 {
		t.Errorf("m1: expired %v active %v admitted %v, want 6, 0 and 6", series("waitroom_tokens_expired_total"),
			series("waitroom_tokens_active"), series("waitroom_admitted_total"))
	}
	// One reading (less INFO itself) serves every scrape for a second;
	// every second meanwhile the admission loops' discovery reads the list
	// and each config (and the default queue once more), the health check
	// (watch.HealthEvery) the list and each config again, and the events
	// detector the list and a reading of every queue (the sale's rows).
	const queues = 2
	reading := cmds1 - cmds0 - 1
	seconds := int64(elapsed/telemetry.StatsMaxAge) + 1
	discovery, health := int64(2+queues), int64(1+queues)
	bound := seconds * (2*reading + discovery + health + 1)
	t.Logf("one reading of %d queues: %d Redis commands; 99 more scrapes in %v: %d commands (bound %d; read every time they would cost %d)",
		queues, reading, elapsed.Round(time.Millisecond), cmds2-cmds1-1, bound, 99*reading)
	if got := cmds2 - cmds1 - 1; got > bound {
		t.Errorf("99 scrapes in %v cost Redis %d commands, want at most %d (one reading of %d a second, and discovery)",
			elapsed, got, bound, reading)
	}

	if r := in.Do("GET", "/metrics", "", nil); r.Status != 404 {
		t.Errorf("/metrics on the public listener with --metrics-addr: %d, want 404", r.Status)
	}
	if r := private.Do("GET", "/debug/pprof/cmdline", "", nil); r.Status != 200 {
		t.Errorf("/debug/pprof/cmdline with --pprof: %d", r.Status)
	}
	if r := in.Do("GET", "/debug/pprof/cmdline", "", nil); r.Status != 404 {
		t.Errorf("/debug/pprof on the public listener: %d, want 404", r.Status)
	}
}

// waitFor polls cond until it holds, failing the test after apptest.Patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(apptest.Patience); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", apptest.Patience, what)
		}
	}
}
