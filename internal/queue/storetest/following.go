package storetest

// The suite's part for admission that follows the backend: the adaptive
// rate's windows and bounds, no-shows skipped, the line's pace, and a fair
// opening. Each store runs them on its own clock (Redis TIME, or the
// process's), so the times here are generous multiples of the configured
// ones; the memstore package drives the same rules on a fake clock.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
)

var followingTests = []struct {
	name string
	fn   func(t *testing.T, s queue.Store, clock Clock)
}{
	{"AdaptiveRateOneDecisionPerWindow", testAdaptiveWindows},
	{"AdaptiveRateNeverLeavesItsBounds", testAdaptiveBounds},
	{"AdaptiveRateRemembersItsLastDecision", testRateMemory},
	{"AdaptiveRateDecidesAWindowClaimedLate", testRateLate},
	{"NoShowsSkippedPresentAdmittedInOrder", testNoShowProperty},
	{"NoShowBackAskingIsSeenAtOnce", testNoShowBackAsking},
	{"StalledWhenTheFrontStandsStill", testStalled},
	{"OpeningPlacesInTheDrawnOrder", testOpeningOrders},
	{"OpeningReservesTicketsAheadOfLaterEntries", testOpeningWhilePlacing},
}

func adaptiveConfig() queue.Config {
	c := fastConfig()
	c.Adaptive, c.RatePerSecond, c.MinRate, c.MaxRate = true, 2000, 500, 5000
	c.TargetLatency = 100 * time.Millisecond
	return c
}

