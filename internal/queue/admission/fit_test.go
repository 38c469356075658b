package admission

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// fitStart is the store's clock when the fit tests start.
var fitStart = time.UnixMilli(1_800_000_000_000)

// fitLine runs the model's fit over ticks of a line of 10,000 people, as
// PlanTick does (fitEstimate, then advancePace): each tick at config(now),
// the adaptive rate eff(now), admitting admitted(now) and skipping
// skipped(now) of those at the front. It returns the state and the tick
// times at which a surprise was recorded.
type fitLine struct {
	st        TickState
	now       time.Time
	surprises []time.Time
}

func (f *fitLine) run(d time.Duration, config func(time.Time) queue.InForce, eff func(time.Time) float64, admitted, skipped int) {
	for end := f.now.Add(d); f.now.Before(end); {
		f.now = f.now.Add(100 * time.Millisecond)
		c := config(f.now)
		stopped := c.Paused
		before := f.st.Surprise
		f.st.fitEstimate(c, f.now, eff(f.now), 10_000, admitted, admitted+skipped, stopped)
		f.st.advancePace(c, f.now, 10_000, admitted+skipped, stopped)
		if !f.st.Surprise.Equal(before) {
			f.surprises = append(f.surprises, f.now)
		}
	}
}

// pace is the line's Pace as an answer reads it from the state.
func (f *fitLine) pace(c queue.InForce, eff float64) queue.Pace {
	st := f.st
	return queue.LinePace(queue.PaceState{Config: c, EffectiveRate: eff, PaceRate: st.PaceRate, PaceBusy: st.PaceBusy, Moved: st.Moved, Now: f.now,
		Length: 10_000, PaceClaimed: st.PaceClaimed, PaceDeparted: st.PaceDeparted, RateMean: st.RateMean, RateVar: st.RateVar, Changes: st.Changes})
}

// adaptive is the default queue with an adaptive rate between 1 and 200/s
// (ticks of up to 20).
func adaptive() queue.Config {
	c := queue.DefaultConfig()
	c.Adaptive, c.MinRate, c.MaxRate, c.BatchSize = true, 1, 200, 20
	return c
}

func always(c queue.Config) func(time.Time) queue.InForce {
	return func(now time.Time) queue.InForce { return c.InForce(now) }
}

func fixed(r float64) func(time.Time) float64 { return func(time.Time) float64 { return r } }

// TestFitClaimIsThePresentShare: the claim an answer reads converges to the
// share of those leaving the front who take their turn, and, when that
// share changes, to the new one within a minute (its window is 15 s).
func TestFitClaimIsThePresentShare(t *testing.T) {
	t.Parallel()
	c := queue.DefaultConfig()
	f := &fitLine{now: fitStart}
	f.run(5*time.Minute, always(c), fixed(0), 7, 3)
	if got := f.pace(c.InForce(f.now), 0).Claim; math.Abs(got-0.7) > 0.005 {
		t.Errorf("7 admitted and 3 skipped a tick for 5 min: claim %v, want 0.7", got)
	}
	f.run(time.Minute, always(c), fixed(0), 5, 5)
	if got := f.pace(c.InForce(f.now), 0).Claim; got <= 0.5 || got >= 0.7 {
		t.Errorf("a minute after the share fell to a half: claim %v, want between 0.5 and 0.7", got)
	}
	f.run(5*time.Minute, always(c), fixed(0), 5, 5)
	if got := f.pace(c.InForce(f.now), 0).Claim; math.Abs(got-0.5) > 0.005 {
		t.Errorf("6 min after the share fell to a half: claim %v, want 0.5", got)
	}
}

// TestFitClaimAfterAnUpgrade: a state kept before the claim was (a pace
// measured, no PaceClaimed: an upgrade mid-sale) reads as everyone
// claiming from its first tick, not as nearly all no-shows, and then
// follows the share.
func TestFitClaimAfterAnUpgrade(t *testing.T) {
	t.Parallel()
	c := queue.DefaultConfig()
	f := &fitLine{now: fitStart}
	f.st.PaceRate, f.st.PaceBusy = 100, 3600
	f.run(100*time.Millisecond, always(c), fixed(0), 10, 0)
	if got := f.pace(c.InForce(f.now), 0).Claim; got != 1 {
		t.Errorf("the first tick after an upgrade, everyone claiming: claim %v, want 1", got)
	}
	f.run(5*time.Minute, always(c), fixed(0), 8, 2)
	if got := f.pace(c.InForce(f.now), 0).Claim; math.Abs(got-0.8) > 0.01 {
		t.Errorf("5 min on, 8 in 10 claiming: claim %v, want 0.8", got)
	}
}

