package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/queue/admission"
)

// HerdCapacity is what the herd's backend bears, swept in the same run as
// the modes (issue 52): the highest fixed rate whose order p95 stays at or
// under GoalCapacityP95 × the order's own latency. Every adaptive figure
// is read against it.
type HerdCapacity struct {
	// Rate is the capacity: the highest fixed rate that passed (0: not
	// even the lowest did). AtLeast: every coarse step passed, so the
	// backend bears Rate or more.
	Rate    float64
	AtLeast bool
	// OwnLatency is the order's own latency: the order p50 at the sweep's
	// lowest rate, where no backlog forms (or as given by hand).
	OwnLatency time.Duration
	// ByHand: -herd-capacity gave Rate (and -herd-own-latency, or the
	// order's work, OwnLatency); nothing was swept.
	ByHand bool
	// Points are the sweep's runs in the order they ran; Noise is the
	// lowest point's order latency beyond the order's work.
	Points []HerdSweepPoint
	Noise  *HerdNoise
	Users  int
	RunFor time.Duration
	Took   time.Duration
}

// HerdSweepPoint is one fixed rate of the sweep: a herdRun of the
// spread + jitter schedule, adaptive off, for HerdCapacity.RunFor.
type HerdSweepPoint struct {
	Rate float64
	// Again: the rate's second run, after its first failed on a spike
	// (HerdCapacity.spiked); the rate fails only when both do.
	Again                    bool
	Orders, Unserved, Errors int
	P50, P95                 time.Duration
	// P95Ratio is P95 ÷ the order's own latency; Pass: ≤ GoalCapacityP95.
	P95Ratio         float64
	Pass             bool
	LoadMin, LoadMax float64
}

// HerdNoise is the distribution of the order latency beyond the order's
// work (herdOrderWork) at the sweep's lowest rate: the noise this machine
// adds to an order with no backlog, for the deterministic simulation.
type HerdNoise struct {
	Orders                  int
	P10, P50, P90, P99, Max time.Duration
}

// The sweep, in shares of the rate the pool bears on paper
// (admission.RateFromPool: 20 connections × 1000/200 ms = 100/s): it
// starts well under it, where no backlog forms, steps up coarsely until a
// rate fails, then bisects between the last pass and the first fail down
// to herdSweepResolution of the rate. A fixed rate 1–2% over what the pool
// bears builds a backlog that fails the 1.5× within herdSweepRunFor, so
// the criterion is sharp; a rate that fails on a spike (spiked) is run
// again. About nine points of ~20 s each.
const (
	herdSweepLowest     = 0.6
	herdSweepStep       = 0.1
	herdSweepHighest    = 1.5
	herdSweepResolution = 0.01
	herdSweepRunFor     = 20 * time.Second
	herdSweepSpikeP50   = 1.1
	// The short form's two points: a smoke test of the sweep, not a figure.
	herdSweepShortRunFor = 3 * time.Second
)

// sweepCapacity measures HerdCapacity with users per point (the herd's
// own crowd, so the clients load the machine as in the modes).
func sweepCapacity(ctx context.Context, o Options, users int) (*HerdCapacity, error) {
	derived, _, err := admission.RateFromPool(herdPool, 1, herdOrderWork)
	if err != nil {
		return nil, err
	}
	c := &HerdCapacity{Users: users, RunFor: herdSweepRunFor}
	if o.Short {
		c.RunFor = herdSweepShortRunFor
	}
	start := time.Now()
	c.Rate, c.AtLeast, err = sweepRates(herdSweepLowest*derived, herdSweepStep*derived, herdSweepHighest*derived, o.Short,
		func(rate float64) (bool, error) {
			ok, err := c.runPoint(ctx, o, users, rate, false)
			if err != nil || ok || o.Short || !c.spiked() {
				return ok, err
			}
			return c.runPoint(ctx, o, users, rate, true)
		})
	c.Took = time.Since(start)
	return c, err
}

// sweepRates finds the highest rate pass accepts: from lowest up by step
// (to highest at most) until one fails, then bisecting between the last
// pass and the first fail down to herdSweepResolution of the rate. It is
// 0 when lowest fails, and atLeast when no step up to highest failed. The
// short form tries lowest and one step up, no more.
func sweepRates(lowest, step, highest float64, short bool, pass func(rate float64) (bool, error)) (capacity float64, atLeast bool, err error) {
	ok, err := pass(lowest)
	if err != nil || !ok {
		return 0, false, err
	}
	good, bad := lowest, 0.0
	for rate := lowest + step; rate <= highest+1e-9; rate += step {
		if ok, err = pass(rate); err != nil {
			return good, false, err
		}
		if !ok {
			bad = rate
			break
		}
		good = rate
		if short {
			break
		}
	}
	for bad > 0 && !short && bad-good > herdSweepResolution*good {
		mid := (good + bad) / 2
		if ok, err = pass(mid); err != nil {
			return good, false, err
		}
		if ok {
			good = mid
		} else {
			bad = mid
		}
	}
	return good, bad == 0, nil
}

