package admission_test

// Admission that follows the backend, on the in-process store's injected
// clock: every time here is the fake clock's, so nothing depends on how
// busy the machine is.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 24, 11, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// pooled is a window of calls that each took latency, waited for one of a
// pool's connections and held it for held, after decisions that measured capacity
// (calls/s; 0: none) and perUser calls a user (0: none), the rate steady
// for long; it counts nobody admitted, so it measures no calls per user.
func pooled(calls int, latency, held time.Duration, pool int64, rate, capacity, perUser float64) queue.RateWindow {
	s := queue.RateSample{Pools: map[string]int64{"a": pool}}
	for range calls {
		s.Add(latency, latency-held, held, false)
	}
	return queue.RateWindow{ID: 50, Samples: s, Span: time.Second, Rate: rate, Waiting: 100,
		Last: queue.RateDecision{Window: 49, Rate: rate, Kind: admission.RateGrow, Capacity: capacity, CallsPerUser: perUser, Steady: 10}}
}

// gateway is a window of calls that each took latency, with no pool, after
// decisions that found the base latency (0: none) on window baseAt, and the
// capacity (calls/s; 0: none).
func gateway(calls int, latency time.Duration, failed int, rate float64, base time.Duration, baseAt int64, capacity float64) queue.RateWindow {
	var s queue.RateSample
	for i := range calls {
		s.Add(latency, 0, 0, i < failed)
	}
	return queue.RateWindow{ID: 50, Samples: s, Span: time.Second, Rate: rate, Waiting: 100,
		Last: queue.RateDecision{Window: 49, Rate: rate, Kind: admission.RateGrow, Base: base, BaseAt: baseAt, Capacity: capacity, Steady: 10}}
}

// nextRateConfig is the queue NextRate's tests decide for: adaptive
// between 10 and 100/s, aiming at 250 ms.
func nextRateConfig() queue.Config {
	c := queue.DefaultConfig()
	c.Adaptive, c.MinRate, c.MaxRate, c.TargetLatency = true, 10, 100, 250*time.Millisecond
	return c
}

