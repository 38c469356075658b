package queue

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEstimateDrawWait: the expected wait of a draw is (length+1)/(2·rate)
// seconds, rounded up, 0 when the whole line fits in the next batch, at
// the rate an estimate divides by (the measured pace when it differs).
func TestEstimateDrawWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		length int64
		pace   Pace
		want   int64
	}{
		{"the whole line in the next batch", 10, Pace{Rate: 100, Batch: 10}, 0},
		{"one more than a batch", 11, Pace{Rate: 100, Batch: 10}, 1},                              // 12/200 s
		{"a thousand at 100/s", 1000, Pace{Rate: 100, Batch: 10}, 6},                              // 1001/200 = 5.005
		{"a hundred thousand at 100/s", 100_000, Pace{Rate: 100, Batch: 10}, 501},                 // 100001/200 = 500.005
		{"odd: (n+1)/2 exact", 199, Pace{Rate: 10, Batch: 1}, 10},                                 // 200/20
		{"the measured pace when it differs", 1000, Pace{Rate: 100, Batch: 10, Measured: 50}, 11}, // 1001/100
		{"the rate when the pace is close", 1000, Pace{Rate: 100, Batch: 10, Measured: 95}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := estimateDrawWait(tc.length, tc.pace); got != tc.want {
				t.Fatalf("EstimateDrawWait(%d, %+v) = %d, want %d", tc.length, tc.pace, got, tc.want)
			}
		})
	}
}

// TestEstimateDrawWaitIsTheMeanOfADraw: simulated, ticks of batch users
// drawn uniformly from a line of n, one tick every batch/rate seconds (the
// first one interval away), let a given user in after (n+1)/(2·rate)
// seconds on average, to within half an interval (the estimate counts
// users, the ticks let them in by batches) and the sampling error.
func TestEstimateDrawWaitIsTheMeanOfADraw(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(23, 1))
	for _, tc := range []struct {
		n, batch int
		rate     float64
	}{{50, 1, 10}, {1000, 10, 100}, {333, 7, 35}} {
		interval := float64(tc.batch) / tc.rate
		const runs = 20_000
		total := 0.0
		for range runs {
			// The user's place in the order the draws let the line in:
			// drawing batch at a time without replacement, the user (index
			// 0) is in the k-th batch with the chance that they survive the
			// draws before it.
			left, tick := tc.n, 1
			for {
				if rnd.IntN(left) < min(tc.batch, left) {
					break
				}
				left -= tc.batch
				tick++
			}
			total += float64(tick) * interval
		}
		mean := total / runs
		est := float64(tc.n+1) / 2 / tc.rate
		if math.Abs(mean-est) > interval/2+0.02*est {
			t.Errorf("n %d, batch %d, rate %g: simulated mean wait %.2f s, estimate (n+1)/(2·rate) %.2f s", tc.n, tc.batch, tc.rate, mean, est)
		}
		got := estimateDrawWait(int64(tc.n), Pace{Rate: tc.rate, Batch: tc.batch})
		if want := int64(math.Ceil(est)); got != want {
			t.Errorf("EstimateDrawWait(%d) = %d, want ceil(%.3f)", tc.n, got, est)
		}
	}
}
