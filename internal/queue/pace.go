package queue

import (
	"math"
	"time"

	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// Pace is how the line moves, read by the store in the same step as a
// user's standing or a snapshot, so an estimate matches the position it is
// given with.
type Pace struct {
	// Rate is the admission rate in force: the adaptive rate while the
	// queue's rate is adaptive, else the configured one.
	Rate float64
	// Batch is the most one tick lets in, and Interval the time between
	// ticks: with the rate, what the next tick lets in (NextTickAdmits).
	Batch    int
	Interval time.Duration
	Paused   bool
	// Measured is the line's pace over about the last minute it was busy
	// (people waiting, admission running): users leaving its front per
	// second, admitted or skipped as no-shows. 0 while unknown (less than
	// MeasureAfter of busy time behind it).
	Measured float64
	// Stalled: admission is not paused, people wait, yet nobody has left the
	// front for several intervals (estimate.StallAfter): no instance admits, or the
	// token cap holds everyone back.
	Stalled bool
	// Reach is how far from the front a waiting user's presence matters:
	// within it, status polls leave a "seen" mark that admission checks
	// against AbandonAfter. 0 when no-shows are not skipped.
	Reach int64
	// OpensAt is the opening still ahead of the line (its pre-queue not yet
	// placed); zero when none is pending. Placing: the pre-queue is being
	// placed in the line right now (admission waits for it).
	OpensAt time.Time
	Placing bool
	// Drawn: the queue draws whom it lets in (MethodRandom), so a place in
	// line tells nothing: no position is shown, and the estimate is a
	// draw's (estimate.Of).
	Drawn bool
	// Stock is what the queue has left to sell (Stock.SoldOut).
	Stock Stock
	// CapRoom is the room the last admission tick left under the
	// live-token cap (maxActiveTokens, and the stock left × admitPerUnit),
	// and Capped says a cap held at that tick (else CapRoom is 0 and
	// counts for nothing): NextTickAdmits lets in no more.
	CapRoom int64
	Capped  bool
	// LaneShare is the share of the rate the answer's lane got at the
	// last tick (lane.Split.Shares: its own, and its part of what lanes
	// with nobody waiting hand over); 0 for a queue without lanes, whose
	// one line has the whole rate. An estimate divides by the rate × it.
	LaneShare float64
	// Claim, Spread and Ahead are the estimate's model fitted to the line
	// (issue 54; package estimate): the share of those leaving the front
	// who took their turn (estimate.Params.Claim), the rate's relative
	// uncertainty (Params.Spread), and the rate changes scheduled ahead
	// (Params.Steps, the whole line's: params takes the lane's share of
	// them). Held is the
	// admitted pace the model divides by when admission measured slower
	// than its rate while that stood still (a cap, late ticks); 0: none.
	Claim, Spread, Held float64
	Ahead               []estimate.Step
}

// MeasureAfter is how much busy time the measured pace needs behind it
// before an estimate relies on it.
const measureAfter = 10 * time.Second

// PaceState is what a store keeps for Pace; LinePace turns it into one, so
// both stores answer alike.
type PaceState struct {
	Config InForce
	// EffectiveRate is the adaptive rate in force (0: none stored yet).
	EffectiveRate float64
	// PaceRate is an exponentially weighted rate (time constant estimate.PaceWindow)
	// of users leaving the front, over PaceBusy seconds of busy time.
	PaceRate, PaceBusy float64
	// Moved is the last time the front moved, the line was found empty, or
	// admission was paused; Now is the store's clock.
	Moved, Now time.Time
	Length     int64
	Reach      int64
	// Pending: the opening at Config.OpensAt is still ahead; Placing: its
	// pre-queue is being placed in the line.
	Pending, Placing bool
	Stock            Stock
	// CapRoom and Capped are the room the last tick left under the
	// live-token cap, as admission's state records it (Pace.CapRoom).
	CapRoom int64
	Capped  bool
	// LaneShare is the share of the rate the answer's lane got at the
	// last tick (lane.Split.Shares: its own, and its part of what lanes
	// with nobody waiting hand over); 0 for a queue without lanes, whose
	// one line has the whole rate. An estimate divides by the rate × it.
	LaneShare float64
	// The estimate's fit (issue 54), kept by admission
	// (admission.TickState): PaceClaimed and PaceDeparted are
	// exponentially weighted rates (over estimate.ClaimWindow) of users
	// admitted at the front and of all who left it, so their ratio is the
	// share who took their turn; RateMean and
	// RateVar the weighted mean and variance of the rate in force over the
	// last minute; Changes the rate changes scheduled ahead (phases).
	PaceClaimed, PaceDeparted, RateMean, RateVar float64
	Changes                                      []estimate.Change
}

// LinePace is the Pace of a line in the given state.
func LinePace(s PaceState) Pace {
	c := s.Config
	p := Pace{Rate: c.RateInForce(s.EffectiveRate), Batch: c.BatchSize, Interval: c.Interval, Paused: c.Paused, Reach: s.Reach, Drawn: c.Method == MethodRandom, Stock: s.Stock,
		CapRoom: s.CapRoom, Capped: s.Capped, LaneShare: s.LaneShare}
	// Bias-corrected: an average whose clock has run b seconds has only
	// 1−e^(−b/τ) of its weight, so early on it reads low without this.
	if busy := time.Duration(s.PaceBusy * float64(time.Second)); busy >= measureAfter {
		p.Measured = s.PaceRate / (1 - math.Exp(-s.PaceBusy/estimate.PaceWindow.Seconds()))
	}
	if s.Pending || s.Placing {
		p.OpensAt, p.Placing = c.OpensAt, s.Placing
	}
	p.fit(s)
	if !c.Paused && !s.Placing && !s.Stock.SoldOut() && s.Length > 0 && !s.Moved.IsZero() && s.Now.Sub(s.Moved) > estimate.StallAfter(c.Interval, p.Rate) {
		p.Stalled = true
	}
	return p
}

// fit reads the estimate's model (Claim, Spread, Held, Ahead) from the
// state admission keeps (issue 54). Before MeasureAfter of busy line the
// claim is 1 and the spread the prior's (estimate.Prior): wide where the
// rate or the no-shows may yet move it. A phase that sets the rate has
// already made it fixed (InForce: Adaptive false); one that does not
// keeps the adaptive rate, and its prior. Where no-shows are judged, the
// prior's part for them stays until the front can have judged a crowd's
// and the claim measured them (noShowsSettle).
func (p *Pace) fit(s PaceState) {
	c := s.Config
	p.Claim, p.Spread = 1, estimate.Prior(c.Adaptive, c.AbandonAfter > 0)
	if p.Measured > 0 {
		// None admitted reads as not known rather than as nobody taking
		// their turn: so it reads too in a state kept before the claim was
		// (an upgrade's first seconds).
		if s.PaceClaimed > 0 && s.PaceDeparted > 0 {
			p.Claim = min(max(s.PaceClaimed/s.PaceDeparted, minClaim), 1)
		}
		if s.RateMean > 0 {
			p.Spread = max(estimate.SpreadFloor, math.Sqrt(s.RateVar)/s.RateMean)
		}
		// (Only once the rate's spread is fitted: before, the prior
		// holds the no-shows' part already.)
		if c.AbandonAfter > 0 && s.RateMean > 0 && s.PaceBusy < noShowsSettle(c) {
			p.Spread = math.Sqrt(float64(p.Spread*p.Spread) + float64(estimate.PriorNoShows*estimate.PriorNoShows))
		}
		// Admission slower than its rate while the rate stood still over
		// the last minute (so the measure is of this rate): a live-token
		// cap, the stock, ticks falling late. Not after a change of the
		// rate, which the measures lag behind. The pace admitted is the
		// claim's own (PaceClaimed, bias-corrected as Measured is), not
		// the minute's pace of all who left × the claim: early in a sale
		// with no-shows the minute's pace has not yet seen the skips the
		// claim's 15 s have, and their product read 82/s admitted at a
		// steady 100/s (told a fifth too long: realised ÷ point 0.78).
		admitted := s.PaceClaimed / (1 - math.Exp(-s.PaceBusy/estimate.ClaimWindow.Seconds()))
		if admitted > 0 && math.Abs(p.Rate-s.RateMean) < p.Rate/10 && admitted < p.Rate*0.9 {
			p.Held = admitted
		}
	}
	p.Ahead = estimate.Ahead(s.Changes, s.Now)
}

// noShowsSettle is the busy time, in seconds, after which the claim has
// measured a crowd's no-shows: they are judged once AbandonAfter unseen
// within the reach (two of it, the checkpoints falling every half), and
// the claim's window then takes one more to follow. At most an hour, the
// most busy time admission counts (PaceBusy), or an abandonAfterSeconds
// of half an hour or more would keep the ranges wide for good.
func noShowsSettle(c InForce) float64 {
	return min((2*c.AbandonAfter + estimate.ClaimWindow).Seconds(), maxPaceBusy)
}

// maxPaceBusy is the most busy time, in seconds, admission counts in
// PaceState.PaceBusy (admission's advancePace).
const maxPaceBusy = 3600

// minClaim bounds the share who take their turn from below: a line whose
// every place ahead is a no-show still lets someone in eventually.
const minClaim = 0.05

// admitRate is the people let in per second in this person's line: the
// rate in force (or Held), the lane's share of it.
func (p Pace) admitRate() float64 {
	r := p.Rate
	if p.Held > 0 {
		r = p.Held
	}
	if p.LaneShare > 0 {
		r *= p.LaneShare // the lane's part of what the whole line admits
	}
	return r
}

// EstimateRate is how many places a second the front of this person's line
// moves: the people let in (admitRate) and the no-shows skipped beside
// them (÷ Claim). What the next tick surely moves (NextTickAdmits) and how
// near the front a page asks its instance (front.Document.AskWithin) are
// figured at it.
func (p Pace) EstimateRate() float64 {
	claim := p.Claim
	if claim <= 0 {
		claim = 1 // a Pace not made by LinePace (tests)
	}
	return p.admitRate() / claim
}

// params are the estimate model's inputs for this pace (package estimate).
func (p Pace) params() estimate.Params {
	steps := p.Ahead
	if p.LaneShare > 0 && len(steps) > 0 {
		steps = make([]estimate.Step, len(p.Ahead))
		for i, s := range p.Ahead {
			steps[i] = estimate.Step{After: s.After, Rate: s.Rate * p.LaneShare}
		}
	}
	return estimate.Params{Rate: p.admitRate(), Claim: p.Claim, Spread: p.Spread, Tick: p.NextTickAdmits(), Interval: p.Interval.Seconds(),
		Drawn: p.Drawn, Steps: steps}
}

// Estimate is the wait of a person at position in a line (their lane) of
// length, with whether the line can say (issue 54): not while admission
// is paused or stalled, before the opening, sold out, or with fewer units
// left than people ahead (estimate.Estimate.Reason). Its Seconds is what
// the answers' estimatedWaitSeconds tells (the model's median:
// ceil(position × claim / rate) at a steady rate, the middle of the line
// when the queue draws; 0 within what the next tick surely lets in), and
// what the stores keep with a newcomer's place (rollup.Wait.Shown), so its
// accuracy is measured when admission reaches them.
func (p Pace) Estimate(position, length int64) estimate.Estimate {
	e := estimate.Of(position, length, p.params())
	reason := ""
	switch {
	case p.Paused:
		reason = estimate.UnknownPaused
	case !p.OpensAt.IsZero() || p.Placing:
		reason = estimate.UnknownOpening
	case p.Stock.SoldOut():
		reason = estimate.UnknownSoldOut
	case p.Stalled:
		reason = estimate.UnknownStalled
	case p.Stock.Known && !p.Drawn && position > p.Stock.Units:
		reason = estimate.UnknownBeyondStock
	}
	if reason != "" {
		e.Known, e.Reason, e.Low, e.High = false, reason, 0, 0
	}
	return e
}