func TestNextRate(t *testing.T) {
	c := nextRateConfig()
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		w        queue.RateWindow
		low, top float64 // the next rate lies in [low, top]
		kind     string
		capacity float64 // the capacity it remembers
	}{
		{"too few calls: hold", pooled(2, 900*ms, 200*ms, 20, 60, 0, 0), 60, 60, admission.RateHold, 0},
		{"failures: back off to 70%", gateway(50, 100*ms, 2, 60, 0, 0, 0), 42, 42, admission.RateBackOff, 0},
		{"one failure in a hundred is noise", gateway(100, 100*ms, 1, 60, 0, 0, 0), 66, 66, admission.RateGrow, 0},
		// 20 connections each held 200 ms a call: 100 calls/s; nobody waited,
		// so the share aimed at goes up half a point from 97%.
		{"a pool: its capacity, at once", pooled(50, 200*ms, 200*ms, 20, 60, 0, 0), 97.5, 97.5, admission.RateGrow, 100},
		{"a pool: down to it, at once", pooled(50, 200*ms, 200*ms, 20, 100, 0, 0), 97.5, 97.5, admission.RateBackOff, 100},
		{"a pool: a window's noise, halved", pooled(50, 200*ms, 200*ms, 20, 90, 90, 0), 92.63, 92.63, admission.RateGrow, 95},
		{"a pool: a step, followed whole (its p90 above the target)", pooled(50, 400*ms, 400*ms, 20, 90, 100, 0), 48.25, 48.25, admission.RateBackOff, 50},
		{"calls per user count: two calls each", pooled(50, 200*ms, 200*ms, 20, 40, 100, 2), 48.75, 48.75, admission.RateGrow, 100},
		// 50 calls waited 50 ms each for a connection: 2.5 waiting, on
		// average, 1.5 beyond a tenth of the pool; 10 connections held 150 ms
		// a call bear 66.7 calls/s; waits a third of the hold: the share
		// aimed at comes down half a point, to 96.5%.
		{"a backlog drains within 2 s", pooled(50, 200*ms, 150*ms, 10, 70, 66.67, 0), 63.58, 63.58, admission.RateDraining, 66.67},
		// Above the target (250 ms): within 1 s, and never up. 10 waiting,
		// 8 beyond a tenth of the pool.
		{"above the target, a backlog: drains faster", pooled(50, 400*ms, 200*ms, 20, 100, 100, 0), 88.5, 88.5, admission.RateDraining, 100},
		{"above the target: never up", pooled(50, 300*ms, 300*ms, 20, 40, 66.7, 0), 40, 40, admission.RateHold, 66.68},
		{"never below half the capacity", pooled(50, 3*time.Second, 200*ms, 20, 100, 100, 0), 50, 50, admission.RateDraining, 100},
		{"never above the ceiling", pooled(50, 10*ms, 10*ms, 20, 99, 0, 0), 100, 100, admission.RateGrow, 2000},
		{"never below the floor", pooled(50, 2*time.Second, 2*time.Second, 2, 20, 0, 0), 10, 10, admission.RateBackOff, 1},
		// Without a pool (a gateway).
		{"no capacity known, under the target: 10% up", gateway(50, 150*ms, 0, 60, 0, 0, 0), 66, 66, admission.RateGrow, 0},
		{"no capacity known, just under: 2% up", gateway(50, 245*ms, 0, 60, 0, 0, 0), 61.2, 61.2, admission.RateGrow, 0},
		{"no capacity known, above: down to target/p90", gateway(50, 340*ms, 0, 60, 0, 0, 0), 42.5, 45, admission.RateBackOff, 0},
		{"no capacity known, far above: at most half", gateway(50, 3*time.Second, 0, 60, 0, 0, 0), 30, 30, admission.RateBackOff, 0},
		// Base 100 ms, mean 200 ms: queueing; 50 completed, 5 waiting.
		{"queueing: what it completed is its capacity", gateway(50, 200*ms, 0, 60, 100*ms, 45, 0), 46.5, 46.5, admission.RateDraining, 50},
		{"not queueing: toward the capacity known", gateway(50, 110*ms, 0, 60, 100*ms, 45, 80), 78.4, 78.4, admission.RateGrow, 80},
		{"not queueing, at it: hold there", gateway(50, 110*ms, 0, 78.4, 100*ms, 45, 80), 78.4, 78.4, admission.RateGrow, 80},
		{"a base too old: probe at half", gateway(50, 200*ms, 0, 60, 100*ms, 20, 50), 30, 30, admission.RateProbe, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := admission.NextRate(c, tc.w)
			if d.Rate < tc.low || d.Rate > tc.top || d.Kind != tc.kind || math.Abs(d.Capacity-tc.capacity) > 0.01 {
				t.Fatalf("NextRate = %v (%s: %q, capacity %v), want %v..%v (%s, capacity %v)", d.Rate, d.Kind, d.Why, d.Capacity, tc.low, tc.top, tc.kind, tc.capacity)
			}
			if d.Window != tc.w.ID {
				t.Fatalf("decision %+v on window %d", d.RateDecision, tc.w.ID)
			}
		})
	}
}

// TestShareFollowsWaits: the share of the pool's capacity aimed at comes
// down half a point while calls wait for a connection more than 8% of
// their hold (smoothed over windows, a third of the way each), goes up
// half a point while they wait under 5%, holds between, comes down while
// the p90 is above the target whatever the wait, and stays within
// [0.8, 0.99].
func TestShareFollowsWaits(t *testing.T) {
	c := nextRateConfig()
	ms := time.Millisecond
	for _, tc := range []struct {
		name             string
		latency, held    time.Duration
		share, waited    float64 // the last decision's
		want, wantWaited float64
	}{
		{"no wait: up half a point", 200 * ms, 200 * ms, 0.95, 0.03, 0.955, 0.02},
		{"waits 6% of the hold: held", 212 * ms, 200 * ms, 0.95, 0.06, 0.95, 0.06},
		{"waits 30%: down half a point", 260 * ms, 200 * ms, 0.95, 0.06, 0.945, 0.14},
		{"one window's 12% after 6%: still under", 224 * ms, 200 * ms, 0.95, 0.06, 0.95, 0.08},
		{"never above 0.99", 200 * ms, 200 * ms, 0.99, 0, 0.99, 0},
		{"never below 0.8", 260 * ms, 200 * ms, 0.8, 0.3, 0.8, 0.3},
		{"first decision: from 0.97, its own wait", 200 * ms, 200 * ms, 0, 0, 0.975, 0},
		{"no wait, the p90 above the target (250 ms): down half a point", 300 * ms, 300 * ms, 0.95, 0.03, 0.945, 0.02},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pooled(50, tc.latency, tc.held, 20, 60, 100, 0)
			w.Last.Share, w.Last.Waited = tc.share, tc.waited
			d := admission.NextRate(c, w)
			if math.Abs(d.Share-tc.want) > 1e-9 || math.Abs(d.Waited-tc.wantWaited) > 1e-9 {
				t.Errorf("share %v, waited %v (%q), want %v, %v", d.Share, d.Waited, d.Why, tc.want, tc.wantWaited)
			}
		})
	}
}