// testAdaptiveWindows: four "instances" fold samples concurrently into
// 20 ms windows; every window is claimed at most once, with at least
// RateMinCalls calls (fewer join the next window), and the claims carry no
// call that was not folded (a window nobody reported in for longer than
// admission.RateLateWindows is dropped as stale, so on a stalled machine
// some may be lost).
func testAdaptiveWindows(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, adaptiveConfig())
	const window = 20 * time.Millisecond
	var mu sync.Mutex
	var folded, claimed int64
	claims := map[int64]int{}
	var wg sync.WaitGroup
	for inst := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(inst), 9))
			for range 60 {
				var sample queue.RateSample
				for range 1 + rnd.IntN(5) {
					sample.Add(time.Duration(rnd.IntN(200))*time.Millisecond, 0, 0, rnd.IntN(10) == 0)
				}
				w, err := s.FoldRate(ctx, q, sample, window)
				if err != nil {
					t.Errorf("FoldRate: %v", err)
					return
				}
				mu.Lock()
				folded += sample.Calls
				if w.Claimed {
					claimed += w.Samples.Calls
					claims[w.ID]++
					if w.Samples.Calls < admission.RateMinCalls {
						t.Errorf("window %d decided on %d calls", w.ID, w.Samples.Calls)
					}
				}
				mu.Unlock()
				clock.Sleep(time.Duration(rnd.IntN(8)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if len(claims) == 0 {
		t.Fatal("no window was ever claimed")
	}
	for w, n := range claims {
		if n != 1 {
			t.Errorf("window %d claimed %d times", w, n)
		}
	}
	if claimed > folded || claimed < admission.RateMinCalls {
		t.Errorf("the claims carried %d calls, %d were folded", claimed, folded)
	}
}

// testRateLate: a window whose next call comes a few windows late (every
// instance's flush delayed on a loaded machine) is still decided on by that
// call, with its samples; one whose next call comes more than
// admission.RateLateWindows late is dropped, its samples with it.
func testRateLate(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, adaptiveConfig())
	const window = 50 * time.Millisecond
	var sample queue.RateSample
	for range admission.RateMinCalls {
		sample.Add(30*time.Millisecond, 0, 0, false)
	}
	try := func(late int64) (queue.RateWindow, int64) {
		t.Helper()
		for range 50 {
			first, err := s.FoldRate(ctx, q, sample, window)
			if err != nil {
				t.Fatal(err)
			}
			clock.Sleep(time.Duration(late) * window)
			w, err := s.FoldRate(ctx, q, queue.RateSample{}, window)
			if err != nil {
				t.Fatal(err)
			}
			if w.Folded-first.Folded == late { // a slow machine may wake later than asked: try again
				return w, first.Folded
			}
		}
		t.Fatalf("no fold landed %d windows after another in 50 tries", late)
		return queue.RateWindow{}, 0
	}
	if w, id := try(3); !w.Claimed || w.ID != id || w.Samples.Calls != admission.RateMinCalls {
		t.Errorf("three windows late: claimed %v window %d with %d calls; want window %d's %d", w.Claimed, w.ID, w.Samples.Calls, id, admission.RateMinCalls)
	}
	if w, _ := try(admission.RateLateWindows + 2); w.Claimed {
		t.Errorf("%d windows late: window %d claimed with %d calls; want its samples dropped", admission.RateLateWindows+2, w.ID, w.Samples.Calls)
	}
}

// testAdaptiveBounds: decisions on windows of every kind of sample, and
// rates asked for outside the bounds, leave the rate in force within
// [MinRate, MaxRate]; a decision on an older window, or while the rate is
// not adaptive, writes nothing; switching adaptive on starts from
// admission.AdaptiveStart, and admission uses the rate in force.
func testAdaptiveBounds(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := adaptiveConfig()
	q := newQueue(t, s, c)
	effective := func() float64 {
		t.Helper()
		st, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return st.EffectiveRate
	}
	if r, want := effective(), admission.AdaptiveStart(c); r != want {
		t.Fatalf("switched on: the rate in force is %v, want %v (the configured %v)", r, want, c.RatePerSecond)
	}
	if st, err := s.Stats(ctx, q); err != nil || st.EffectiveWhy != admission.AdaptiveStartWhy {
		t.Fatalf("switched on: the rate's reason is %q (%v), want %q", st.EffectiveWhy, err, admission.AdaptiveStartWhy)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	id := int64(1)
	for step := range 60 {
		var rate float64
		switch step % 3 {
		case 0: // what NextRate makes of a random window
			var sample queue.RateSample
			for range rnd.IntN(40) {
				sample.Add(time.Duration(rnd.IntN(400))*time.Millisecond, 0, 0, rnd.IntN(20) == 0)
			}
			rate = admission.NextRate(c, queue.RateWindow{Samples: sample, Rate: effective(), Waiting: int64(rnd.IntN(2))}).Rate
		case 1:
			rate = c.MaxRate * (1 + rnd.Float64()*10)
		case 2:
			rate = c.MinRate * rnd.Float64()
		}
		id++
		if _, ok, err := s.SetRate(ctx, q, queue.RateDecision{Window: id, Rate: rate, Why: fmt.Sprintf("step %d", step)}); err != nil || !ok {
			t.Fatalf("SetRate(%d, %v): %v, %v", id, rate, ok, err)
		}
		if r := effective(); r < c.MinRate || r > c.MaxRate {
			t.Fatalf("step %d: asked for %v, the rate in force is %v, outside [%v, %v]", step, rate, r, c.MinRate, c.MaxRate)
		}
	}
	if _, ok, _ := s.SetRate(ctx, q, queue.RateDecision{Window: id - 1, Rate: c.MinRate, Why: "late"}); ok {
		t.Error("a decision on an older window was written")
	}
	// The rate in force drives admission: the floor, 500/s, is half a user per 1 ms tick.
	if _, _, err := s.SetRate(ctx, q, queue.RateDecision{Window: id + 1, Rate: c.MaxRate, Why: "ceiling"}); err != nil {
		t.Fatal(err)
	}
	id++
	if _, _, err := s.SetRate(ctx, q, queue.RateDecision{Window: id + 1, Rate: c.MinRate, Why: "floor"}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	admitted := 0
	for range 10 {
		admitted += len(admitDue(t, s, clock, q, c.BatchSize))
	}
	if admitted < 4 || admitted > 6 {
		t.Errorf("ten 1 ms ticks at 500/s admitted %d, want about 5", admitted)
	}
	changes, err := s.RateChanges(ctx, q)
	if err != nil || len(changes) < 2 || changes[len(changes)-1].Rate != c.MinRate || changes[len(changes)-1].Why != "floor" {
		t.Fatalf("rate changes %+v, %v; want the last to be the floor", changes, err)
	}

	c.Adaptive = false
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.SetRate(ctx, q, queue.RateDecision{Window: id + 3, Rate: 4000, Why: "off"}); ok || effective() != c.RatePerSecond {
		t.Errorf("with adaptive off: wrote %v, rate in force %v; want nothing written and the configured rate", ok, effective())
	}
}

// testRateMemory: a decision written is what the next claimed window
// carries as its last (NextRate's memory, whole), a window carries every
// instance's samples (latency and held time summed, each instance's pool),
// and it counts the users admitted while it was gathered.
func testRateMemory(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, adaptiveConfig())
	const window = 20 * time.Millisecond
	sample := queue.RateSample{Pools: map[string]int64{"i1": 20}, Queued: map[string]int64{"i1": 3}}
	for range admission.RateMinCalls {
		sample.Add(30*time.Millisecond, 5*time.Millisecond, 25*time.Millisecond, false)
	}
	other := sample // another instance's, with a pool of its own
	other.Pools, other.Queued = map[string]int64{"i2": 7}, map[string]int64{"i2": 0}
	// claim folds a window's worth of calls (between them, during runs),
	// waits for the window to end and folds again, until that claims a
	// decision (a slow machine may wake a window late, when the samples
	// are stale and dropped); first says whether the first try did. A
	// fold during runs that lands after the window ended is the one to
	// claim it (the window of sample's calls; CI's loaded machine met it).
	claim := func(during func() queue.RateWindow) (w queue.RateWindow, first bool) {
		t.Helper()
		for try := range 50 {
			if _, err := s.FoldRate(ctx, q, sample, window); err != nil {
				t.Fatal(err)
			}
			if w := during(); w.Claimed {
				return w, try == 0
			}
			clock.Sleep(window)
			w, err := s.FoldRate(ctx, q, queue.RateSample{}, window)
			if err != nil {
				t.Fatal(err)
			}
			if w.Claimed {
				return w, try == 0
			}
		}
		t.Fatal("no window was claimed in 50 tries")
		return queue.RateWindow{}, false
	}
	w, _ := claim(func() queue.RateWindow {
		w, err := s.FoldRate(ctx, q, other, window)
		if err != nil {
			t.Fatal(err)
		}
		return w
	})
	// Whichever window's samples the claim carries, every call in them
	// took 30 ms, waited 5 ms for a connection and held it 25 ms, and
	// instance i1's pool and calls waiting are named in it (i2's too, if
	// its fold landed in the same window).
	got := w.Samples
	if got.LatencyMicros != got.Calls*30_000 || got.WaitedMicros != got.Calls*5_000 || got.HeldMicros != got.Calls*25_000 ||
		got.Pools["i1"] != 20 || len(got.Pools) == 2 && got.Pools["i2"] != 7 || got.Queued["i1"] != 3 || len(got.Queued) != len(got.Pools) || w.Span < window {
		t.Errorf("claimed window: %d calls, latency %d µs, waited %d µs, held %d µs, pools %v, queued %v, span %v; want 30, 5 and 25 ms a call, i1's 20 connections and 3 waiting (and i2's 7 and none), a window at least",
			got.Calls, got.LatencyMicros, got.WaitedMicros, got.HeldMicros, got.Pools, got.Queued, w.Span)
	}
	d := queue.RateDecision{Window: w.ID, Rate: 2500, Why: "back off: a test", Kind: admission.RateDraining, P90: 321 * time.Millisecond,
		Capacity: 3125.5, CallsPerUser: 1.25, Steady: w.ID - 3, Base: 42 * time.Millisecond, BaseAt: w.ID - 7}
	if _, ok, err := s.SetRate(ctx, q, d); err != nil || !ok {
		t.Fatalf("SetRate(%+v): %v, %v", d, ok, err)
	}
	for i := range 3 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	admitted := 0
	next, first := claim(func() queue.RateWindow {
		for admitted < 3 {
			admitted += len(admitDue(t, s, clock, q, 10))
		}
		return queue.RateWindow{}
	})
	if next.Last != d || next.Rate != d.Rate {
		t.Fatalf("the next window carries last %+v, rate %v; want %+v, %v", next.Last, next.Rate, d, d.Rate)
	}
	if first && next.Admitted != 3 {
		t.Errorf("the window counts %d admitted, want the 3 let in while it was gathered", next.Admitted)
	}
}

// testNoShowBackAsking: a user away longer than the abandon time who comes
// back and asks for their status is seen by that answer, not only by their
// instance's batched mark a second later (Store.Seen): the next tick lets
// them in. The fairness check's no-show history caught one skipped half a
// second after coming back, told five times meanwhile that they were first.
// The abandon time is abandonFor's: the status's mark must still be fresh
// at the tick after it, calls apart on the wall clock, which a loaded
// machine can stretch past the second abandonAfter was (the user then
// skipped); away abandonAfter and a tenth, 5.5 s there.
func testNoShowBackAsking(t *testing.T, s queue.Store, clock Clock) {
	abandon := abandonFor(clock) // the store's own rule, not the admin range (≥ 15 s)
	c := fastConfig()
	c.AbandonAfter = abandon
	q := newQueue(t, s, c)
	for i := range c.BatchSize + 1 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	// The first tick lets in a batch and sets the store's checkpoint: the
	// one left is judged once their enter's mark is older than abandon.
	admitDue(t, s, clock, q, c.BatchSize)
	clock.Sleep(abandon + abandon/10)
	back := fmt.Sprintf("u%d", c.BatchSize)
	if e := mustStatus(t, s, q, back); e.State != queue.Waiting || e.Position != 1 {
		t.Fatalf("%s back: %+v, want waiting first", back, e)
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); !slices.Equal(got, []string{back}) {
		t.Fatalf("the tick after %s asked admitted %v, want them", back, got)
	}
}

// testNoShowProperty runs random sequences of entering, leaving and
// admission against a model in which some users keep asking for their
// status (present) and others vanished after entering: admission admits
// exactly the first present users in line order, a full batch per tick
// while there are enough, never anyone twice, and skips the vanished, who
// are then out of line (entering again means the back).
func testNoShowProperty(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	// The store's own rule is tested, not the admin range (≥ 15 s): a
	// second on a fake clock. On the wall clock (Redis's TIME) a present
	// user's mark and the tick that judges it are two calls apart, which a
	// loaded machine once stretched past a second (two present users
	// skipped, beside a busy core at load 17): there it is five.
	abandon := time.Second
	if _, fake := clock.(*FakeClock); !fake {
		abandon = 5 * time.Second
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			// The seeds share the store and its clock: a fake clock moved by
			// one seed's Sleep would age the others' seen marks between their
			// marking and their tick (it did, on a loaded run). On the wall
			// clock they may overlap.
			if _, fake := clock.(*FakeClock); !fake {
				t.Parallel()
			}
			rnd := rand.New(rand.NewPCG(seed, 11))
			c := fastConfig()
			c.AbandonAfter = abandon
			q := newQueue(t, s, c)
			var model []string
			present := map[string]bool{}
			for i := range 60 {
				u := fmt.Sprintf("u%d", i)
				mustEnter(t, s, q, u)
				model = append(model, u)
				present[u] = rnd.IntN(10) < 7
			}
			// A first tick, while everyone's enter marks are fresh, admits
			// the first ten and sets the store's checkpoint: the whole line
			// is within the reach of seen marks, so all of it is judged
			// once those marks are older than abandon.
			if got := admitDue(t, s, clock, q, c.BatchSize); !slices.Equal(got, model[:10]) {
				t.Fatalf("first tick admitted %v, want %v", got, model[:10])
			}
			admitted := map[string]bool{}
			for _, u := range model[:10] {
				admitted[u] = true
			}
			model = model[10:]
			clock.Sleep(abandon + abandon/2)

			var skipped []string
			next := 60
			for step := 0; len(model) > 0; step++ {
				if step > 500 {
					t.Fatal("the line never emptied")
				}
				switch op := rnd.IntN(10); {
				case op < 2: // a newcomer (entering marks them: present)
					u := fmt.Sprintf("u%d", next)
					next++
					mustEnter(t, s, q, u)
					model = append(model, u)
					present[u] = true
				case op < 3:
					model = leaveRandom(t, s, q, model, rnd)
				default:
					// The present ask for their status: their instances send
					// the marks just before the tick.
					var marks []string
					for _, u := range model {
						if present[u] {
							marks = append(marks, u)
						}
					}
					if err := s.Seen(ctx, q, marks, false); err != nil {
						t.Fatal(err)
					}
					got := admitDue(t, s, clock, q, c.BatchSize)
					var want []string
					taken := 0
					for _, u := range model {
						if len(want) == c.BatchSize {
							break
						}
						taken++
						if present[u] {
							want = append(want, u)
						} else {
							skipped = append(skipped, u)
						}
					}
					if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
						t.Fatalf("step %d: admitted (-want +got):\n%s", step, d)
					}
					for _, u := range got {
						if admitted[u] {
							t.Fatalf("step %d: %s admitted twice", step, u)
						}
						admitted[u] = true
					}
					model = model[taken:]
				}
			}
			st, err := s.Stats(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if st.AbandonedTotal != int64(len(skipped)) || len(skipped) == 0 {
				t.Fatalf("abandoned %d, the model skipped %d (and some)", st.AbandonedTotal, len(skipped))
			}
			if st.EnteredTotal != st.Length+st.AdmittedTotal+st.LeftTotal+st.AbandonedTotal {
				t.Fatalf("entered %d ≠ waiting %d + admitted %d + left %d + abandoned %d",
					st.EnteredTotal, st.Length, st.AdmittedTotal, st.LeftTotal, st.AbandonedTotal)
			}
			// A skipped user is out of line; entering again is the back.
			for _, u := range skipped {
				if e := mustStatus(t, s, q, u); e.State != queue.NotInQueue {
					t.Fatalf("skipped %s: %s, want NOT_IN_QUEUE", u, e.State)
				}
			}
			mustEnter(t, s, q, "late")
			if e := mustEnter(t, s, q, skipped[0]); e.State != queue.Waiting || e.Position != 2 {
				t.Fatalf("skipped %s entering again: %+v, want waiting at 2, behind the one who came first", skipped[0], e)
			}
		})
	}
}