// TestFitRateSpread: an adaptive rate that stands still has no spread
// (RateVar 0: the answers' spread is the floor); one that moved has the
// spread of how it moved, which fades as it stands still again.
func TestFitRateSpread(t *testing.T) {
	t.Parallel()
	c := adaptive()
	f := &fitLine{now: fitStart}
	f.run(2*time.Minute, always(c), fixed(100), 10, 0)
	if f.st.RateVar != 0 || f.st.RateMean != 100 || f.pace(c.InForce(f.now), 100).Spread != estimate.SpreadFloor {
		t.Fatalf("100/s for 2 min: mean %v, variance %v; want 100 and 0 (the spread's floor)", f.st.RateMean, f.st.RateVar)
	}
	start := f.now
	climbing := func(now time.Time) float64 { return 100 + now.Sub(start).Seconds() } // to 130/s over 30 s
	f.run(30*time.Second, always(c), climbing, 10, 0)
	moved := f.pace(c.InForce(f.now), 130).Spread
	if f.st.RateVar <= 0 || moved <= 0.05 {
		t.Errorf("after 30 s of a rate climbing 1/s: variance %v, spread %v; want above 0 and the floor", f.st.RateVar, moved)
	}
	f.run(5*time.Minute, always(c), fixed(130), 10, 0)
	if settled := f.pace(c.InForce(f.now), 130).Spread; settled != estimate.SpreadFloor {
		t.Errorf("5 min at 130/s after the climb: spread %v (variance %v), want the floor again", settled, f.st.RateVar)
	}
}

// TestFitSurprise: a tick is a surprise while admission is paused, and
// while a cut of the rate lasts and runs deep (fitEstimate): the rate in
// force below four fifths of its mean over the last few seconds (time
// constant 5 s) while that mean is below nine tenths of the minute's. A
// cut from 100 to 70 at once is one from 2.3 s after it (the recent mean
// below 90: 70 + 30·e^(−t/5) < 90.x) to 2.6 s (70 < 0.8 × the recent
// mean while t < 5·ln(24/14) ≈ 2.69 s). Not when the rate falls slowly or
// by less than about a quarter, dips for half a second (the gateway's
// probe), rises, or changes as a phase announced.
func TestFitSurprise(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) time.Time { return fitStart.Add(time.Minute + d) }
	steps := func(r0, r1 float64, over time.Duration) func(time.Time) float64 {
		return func(now time.Time) float64 {
			d := now.Sub(at(0))
			switch {
			case d < 0:
				return r0
			case d >= over:
				return r1
			}
			return r0 + (r1-r0)*d.Seconds()/over.Seconds()
		}
	}
	paused := adaptive()
	pausing := func(now time.Time) queue.InForce {
		c := paused
		c.Paused = !now.Before(at(0)) && now.Before(at(2*time.Second))
		return c.InForce(now)
	}
	phased := queue.DefaultConfig()
	phased.Phases = []queue.Phase{{Name: "slow", StartsAt: at(0), EndsAt: at(time.Minute), Overrides: map[string]any{"ratePerSecond": 40.0}},
		{Name: "fast", StartsAt: at(2 * time.Minute), EndsAt: at(3 * time.Minute), Overrides: map[string]any{"ratePerSecond": 100.0}}}
	phased.RatePerSecond = 60
	for _, tc := range []struct {
		name   string
		config func(time.Time) queue.InForce
		eff    func(time.Time) float64
		want   []time.Time
	}{
		{"steady", always(adaptive()), fixed(100), nil},
		{"paused for 2 s", pausing, fixed(100), []time.Time{at(0), at(100 * time.Millisecond), at(1900 * time.Millisecond)}},
		{"cut to 70 at once", always(adaptive()), steps(100, 70, 0), []time.Time{at(2300 * time.Millisecond), at(2600 * time.Millisecond)}},
		{"cut to 70 over 2 s", always(adaptive()), steps(100, 70, 2*time.Second), []time.Time{at(3400 * time.Millisecond), at(3700 * time.Millisecond)}},
		{"halved at once", always(adaptive()), steps(100, 50, 0), []time.Time{at(1300 * time.Millisecond), at(6900 * time.Millisecond)}},
		{"halved for half a second: the gateway's probe", always(adaptive()), func(now time.Time) float64 {
			if d := now.Sub(at(0)); d >= 0 && d < 500*time.Millisecond {
				return 50
			}
			return 100
		}, nil},
		{"cut to 85 at once: less than a fifth", always(adaptive()), steps(100, 85, 0), nil},
		{"halved over 5 min", always(adaptive()), steps(100, 50, 5*time.Minute), nil},
		{"doubled at once", always(adaptive()), steps(100, 200, 0), nil},
		{"phases: 60, 40, 60, 100, 60 /s", always(phased), fixed(0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fitLine{now: fitStart}
			f.run(5*time.Minute, tc.config, tc.eff, 10, 0)
			if len(tc.want) == 0 && len(f.surprises) > 0 {
				t.Fatalf("surprises at %v, want none", since(f.surprises))
			}
			if len(tc.want) > 0 && (len(f.surprises) == 0 || !f.surprises[0].Equal(tc.want[0]) || !f.surprises[len(f.surprises)-1].Equal(tc.want[len(tc.want)-1])) {
				t.Fatalf("surprises at %v, want from %v to %v", since(f.surprises), since(tc.want[:1]), since(tc.want[len(tc.want)-1:]))
			}
		})
	}
}

