// Package rollup owns how a sale is measured after the fact: each admitted
// user's wait (Wait: when they took their place, the wait and its range
// they were shown then, and how that fared: Outcome), the 5%-wide buckets
// waits and estimate ratios are counted in, and
// the per-minute rows a store keeps for every queue (Write, Row) and what
// they add up to (Build: Minute, Moment, Rollup), which `waitroom report`
// and the admin API read.
//
// A row is one queue's minute as a few named numbers and the sale's
// moments. Every instance writes into the row of the minute it is in, and
// every write is safe to repeat or to race: the line's totals are raised
// to what was read (Max: they only grow), the minute's first reading of
// them is lowered to what was read (Min), histogram buckets and orders are
// added (Add: each observation is written once, by the instance that made
// it), the line's length at the end is set (Set: the last reading wins).
// So no instance claims a minute, and a minute's counts are the growth of
// the totals from the row before it (Build).
package rollup

import (
	"math"
	"slices"
	"time"
)

// DefaultKeep is how long rows are kept unless configured otherwise.
const DefaultKeep = 14 * 24 * time.Hour

// Wait is one admitted user's time in line, as the store kept it with
// their place (taken in the same step as the place, dropped with it).
type Wait struct {
	// Entered is when they took their place (the store's clock); zero
	// when not known: they never waited (let straight in) or took their
	// place before places kept it.
	Entered time.Time
	// Shown is the wait, in whole seconds, their entry was answered with
	// (queue.Pace.Shown); NoneShown when none was: placed by an opening,
	// they were shown its time instead.
	Shown int64
	// Low and High are the range shown beside it (issue 54: the 5th and
	// 95th percentiles, estimate.Estimate); both NoneShown when none was:
	// no wait shown, or the line could not say (waitTimeKnown false: paused,
	// stalled, beyond the stock).
	Low, High int64
	// Apart: something no estimate could foresee held admission back after
	// they took their place (a pause, the rate cut at once:
	// admission.TickState.Surprise), so the sale's report scores their
	// estimate apart from the rest's.
	Apart bool
	// Admitted is when admission let them in (the store's clock).
	Admitted time.Time
	// Lane is the lane they waited in (issue 53; admission.Waiter.Lane):
	// "" for the public, or a queue without lanes.
	Lane string
}

// NoneShown is Wait.Shown when no wait was shown at entry.
const NoneShown = -1

// TimeInLine is from taking the place to admission, and false when not
// known.
func (w Wait) TimeInLine() (time.Duration, bool) {
	if w.Entered.IsZero() || w.Admitted.IsZero() {
		return 0, false
	}
	return max(w.Admitted.Sub(w.Entered), 0), true
}

// Ratio is the wait realised over the wait shown, and false when no wait
// was shown or the time in line is not known. A shown 0 ("any moment
// now", within the next batch) counts as one second, the estimate's own
// resolution: a wait of 3 s after "any moment now" is 3× off, not
// infinitely.
func (w Wait) Ratio() (float64, bool) {
	d, ok := w.TimeInLine()
	if !ok || w.Shown < 0 {
		return 0, false
	}
	return d.Seconds() / float64(max(w.Shown, 1)), true
}

// Covered says whether the wait realised fell within the range shown
// (Low ≤ time in line ≤ High, in seconds), and false for ok when no range
// was shown or the time in line is not known.
func (w Wait) Covered() (covered, ok bool) {
	d, timed := w.TimeInLine()
	if !timed || w.Low < 0 || w.High < 0 {
		return false, false
	}
	s := d.Seconds()
	return s >= float64(w.Low) && s <= float64(w.High), true
}

// How a person's estimate fared (issue 54; Wait.Outcome), the sale's
// report's and the metric waitroom_estimate_covered_total's words: scored,
// the wait realised fell within the range shown at join (In) or not
// (Out); scored apart, likewise, for those Apart (ApartIn, ApartOut); or
// no range was shown to score (Unknown: not known at join, or no wait
// shown at all).
const (
	OutcomeIn       = "in"
	OutcomeOut      = "out"
	OutcomeApartIn  = "apart_in"
	OutcomeApartOut = "apart_out"
	OutcomeUnknown  = "unknown"
)

// Outcome is how the person's estimate fared, and false when the time in
// line is not known (they never waited, or took their place before places
// kept when): then nothing is scored, as nothing is timed.
func (w Wait) Outcome() (string, bool) {
	if _, ok := w.TimeInLine(); !ok {
		return "", false
	}
	covered, ok := w.Covered()
	switch {
	case !ok:
		return OutcomeUnknown, true
	case w.Apart && covered:
		return OutcomeApartIn, true
	case w.Apart:
		return OutcomeApartOut, true
	case covered:
		return OutcomeIn, true
	}
	return OutcomeOut, true
}

// Coverage counts people by how their estimate fared (Outcome): the
// report's coverage is In ÷ (In + Out), the share of those scored whose
// wait fell within the range they were shown; the Apart ones' is scored
// apart from it, and Unknown were shown no range.
type Coverage struct {
	In       int64 `json:"in"`
	Out      int64 `json:"out"`
	ApartIn  int64 `json:"apartIn"`
	ApartOut int64 `json:"apartOut"`
	Unknown  int64 `json:"unknown"`
}

// Plus is c and o counted together.
func (c Coverage) Plus(o Coverage) Coverage {
	return Coverage{In: c.In + o.In, Out: c.Out + o.Out, ApartIn: c.ApartIn + o.ApartIn, ApartOut: c.ApartOut + o.ApartOut,
		Unknown: c.Unknown + o.Unknown}
}

// count adds n of outcome; an outcome it does not know (a row written by a
// newer version) is not counted.
func (c *Coverage) count(outcome string, n int64) {
	switch outcome {
	case OutcomeIn:
		c.In += n
	case OutcomeOut:
		c.Out += n
	case OutcomeApartIn:
		c.ApartIn += n
	case OutcomeApartOut:
		c.ApartOut += n
	case OutcomeUnknown:
		c.Unknown += n
	}
}

// base is the width of a bucket: each is 5% wider than the one below, so
// a percentile read from the buckets is within 5%.
const base = 1.05

// Bucket is the bucket of a value in milli-units (a duration in ms, a
// ratio × 1000): 0 up to 1, then b for (1.05^(b-1), 1.05^b]. The
// protected calls' latencies (queue.RateSample) are counted in them too.
func Bucket(milli float64) int {
	if milli <= 1 {
		return 0
	}
	return int(math.Ceil(math.Log(milli) / math.Log(base)))
}

// Upper is the upper bound of bucket b, in milli-units.
func Upper(b int) float64 { return math.Pow(base, float64(b)) }

// Histogram counts values by Bucket: sparse, only buckets that hold any.
type Histogram map[int]int64

// Add counts one value of milli milli-units.
func (h Histogram) Add(milli float64) { h[Bucket(milli)]++ }

// Count is how many values the histogram holds.
func (h Histogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile is the value (milli-units) below which the fraction q of the
// values fell: the upper bound of its bucket, so within 5% above the
// truth; 0 when empty.
func (h Histogram) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 {
		return 0
	}
	buckets := make([]int, 0, len(h))
	for b := range h {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	need := int64(math.Ceil(q * float64(total)))
	var seen int64
	for _, b := range buckets {
		if seen += h[b]; seen >= need {
			return Upper(b)
		}
	}
	return Upper(buckets[len(buckets)-1])
}
