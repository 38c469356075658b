package admission

import (
	"math"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// The estimate's model, fitted tick by tick from the sale's own last
// minute (issue 54), so that every instance tells a person the same range:
// what admission keeps here the stores keep with the tick, and each answer
// reads it (queue.LinePace) into the model's parameters (package estimate).

// recentWindow is the time constant of TickState.RateRecent, the rate's
// mean over the last few seconds.
const recentWindow = 5 * time.Second

// A cut of the rate is a surprise when the rate in force is below
// cutBelow of its recent mean while that mean is itself below
// recentBelow of the minute's (surprised): a cut that lasts, deeper than
// about a quarter (cut to c of the minute's mean, the recent mean falls
// from 1 toward c, and both hold at once only while c < 0.8 × 0.9). A
// backend slowing down shows in the adaptive rate within a decision or
// two; the gateway's probe (half the rate for one half-second window)
// moves the recent mean by under 5% and is no surprise: it costs the
// line a quarter of a second.
const (
	cutBelow    = 0.8
	recentBelow = 0.9
)

// fitEstimate moves the model on by one tick at now, eff being the
// adaptive rate stored (0: none), length the people waiting before the
// tick, admitted those it let in and left those who left the front
// (admitted, or skipped as no-shows). It runs before advancePace, whose PaceAt still says how long
// the line has been busy since the last tick.
func (st *TickState) fitEstimate(c queue.InForce, now time.Time, eff float64, length int64, admitted, left int, stopped bool) {
	rate := c.RateInForce(eff)
	own := c.Config
	if len(c.Own.Phases) > 0 {
		own = c.Own // in a phase: its end and what follows are the queue's own settings'
	}
	st.Changes = rateChanges(own, now, eff)
	if c.PhaseInForce != st.Phase {
		// A phase's rate is announced: no surprise, and no uncertainty
		// about the rate the line had before it. The minute's mean is
		// left to follow, as the measured pace does: reset to the new
		// rate, it would say the rate stood still while the pace still
		// read the old one, and an answer would divide by that as a pace
		// held below the rate (queue.Pace.Held).
		st.Phase, st.RateVar, st.RateRecent = c.PhaseInForce, 0, rate
	}
	stalled := !stopped && !st.Moved.IsZero() && now.Sub(st.Moved) > estimate.StallAfter(c.Interval, rate)
	if length > 0 && (c.Paused || stalled || st.surprised(rate)) {
		// Nobody waiting, nobody's wait is upset (and an idle paused
		// queue's ticks stay unwritten: PlanTick's unchanged).
		st.Surprise = now
	}
	if stopped || length == 0 {
		return
	}
	dt := c.Interval.Seconds()
	if !st.PaceAt.IsZero() {
		dt = now.Sub(st.PaceAt).Seconds()
	}
	decay := math.Exp(-dt / estimate.PaceWindow.Seconds())
	cw := estimate.ClaimWindow.Seconds()
	claimDecay := math.Exp(-dt / cw)
	st.PaceClaimed = round(st.PaceClaimed*claimDecay+float64(admitted)/cw, 1e6)
	st.PaceDeparted = round(st.PaceDeparted*claimDecay+float64(left)/cw, 1e6)
	if st.RateMean <= 0 {
		st.RateMean, st.RateVar, st.RateRecent = rate, 0, rate
		return
	}
	// An exponentially weighted mean and variance (West's update), so a
	// rate that has stood still has a spread of 0 and one that moved has
	// the spread of how it moved.
	w := 1 - decay
	diff := rate - st.RateMean
	st.RateMean = round(st.RateMean+w*diff, 1e6)
	st.RateVar = round((1-w)*(st.RateVar+w*diff*diff), 1e6)
	st.RateRecent = round(st.RateRecent+(1-math.Exp(-dt/recentWindow.Seconds()))*(rate-st.RateRecent), 1e6)
}

// surprised says whether the rate in force now is a lasting cut of the
// rate the line had (cutBelow, recentBelow).
func (st *TickState) surprised(rate float64) bool {
	return st.RateRecent > 0 && rate < cutBelow*st.RateRecent && st.RateRecent < recentBelow*st.RateMean
}

// maxChanges bounds the rate changes kept: a phase's start and end each,
// for the queue's phases (at most eight).
const maxChanges = 16

// rateChanges are the rate changes the phases of c (the queue's own
// settings: InForce.Own in a phase) schedule after now: each step of its
// schedule whose rate differs from the one before it. A
// stretch of the queue's own settings runs at the rate in force now (eff:
// an adaptive rate moves, and the model holds it where it stands; a
// phase's rate is fixed). A pause is no change: paused is no phase's
// setting, so it holds now as at every step, and the answers say so
// (queue.Pace.Estimate); the steps are the schedule's rates, right again
// the moment admission resumes.
func rateChanges(c queue.Config, now time.Time, eff float64) []estimate.Change {
	if len(c.Phases) == 0 {
		return nil
	}
	var out []estimate.Change
	last := c.InForce(now).RateInForce(eff)
	for _, step := range c.Schedule(now) {
		if !step.StartsAt.After(now) {
			continue
		}
		in := c.InForce(step.StartsAt)
		r := in.RateInForce(eff)
		if r != last && len(out) < maxChanges {
			out = append(out, estimate.Change{At: step.StartsAt, Rate: r})
		}
		last = r
	}
	return out
}
