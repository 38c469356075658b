package admission_test

// Admission that follows the backend, on the in-process store's injected
// clock: every time here is the fake clock's, so nothing depends on how
// busy the machine is.

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

func windowOf(calls int, latency time.Duration, failed int, waiting int64, rate float64) queue.RateWindow {
	var s queue.RateSample
	for i := range calls {
		s.Add(latency, i < failed)
	}
	return queue.RateWindow{Samples: s, Rate: rate, Waiting: waiting}
}

// cutAgo makes w the window n windows after a back-off from knee on
// window 10 (when n > 1, held after it with the latency at lastP90).
func cutAgo(w queue.RateWindow, n int64, knee float64, lastP90 time.Duration) queue.RateWindow {
	w.ID = 10 + n
	w.Last = queue.RateDecision{Window: w.ID - 1, Kind: admission.RateBackOff, Why: "back off: p90 1s above the target 250ms", P90: lastP90, Knee: knee}
	if n > 1 {
		w.Last.Kind, w.Last.Why = admission.RateWaitShow, "hold, the last back-off has yet to show: p90 900ms above the target 250ms"
	}
	return w
}

// measured makes w a window in which admitted users were let in, after
// decisions that measured perUser calls per user.
func measured(w queue.RateWindow, perUser float64, admitted int64) queue.RateWindow {
	w.Admitted, w.Last.CallsPerUser = admitted, perUser
	return w
}

