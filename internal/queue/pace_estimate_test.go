package queue

import (
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// paceNow is the store's clock in the pace tests.
var paceNow = time.UnixMilli(1_800_000_000_000)

// busyLine is the state of a line that has run for an hour at its rate of
// 100/s (the default), everyone taking their turn, the rate standing
// still: PaceBusy of an hour makes the measured pace PaceRate itself
// (1 − e^−60 is 1 in a double).
func busyLine() PaceState {
	return PaceState{Config: InForce{Config: DefaultConfig()}, PaceRate: 100, PaceBusy: 3600, PaceClaimed: 100, PaceDeparted: 100, RateMean: 100,
		Moved: paceNow, Now: paceNow, Length: 1000}
}

// TestEstimateKnownAndWhyNot: the wait is known in a line that moves, and
// not known, with its reason, while admission is paused, stalled, before
// the opening (pending or being placed), sold out, and at a place beyond
// the stock (not in a draw, where anyone may be drawn); not known, the
// range is 0 to 0 and the median still the model's.
func TestEstimateKnownAndWhyNot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		state    func(*PaceState)
		position int64
		reason   string
	}{
		{"a line that moves", func(*PaceState) {}, 500, ""},
		{"paused", func(s *PaceState) { s.Config.Paused = true }, 500, estimate.UnknownPaused},
		{"stalled", func(s *PaceState) { s.Moved = paceNow.Add(-time.Minute) }, 500, estimate.UnknownStalled},
		{"an opening ahead", func(s *PaceState) { s.Pending, s.Config.OpensAt = true, paceNow.Add(time.Hour) }, 500, estimate.UnknownOpening},
		{"an opening being placed", func(s *PaceState) { s.Placing, s.Config.OpensAt = true, paceNow }, 500, estimate.UnknownOpening},
		{"sold out", func(s *PaceState) { s.Stock = Stock{Known: true} }, 500, estimate.UnknownSoldOut},
		{"beyond the stock", func(s *PaceState) { s.Stock = Stock{Known: true, Units: 499} }, 500, estimate.UnknownBeyondStock},
		{"the last unit", func(s *PaceState) { s.Stock = Stock{Known: true, Units: 500} }, 500, ""},
		{"beyond the stock in a draw", func(s *PaceState) {
			s.Stock, s.Config.Method = Stock{Known: true, Units: 10}, MethodRandom
		}, 500, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := busyLine()
			tc.state(&s)
			p := LinePace(s)
			got := p.Estimate(tc.position, s.Length)
			if got.Known != (tc.reason == "") || got.Reason != tc.reason {
				t.Fatalf("Estimate(%d) = %+v, want known %v, reason %q", tc.position, got, tc.reason == "", tc.reason)
			}
			model := estimate.Of(tc.position, s.Length, p.params())
			switch {
			case got.Seconds != model.Seconds || got.Seconds == 0:
				t.Errorf("Estimate(%d).Seconds = %d, want the model's median %d (not 0)", tc.position, got.Seconds, model.Seconds)
			case !got.Known && (got.Low != 0 || got.High != 0):
				t.Errorf("Estimate(%d) = %+v: not known, want the range 0 to 0", tc.position, got)
			case got.Known && (got.Low != model.Low || got.High != model.High || got.Low >= got.High):
				t.Errorf("Estimate(%d) = %+v, want the model's range %d to %d", tc.position, got, model.Low, model.High)
			}
		})
	}
}

