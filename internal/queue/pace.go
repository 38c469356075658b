package queue

import (
	"math"
	"time"
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
	// front for several intervals (stallAfter): no instance admits, or the
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
	// draw's (EstimateDrawWait).
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
}

// PaceWindow is the time constant of Pace.Measured: the last minute.
const PaceWindow = time.Minute

// MeasureAfter is how much busy time the measured pace needs behind it
// before an estimate relies on it.
const measureAfter = 10 * time.Second

// PaceState is what a store keeps for Pace; LinePace turns it into one, so
// both stores answer alike.
type PaceState struct {
	Config InForce
	// EffectiveRate is the adaptive rate in force (0: none stored yet).
	EffectiveRate float64
	// PaceRate is an exponentially weighted rate (time constant PaceWindow)
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
}

// LinePace is the Pace of a line in the given state.
func LinePace(s PaceState) Pace {
	c := s.Config
	p := Pace{Rate: c.RateInForce(s.EffectiveRate), Batch: c.BatchSize, Interval: c.Interval, Paused: c.Paused, Reach: s.Reach, Drawn: c.Method == MethodRandom, Stock: s.Stock,
		CapRoom: s.CapRoom, Capped: s.Capped, LaneShare: s.LaneShare}
	// Bias-corrected: an average whose clock has run b seconds has only
	// 1−e^(−b/τ) of its weight, so early on it reads low without this.
	if busy := time.Duration(s.PaceBusy * float64(time.Second)); busy >= measureAfter {
		p.Measured = s.PaceRate / (1 - math.Exp(-s.PaceBusy/PaceWindow.Seconds()))
	}
	if s.Pending || s.Placing {
		p.OpensAt, p.Placing = c.OpensAt, s.Placing
	}
	if !c.Paused && !s.Placing && !s.Stock.SoldOut() && s.Length > 0 && !s.Moved.IsZero() && s.Now.Sub(s.Moved) > stallAfter(c, p.Rate) {
		p.Stalled = true
	}
	return p
}

// stallAfter is how long the front may stand still, with people waiting and
// admission running, before the line is said to be stalled: several ticks,
// and several admissions' worth at a slow rate, at least two seconds.
func stallAfter(c InForce, rate float64) time.Duration {
	d := max(2*time.Second, 10*c.Interval)
	if rate > 0 {
		d = max(d, time.Duration(3/rate*float64(time.Second)))
	}
	return d
}

// EstimateRate is the rate an estimate divides by: the one admission uses,
// or the pace measured over the last minute when that differs from it by
// more than a tenth (the token cap holds admission back, no-shows are
// skipped, admission stalled for a while).
func (p Pace) EstimateRate() float64 {
	r := p.Rate
	if p.Measured > 0 && math.Abs(p.Measured-p.Rate) > p.Rate/10 {
		r = p.Measured
	}
	if p.LaneShare > 0 {
		r *= p.LaneShare // the lane's part of what the whole line admits
	}
	return r
}