// runPoint runs the sweep at one fixed rate (again: a second time, its
// first run failed on a spike), appends its point and says whether it passed; the first point's p50 is the order's own latency,
// the yardstick of all, and its latency beyond the work the noise.
func (c *HerdCapacity) runPoint(ctx context.Context, o Options, users int, rate float64, again bool) (bool, error) {
	mode := atRate(HerdModes[2], rate) // spread + jitter
	mode.Adaptive = false
	o.logf("herd capacity: fixed %.2f/s (%s), %d users, %v", rate, mode.Described, users, c.RunFor)
	res, err := herdRun(ctx, o, herdSpec{mode: mode, users: users, runFor: c.RunFor})
	if err != nil {
		return false, fmt.Errorf("capacity sweep at %.2f/s: %w", rate, err)
	}
	if len(c.Points) == 0 {
		c.OwnLatency, c.Noise = res.P50, orderNoise(res.Latency)
	}
	p := HerdSweepPoint{Rate: rate, Again: again, Orders: res.Orders, Unserved: res.Unserved, Errors: res.Errors, P50: res.P50, P95: res.P95,
		P95Ratio: ratio(res.P95, c.OwnLatency), LoadMin: res.LoadMin, LoadMax: res.LoadMax}
	p.Pass = res.Orders > 0 && res.Errors == 0 && p.P95Ratio <= GoalCapacityP95
	c.Points = append(c.Points, p)
	o.logf("herd capacity: %.2f/s: %d orders, p50 %v p95 %v (%.2f× the own %v): %s",
		rate, p.Orders, p.P50.Round(time.Millisecond), p.P95.Round(time.Millisecond), p.P95Ratio,
		c.OwnLatency.Round(time.Millisecond), map[bool]string{true: "pass", false: "fail"}[p.Pass])
	return p.Pass, nil
}

// spiked says the last point failed on its tail alone: its p50 stayed
// within herdSweepSpikeP50 of the own latency, so no backlog formed (a
// backlog lifts the median too: 96–100/s over a capacity of 95/s had
// their p50 1.2–2.9× the own latency). Such a rate is run again, and
// fails only if it fails twice: a run of 2026-12-06 without this failed
// 70/s at 1.51× with its p50 1.01×, then passed 65–69.4/s at 1.01–1.06×,
// a capacity of 69.4/s where the adaptive rate ran 76/s within the bound.
func (c *HerdCapacity) spiked() bool {
	p := c.Points[len(c.Points)-1]
	return !p.Pass && !p.Again && p.Orders > 0 && ratio(p.P50, c.OwnLatency) <= herdSweepSpikeP50
}

// atRate is mode's schedule at another rate: the same tick, its batch
// scaled up to hold the rate.
func atRate(mode HerdMode, rate float64) HerdMode {
	if rate == mode.Rate {
		return mode
	}
	f := rate / mode.Rate
	mode.Rate, mode.Batch = rate, int(math.Ceil(float64(mode.Batch)*f))
	perTick := math.Round(mode.Rate*mode.Interval.Seconds()*1000) / 1000 // 8.7, not 8.700000000000001
	mode.Described = fmt.Sprintf("%g per %v tick", perTick, mode.Interval)
	if mode.Interval < time.Second {
		mode.Described += map[bool]string{true: ", jitter on", false: ", jitter off"}[mode.Jitter]
	}
	return mode
}

// orderNoise is the latency beyond herdOrderWork of the orders in lat
// (start → latency in ms), nil when there are none.
func orderNoise(lat []Point) *HerdNoise {
	if len(lat) == 0 {
		return nil
	}
	beyond := make([]time.Duration, len(lat))
	for i, p := range lat {
		beyond[i] = time.Duration(p.Y*float64(time.Millisecond)) - herdOrderWork
	}
	slices.Sort(beyond)
	return &HerdNoise{Orders: len(beyond), P10: percentile(beyond, 10), P50: percentile(beyond, 50),
		P90: percentile(beyond, 90), P99: percentile(beyond, 99), Max: beyond[len(beyond)-1]}
}

// loadAverage is the machine's 1-minute load average (/proc/loadavg);
// false where there is none to read.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(first, 64)
	return v, err == nil
}

// loadRange keeps the lowest and highest load average sampled.
type loadRange struct {
	min, max float64
	samples  int
}

func (l *loadRange) sample() {
	v, ok := loadAverage()
	if !ok {
		return
	}
	if l.samples == 0 || v < l.min {
		l.min = v
	}
	l.max = max(l.max, v)
	l.samples++
}