// TestEstimateReasonsPrecedence: with several reasons at once, the answer
// names the first of paused, opening, sold out, stalled, beyond the stock.
func TestEstimateReasonsPrecedence(t *testing.T) {
	t.Parallel()
	p := Pace{Rate: 100, Batch: 10, Interval: tick100, Claim: 1, Spread: 0.05, Paused: true, OpensAt: paceNow, Placing: true,
		Stock: Stock{Known: true}, Stalled: true}
	for _, step := range []struct {
		reason string
		drop   func(*Pace)
	}{
		{estimate.UnknownPaused, func(p *Pace) { p.Paused = false }},
		{estimate.UnknownOpening, func(p *Pace) { p.OpensAt = time.Time{} }}, // Placing alone still opens
		{estimate.UnknownOpening, func(p *Pace) { p.Placing = false }},
		{estimate.UnknownSoldOut, func(p *Pace) { p.Stock.Units = 5 }},
		{estimate.UnknownStalled, func(p *Pace) { p.Stalled = false }},
		{estimate.UnknownBeyondStock, func(p *Pace) { p.Stock.Units = 500 }},
		{"", func(*Pace) {}},
	} {
		if got := p.Estimate(100, 100); got.Reason != step.reason || got.Known != (step.reason == "") {
			t.Errorf("Estimate of %+v = %+v, want reason %q", p, got, step.reason)
		}
		step.drop(&p)
	}
}

// TestLinePaceFitsTheModel: LinePace reads the model from what admission
// keeps. Before ten seconds of busy line the claim is 1 and the spread the
// prior (wide while the rate is adaptive or no-shows are judged, the
// no-shows' part until a crowd's can have been judged); then the
// claim is the admitted share of those who left the front (at least
// minClaim, at most 1, 1 while none was admitted), the spread the rate's
// relative standard deviation (at least the floor), Held the admitted pace
// only when the rate stood still and admission fell below nine tenths of
// it; the changes ahead become steps from now, the past dropped.
func TestLinePaceFitsTheModel(t *testing.T) {
	t.Parallel()
	phased := func(overrides map[string]any) func(*PaceState) {
		return func(s *PaceState) {
			c := s.Config.Config
			c.Adaptive, c.MinRate, c.MaxRate = true, 10, 100
			c.Phases = []Phase{{Name: "phase", StartsAt: paceNow.Add(-time.Minute), Overrides: overrides}}
			s.Config = c.InForce(paceNow)
		}
	}
	for _, tc := range []struct {
		name                string
		state               func(*PaceState)
		claim, spread, held float64
	}{
		{"a fixed rate, unmeasured: the narrow prior", func(s *PaceState) { s.PaceBusy = 9 }, 1, 0.1, 0},
		{"an adaptive rate, unmeasured: wide", func(s *PaceState) { s.PaceBusy, s.Config.Adaptive = 9, true }, 1, math.Sqrt(0.1), 0},
		{"no-shows judged, unmeasured: wide", func(s *PaceState) { s.PaceBusy, s.Config.AbandonAfter = 9, time.Minute }, 1, math.Sqrt(0.1), 0},
		{"both, unmeasured: wider", func(s *PaceState) {
			s.PaceBusy, s.Config.Adaptive, s.Config.AbandonAfter = 9, true, time.Minute
		}, 1, math.Sqrt(0.19), 0},
		{"a phase that fixes the rate, unmeasured: narrow", func(s *PaceState) {
			phased(map[string]any{"ratePerSecond": 100.0})(s)
			s.PaceBusy = 9
		}, 1, 0.1, 0},
		{"a phase that keeps the adaptive rate, unmeasured: wide", func(s *PaceState) {
			phased(map[string]any{"message": "the second drop"})(s)
			s.PaceBusy = 9
		}, 1, math.Sqrt(0.1), 0},
		{"measured, steady: the floor", func(*PaceState) {}, 1, estimate.SpreadFloor, 0},
		{"no-shows judged, measured before a crowd's can have been: their prior's part kept", func(s *PaceState) {
			s.PaceBusy, s.Config.AbandonAfter = 20, time.Minute // settles at 2 × 60 + 15 s
		}, 1, math.Sqrt(estimate.SpreadFloor*estimate.SpreadFloor + estimate.PriorNoShows*estimate.PriorNoShows), 0},
		{"no-shows judged, long measured: the floor", func(s *PaceState) { s.Config.AbandonAfter = time.Minute }, 1, estimate.SpreadFloor, 0},
		{"seven in ten claim", func(s *PaceState) { s.PaceClaimed = 70 }, 0.7, estimate.SpreadFloor, 70},
		{"hardly anyone claims: at least minClaim", func(s *PaceState) { s.PaceClaimed = 1 }, minClaim, estimate.SpreadFloor, 5},
		{"none admitted: not known, 1", func(s *PaceState) { s.PaceClaimed = 0 }, 1, estimate.SpreadFloor, 0},
		{"more admitted than left (rounding): 1", func(s *PaceState) { s.PaceClaimed = 100.5 }, 1, estimate.SpreadFloor, 0},
		{"the rate moved: its relative deviation", func(s *PaceState) { s.RateMean, s.RateVar = 95, 19*19 }, 1, 0.2, 0},
		{"no rate kept yet: the prior", func(s *PaceState) { s.RateMean = 0 }, 1, 0.1, 0},
		{"held below nine tenths while the rate stood still", func(s *PaceState) { s.PaceRate, s.PaceClaimed, s.PaceDeparted = 60, 60, 60 }, 1, estimate.SpreadFloor, 60},
		{"just above nine tenths: not held", func(s *PaceState) { s.PaceRate, s.PaceClaimed, s.PaceDeparted = 91, 91, 91 }, 1, estimate.SpreadFloor, 0},
		{"slower, but after the rate moved: not held", func(s *PaceState) {
			s.PaceRate, s.PaceClaimed, s.PaceDeparted, s.RateMean, s.RateVar = 60, 60, 60, 70, 100
		}, 1, math.Sqrt(100) / 70, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := busyLine()
			tc.state(&s)
			p := LinePace(s)
			if !near(p.Claim, tc.claim) || !near(p.Spread, tc.spread) || !near(p.Held, tc.held) {
				t.Errorf("claim %v, spread %v, held %v; want %v, %v, %v", p.Claim, p.Spread, p.Held, tc.claim, tc.spread, tc.held)
			}
		})
	}
}

