package bench

// Two experiments beside the herd, for admission that follows the backend:
// the database slowing down mid-run (degrade), and a crowd of which 30%
// vanish after entering (noshow). Both reuse the herd's run (herdRun): the
// same boot, pool, order work, clients and measurements.

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// DegradeReport is the degradation experiment: order work steps from
// OrderWork to SlowWork at StepAt, and the run ends at RunFor; at a fixed
// rate, then with the adaptive rate aiming at Target.
type DegradeReport struct {
	Users                      int
	OrderWork, SlowWork        time.Duration
	StepAt, RunFor             time.Duration
	Target                     time.Duration
	FixedRate, AdaptiveCeiling float64
	Runs                       []DegradeRun
}

// DegradeRun is one run of it.
type DegradeRun struct {
	Name   string
	Result HerdResult
	// P95 of the orders started per second (s → ms).
	P95PerSecond []Point
	// P95Before: of the orders started in the 10 s before the step;
	// P95Last: in the run's last 10 s; Peak: the highest per-second p95.
	P95Before, P95Last, Peak time.Duration
	// Recovered is how long after the step the per-second p95 came back
	// within 1.5× the target for good (-1: it did not).
	Recovered time.Duration
}

// Degradation parameters.
const (
	degradeSlowWork = 400 * time.Millisecond
	// The adaptive run's target sits above what the slowed database takes
	// on its own (400 ms): a target below it cannot be met at any rate, and
	// drives the rate to its floor (docs/operations.md).
	degradeTarget = 450 * time.Millisecond
	// The fixed run's rate is the one the herd's database sustains at
	// 200 ms (docs/benchmarks.md: 87/s): right until the step.
	degradeFixedRate = 87
)

func runDegrade(ctx context.Context, o Options) (*DegradeReport, error) {
	rep := &DegradeReport{Users: 6000, OrderWork: herdOrderWork, SlowWork: degradeSlowWork,
		StepAt: 20 * time.Second, RunFor: 60 * time.Second, Target: degradeTarget,
		FixedRate: degradeFixedRate, AdaptiveCeiling: 100}
	if o.Short {
		rep.Users, rep.StepAt, rep.RunFor = 200, 3*time.Second, 6*time.Second
	}
	spread := HerdModes[2] // 10 per 100 ms, jitter on
	for _, adaptive := range []bool{false, true} {
		mode := spread
		mode.Adaptive = adaptive
		name := fmt.Sprintf("fixed %g/s", rep.FixedRate)
		mode.Rate = rep.FixedRate
		if adaptive {
			name = fmt.Sprintf("adaptive, target %v", rep.Target)
			mode.Rate = rep.AdaptiveCeiling
		}
		o.logf("degrade: %s, %d users, work %v → %v at %v, %v in all", name, rep.Users, rep.OrderWork, rep.SlowWork, rep.StepAt, rep.RunFor)
		res, err := herdRun(ctx, o, herdSpec{mode: mode, users: rep.Users, target: rep.Target,
			stepAt: rep.StepAt, stepWork: rep.SlowWork, runFor: rep.RunFor})
		if err != nil {
			return rep, fmt.Errorf("%s: %w", name, err)
		}
		run := DegradeRun{Name: name, Result: res, P95PerSecond: bucketed(res.Latency, 1, 95), Recovered: -1}
		step, end := rep.StepAt.Seconds(), res.Duration.Seconds()
		run.P95Before = p95Between(res.Latency, step-10, step)
		run.P95Last = p95Between(res.Latency, end-10, end)
		bound := 1.5 * float64(rep.Target) / float64(time.Millisecond)
		for i, p := range run.P95PerSecond {
			run.Peak = max(run.Peak, time.Duration(p.Y*float64(time.Millisecond)))
			if p.X < step || run.Recovered >= 0 {
				continue
			}
			if !slices.ContainsFunc(run.P95PerSecond[i:], func(q Point) bool { return q.Y > bound }) {
				run.Recovered = time.Duration((p.X - 0.5 - step) * float64(time.Second))
			}
		}
		o.logf("degrade: %s: p95 %v before the step, %v in the last 10 s, peak %v, back within 1.5× target %v after, %d orders, %d unserved, rate settled at %.1f",
			name, run.P95Before, run.P95Last, run.Peak, run.Recovered, res.Orders, res.Unserved, res.SettledRate)
		rep.Runs = append(rep.Runs, run)
	}
	return rep, nil
}

// p95Between is the p95 of the latencies of orders started in [from, to)
// seconds since the crowd arrived.
func p95Between(lat []Point, from, to float64) time.Duration {
	var d []time.Duration
	for _, p := range lat {
		if p.X >= from && p.X < to {
			d = append(d, time.Duration(p.Y*float64(time.Millisecond)))
		}
	}
	slices.Sort(d)
	return percentile(d, 95)
}

// NoShowReport is the no-show experiment: Share of the crowd enter and
// never come back, at a fixed rate, without and with skipping them.
type NoShowReport struct {
	Users   int
	Share   float64
	Rate    float64
	Abandon time.Duration
	Runs    []NoShowRun
}

// NoShowRun is one run of it.
type NoShowRun struct {
	Name   string
	Skip   bool
	Result HerdResult
}

func runNoShow(ctx context.Context, o Options) (*NoShowReport, error) {
	rep := &NoShowReport{Users: 3000, Share: 0.3, Rate: degradeFixedRate, Abandon: 15 * time.Second}
	if o.Short {
		rep.Users = 100
	}
	mode := HerdModes[2]
	mode.Rate, mode.Adaptive = rep.Rate, false
	for _, skip := range []bool{false, true} {
		spec := herdSpec{mode: mode, users: rep.Users, vanish: func(i int) bool { return i%10 < 3 }}
		name := "no skipping"
		if skip {
			spec.abandon, name = rep.Abandon, fmt.Sprintf("abandonAfterSeconds %d", int(rep.Abandon.Seconds()))
		}
		o.logf("noshow: %s, %d users, 30%% vanish, %g/s", name, rep.Users, rep.Rate)
		res, err := herdRun(ctx, o, spec)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", name, err)
		}
		o.logf("noshow: %s: %d of %d no-shows got a token, %d skipped, last present user in after %v, %d orders, %d errors",
			name, res.NoShowTokens, res.Vanished, res.Abandoned, res.LastPresentReady.Round(time.Millisecond), res.Orders, res.Errors)
		rep.Runs = append(rep.Runs, NoShowRun{Name: name, Skip: skip, Result: res})
	}
	return rep, nil
}