// since shows tick times as seconds after the event of TestFitSurprise.
func since(ts []time.Time) []float64 {
	var out []float64
	for _, t := range ts {
		out = append(out, t.Sub(fitStart.Add(time.Minute)).Seconds())
	}
	return out
}

// TestRateChanges: the changes ahead are each phase's start and end where
// the rate changes there (the queue's own stretches at the rate in force
// now: an adaptive rate is held where it stands), none for a queue without
// phases, none past, none where a phase keeps the rate; a pause is no
// change (it holds now as at every step, and the answers say so).
func TestRateChanges(t *testing.T) {
	t.Parallel()
	now := fitStart
	phase := func(name string, from, to time.Duration, overrides map[string]any) queue.Phase {
		p := queue.Phase{Name: name, StartsAt: now.Add(from), Overrides: overrides}
		if to != 0 {
			p.EndsAt = now.Add(to)
		}
		return p
	}
	rate := func(r float64) map[string]any { return map[string]any{"ratePerSecond": r} }
	c := queue.DefaultConfig() // 100/s
	for _, tc := range []struct {
		name   string
		phases []queue.Phase
		eff    float64
		mod    func(*queue.Config)
		want   []estimate.Change
	}{
		{"no phases", nil, 0, nil, nil},
		{"a phase ahead at 50/s", []queue.Phase{phase("p", time.Minute, 2*time.Minute, rate(50))}, 0, nil,
			[]estimate.Change{{At: now.Add(time.Minute), Rate: 50}, {At: now.Add(2 * time.Minute), Rate: 100}}},
		{"a phase in force until 30 s from now", []queue.Phase{phase("p", -time.Minute, 30*time.Second, rate(50))}, 0, nil,
			[]estimate.Change{{At: now.Add(30 * time.Second), Rate: 100}}},
		{"a phase over", []queue.Phase{phase("p", -2*time.Minute, -time.Minute, rate(50))}, 0, nil, nil},
		{"a phase that keeps the rate", []queue.Phase{phase("p", time.Minute, 2*time.Minute, map[string]any{"message": "hi"})}, 0, nil, nil},
		{"an adaptive rate held where it stands, around a phase", []queue.Phase{phase("p", time.Minute, 2*time.Minute, rate(150))}, 80,
			func(c *queue.Config) { c.Adaptive, c.MinRate, c.MaxRate, c.BatchSize = true, 1, 200, 20 },
			[]estimate.Change{{At: now.Add(time.Minute), Rate: 150}, {At: now.Add(2 * time.Minute), Rate: 80}}},
		{"back to back, no end", []queue.Phase{phase("a", time.Minute, 0, rate(50)), phase("b", 2*time.Minute, 0, rate(20))}, 0, nil,
			[]estimate.Change{{At: now.Add(time.Minute), Rate: 50}, {At: now.Add(2 * time.Minute), Rate: 20}}},
		{"paused: the schedule's rates all the same", []queue.Phase{phase("p", time.Minute, 2*time.Minute, rate(50))}, 0,
			func(c *queue.Config) { c.Paused = true },
			[]estimate.Change{{At: now.Add(time.Minute), Rate: 50}, {At: now.Add(2 * time.Minute), Rate: 100}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c
			c.Phases = tc.phases
			if tc.mod != nil {
				tc.mod(&c)
			}
			got := rateChanges(c, now, tc.eff)
			if !slices.EqualFunc(got, tc.want, func(a, b estimate.Change) bool { return a.At.Equal(b.At) && a.Rate == b.Rate }) {
				t.Errorf("rateChanges = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFitChangesInAPhase: a tick in a phase, given the config in force as
// the stores give it (queue.Config.InForce), sees the phase's end and what
// follows at the queue's own rate, not at the phase's.
func TestFitChangesInAPhase(t *testing.T) {
	t.Parallel()
	now := fitStart
	c := queue.DefaultConfig() // 100/s
	c.Phases = []queue.Phase{{Name: "members", StartsAt: now.Add(-time.Minute), EndsAt: now.Add(30 * time.Second), Overrides: map[string]any{"ratePerSecond": 50.0}},
		{Name: "quiet", StartsAt: now.Add(time.Minute), EndsAt: now.Add(2 * time.Minute), Overrides: map[string]any{"message": "last units"}}}
	var st TickState
	st.fitEstimate(c.InForce(now), now, 0, 100, 5, 5, false)
	want := []estimate.Change{{At: now.Add(30 * time.Second), Rate: 100}}
	if !slices.EqualFunc(st.Changes, want, func(a, b estimate.Change) bool { return a.At.Equal(b.At) && a.Rate == b.Rate }) {
		t.Errorf("changes seen in the phase = %+v, want %+v", st.Changes, want)
	}
}
