// Package estimate is the one model of a waiting person's wait (issue 54):
// from what the line knows (the rate in force and how sure it is, the
// share of people ahead who will take their turn, rate changes scheduled
// ahead, a lane's share, a draw), the median wait and a range that holds
// the 5th to the 95th percentile of it.
//
// The same arithmetic runs in three languages: here (every answer),
// in Lua (redisstore's prelude.lua: the range kept with a place at join)
// and in the waiting page's JavaScript (from the front document). So it
// uses only what all three compute alike to the last bit: + − × ÷, sqrt,
// floor and ceil on doubles; no exp or log. testdata/ranges.json holds the
// three equal.
package estimate

import (
	"math"
	"time"
)

// Params are what the model reads: a line's pace as it stands, its
// uncertainty fitted from the sale's own last minute (queue.LinePace).
// The JSON names are those of the shared cases (testdata/ranges.json),
// which the page's JavaScript twin reads too.
type Params struct {
	// Rate is the people let in per second in this person's line now:
	// the rate in force (a lane's share of it), or, while a live-token cap
	// holds admission back, what the line measured. 0: nobody is let in.
	Rate float64 `json:"rate"`
	// Claim is the share of the people leaving the front who take their
	// turn (admitted; the rest are skipped as no-shows), in (0, 1]: the
	// front moves at Rate ÷ Claim places a second. 1 until measured.
	Claim float64 `json:"claim"`
	// Spread is the rate's relative uncertainty (a standard deviation, as
	// a share of it): fitted from how the rate in force moved over the
	// last minute, at least SpreadFloor, and wide (Prior) before anything
	// is measured.
	Spread float64 `json:"spread"`
	// Tick is what the next tick surely lets in (queue.Pace.NextTickAdmits):
	// a place within it waits 0 ("any moment now"). Interval is the time
	// between ticks, in seconds: how early or late a tick may fall.
	Tick     int64   `json:"tick"`
	Interval float64 `json:"interval"`
	// Drawn: the queue draws whom it lets in, so the wait is a draw's: one
	// of a line of Length's, its turn uniform over the line.
	Drawn bool `json:"drawn"`
	// Steps are the rate's changes scheduled ahead (phases), soonest
	// first: from After seconds on, Rate people a second are let in (in
	// this person's line: a lane's share of it). Rate 0: nobody is let in
	// during the step.
	Steps []Step `json:"steps"`
}

// Step is one rate change scheduled ahead (Params.Steps).
type Step struct {
	After float64 `json:"after"`
	Rate  float64 `json:"rate"`
}

// Estimate is a wait in whole seconds: Seconds the median (the point the
// answers' estimatedWaitSeconds carries), Low and High the 5th and 95th
// percentiles (Low ≤ Seconds ≤ High). Known is false when the line cannot
// say (Reason: one of the Unknown… reasons); Seconds is then still the
// wait were the line to move as it did, and Low and High are 0.
type Estimate struct {
	Seconds, Low, High int64
	Known              bool
	Reason             string
}

// Why a wait is not known (Estimate.Reason; the answers'
// waitTimeUnknownReason).
const (
	UnknownPaused      = "paused"       // an operator paused admission
	UnknownStalled     = "stalled"      // admission runs, yet nobody has been let in for a while
	UnknownOpening     = "opening"      // the line has not opened yet: the place is drawn at the opening
	UnknownSoldOut     = "sold_out"     // nothing is left to sell until a restock
	UnknownBeyondStock = "beyond_stock" // fewer units are left than people ahead
)

// z is the standard normal's 95th percentile: Low and High are the median
// divided and multiplied by 1 + z·σ, a log-symmetric range (a wait is
// never negative, and twice as long is as likely as half).
const z = 1.645

// SpreadFloor is the least Spread a fitted rate is given: ticks fall late
// or early, and a tick may admit one fewer than its share.
const SpreadFloor = 0.05

// Prior is the Spread before anything is measured (less than ten seconds
// of busy line): what could move and has not been seen yet, each part
// independent (added in quadrature). A fixed rate with no no-shows judged
// is nearly certain (PriorRate); an adaptive rate may settle well below
// where it starts (PriorAdaptive); no-shows, unknown until the front
// reaches them, make the wait shorter by their share (PriorNoShows, kept
// until the share who take their turn has been measured: queue.Pace's
// fit).
func Prior(adaptive, noShowsJudged bool) float64 {
	s := PriorRate * PriorRate
	if adaptive {
		s += PriorAdaptive * PriorAdaptive
	}
	if noShowsJudged {
		s += PriorNoShows * PriorNoShows
	}
	return math.Sqrt(s)
}

