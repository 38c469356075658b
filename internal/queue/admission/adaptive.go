package admission

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// The adaptive rate. Every protected call (an order; a backend call through
// the gateway) reports its latency and whether it failed or timed out.
// Each instance folds those of each queue per window (RateController), and
// hands them to the store, which merges every instance's samples of a
// window and lets the first instance that reports in the next window claim
// the decision on it (Store.FoldRate, by the store's clock, as admission
// ticks are claimed): N instances make one decision per window, with no
// leader. The claimant applies NextRate and writes the result
// (Store.SetRate), which admission uses from its next tick.

// AdaptiveStart is where the adaptive rate starts when it is switched on:
// half the configured rate, within its bounds. The configured rate is a
// guess; a guess too high would build a backlog at the opening, when the
// line is longest, before the first decision could cut it. From half, the
// rate grows a tenth a second while latency stays under the target, and
// so reaches the guess within eight seconds if the backend bears it.
func AdaptiveStart(c queue.Config) float64 { return max(c.MinRate, min(c.RatePerSecond/2, c.MaxRate)) }

// AdaptiveStartWhy is the reason logged for AdaptiveStart.
const AdaptiveStartWhy = "adaptive on, from half the configured rate"

// DefaultRateWindow is how long samples are gathered per decision.
const DefaultRateWindow = time.Second

// What a decision of the adaptive rate did (queue.RateDecision.Kind).
const (
	// RateBackOff: the rate was cut.
	RateBackOff queue.RateKind = "back-off"
	// RateWaitShow: held on the window right after a back-off, whose calls
	// were mostly let in before it.
	RateWaitShow queue.RateKind = "wait-show"
	// RateDraining: held while a backlog drains.
	RateDraining queue.RateKind = "draining"
	// RateHold: held for another reason (too few calls, nobody waiting,
	// the backend falling behind).
	RateHold queue.RateKind = "hold"
	// RateGrow: the rate was raised.
	RateGrow queue.RateKind = "grow"
)

// after reports whether the decision on the window just before w's was of
// one of kinds.
func after(w queue.RateWindow, kinds ...queue.RateKind) bool {
	return w.Last.Window == w.ID-1 && slices.Contains(kinds, w.Last.Kind)
}

// drainShare: a back-off goes no lower than this share of what the
// backend completes behind a backlog, and holds once there; the backlog
// drains at the rest. In the simulated slowdown (adaptive_sim_test.go)
// 0.5 brought all 20 seeds back within 10 s of the step; 0.55 and 0.6
// left 8 and 14 of them at 11–12 s: the backlog built before the first cut
// drains at the rest, and how fast is what this trades against how deep
// the cut.
const drainShare = 0.5

// RateMinCalls is how many protected calls a decision needs: a window
// with fewer is not decided but merged into the next one (both stores do
// this), so at a low rate a decision stands on 20 calls rather than on
// a second's handful, where two slow calls would make the p90.
const RateMinCalls = 20

// minCallsToJudge: a window with fewer protected calls says too little
// about the backend to change the rate on (the stores give NextRate at
// least RateMinCalls; this guards against anything less).
const minCallsToJudge = 3

// Decision is NextRate's answer: the decision the store keeps, and the
// figures of the window it stood on.
type Decision struct {
	queue.RateDecision
	Calls, Failed int64
}