// testStalled: people waiting and nobody let in for ten ticks is said in
// every answer, until the front moves again; a paused line is not stalled.
func testStalled(t *testing.T, s queue.Store, clock Clock) {
	c := fastConfig()
	c.Interval, c.RatePerSecond = 250*time.Millisecond, 40 // 10 per tick; stalled after 2.5 s
	q := newQueue(t, s, c)
	entered := clock.Now()
	mustEnter(t, s, q, "a")
	mustEnter(t, s, q, "b")
	const after = 2500 * time.Millisecond // ten ticks, more than 2 s and 3 admissions' worth
	if e := mustStatus(t, s, q, "b"); e.Pace.Stalled && clock.Now().Sub(entered) < after {
		t.Fatalf("stalled %v after entering (stalled after %v)", clock.Now().Sub(entered), after)
	}
	clock.Sleep(after + after/4) // no tick runs
	if e := mustStatus(t, s, q, "b"); !e.Pace.Stalled {
		t.Fatalf("nobody admitted for %v: not stalled", clock.Now().Sub(entered))
	}
	if e := mustEnter(t, s, q, "b"); !e.Pace.Stalled { // an enter's answer carries the same pace
		t.Fatalf("entering again, nobody admitted for %v: not stalled", clock.Now().Sub(entered))
	}
	sn, err := s.Snapshot(context.Background(), q)
	if err != nil || !sn.Pace.Stalled {
		t.Fatalf("snapshot: stalled %v, %v", sn.Pace.Stalled, err)
	}
	c.Paused = true
	if err := s.PutConfig(context.Background(), q, c); err != nil {
		t.Fatal(err)
	}
	if e := mustStatus(t, s, q, "b"); e.Pace.Stalled || !e.Pace.Paused {
		t.Fatalf("paused: %+v, want paused and not stalled", e.Pace)
	}
	c.Paused = false
	if err := s.PutConfig(context.Background(), q, c); err != nil {
		t.Fatal(err)
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); len(got) != 2 {
		t.Fatalf("admitted %v", got)
	}
	if e := mustEnter(t, s, q, "c"); e.Pace.Stalled {
		t.Fatal("stalled on entering right after the front moved")
	}
	if e := mustStatus(t, s, q, "c"); e.Pace.Stalled {
		t.Fatal("stalled right after the front moved")
	}
}

