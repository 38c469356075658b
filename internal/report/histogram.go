package report

import (
	"cmp"
	"math"
	"slices"
)

// Count is the number of observations.
func (h Histogram) Count() int64 {
	var n int64
	for _, b := range h {
		n += b.Count
	}
	return n
}

// Merge adds histograms bucket by bucket (a bucket is its bounds): a span
// of minutes is the sum of its minutes.
func Merge(hs ...Histogram) Histogram {
	type bounds struct{ lo, hi float64 }
	sum := map[bounds]int64{}
	for _, h := range hs {
		for _, b := range h {
			if b.Count > 0 {
				sum[bounds{b.Lo, b.Hi}] += b.Count
			}
		}
	}
	out := make(Histogram, 0, len(sum))
	for k, n := range sum {
		out = append(out, Bucket{Lo: k.lo, Hi: k.hi, Count: n})
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Or(cmp.Compare(a.Hi, b.Hi), cmp.Compare(a.Lo, b.Lo)) })
	return out
}

// TimeInLine is the sale's time in line, its minutes' merged: the
// histogram the summary's percentiles (p50 to p99, Quantile) are read
// from. Whoever holds a Sale (the bench, beside its own figures) reads the
// report's percentiles with TimeInLine().Quantile.
func (s Sale) TimeInLine() Histogram {
	hs := make([]Histogram, len(s.Minutes))
	for i, m := range s.Minutes {
		hs[i] = m.TimeInLine
	}
	return Merge(hs...)
}

// Quantile estimates the p-quantile (0 < p ≤ 1) by nearest rank: the
// ceil(p·n)-th smallest observation. The bucket holding that observation is
// found exactly; where in it the observation lies is not known, so it is
// placed by its rank among the bucket's, geometrically (the buckets grow by
// a ratio). The estimate stays inside the bucket, so it is off by at most
// the bucket's width: within 5% of the exact value for buckets 5% wide.
// ok is false for an empty histogram.
func (h Histogram) Quantile(p float64) (v float64, ok bool) {
	n := h.Count()
	if n == 0 || !(p > 0) {
		return 0, false
	}
	rank := min(max(int64(math.Ceil(p*float64(n))), 1), n)
	var before int64
	for _, b := range h {
		if before+b.Count < rank {
			before += b.Count
			continue
		}
		f := (float64(rank-before) - 0.5) / float64(b.Count)
		switch {
		case b.Hi <= b.Lo: // the bucket of zeros, or a point
			return b.Hi, true
		case b.Lo <= 0:
			return b.Lo + (b.Hi-b.Lo)*f, true
		}
		return b.Lo * math.Pow(b.Hi/b.Lo, f), true
	}
	return h[len(h)-1].Hi, true // unreachable: rank ≤ n
}

// Exponential is a histogram kept the way stores keep one, as counts by
// bucket index, made a Histogram: index i counts the observations in
// (growth^(i-1), growth^i] (the convention of Prometheus's native
// histograms, whose growth is 2^(2^-schema): schema 4 is 4.4% wide), and
// zero those that were 0. The adapter from a store's rollups to a Sale is
// this call.
func Exponential(growth float64, zero int64, counts map[int]int64) Histogram {
	out := make(Histogram, 0, len(counts)+1)
	if zero > 0 {
		out = append(out, Bucket{Count: zero})
	}
	for i, n := range counts {
		if n > 0 {
			out = append(out, Bucket{Lo: math.Pow(growth, float64(i-1)), Hi: math.Pow(growth, float64(i)), Count: n})
		}
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Compare(a.Hi, b.Hi) })
	return out
}