// TestGatewayProbesWhileUnqueued: without a pool, a backend that answers
// as fast as it does unqueued (within 3% of its base latency) is probed 5%
// above the rate, so that one that bears more than it was ever asked is
// found; within the band above (3–10%) the rate holds.
func TestGatewayProbesWhileUnqueued(t *testing.T) {
	c := nextRateConfig()
	if d := admission.NextRate(c, gateway(50, 102*time.Millisecond, 0, 78.4, 100*time.Millisecond, 45, 80)); d.Kind != admission.RateGrow || math.Abs(d.Rate-82.32) > 0.01 {
		t.Errorf("at 102 ms of a 100 ms base: %v (%s: %q), want 82.32, 5%% above", d.Rate, d.Kind, d.Why)
	}
	if d := admission.NextRate(c, gateway(50, 108*time.Millisecond, 0, 78.4, 100*time.Millisecond, 45, 80)); d.Rate != 78.4 {
		t.Errorf("at 108 ms of a 100 ms base: %v (%s: %q), want 78.4 held", d.Rate, d.Kind, d.Why)
	}
}

// TestCallsPerUserMeasured: the calls each admitted user makes are
// measured where the rate held for two windows (before that, the calls
// completed are those of users let in at the rate before), half a point a
// window toward the window's ratio, from one; within 2% of it, held.
func TestCallsPerUserMeasured(t *testing.T) {
	c := nextRateConfig()
	for _, tc := range []struct {
		name         string
		last, steady int64
		perUser      float64
		admitted     int64 // 50 calls were made
		want         float64
	}{
		{"from one, half a point up", 1, 10, 0, 40, 1.005},
		{"half a point up, however far", 1, 10, 1.8, 25, 1.805},
		{"half a point down, however far", 1, 10, 1, 100, 0.995},
		{"within 2%: held", 1, 10, 1.01, 50, 1.01},
		{"not right after a change", 1, 49, 1, 25, 1},
		{"nor on the first decision", 0, 0, 0, 25, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pooled(50, 200*time.Millisecond, 200*time.Millisecond, 20, 25, 100, tc.perUser)
			w.Admitted, w.Last.Window, w.Last.Steady = tc.admitted, tc.last*49, tc.steady
			d := admission.NextRate(c, w)
			if math.Abs(d.CallsPerUser-tc.want) > 1e-9 {
				t.Errorf("%v calls per user (%q), want %v", d.CallsPerUser, d.Why, tc.want)
			}
		})
	}
}