// chiSquare5At1Percent is the chi-square value with 5 degrees of freedom
// that is exceeded with probability 0.01.
const chiSquare5At1Percent = 15.086

// testOpeningOrders: in 100 openings of a pre-queue of three, each of the
// six orders comes up (each is missed with odds below 1 in 10 million),
// whatever the order of arrival, and those entering after the opening are
// behind them in the order they came. How evenly is RunDistributions'
// question (testOpeningUniform).
func testOpeningOrders(t *testing.T, s queue.Store, clock Clock) {
	if counts := openings(t, s, clock, 100); len(counts) != 6 {
		t.Fatalf("orders seen: %v, want all six", counts)
	}
}

// testOpeningUniform: 600 openings as testOpeningOrders': each of the six
// orders comes up about equally often (chi-square, p > 0.01). The draw is
// the production one (admission.OpenLine from the commitment) with its
// seeds from a seeded source and its queues named by run, so the test is
// repeatable; the admitter draws its seeds from crypto/rand.
func testOpeningUniform(t *testing.T, s queue.Store, clock Clock) {
	const runs = 600
	counts := openings(t, s, clock, runs)
	if len(counts) != 6 {
		t.Fatalf("orders seen: %v, want all six", counts)
	}
	chi := 0.0
	for _, n := range counts {
		d := float64(n) - runs/6
		chi += d * d / (runs / 6)
	}
	if chi > chiSquare5At1Percent {
		t.Fatalf("chi-square %.2f > %.3f (p < 0.01): the order is not uniform: %v", chi, chiSquare5At1Percent, counts)
	}
	t.Logf("orders %v, chi-square %.2f (p > 0.01 below %.3f)", counts, chi, chiSquare5At1Percent)
}