// withKnee makes w a window long after a back-off from knee.
func withKnee(w queue.RateWindow, knee float64) queue.RateWindow {
	w.ID = 50
	w.Last = queue.RateDecision{Window: 49, Kind: admission.RateGrow, Why: "grow: p90 200ms under the target 250ms", Knee: knee}
	return w
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
	for _, tc := range []struct {
		name     string
		w        queue.RateWindow
		low, top float64 // the next rate lies in [low, top]
		why      string
		knee     float64 // the knee it remembers
	}{
		{"too few calls: hold", windowOf(2, 900*time.Millisecond, 0, 50, 60), 60, 60, "hold", 0},
		{"failures: back off to 70%", windowOf(50, 100*time.Millisecond, 2, 50, 60), 42, 42, "back off", 60},
		{"one failure in a hundred is noise", windowOf(100, 100*time.Millisecond, 1, 50, 60), 66, 66, "grow", 0},
		{"latency a little above: at least 10% down", windowOf(50, 260*time.Millisecond, 0, 50, 60), 54, 54, "back off", 60},
		{"latency above: down to target/p90", windowOf(50, 340*time.Millisecond, 0, 50, 60), 42.5, 45, "back off", 60},
		{"latency above: at most 30% down", windowOf(50, 355*time.Millisecond, 0, 50, 60), 42, 42, "back off", 60},
		{"latency far above: at most half", windowOf(50, 3*time.Second, 0, 50, 60), 30, 30, "back off", 60},
		{"the window right after a back-off: hold", cutAgo(windowOf(50, 900*time.Millisecond, 0, 50, 42), 1, 60, time.Second), 42, 42, "hold, the last back-off has yet to show", 60},
		{"after a back-off, failures: back off", cutAgo(windowOf(50, 100*time.Millisecond, 5, 50, 42), 1, 60, time.Second), 29.4, 29.4, "back off", 42},
		{"then the p90 falling: hold", cutAgo(windowOf(50, 600*time.Millisecond, 0, 50, 42), 2, 60, 900*time.Millisecond), 42, 42, "hold, draining", 60},
		{"then the p90 rising: back off again", cutAgo(windowOf(50, 600*time.Millisecond, 0, 50, 42), 2, 60, 500*time.Millisecond), 21, 21, "back off", 42},
		{"nobody waiting: hold", windowOf(50, 100*time.Millisecond, 0, 0, 60), 60, 60, "hold", 0},
		{"far under the target, no knee known: 10% up", windowOf(50, 150*time.Millisecond, 0, 50, 60), 66, 66, "grow", 0},
		{"just under the target, no knee known: 2% up", windowOf(50, 245*time.Millisecond, 0, 50, 60), 61.2, 61.2, "grow", 0},
		{"behind a backlog: cut, and what the backend completes is the knee", measured(windowOf(50, 3*time.Second, 0, 50, 60), 1, 60), 30, 30, "back off", 50},
		{"behind a backlog: no lower than half of what the backend completes", measured(windowOf(80, 3*time.Second, 0, 50, 60), 1, 60), 40, 40, "back off", 80},
		{"already at most half of what it completes: hold, draining", measured(windowOf(50, 3*time.Second, 0, 50, 20), 1, 20), 20, 20, "hold, draining", 0},
		{"calls per user count: two calls each", measured(windowOf(100, 3*time.Second, 0, 50, 60), 2, 60), 30, 30, "back off", 50},
		{"below the knee: 10% up, to 90% of it at most", withKnee(windowOf(50, 200*time.Millisecond, 0, 50, 60), 70), 63, 63, "grow", 70},
		{"near the knee: 2% up", withKnee(windowOf(50, 200*time.Millisecond, 0, 50, 64), 70), 65.28, 65.28, "grow", 70},
		{"just past the knee: a little more than 2% up", withKnee(windowOf(50, 200*time.Millisecond, 0, 50, 71.4), 70), 73.11, 73.11, "grow", 70},
		{"far past the knee: faster", withKnee(windowOf(50, 200*time.Millisecond, 0, 50, 83), 70), 87.74, 87.74, "grow", 70},
		{"very far past the knee: at most 10%", withKnee(windowOf(50, 200*time.Millisecond, 0, 50, 83), 40), 91.3, 91.3, "grow", 40},
		{"never above the ceiling", windowOf(50, 10*time.Millisecond, 0, 50, 99), 100, 100, "grow", 0},
		{"never below the floor", windowOf(50, 0, 50, 50, 11), 10, 10, "back off", 11},
		{"never below the floor by latency", windowOf(50, 5*time.Second, 0, 50, 11), 10, 10, "back off", 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := admission.NextRate(c, tc.w)
			if d.Rate < tc.low || d.Rate > tc.top || !strings.HasPrefix(d.Why, tc.why) || d.Knee != tc.knee {
				t.Fatalf("NextRate = %v (%q, knee %v), want %v..%v (%s…, knee %v)", d.Rate, d.Why, d.Knee, tc.low, tc.top, tc.why, tc.knee)
			}
			if d.Window != tc.w.ID {
				t.Fatalf("decision %+v on window %d", d.RateDecision, tc.w.ID)
			}
		})
	}
}

