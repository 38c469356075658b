package queue

import (
	"math"
	"math/rand/v2"
	"time"
)

// NextTickAdmits is how many users the next admission tick surely lets in,
// at the rate an estimate divides by (EstimateRate, so a phase's rate, the
// adaptive rate, the share who take their turn and a held pace move it):
// rate × interval, rounded
// down, at most a batch, and, under a live-token cap, at most the room the
// last tick left under it (CapRoom). Within it a user is told 0 ("any
// moment now").
//
// Rounded down because that is what admission surely does: each tick lets
// in rate × interval plus the fraction the last one left over, rounded
// down, and carries the new fraction on (admission's quota). The carry is
// below one, so a tick lets in the rounded-down amount or one more, which
// one depending on a carry no answer reads (and a snapshot or the front
// document would read a tick or more late). At 15/s and 100 ms the ticks
// admit 1 and 2 in turn: position 1 is told 0, position 2 ceil(2/15) = 1 s.
// A tick that lets in less than one person (2/s: 0.2 a tick, one person
// every fifth tick) tells nobody 0: position 1 is told ceil(1/2) = 1 s.
//
// The cap (maxActiveTokens, and the stock left × admitPerUnit) lets a tick
// in no more than the room under it. Counting the live tokens on every
// status would cost a count per poll (a ZCOUNT on Redis), so the room is
// the one the last tick recorded in admission's state, which every answer
// reads anyway: stale by at most one tick (tokens given back or expired
// since add room, and AdmitNow's since take some; the tick after an empty
// line fills records it afresh). At the cap (room 0) nobody is told 0.
//
// The float arithmetic is admission's own (rate × Interval.Seconds(), then
// truncated), so at the rate in force a whole number of users a tick is
// counted whole; prelude.lua's shown does the same in Lua.
func (p Pace) NextTickAdmits() int64 {
	n := min(int64(p.EstimateRate()*p.Interval.Seconds()), int64(p.Batch))
	if p.Capped {
		n = min(n, p.CapRoom)
	}
	return n
}

// PollAfterOpening is the suggested seconds before the next status request
// of a user waiting for the opening, left seconds away: by the same bands as
// the estimate, but never long after the opening, and spread over a few
// seconds after it so that a pre-queue of thousands does not ask at once
// (nothing is gained by asking first: the order is drawn).
func pollAfterOpening(left time.Duration) int64 {
	secs := int64(math.Ceil(left.Seconds()))
	p := jitterSeconds(pollAfter(secs))
	if after := secs + 1 + rand.Int64N(5); p > after {
		p = after
	}
	return max(p, 1)
}

// PollAfter is the suggested seconds before the next status request, by the
// estimate (not the position), so a rate change moves the bands too:
// ≥ 60 s → 10, 10–60 s → 5, < 10 s → 2.
func pollAfter(estimateSeconds int64) int64 {
	switch {
	case estimateSeconds >= 60:
		return 10
	case estimateSeconds >= 10:
		return 5
	default:
		return 2
	}
}

// pollAfterHidden is the longest pollAfterSeconds a hidden page is told
// (Service.hiddenPollAfter; openapi's maximum).
const pollAfterHidden = 30

// pollAfterSoldOut is the suggested seconds before the next status request
// of a user whose queue is sold out: nothing moves until a restock, so long
// enough that a sold-out line of millions costs little, and short enough
// that a restock shows within a minute or so.
const pollAfterSoldOut = 30

// JitterSeconds spreads a poll interval by up to ±20%, rounded to whole
// seconds (the contract's type), so that clients who entered together drift
// apart: 10 → 8..12, 5 → 4..6; 2 stays 2. Never below one second.
func jitterSeconds(seconds int64) int64 {
	// The top-level generator is safe for concurrent use without a lock:
	// every poll calls this.
	j := int64(math.Round(float64(seconds) * (0.8 + 0.4*rand.Float64())))
	return max(j, 1)
}