// openings opens a pre-queue of a, b and c runs times, in parallel
// batches, each checked: how often each order of the three came up.
func openings(t *testing.T, s queue.Store, clock Clock, runs int) map[string]int {
	t.Helper()
	ctx := context.Background()
	counts := map[string]int{}
	var mu sync.Mutex
	inBatches(t, 0, runs, 50, func(t *testing.T, first, n int) {
		d := testDrawer
		d.Seeds = rand.NewChaCha8([32]byte{7, byte(first), byte(first >> 8)}) // seeded: repeatable
		for run := first; run < first+n; run++ {
			c := queue.DefaultConfig()
			c.OpensAt = clock.Now().Add(-time.Hour) // due at once: no waiting in the test
			// Named by run: the participant ids, and so the order, repeat.
			q := fmt.Sprintf("opening-%d", run)
			if err := s.PutConfig(ctx, q, c); err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{"a", "b", "c"} {
				if e := mustEnter(t, s, q, u); e.State != queue.Waiting || !e.PreQueue || e.Position != 0 {
					t.Fatalf("run %d: %s entering before the opening: %+v", run, u, e)
				}
			}
			if e := mustStatus(t, s, q, "a"); !e.PreQueue || !e.Pace.OpensAt.Truncate(time.Millisecond).Equal(c.OpensAt.Truncate(time.Millisecond)) {
				t.Fatalf("run %d: status in the pre-queue: %+v", run, e)
			}
			o, placed, err := admission.OpenLine(ctx, s, q, "owner", d)
			if err != nil || !o.Due || placed != 3 {
				t.Fatalf("run %d: OpenLine: %+v, %d, %v", run, o, placed, err)
			}
			order := make([]string, 3)
			for _, u := range []string{"a", "b", "c"} {
				e := mustStatus(t, s, q, u)
				if e.State != queue.Waiting || e.PreQueue || e.Position < 1 || e.Position > 3 {
					t.Fatalf("run %d: %s after the opening: %+v", run, u, e)
				}
				order[e.Position-1] = u
			}
			mu.Lock()
			counts[fmt.Sprint(order)]++
			mu.Unlock()
			for i, u := range []string{"d", "e"} {
				if e := mustEnter(t, s, q, u); e.State != queue.Waiting || e.Position != int64(4+i) {
					t.Fatalf("run %d: %s entering after the opening: %+v, want position %d", run, u, e, 4+i)
				}
			}
			if o, err := s.OpenDue(ctx, q, "owner", time.Minute); err != nil || o.Due || o.In != 0 {
				t.Fatalf("run %d: after the opening OpenDue says %+v, %v", run, o, err)
			}
		}
	})
	return counts
}