// TestCallsPerUserMeasured: a window under the target measures the calls
// each admitted user makes: the first measure as it is, then a third of
// the way up and a twentieth down (a window in which the backend fell
// behind measures too few); one above the target does not measure.
func TestCallsPerUserMeasured(t *testing.T) {
	c := nextRateConfig()
	for _, tc := range []struct {
		name string
		w    queue.RateWindow
		want float64
		why  string
	}{
		{"first measure", measured(windowOf(50, 100*time.Millisecond, 0, 50, 60), 0, 25), 2, "grow"},
		{"up: a third of the way at once", measured(windowOf(50, 100*time.Millisecond, 0, 50, 60), 1, 25), 1.3, "grow"},
		{"a little down: slowly", measured(windowOf(47, 100*time.Millisecond, 0, 50, 60), 1, 50), 0.997, "grow"},
		{"behind: hold, and drift down", measured(windowOf(50, 100*time.Millisecond, 0, 50, 60), 1, 100), 0.975, "hold: the backend completed 50 calls"},
		{"above the target: kept", measured(windowOf(50, time.Second, 0, 50, 60), 1, 100), 1, "back off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := admission.NextRate(c, tc.w)
			if math.Abs(d.CallsPerUser-tc.want) > 1e-9 || !strings.HasPrefix(d.Why, tc.why) {
				t.Errorf("%v calls per user (%q), want %v (%s…)", d.CallsPerUser, d.Why, tc.want, tc.why)
			}
			if strings.HasPrefix(tc.why, "hold") && d.Rate != tc.w.Rate {
				t.Errorf("falling behind, the rate moved %v → %v", tc.w.Rate, d.Rate)
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
				store.Seen(ctx, "q", present)
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
	if r := p.EstimateRate(); r != p.Measured {
		t.Fatalf("estimate uses %v, the measured %v differs from the configured 50 by more than a tenth", r, p.Measured)
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
				a.Observe("q", latency, false)
				b.Observe("q", latency, false)
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

// TestDrawOrderIsUniform: all 24 orders of four users come up equally often
// over 24,000 draws (chi-square, 23 degrees of freedom, p > 0.01 below
// 41.64), with a seeded source so the test repeats; the admitter's source
// is crypto/rand.
func TestDrawOrderIsUniform(t *testing.T) {
	src := mrand.NewChaCha8([32]byte{1})
	counts := map[string]int{}
	const draws = 24_000
	for range draws {
		order, err := admission.DrawOrder([]string{"a", "b", "c", "d"}, src)
		if err != nil {
			t.Fatal(err)
		}
		counts[fmt.Sprint(order)]++
	}
	if len(counts) != 24 {
		t.Fatalf("%d orders seen, want 24", len(counts))
	}
	chi := 0.0
	for _, n := range counts {
		d := float64(n) - draws/24
		chi += d * d / (draws / 24)
	}
	if chi > 41.638 {
		t.Fatalf("chi-square %.2f: not uniform: %v", chi, counts)
	}
	if a := admission.NewAdmitter(nil, discard(), nil, nil); a.Random != rand.Reader {
		t.Fatal("the admitter does not draw from crypto/rand")
	}
	// Every user stays in the draw, once.
	users := make([]string, 1000)
	for i := range users {
		users[i] = fmt.Sprint(i)
	}
	order, err := admission.DrawOrder(slices.Clone(users), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(order)
	slices.Sort(users)
	if !slices.Equal(order, users) {
		t.Fatal("the draw lost or repeated users")
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
	o, _, err := admission.OpenLine(ctx, store, "q", "me", rand.Reader)
	if err != nil || o.Due || o.In != time.Hour {
		t.Fatalf("an hour before, OpenLine: %+v, %v", o, err)
	}
	for i := range 9 {
		svc.Enter(ctx, "q", fmt.Sprintf("p%d", i))
	}
	clock.Add(time.Hour)
	o, placed, err := admission.OpenLine(ctx, store, "q", "me", rand.Reader)
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
// (RateDecision.Kind), never by its words, which are for people: a
// back-off reworded still holds the window after it, and words that read
// like a back-off on a decision that grew hold nothing.
func TestNextRateGoesByKind(t *testing.T) {
	c := nextRateConfig()
	w := cutAgo(windowOf(50, 600*time.Millisecond, 0, 50, 42), 1, 60, time.Second)
	w.Last.Why = "reworded for the admin page"
	if d := admission.NextRate(c, w); d.Kind != admission.RateWaitShow || d.Rate != 42 {
		t.Errorf("after a back-off, reworded: %v (%s, %q), want a hold at 42", d.Rate, d.Kind, d.Why)
	}
	w.Last.Kind, w.Last.Why = admission.RateGrow, "back off: p90 1s above the target 250ms"
	if d := admission.NextRate(c, w); d.Kind != admission.RateBackOff || d.Rate >= 42 {
		t.Errorf("after growing, with a back-off's words: %v (%s, %q), want a back-off", d.Rate, d.Kind, d.Why)
	}
}