// near says a and b agree to a part in 10¹².
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(math.Abs(a), math.Abs(b)) }

// TestLinePaceAhead: the rate changes ahead become steps from the store's
// clock, those past dropped, and an estimate in a lane takes the lane's
// share of them, as of the rate.
func TestLinePaceAhead(t *testing.T) {
	t.Parallel()
	s := busyLine()
	s.Changes = []estimate.Change{{At: paceNow.Add(-time.Second), Rate: 10}, {At: paceNow.Add(10 * time.Second), Rate: 200}}
	p := LinePace(s)
	if len(p.Ahead) != 1 || p.Ahead[0] != (estimate.Step{After: 10, Rate: 200}) {
		t.Fatalf("Ahead = %+v, want one step: 200/s after 10 s", p.Ahead)
	}
	// The whole line: 1000 places by 10 s, the other 1000 at 200/s in 5 s.
	if got := p.Estimate(2000, 2000).Seconds; got != 15 {
		t.Errorf("Estimate(2000) = %d s, want 15", got)
	}
	// Half the rate in this lane: 500 places by 10 s, 1500 at 100/s in 15 s.
	p.LaneShare = 0.5
	if got := p.Estimate(2000, 2000).Seconds; got != 25 {
		t.Errorf("Estimate(2000) in a lane of half = %d s, want 25", got)
	}
	if len(p.Ahead) != 1 || p.Ahead[0].Rate != 200 {
		t.Errorf("the lane's estimate changed the pace's own steps: %+v", p.Ahead)
	}
}

// TestEstimateRateMovesTheFront: the front moves at the people let in
// (the rate, or the held pace, the lane's share of it) ÷ the share who
// claim their turn.
func TestEstimateRateMovesTheFront(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pace Pace
		want float64
	}{
		{"the rate", Pace{Rate: 100, Claim: 1}, 100},
		{"half claim: twice the places", Pace{Rate: 100, Claim: 0.5}, 200},
		{"held", Pace{Rate: 100, Claim: 0.5, Held: 30}, 60},
		{"a lane's share of what is held", Pace{Rate: 100, Claim: 0.5, Held: 30, LaneShare: 0.25}, 15},
		{"a pace not made by LinePace: claim 1", Pace{Rate: 100}, 100},
	} {
		if got := tc.pace.EstimateRate(); got != tc.want {
			t.Errorf("%s: EstimateRate() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
