package report_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
)

// The percentiles read from ~5% buckets are within 5% of the exact
// percentiles of the samples, whatever their shape, however many, and
// however the minutes were merged.
func TestQuantileWithinFivePercent(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 1))
	shapes := map[string]func() float64{
		// Time in line: minutes, heavy tailed.
		"lognormal": func() float64 { return math.Exp(4 + 0.8*r.NormFloat64()) },
		"uniform":   func() float64 { return 1 + 600*r.Float64() },
		// Everyone let in at once, or after the same wait.
		"two spikes": func() float64 { return []float64{3, 240}[r.IntN(2)] },
		// Estimate ratios around 1.
		"ratios": func() float64 { return math.Max(0.05, 1+0.3*r.NormFloat64()) },
	}
	ps := []float64{0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 1}
	for name, draw := range shapes {
		for _, n := range []int{1, 7, 100, 10_000} {
			for _, growth := range []float64{1.05, math.Pow(2, 1.0/16)} {
				samples := make([]float64, n)
				for i := range samples {
					samples[i] = draw()
				}
				// Split over minutes, as rollups are, then merged back.
				var minutes []report.Histogram
				for i := 0; i < n; i += 37 {
					minutes = append(minutes, reporttest.Buckets(samples[i:min(i+37, n)], growth))
				}
				h := report.Merge(minutes...)
				slices.Sort(samples)
				for _, p := range ps {
					got, ok := h.Quantile(p)
					want := reporttest.Quantile(samples, p)
					if !ok || math.Abs(got-want) > 0.05*want {
						t.Errorf("%s, n=%d, growth %.4f: p%g = %.4f, exact %.4f (off %.2f%%)", name, n, growth, p*100, got, want, 100*math.Abs(got-want)/want)
					}
				}
			}
		}
	}
}

func TestQuantileEdges(t *testing.T) {
	if _, ok := (report.Histogram{}).Quantile(0.5); ok {
		t.Error("an empty histogram has a median")
	}
	zeros := report.Histogram{{Count: 5}, {Lo: 1, Hi: 1.05, Count: 5}}
	if v, _ := zeros.Quantile(0.5); v != 0 {
		t.Errorf("half zeros: median %v, want 0", v)
	}
	if v, _ := zeros.Quantile(0.6); v <= 1 || v > 1.05 {
		t.Errorf("p60 %v, want in (1, 1.05]", v)
	}
	if n := report.Merge(zeros, zeros, nil).Count(); n != 20 {
		t.Errorf("merged count %d, want 20", n)
	}
}
