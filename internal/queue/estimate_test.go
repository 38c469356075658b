package queue

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// drawn is p under queueingMethod random.
func drawn(p Pace) Pace {
	p.Drawn = true
	return p
}

// tick100 is the default admission tick.
const tick100 = 100 * time.Millisecond

// TestDrawWait: the median wait of a draw is (length+1)/(2·rate) seconds,
// rounded up, 0 when the whole line fits in what the next tick lets in, at
// the rate an estimate divides by (a held pace, no-shows skipped).
func TestDrawWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		length int64
		pace   Pace
		want   int64
	}{
		{"the whole line in the next tick", 10, Pace{Rate: 100, Batch: 10, Interval: tick100}, 0},
		{"one more than a tick", 11, Pace{Rate: 100, Batch: 10, Interval: tick100}, 1},                                                 // 12/200 s
		{"a thousand at 100/s", 1000, Pace{Rate: 100, Batch: 10, Interval: tick100}, 6},                                                // 1001/200 = 5.005
		{"a hundred thousand at 100/s", 100_000, Pace{Rate: 100, Batch: 10, Interval: tick100}, 501},                                   // 100001/200 = 500.005
		{"odd: (n+1)/2 exact", 199, Pace{Rate: 10, Batch: 1, Interval: tick100}, 10},                                                   // 200/20
		{"the admitted pace when admission is held below its rate", 1000, Pace{Rate: 100, Batch: 10, Interval: tick100, Held: 50}, 11}, // 1001/100
		{"no-shows skipped beside the admitted", 1000, Pace{Rate: 100, Batch: 10, Interval: tick100, Claim: 0.5}, 3},
		{"below one a tick: nobody is told 0", 1, Pace{Rate: 2, Batch: 10, Interval: tick100}, 1}, // 2/4 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := drawn(tc.pace).Estimate(tc.length, tc.length).Seconds; got != tc.want {
				t.Fatalf("draw of %d under %+v: %d s, want %d", tc.length, tc.pace, got, tc.want)
			}
		})
	}
}

// TestDrawWaitIsTheMeanOfADraw: simulated, ticks of batch users
// drawn uniformly from a line of n, one tick every batch/rate seconds (the
// first one interval away), let a given user in after (n+1)/(2·rate)
// seconds on average, to within half an interval (the estimate counts
// users, the ticks let them in by batches) and the sampling error.
func TestDrawWaitIsTheMeanOfADraw(t *testing.T) {
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
		got := drawn(Pace{Rate: tc.rate, Batch: tc.batch, Interval: time.Duration(interval * float64(time.Second))}).Estimate(int64(tc.n), int64(tc.n)).Seconds
		if want := int64(math.Ceil(est)); got != want {
			t.Errorf("draw of %d: %d s, want ceil(%.3f)", tc.n, got, est)
		}
	}
}

// TestNextTickAdmits: what the next tick surely lets in is the rate an
// estimate divides by × the interval, rounded down as admission rounds its
// quota (the carried fraction may add one, or not), at most a batch and,
// under a live-token cap, the room the last tick left under it; the
// estimate is 0 within it and ceil(position / rate) beyond.
func TestNextTickAdmits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pace Pace
		want int64
		told map[int64]int64 // position → estimate
	}{
		{"the default: 10 a tick", Pace{Rate: 100, Batch: 10, Interval: tick100}, 10, map[int64]int64{1: 0, 10: 0, 11: 1}},
		{"2/s: 0.2 a tick", Pace{Rate: 2, Batch: 10, Interval: tick100}, 0, map[int64]int64{1: 1, 10: 5, 11: 6}},
		{"15/s: 1.5 a tick, 1 sure", Pace{Rate: 15, Batch: 10, Interval: tick100}, 1, map[int64]int64{1: 0, 2: 1}},
		{"ticks of 3 s at 0.5/s", Pace{Rate: 0.5, Batch: 2, Interval: 3 * time.Second}, 1, map[int64]int64{1: 0, 2: 4}},
		{"admission's floats: 100/s × 0.29 s", Pace{Rate: 100, Batch: 29, Interval: 290 * time.Millisecond}, 28, map[int64]int64{28: 0, 29: 1}},
		{"a held pace moves it", Pace{Rate: 100, Batch: 10, Interval: tick100, Held: 20}, 2, map[int64]int64{2: 0, 3: 1}},
		{"at most a batch", Pace{Rate: 100, Batch: 10, Interval: tick100, Claim: 1.0 / 3}, 10, map[int64]int64{10: 0, 11: 1}},
		{"no interval known: nobody told 0", Pace{Rate: 100, Batch: 10}, 0, map[int64]int64{1: 1}},
		{"at the cap: nobody told 0", Pace{Rate: 100, Batch: 10, Interval: tick100, Capped: true}, 0, map[int64]int64{1: 1, 11: 1}},
		{"room for 3 under the cap", Pace{Rate: 100, Batch: 10, Interval: tick100, Capped: true, CapRoom: 3}, 3, map[int64]int64{3: 0, 4: 1}},
		{"room beyond a batch", Pace{Rate: 100, Batch: 10, Interval: tick100, Capped: true, CapRoom: 18}, 10, map[int64]int64{10: 0, 11: 1}},
		{"room beyond the rate", Pace{Rate: 2, Batch: 10, Interval: tick100, Capped: true, CapRoom: 5}, 0, map[int64]int64{1: 1}},
		{"a room recorded without a cap counts for nothing", Pace{Rate: 100, Batch: 10, Interval: tick100, CapRoom: 0}, 10, map[int64]int64{10: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pace.NextTickAdmits(); got != tc.want {
				t.Errorf("NextTickAdmits() = %d, want %d", got, tc.want)
			}
			for pos, want := range tc.told {
				if got := tc.pace.Estimate(pos, pos).Seconds; got != want {
					t.Errorf("position %d: told %d s, want %d", pos, got, want)
				}
			}
		})
	}
}