// The parts of the Prior.
const (
	PriorRate     = 0.1
	PriorAdaptive = 0.3
	PriorNoShows  = 0.3
)

// ClaimWindow is the time constant of the share who take their turn
// (Params.Claim), measured at the front: short, since the no-shows of a
// crowd reach the front only when it does, and a minute's average was
// still half-way there a minute later.
const ClaimWindow = 15 * time.Second

// PaceWindow is the time constant of the measured pace (queue's
// Pace.Measured, which the estimate reads): the last minute. (It moved
// here from package queue, whose exported names are capped, beside
// ClaimWindow, its twin at the front.)
const PaceWindow = time.Minute

// Of is the wait of the person at position (1-based) in a line of length
// (their lane's), under p. For a draw the position is not used: the
// person's turn is uniform over the line, so the median is the line's
// middle and the range its 5th to 95th percentile.
func Of(position, length int64, p Params) Estimate {
	e := Estimate{Known: true}
	if p.Rate <= 0 && len(p.Steps) == 0 {
		return Estimate{Reason: UnknownPaused}
	}
	within := position
	if p.Drawn {
		within = length
	}
	if within <= p.Tick {
		e.High = int64(math.Ceil(p.Interval))
		return e
	}
	mid, low, high := float64(position), float64(position), float64(position)
	if p.Drawn {
		mid, low, high = float64(length+1)/2, 0.05*float64(length), 0.95*float64(length)
	}
	claim := p.Claim
	if !(claim > 0 && claim <= 1) {
		claim = 1
	}
	// How many of the people up to the median place take their turn is a
	// binomial count: its own relative spread on top of the rate's. Each
	// product is rounded (float64) before it is added: Go may otherwise
	// fuse a×b+c into one FMA (arm64, GOAMD64=v3), and Lua and JavaScript,
	// which never do, would differ in the last bit.
	sigma := math.Sqrt(float64(p.Spread*p.Spread) + (1-claim)/(claim*mid))
	f := 1 + float64(z*sigma)
	// A draw's 95th percentile lies beyond its median: when nobody is let
	// in from some step on, the front may reach the one and never the
	// other, and a range without an end is a wait not known.
	t, tHigh := p.passing(mid, claim), p.passing(high, claim)
	if math.IsInf(t, 1) || math.IsInf(tHigh, 1) {
		return Estimate{Reason: UnknownPaused}
	}
	e.Seconds = int64(math.Ceil(t))
	e.Low = max(0, int64(math.Floor(p.passing(low, claim)/f-p.Interval)))
	e.High = int64(math.Ceil(float64(tHigh*f) + p.Interval))
	e.Low, e.High = min(e.Low, e.Seconds), max(e.High, e.Seconds)
	return e
}

// passing is the seconds the front takes to move n places: at Rate ÷
// claim places a second until the first step, then at each step's; +Inf
// when it never does (nobody is let in from some step on).
func (p Params) passing(n, claim float64) float64 {
	at, rate := 0.0, p.Rate
	for _, s := range p.Steps {
		if s.After > at && rate > 0 {
			moves := (s.After - at) * rate / claim
			if n <= moves {
				return at + n*claim/rate
			}
			n -= moves
		}
		at, rate = max(at, s.After), s.Rate
	}
	if rate <= 0 {
		return math.Inf(1)
	}
	return at + n*claim/rate
}

// StallAfter is how long the front may stand still, with people waiting
// and admission running at rate, before the line is said to be stalled
// (the wait not known: UnknownStalled), and a stall counts as a surprise
// to those waiting through it: several ticks of interval, and several
// admissions' worth at a slow rate, at least two seconds.
func StallAfter(interval time.Duration, rate float64) time.Duration {
	d := max(2*time.Second, 10*interval)
	if rate > 0 {
		d = max(d, time.Duration(3/rate*float64(time.Second)))
	}
	return d
}

// Change is a rate change scheduled at an instant: from At on, Rate people
// a second are let in (the whole line's). Stores keep them as admission
// found them in the phases (admission.TickState.Changes); Ahead makes them
// Steps.
type Change struct {
	At   time.Time
	Rate float64
}

// Ahead is changes as Steps seen from now; those already past are dropped.
func Ahead(changes []Change, now time.Time) []Step {
	var steps []Step
	for _, c := range changes {
		if after := c.At.Sub(now).Seconds(); after > 0 {
			steps = append(steps, Step{After: after, Rate: c.Rate})
		}
	}
	return steps
}
