package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// AccuracyRun is one configured rate with some admitting instances.
type AccuracyRun struct {
	Instances  int
	Configured float64 // users/s
	PerTick    string
	Measured   float64 // users/s over the window
	Admitted   int64
	Window     time.Duration
	ErrorPct   float64 // (measured − configured) / configured × 100
	PerSecond  []Point // s → admitted in that second
}

// AccuracyReport is the admission accuracy section.
type AccuracyReport struct {
	Window time.Duration
	WarmUp time.Duration
	Runs   []AccuracyRun
}

func runAccuracy(ctx context.Context, o Options) (*AccuracyReport, error) {
	rep := &AccuracyReport{Window: 30 * time.Second, WarmUp: time.Second}
	if o.Short {
		rep.Window, rep.WarmUp = time.Second, 500*time.Millisecond
	}
	for _, rate := range []float64{100, 37} {
		for _, n := range []int{1, 3} {
			o.logf("accuracy: %g/s with %d admitting instance(s) for %v", rate, n, rep.Window)
			r, err := accuracyRun(ctx, o, rate, n, rep.WarmUp, rep.Window)
			if err != nil {
				return rep, err
			}
			o.logf("accuracy: configured %g/s measured %.2f/s (%+.2f%%)", r.Configured, r.Measured, r.ErrorPct)
			rep.Runs = append(rep.Runs, r)
		}
	}
	return rep, nil
}

// accuracyRun runs n admission loops (as n instances would: each its own
// Redis client and Admitter) on one queue with a line longer than they can
// drain, and counts what Redis says was admitted over the window, after a
// warm-up (until the first admission, and at least warmUp) so the first
// tick's catch-up is not counted.
func accuracyRun(ctx context.Context, o Options, rate float64, n int, warmUp, window time.Duration) (AccuracyRun, error) {
	r := AccuracyRun{Instances: n, Configured: rate, Window: window}
	sc, err := newScratch(o)
	if err != nil {
		return r, err
	}
	defer sc.close(ctx)
	rdb, prefix, store := sc.rdb, sc.prefix, sc.store
	cfg := queue.DefaultConfig()
	cfg.RatePerSecond = rate
	cfg.Capacity = 10_000_000
	cfg.Paused = true
	if err := store.PutConfig(ctx, "acc", cfg); err != nil {
		return r, err
	}
	r.PerTick = fmt.Sprintf("%.1f per %v tick", cfg.RatePerSecond*cfg.Interval.Seconds(), cfg.Interval)
	// A line longer than the warm-up and the window can drain.
	users := int(rate*(window+warmUp+2*time.Second).Seconds()*1.5) + 100
	if err := fill(ctx, rdb, prefix, "acc", "acc-u", 0, users); err != nil {
		return r, err
	}
	cfg.Paused = false
	if err := store.PutConfig(ctx, "acc", cfg); err != nil {
		return r, err
	}

	var mu sync.Mutex
	start := time.Now()
	perSec := map[int]int{}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range n {
		c, err := newRedis(o.RedisURL)
		if err != nil {
			cancel()
			return r, err
		}
		defer c.Close()
		line := signals.New()
		line.Listen(signals.Listener{Moved: func(_ string, u []string, _ []rollup.Wait) {
			mu.Lock()
			perSec[int(time.Since(start).Seconds())] += len(u)
			mu.Unlock()
		}})
		a := admission.NewAdmitter(redisstore.New(c, prefix), slog.New(slog.NewTextHandler(io.Discard, nil)), line, nil)
		wg.Add(1)
		go func() { defer wg.Done(); a.Run(runCtx) }()
	}
	// The warm-up: at least warmUp, and until the admitters have let
	// someone in (on a loaded machine the first tick may come late).
	time.Sleep(warmUp)
	st0, err := store.Stats(ctx, "acc")
	for err == nil && st0.AdmittedTotal == 0 {
		time.Sleep(50 * time.Millisecond)
		st0, err = store.Stats(ctx, "acc")
	}
	t0 := time.Now()
	if err == nil {
		time.Sleep(window)
	}
	st1, err1 := store.Stats(ctx, "acc")
	t1 := time.Now()
	cancel()
	wg.Wait()
	if err != nil || err1 != nil {
		return r, fmt.Errorf("stats: %v %v", err, err1)
	}
	r.Admitted = st1.AdmittedTotal - st0.AdmittedTotal
	r.Measured = float64(r.Admitted) / t1.Sub(t0).Seconds()
	r.ErrorPct = (r.Measured - rate) / rate * 100
	if st1.Length == 0 {
		return r, fmt.Errorf("the line ran dry: the figure would undercount")
	}
	last := int(math.Ceil(time.Since(start).Seconds()))
	for s := 1; s < last-1; s++ { // whole seconds after the first
		r.PerSecond = append(r.PerSecond, Point{float64(s), float64(perSec[s])})
	}
	return r, nil
}