// testOpeningWhilePlacing: once the opening is due, tickets are reserved
// for the pre-queue, so someone entering while it is being placed is behind
// all of it; one leaving the pre-queue meanwhile leaves a gap that counts
// as a leaver; nobody is admitted until all are placed; a second instance
// cannot place while the first holds the lease; the totals balance.
func testOpeningWhilePlacing(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.OpensAt = clock.Now().Add(-time.Minute)
	q := newQueue(t, s, c)
	for _, u := range []string{"p1", "p2", "p3", "p4"} {
		mustEnter(t, s, q, u)
	}
	o, err := s.OpenDue(ctx, q, "first", time.Minute)
	if err != nil || !o.Due || len(o.Pending) != 4 {
		t.Fatalf("OpenDue: %+v, %v", o, err)
	}
	if o2, err := s.OpenDue(ctx, q, "second", time.Minute); err != nil || !o2.Busy {
		t.Fatalf("a second instance while the first places: %+v, %v; want busy", o2, err)
	}
	if _, err := s.Place(ctx, q, "second", o.Next, o.Pending, time.Minute); err == nil {
		t.Fatal("a second instance placed without the lease")
	}
	// Behind the four still to be placed, and still there once they are:
	// a position never goes up (the fairness check found one that did).
	if e := mustEnter(t, s, q, "late"); e.State != queue.Waiting || e.PreQueue || e.Position != 5 || e.Length != 5 {
		t.Fatalf("entering while the opening is placed: %+v, want a place in line at 5 of 5", e)
	}
	mustLeave(t, s, q, "p3")
	if e := mustStatus(t, s, q, "late"); e.Position != 4 || e.Length != 4 {
		t.Fatalf("status while the opening is placed, p3 gone: %+v, want 4 of 4", e)
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); len(got) != 0 {
		t.Fatalf("admitted %v while the opening is placed", got)
	}
	done, err := s.Place(ctx, q, "first", o.Next, []string{"p4", "p3", "p1"}, time.Minute)
	if err != nil || done {
		t.Fatalf("first chunk: done %v, %v; want more to come (p2)", done, err)
	}
	for u, pos := range map[string]int64{"p4": 1, "p1": 2, "late": 4} {
		if e := mustStatus(t, s, q, u); e.Position != pos || e.Length != 4 {
			t.Errorf("half placed: %s at %d of %d, want %d of 4", u, e.Position, e.Length, pos)
		}
	}
	if e := mustEnter(t, s, q, "later"); e.Position != 5 || e.Length != 5 {
		t.Errorf("entering half way through the placing: %+v, want 5 of 5", e)
	}
	mustLeave(t, s, q, "later")
	if done, err = s.Place(ctx, q, "first", o.Next+3, []string{"p2"}, time.Minute); err != nil || !done {
		t.Fatalf("last chunk: done %v, %v", done, err)
	}
	want := map[string]int64{"p4": 1, "p1": 2, "p2": 3, "late": 4}
	for u, pos := range want {
		if e := mustStatus(t, s, q, u); e.Position != pos {
			t.Errorf("%s at %d, want %d", u, e.Position, pos)
		}
	}
	sn, err := s.Snapshot(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for u, pos := range want {
		if p, ok := placeIn(sn, mustStatus(t, s, q, u).Ticket); !ok || p != pos {
			t.Errorf("snapshot places %s at %d/%v, want %d", u, p, ok, pos)
		}
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); !slices.Equal(got, []string{"p4", "p1", "p2", "late"}) {
		t.Fatalf("after the opening admitted %v", got)
	}
	st, err := s.Stats(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if st.EnteredTotal != st.Length+st.AdmittedTotal+st.LeftTotal+st.AbandonedTotal || st.LeftTotal != 2 || st.PreQueued != 0 { // p3 and later
		t.Fatalf("totals after the opening: %+v", st)
	}
}

// testDrawer draws the suite's openings, with a key of its own.
var testDrawer = admission.Drawer{Participants: draw.NewParticipants([]byte("storetest participants' key"))}