// NextRate is the adaptive rate's rule, on one window of every instance's
// samples, w, for a queue configured c. It is AIMD on the protected calls'
// p90 latency (after TCP's CUBIC, Netflix concurrency-limits and Envoy's
// adaptive concurrency), shaped by how long a change takes to show: the
// calls a window measures were mostly let in a window or more before it.
//
//   - 2% or more of the calls failed or timed out (a 5xx, a lost
//     connection, an exhausted pool): back off to 70%;
//   - p90 above the target: back off to target/p90 of the rate, by at least
//     10% (so a backlog built by the last step up drains) and at most 30%
//     (50% when p90 is over 1.5× the target), but never below half of
//     what the backend completed in the window (behind a backlog, all it
//     can take; counted in users by the calls each makes), where the
//     backlog drains at the other half. What the backend completed (or,
//     not knowing the calls per user yet, the rate backed off from) is
//     remembered as the knee;
//   - but hold on the window right after a back-off, whose calls were
//     mostly let in before it; then while the p90 keeps falling; and while
//     the rate is at most half of what the backend completes: the backlog
//     drains, and cutting again on calls let in before the last cut would
//     cut twice for one excess and sink the rate far below what the
//     backend bears;
//   - nobody waits: hold (the rate is not what limits anyone);
//   - the backend completed under 80% of the calls the users let in make:
//     hold, under the target or not (a backlog is building that latency
//     has yet to show; a target far above what the backend takes would
//     let it build for long);
//   - else grow: with no knee known, by twice the headroom under the
//     target (2% to 10% a window); with one, 10% a window up to 90% of it,
//     then 2%, and past it faster the further it got (a point more for
//     each 5% past, up to 10%): fast far below where the backend stopped
//     keeping up, gently near it, and back to full speed when it bears
//     more. A window under the target measures the calls each admitted
//     user makes (RateDecision.CallsPerUser: faster up than down).
//
// The rate never leaves [MinRate, MaxRate]. A window with fewer than three
// calls changes nothing. The target must lie above what the backend takes
// when unloaded: latency that no rate can bring under it drives the rate
// down to its floor.
func NextRate(c queue.Config, w queue.RateWindow) Decision {
	s := w.Samples
	last := w.Last
	d := Decision{RateDecision: queue.RateDecision{Window: w.ID, Rate: w.Rate, P90: latencyPercentile(s, 0.9), Knee: last.Knee, CallsPerUser: last.CallsPerUser},
		Calls: s.Calls, Failed: s.Overloaded}
	target := c.TargetLatency
	// bears is what the backend completed in the window, in users per
	// second by the calls each makes (0: not known). Behind a backlog that
	// is all it can take.
	var bears float64
	if last.CallsPerUser > 0 && w.Admitted > 0 {
		bears = w.Rate * float64(s.Calls) / (last.CallsPerUser * float64(w.Admitted))
	}
	cut := func(to float64, why string) {
		d.Rate, d.Knee, d.Kind, d.Why = w.Rate*to, w.Rate, RateBackOff, "back off: "+why
	}
	hold := func(kind queue.RateKind, why string, args ...any) { d.Kind, d.Why = kind, fmt.Sprintf(why, args...) }
	switch {
	case s.Calls < minCallsToJudge:
		hold(RateHold, "hold: %d calls are too few to judge", s.Calls)
	case float64(s.Overloaded) >= 0.02*float64(s.Calls):
		cut(0.7, fmt.Sprintf("%d of %d calls failed or timed out", s.Overloaded, s.Calls))
	case d.P90 > target && after(w, RateBackOff):
		hold(RateWaitShow, "hold, the last back-off has yet to show: p90 %v above the target %v", d.P90, target)
	case d.P90 > target && after(w, RateWaitShow, RateDraining) && d.P90 < last.P90:
		hold(RateDraining, "hold, draining: p90 %v above the target %v, down from %v", d.P90, target, last.P90)
	case d.P90 > target && bears > 0 && w.Rate <= drainShare*bears:
		hold(RateDraining, "hold, draining: p90 %v above the target %v; admitting %.1f/s of the %.1f/s the backend completes", d.P90, target, w.Rate, bears)
	case d.P90 > target:
		deepest := 0.7
		if d.P90 > target*3/2 {
			deepest = 0.5
		}
		cut(max(deepest, min(0.9, float64(target)/float64(d.P90))), fmt.Sprintf("p90 %v above the target %v", d.P90, target))
		if bears > 0 {
			// Never below drainShare of what the backend completes (the
			// backlog drains at the rest), and that measure is the knee.
			d.Rate, d.Knee = max(d.Rate, drainShare*bears), bears
		}
	case w.Waiting == 0:
		hold(RateHold, "hold: nobody waiting")
	case last.CallsPerUser > 0 && w.Admitted >= RateMinCalls && float64(s.Calls) < keepingUp*last.CallsPerUser*float64(w.Admitted):
		// Under the target, but the backend completed fewer calls than
		// the users let in make: a backlog is building that latency has
		// yet to show (a target far above what the backend takes lets it
		// grow for long). Hold, and let the measure of calls per user
		// drift down in case users really make fewer.
		hold(RateHold, "hold: the backend completed %d calls, the %d users let in make about %.0f", s.Calls, w.Admitted, last.CallsPerUser*float64(w.Admitted))
		d.CallsPerUser = callsPerUser(last.CallsPerUser, float64(s.Calls)/float64(w.Admitted))
	default:
		if d.Knee > 0 {
			// 2% a window from 90% of the knee, and past it faster the
			// further it got without latency rising (the backend bears
			// more now, as after a passing stall): a point more a window
			// for each 5% past it, up to 10% (CUBIC's probe).
			step := min(0.1, 0.02+0.2*max(0, w.Rate/d.Knee-1))
			d.Rate = min(w.Rate*1.1, max(0.9*d.Knee, w.Rate*(1+step)))
		} else {
			d.Rate = w.Rate * (1 + max(0.02, min(0.1, 2*float64(target-d.P90)/float64(target))))
		}
		d.Kind, d.Why = RateGrow, fmt.Sprintf("grow: p90 %v under the target %v", d.P90, target)
		if w.Admitted > 0 {
			d.CallsPerUser = callsPerUser(last.CallsPerUser, float64(s.Calls)/float64(w.Admitted))
		}
	}
	d.Rate = max(c.MinRate, min(math.Round(d.Rate*100)/100, c.MaxRate))
	return d
}

// keepingUp: a window in which the backend completed less than this share
// of the calls the users let in make is falling behind. In the simulated
// slowdown 0.8 and 0.9 did the same; 0.8 leaves more room for the noise
// of users who make a varying number of calls.
const keepingUp = 0.8