// TestPaceMeasured: admission at 50/s measures 50/s; with 30% no-shows the
// front moves at ~71/s, which the estimate then uses; a pause stops the
// clock rather than read as slowness.
func TestPaceMeasured(t *testing.T) {
	clock := newFakeClock()
	store := memstore.New(clock.Now)
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 50, 10, 100*time.Millisecond
	if err := store.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	const users = 20_000
	for i := range users {
		if _, err := store.Enter(ctx, "q", fmt.Sprintf("u%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	pace := func() queue.Pace {
		e, err := store.Status(ctx, "q", fmt.Sprintf("u%d", users-1))
		if err != nil {
			t.Fatal(err)
		}
		return e.Pace
	}
	// ticks runs admission for d on the fake clock; every 5 s the present
	// (70% of users: i%10 ≥ 3) ask for their status.
	ticks := func(d time.Duration) {
		for elapsed := time.Duration(0); elapsed < d; elapsed += c.Interval {
			if elapsed%(5*time.Second) == 0 {
				var present []string
				for i := range users {
					if i%10 >= 3 {
						present = append(present, fmt.Sprintf("u%d", i))
					}
				}
				store.Seen(ctx, "q", present, false)
			}
			if a, err := store.Admit(ctx, "q", queue.NewTokens(c.BatchSize)); err != nil || !a.Ticked {
				t.Fatalf("tick: %+v, %v", a, err)
			}
			clock.Add(c.Interval)
		}
	}
	ticks(500 * time.Millisecond)
	if p := pace(); p.Measured != 0 {
		t.Fatalf("after half a second the pace is known: %v", p.Measured)
	}
	ticks(30 * time.Second)
	if p := pace(); p.Measured < 0.97*50 || p.Measured > 1.03*50 || p.EstimateRate() != 50 {
		t.Fatalf("measured %v/s (estimate from %v), want about the configured 50", p.Measured, p.EstimateRate())
	}

	c.AbandonAfter = 15 * time.Second
	store.PutConfig(ctx, "q", c)
	ticks(3 * time.Minute) // long enough for the minute before the no-shows to fade
	p := pace()
	if p.Measured < 0.96*50/0.7 || p.Measured > 1.03*50/0.7 {
		t.Fatalf("measured %v/s, want about %v (50/s admitted, 30%% skipped)", p.Measured, 50/0.7)
	}
	if r := p.EstimateRate(); math.Abs(r-p.Measured) > 0.03*p.Measured || math.Abs(p.Claim-0.7) > 0.03 {
		t.Fatalf("the front moves at %v/s with %v of those leaving it admitted, want the measured %v and 0.7", r, p.Claim, p.Measured)
	}
	c.Paused = true
	store.PutConfig(ctx, "q", c)
	ticks(time.Minute)
	if after := pace(); math.Abs(after.Measured-p.Measured) > 0.01*p.Measured {
		t.Fatalf("a minute paused moved the pace from %v to %v", p.Measured, after.Measured)
	}
}

// TestStalledOnTheFakeClock: the front standing still for 2 s while
// people wait and admission runs is stalled; a paused line is not.
func TestStalledOnTheFakeClock(t *testing.T) {
	clock := newFakeClock()
	store := memstore.New(clock.Now)
	svcLine := signals.New()
	svc := queue.NewService(store, 0, svcLine)
	op := operate.New(store, svcLine)
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.MaxActiveTokens = 1 // one token held, nobody more gets in
	if err := op.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "b", "c"} {
		svc.Enter(ctx, "q", u)
	}
	if _, err := store.Admit(ctx, "q", queue.NewTokens(10)); err != nil {
		t.Fatal(err)
	}
	const after = 2 * time.Second // the default 100 ms tick at 100/s: ten ticks are less than the 2 s floor
	for elapsed := time.Duration(0); elapsed <= after+time.Second; elapsed += c.Interval {
		clock.Add(c.Interval)
		store.Admit(ctx, "q", queue.NewTokens(10)) // the cap lets nobody in
		v, err := svc.Status(ctx, "q", "c")
		if err != nil {
			t.Fatal(err)
		}
		if want := elapsed+c.Interval > after; v.Stalled != want {
			t.Fatalf("%v after the last admission: stalled %v, want %v", elapsed+c.Interval, v.Stalled, want)
		}
	}
	c.Paused = true
	op.PutConfig(ctx, "q", c)
	if v, _ := svc.Status(ctx, "q", "c"); v.Stalled || !v.Paused {
		t.Fatalf("paused: %+v", v)
	}
}

// TestNoShowsOnTheFakeClock: at AbandonAfter exactly a user is still
// present, a millisecond later gone; status polls within reach mark users
// (through the Service, batched, then flushed), polls beyond it do not; and
// only users near the front for AbandonAfter are judged, so a block of
// no-shows skipped at once does not take those behind it along.
func TestNoShowsOnTheFakeClock(t *testing.T) {
	clock := newFakeClock()
	store := memstore.New(clock.Now)
	svcLine := signals.New()
	svc := queue.NewService(store, 0, svcLine)
	op := operate.New(store, svcLine)
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval, c.AbandonAfter = 1, 1, time.Second, 15*time.Second
	if err := op.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := svc.Enter(ctx, "q", fmt.Sprintf("u%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// u0 in. The tick sets the reach of seen marks, 4 × 15 s × 1/s + 2 = 62,
	// and a checkpoint: the tickets within it (up to the 62nd in line, u61's
	// ticket 62) will be judged from 15 s on.
	store.Admit(ctx, "q", queue.NewTokens(1))
	e, _ := store.Status(ctx, "q", "u199")
	if e.Pace.Reach != 62 {
		t.Fatalf("reach %d, want 62", e.Pace.Reach)
	}
	clock.Add(15 * time.Second) // everyone was seen entering, 15 s ago: still present
	if a, _ := store.Admit(ctx, "q", queue.NewTokens(1)); !slices.Equal(a.Admitted, []string{"u1"}) || a.Skipped != 0 {
		t.Fatalf("at exactly abandonAfter: %+v, want u1 admitted", a)
	}
	clock.Add(time.Millisecond)
	// u2 polls through the service (within reach: marked); u199 polls too,
	// but far back its poll leaves no mark.
	svc.Status(ctx, "q", "u2")
	svc.Status(ctx, "q", "u199")
	// RunPresence sends the marks it holds when it stops: stopped at once,
	// it flushes exactly once, whatever the machine's load.
	flush := func() {
		t.Helper()
		fctx, cancel := context.WithCancel(ctx)
		cancel()
		svc.RunPresence(fctx, discard())
	}
	flush()
	a, _ := store.Admit(ctx, "q", queue.NewTokens(1))
	if !slices.Equal(a.Admitted, []string{"u2"}) || a.Skipped != 0 {
		t.Fatalf("u2 marked by its poll: %+v", a)
	}
	clock.Add(2 * time.Second)
	// u3 … u61, silent 17 s and judged, are skipped; u62, as silent but
	// beyond the reach 17 s ago (too far back to be marked), is not judged
	// yet: admitted.
	a, _ = store.Admit(ctx, "q", queue.NewTokens(1))
	if a.Skipped != 59 || !slices.Equal(a.Admitted, []string{"u62"}) {
		t.Fatalf("silent users: %+v, want u3…u61 skipped and u62 admitted", a)
	}
	if e, _ := store.Status(ctx, "q", "u3"); e.State != queue.NotInQueue {
		t.Fatalf("a skipped user is %s", e.State)
	}
	st, _ := store.Stats(ctx, "q")
	if st.AbandonedTotal != 59 {
		t.Fatalf("abandoned %d, want 59", st.AbandonedTotal)
	}
	if e, _ := store.Status(ctx, "q", "u199"); e.State != queue.Waiting {
		t.Fatalf("u199: %s", e.State)
	}
}

// TestTwoControllersOneDecisionPerWindow: two instances' controllers fold
// their calls into the same windows; each window is decided once, the rate
// moves down under slow calls and up under fast ones, never past its bounds.
func TestTwoControllersOneDecisionPerWindow(t *testing.T) {
	clock := newFakeClock()
	store := memstore.New(clock.Now)
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.Adaptive, c.RatePerSecond, c.MinRate, c.MaxRate, c.TargetLatency = true, 60, 20, 100, 250*time.Millisecond
	if err := store.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		store.Enter(ctx, "q", fmt.Sprintf("u%d", i))
	}
	a, b := admission.NewRateController(store, discard()), admission.NewRateController(store, discard())
	rate := func() float64 {
		st, _ := store.Stats(ctx, "q")
		return st.EffectiveRate
	}
	run := func(latency time.Duration, windows int) []float64 {
		var rates []float64
		for range windows {
			for range 10 {
				a.Observe("q", latency, 0, 0, false)
				b.Observe("q", latency, 0, 0, false)
			}
			a.Flush(ctx)
			b.Flush(ctx)
			clock.Add(admission.DefaultRateWindow)
			rates = append(rates, rate())
		}
		return rates
	}
	slow := run(time.Second, 12)
	if slow[len(slow)-1] != c.MinRate {
		t.Fatalf("under 1 s calls the rate went %v, want down to the floor %v", slow, c.MinRate)
	}
	fast := run(20*time.Millisecond, 30)
	if fast[len(fast)-1] != c.MaxRate {
		t.Fatalf("under 20 ms calls the rate went %v, want up to the ceiling %v", fast, c.MaxRate)
	}
	changes, _ := store.RateChanges(ctx, "q")
	seen := map[string]bool{}
	for _, ch := range changes {
		if ch.Rate < c.MinRate || ch.Rate > c.MaxRate {
			t.Fatalf("a change outside the bounds: %+v", ch)
		}
		if seen[ch.At.String()] {
			t.Fatalf("two decisions at %v (one window): %+v", ch.At, changes)
		}
		seen[ch.At.String()] = true
	}
	if len(changes) < 6 {
		t.Fatalf("%d changes recorded: %+v", len(changes), changes)
	}
}

// TestOpeningOnTheFakeClock: before opensAt entering is the pre-queue with
// a poll hint from the time left; at opensAt the admitter places it even
// though admission is paused; after, entering joins the line behind it.
func TestOpeningOnTheFakeClock(t *testing.T) {
	clock := newFakeClock()
	store := memstore.New(clock.Now)
	svcLine := signals.New()
	svc := queue.NewService(store, 0, svcLine)
	op := operate.New(store, svcLine)
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.Paused = true
	c.OpensAt = clock.Now().Add(time.Hour)
	if err := op.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	v, err := svc.Enter(ctx, "q", "early")
	if err != nil || !v.OpensAt.Equal(c.OpensAt) || v.Position != 0 || *v.PollAfterSeconds < 8 {
		t.Fatalf("an hour before: %+v, %v", v, err)
	}
	o, _, err := admission.OpenLine(ctx, store, "q", "me", admission.Drawer{Participants: draw.NewParticipants([]byte("k"))})
	if err != nil || o.Due || o.In != time.Hour {
		t.Fatalf("an hour before, OpenLine: %+v, %v", o, err)
	}
	for i := range 9 {
		svc.Enter(ctx, "q", fmt.Sprintf("p%d", i))
	}
	clock.Add(time.Hour)
	o, placed, err := admission.OpenLine(ctx, store, "q", "me", admission.Drawer{Participants: draw.NewParticipants([]byte("k"))})
	if err != nil || !o.Due || placed != 10 {
		t.Fatalf("at opensAt: %+v, placed %d, %v", o, placed, err)
	}
	v, _ = svc.Enter(ctx, "q", "late")
	if v.Position != 11 || !v.Paused {
		t.Fatalf("entering after the opening: %+v, want 11th, paused", v)
	}
	st, _ := store.Stats(ctx, "q")
	if st.Length != 11 || st.PreQueued != 0 {
		t.Fatalf("after the opening: %+v", st)
	}
}

// TestNextRateGoesByKind: the next decision goes by what the last one did
// (RateDecision.Kind), never by its words, which are for people: the
// window after a probe refreshes the base latency whatever the probe's
// words, and words that read like a probe on a decision that grew
// refresh nothing.
func TestNextRateGoesByKind(t *testing.T) {
	c := nextRateConfig()
	w := gateway(50, 150*time.Millisecond, 0, 30, 100*time.Millisecond, 20, 50)
	w.Last.Kind, w.Last.Why = admission.RateProbe, "reworded for the admin page"
	if d := admission.NextRate(c, w); d.Base != 150*time.Millisecond || d.BaseAt != w.ID {
		t.Errorf("after a probe, reworded: base %v at %d, want 150ms at %d", d.Base, d.BaseAt, w.ID)
	}
	w.Last.Kind, w.Last.Why = admission.RateGrow, "probe: the base latency 100ms is 30 windows old"
	if d := admission.NextRate(c, w); d.Base != 100*time.Millisecond || d.Kind != admission.RateProbe {
		t.Errorf("after growing, with a probe's words: base %v (%s), want 100ms kept, and a probe", d.Base, d.Kind)
	}
}
