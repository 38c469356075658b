package queue

import (
	"math"
	"math/rand/v2"
)

// EstimateWait is ceil(position / rate) seconds, and 0 when the position is
// within the next batch ("any moment now").
func EstimateWait(position int64, c Config) int64 {
	if position <= int64(c.BatchSize) {
		return 0
	}
	return int64(math.Ceil(float64(position) / c.RatePerSecond))
}

// PollAfter is the suggested seconds before the next status request, by the
// estimate (not the position), so a rate change moves the bands too:
// ≥ 60 s → 10, 10–60 s → 5, < 10 s → 2.
func PollAfter(estimateSeconds int64) int64 {
	switch {
	case estimateSeconds >= 60:
		return 10
	case estimateSeconds >= 10:
		return 5
	default:
		return 2
	}
}

// JitterSeconds spreads a poll interval by up to ±20%, rounded to whole
// seconds (the contract's type), so that clients who entered together drift
// apart: 10 → 8..12, 5 → 4..6; 2 stays 2. Never below one second.
func JitterSeconds(seconds int64) int64 {
	// The top-level generator is safe for concurrent use without a lock:
	// every poll calls this.
	j := int64(math.Round(float64(seconds) * (0.8 + 0.4*rand.Float64())))
	return max(j, 1)
}