// callsPerUser folds one window's measure of the calls an admitted user
// makes into the last: a third of the way up, a twentieth down, since a
// window in which the backend fell behind measures too few (its calls are
// still queued). Not further up: where users make a varying number of
// calls (a gateway protecting whole sessions), a measure that followed
// every high window would call the ordinary ones falling behind.
func callsPerUser(last, measured float64) float64 {
	switch {
	case last == 0:
		return measured
	case measured > last:
		return 0.7*last + 0.3*measured
	default:
		return 0.95*last + 0.05*measured
	}
}

// RateController gathers this instance's protected calls per queue and,
// once per window, hands them to the store; when that claims the decision
// on a finished window, it decides the next rate (NextRate), writes it and
// logs the change with its reason.
type RateController struct {
	store  loopStore
	logger *slog.Logger
	// Window is how long samples are gathered per decision (DefaultRateWindow).
	Window time.Duration

	mu      sync.Mutex
	pending map[string]*queue.RateSample
	// sampled is told when a sample is taken into an empty pending (Run
	// sleeps until then: an instance that protects no calls never wakes).
	sampled chan struct{}
	// folds logs a queue's failing hand-overs once per change of state.
	folds *perqueue.Troubles
}

// NewRateController returns a RateController over store.
func NewRateController(store loopStore, logger *slog.Logger) *RateController {
	return &RateController{store: store, logger: logger, Window: DefaultRateWindow, pending: map[string]*queue.RateSample{},
		sampled: make(chan struct{}, 1), folds: perqueue.NewTroubles(logger, "adaptive rate: handing samples to the store")}
}

// maxSampledQueues bounds the queues one instance gathers samples for
// between two flushes (queue names come from valid tokens, so this is far
// above what real traffic needs).
const maxSampledQueues = 10_000

// Observe records one protected call: its queue, its latency from the
// token check to its answer, and whether it failed or timed out.
func (r *RateController) Observe(name string, took time.Duration, overloaded bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.pending[name]
	if !ok {
		if len(r.pending) >= maxSampledQueues {
			return
		}
		s = &queue.RateSample{}
		r.pending[name] = s
		if len(r.pending) == 1 {
			select {
			case r.sampled <- struct{}{}:
			default:
			}
		}
	}
	s.Add(took, overloaded)
}

// flushesPerWindow: samples are handed to the store several times a
// window, so a window holds the calls that ended in it (not up to a window
// before), and its decision comes at most a quarter of a window after it
// ends: the sooner a decision, the smaller the backlog it has to drain.
const flushesPerWindow = 4

// Run flushes the samples a few times per window, on the process's beat,
// until ctx ends. With nothing taken since the last flush it sleeps: a
// flush of nothing does nothing.
func (r *RateController) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.sampled:
		}
		t := time.NewTimer(perqueue.UntilBeat(r.Window / flushesPerWindow))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		r.Flush(ctx)
	}
}

// Flush hands every queue's samples to the store and decides the windows
// this instance claims.
func (r *RateController) Flush(ctx context.Context) {
	r.mu.Lock()
	batch := r.pending
	r.pending = make(map[string]*queue.RateSample, len(batch))
	r.mu.Unlock()
	queues := make([]string, 0, len(batch))
	for q := range batch {
		queues = append(queues, q)
	}
	perqueue.Each(ctx, queues, perqueue.CallTimeout, func(qctx context.Context, q string) {
		w, err := r.store.FoldRate(qctx, q, *batch[q], r.Window)
		if ctx.Err() != nil {
			return
		}
		r.folds.Result(q, err)
		if err == nil && w.Claimed {
			r.decide(qctx, q, w)
		}
	})
}

func (r *RateController) decide(ctx context.Context, q string, w queue.RateWindow) {
	c, err := r.store.Config(ctx, q)
	if err != nil || !c.Adaptive {
		return
	}
	d := NextRate(c, w)
	before, ok, err := r.store.SetRate(ctx, q, d.RateDecision)
	if err != nil {
		r.logger.Warn("adaptive rate: setting it failed", "queue", q, "err", err)
		return
	}
	if ok && before != d.Rate {
		r.logger.Info("admission rate changed", "queue", q, "from", before, "to", d.Rate, "why", d.Why,
			"p90", d.P90.String(), "target", c.TargetLatency.String(), "calls", d.Calls, "failed", d.Failed,
			"admitted", w.Admitted, "knee", d.Knee, "calls_per_user", math.Round(d.CallsPerUser*100)/100, "window", r.Window.String())
	}
}

// latencyPercentile is the latency below which the fraction q of the
// sampled calls fell (the upper bound of its bucket); 0 with no calls.
func latencyPercentile(s queue.RateSample, q float64) time.Duration {
	return time.Duration(rollup.Histogram(s.Latency).Quantile(q) * float64(time.Millisecond))
}
