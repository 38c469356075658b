package bench

import (
	"errors"
	"testing"
	"time"
)

// TestSweepRates: the sweep steps up, then bisects down to 1% of the rate
// under what a backend bears, in few points; it says when every step
// passed, when none did, and the short form tries two rates.
func TestSweepRates(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bears       float64
		short       bool
		wantAtLeast bool
		wantTries   int
	}{
		{name: "bears 87/s", bears: 87, wantTries: 8},
		{name: "bears 93.3/s", bears: 93.3, wantTries: 9},
		{name: "bears more than the highest step", bears: 500, wantAtLeast: true, wantTries: 10},
		{name: "bears less than the lowest", bears: 50, wantTries: 1},
		{name: "short", bears: 87, short: true, wantAtLeast: true, wantTries: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tried []float64
			capacity, atLeast, err := sweepRates(60, 10, 150, tc.short, func(rate float64) (bool, error) {
				tried = append(tried, rate)
				return rate <= tc.bears, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if atLeast != tc.wantAtLeast || len(tried) != tc.wantTries {
				t.Errorf("at least %v after %d tries %v, want %v after %d", atLeast, len(tried), tried, tc.wantAtLeast, tc.wantTries)
			}
			switch {
			case tc.bears < 60:
				if capacity != 0 {
					t.Errorf("capacity %g, want 0: the lowest rate failed", capacity)
				}
			case tc.short:
				if capacity != 70 {
					t.Errorf("capacity %g, want the second rate, 70", capacity)
				}
			case tc.wantAtLeast:
				if capacity != 150 {
					t.Errorf("capacity %g, want the highest step, 150", capacity)
				}
			case capacity > tc.bears || capacity < tc.bears*(1-herdSweepResolution):
				t.Errorf("capacity %g, want within %g%% under %g (tried %v)", capacity, 100*herdSweepResolution, tc.bears, tried)
			}
		})
	}
	boom := errors.New("boom")
	if _, _, err := sweepRates(60, 10, 150, false, func(float64) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("a point's error: %v, want boom", err)
	}
}

// TestSpiked: a failed rate is run again only when its median shows no
// backlog, and only once.
func TestSpiked(t *testing.T) {
	own := 205 * time.Millisecond
	for _, tc := range []struct {
		name string
		last HerdSweepPoint
		want bool
	}{
		{name: "a fail on its tail, the median at the own latency", last: HerdSweepPoint{Orders: 1316, P50: 210 * time.Millisecond}, want: true},
		{name: "a fail with a backlog in the median", last: HerdSweepPoint{Orders: 1845, P50: 247 * time.Millisecond}},
		{name: "a pass", last: HerdSweepPoint{Orders: 1146, P50: 205 * time.Millisecond, Pass: true}},
		{name: "a fail run again already", last: HerdSweepPoint{Orders: 1316, P50: 210 * time.Millisecond, Again: true}},
		{name: "no order in time", last: HerdSweepPoint{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &HerdCapacity{OwnLatency: own, Points: []HerdSweepPoint{{Pass: true}, tc.last}}
			if got := c.spiked(); got != tc.want {
				t.Errorf("spiked %v, want %v", got, tc.want)
			}
		})
	}
}
