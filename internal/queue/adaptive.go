package queue

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
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

// DefaultRateWindow is how long samples are gathered per decision.
const DefaultRateWindow = time.Second

// The reasons of the decisions NextRate remembers the last one by: one
// that lowered the rate, and one that held it with latency above the target.
const (
	backOff   = "back off: "
	aboveHold = "hold: "
)

// last reports whether the decision on the window before w began with why.
func last(w RateWindow, why string) bool {
	return w.LastID == w.ID-1 && strings.HasPrefix(w.LastWhy, why) && (why != aboveHold || strings.Contains(w.LastWhy, "above the target"))
}

// RateMinCalls is how many protected calls a decision needs: a window
// with fewer is not decided but merged into the next one (both stores do
// this), so at a low rate a decision stands on 20 calls rather than on
// a second's handful, where two slow calls would make the p90.
const RateMinCalls = 20

// minCallsToJudge: a window with fewer protected calls says too little
// about the backend to change the rate on (the stores give NextRate at
// least RateMinCalls; this guards against anything less).
const minCallsToJudge = 3

// latencyBase is the width of a latency bucket: each is 5% wider than the
// one below, so a percentile read from the buckets is within 5%.
const latencyBase = 1.05

// LatencyBucket is the bucket of a protected call's latency in
// RateSample.Latency: 0 up to 1 ms, then b for (1.05^(b-1), 1.05^b] ms.
func LatencyBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= 1 {
		return 0
	}
	return int(math.Ceil(math.Log(ms) / math.Log(latencyBase)))
}

// bucketLatency is the upper bound of a bucket.
func bucketLatency(b int) time.Duration {
	return time.Duration(math.Pow(latencyBase, float64(b)) * float64(time.Millisecond))
}

// Add counts one call in the sample.
func (s *RateSample) Add(took time.Duration, overloaded bool) {
	s.Calls++
	if overloaded {
		s.Overloaded++
	}
	if s.Latency == nil {
		s.Latency = map[int]int64{}
	}
	s.Latency[LatencyBucket(took)]++
}

// Percentile is the latency below which the fraction q of the sampled
// calls fell (the upper bound of its bucket); 0 with no calls.
func (s RateSample) Percentile(q float64) time.Duration {
	var total int64
	buckets := make([]int, 0, len(s.Latency))
	for b, n := range s.Latency {
		buckets = append(buckets, b)
		total += n
	}
	if total == 0 {
		return 0
	}
	slices.Sort(buckets)
	need := int64(math.Ceil(q * float64(total)))
	var seen int64
	for _, b := range buckets {
		if seen += s.Latency[b]; seen >= need {
			return bucketLatency(b)
		}
	}
	return bucketLatency(buckets[len(buckets)-1])
}

// Decision is NextRate's answer: the rate for the next window and why, in
// words and in the figures that decided it.
type Decision struct {
	Rate   float64
	Why    string
	P90    time.Duration
	Calls  int64
	Failed int64
}

// NextRate is the adaptive rate's rule, AIMD on the protected calls'
// latency with a gradient-sized back-off (after Netflix concurrency-limits
// and Envoy's adaptive concurrency), on one window of every instance's
// samples, w, for a queue configured c:
//
//   - 2% or more of the calls failed or timed out (a 5xx, a lost
//     connection, an exhausted pool): back off to 70%;
//   - their p90 latency is above the target for a second window running,
//     or far above it (1.5×) in one: back off in proportion, to target/p90
//     of the rate, by at most 30% (50% when far above), so a small excess is
//     a small step and a backlog that built up drains. One window a little
//     above alone holds (a moment's noise on a shared machine is not a
//     backlog), and so does the window right after a back-off, whose calls
//     were mostly let in before it: backing off again on them would cut for
//     the same excess twice and sink the rate far below what the backend
//     bears;
//   - nobody waits: hold (the rate is not what limits anyone);
//   - else grow by the headroom under the target (at most 10% per
//     window): fast while latency is far below the target, slowly as it
//     comes near, so the rate settles close to where the backend starts
//     to queue;
//
// and never outside [MinRate, MaxRate]. A window with fewer than three calls
// changes nothing. The target must lie above what the backend takes when
// unloaded: latency that no rate can bring under it drives the rate down to
// its floor.
func NextRate(c Config, w RateWindow) Decision {
	s := w.Samples
	d := Decision{Rate: w.Rate, P90: s.Percentile(0.9), Calls: s.Calls, Failed: s.Overloaded}
	target := c.TargetLatency
	switch {
	case s.Calls < minCallsToJudge:
		d.Why = fmt.Sprintf("hold: %d calls are too few to judge", s.Calls)
	case float64(s.Overloaded) >= 0.02*float64(s.Calls):
		d.Rate = w.Rate * 0.7
		d.Why = fmt.Sprintf(backOff+"%d of %d calls failed or timed out", s.Overloaded, s.Calls)
	case d.P90 > target && last(w, backOff):
		d.Why = fmt.Sprintf(aboveHold+"p90 %v above the target %v; the last back-off has yet to show", d.P90, target)
	case d.P90 > target && d.P90 <= target*3/2 && !last(w, aboveHold):
		d.Why = fmt.Sprintf(aboveHold+"p90 %v above the target %v; backing off if it stays", d.P90, target)
	case d.P90 > target:
		deepest := 0.7
		if d.P90 > target*3/2 {
			deepest = 0.5
		}
		d.Rate = w.Rate * max(deepest, float64(target)/float64(d.P90))
		d.Why = fmt.Sprintf(backOff+"p90 %v above the target %v", d.P90, target)
	case w.Waiting == 0:
		d.Why = "hold: nobody waiting"
	default:
		headroom := float64(target-d.P90) / float64(target)
		d.Rate = w.Rate * (1 + min(0.1, headroom))
		d.Why = fmt.Sprintf("grow: p90 %v under the target %v", d.P90, target)
	}
	d.Rate = max(c.MinRate, min(math.Round(d.Rate*100)/100, c.MaxRate))
	return d
}

// RateController gathers this instance's protected calls per queue and,
// once per window, hands them to the store; when that claims the decision
// on a finished window, it decides the next rate (NextRate), writes it and
// logs the change with its reason.
type RateController struct {
	store  Store
	logger *slog.Logger
	// Window is how long samples are gathered per decision (DefaultRateWindow).
	Window time.Duration

	mu      sync.Mutex
	pending map[string]*RateSample
}

// NewRateController returns a RateController over store.
func NewRateController(store Store, logger *slog.Logger) *RateController {
	return &RateController{store: store, logger: logger, Window: DefaultRateWindow, pending: map[string]*RateSample{}}
}

// maxSampledQueues bounds the queues one instance gathers samples for
// between two flushes (queue names come from valid tokens, so this is far
// above what real traffic needs).
const maxSampledQueues = 10_000

// Observe records one protected call: its queue, its latency from the
// token check to its answer, and whether it failed or timed out.
func (r *RateController) Observe(queue string, took time.Duration, overloaded bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.pending[queue]
	if !ok {
		if len(r.pending) >= maxSampledQueues {
			return
		}
		s = &RateSample{}
		r.pending[queue] = s
	}
	s.Add(took, overloaded)
}

// Run flushes the samples once per window until ctx ends.
func (r *RateController) Run(ctx context.Context) { every(ctx, r.Window, func() { r.Flush(ctx) }) }

// Flush hands every queue's samples to the store and decides the windows
// this instance claims.
func (r *RateController) Flush(ctx context.Context) {
	r.mu.Lock()
	batch := r.pending
	r.pending = make(map[string]*RateSample, len(batch))
	r.mu.Unlock()
	for q, s := range batch {
		w, err := r.store.FoldRate(ctx, q, *s, r.Window)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Warn("adaptive rate: folding samples failed", "queue", q, "err", err)
			}
			continue
		}
		if w.Claimed {
			r.decide(ctx, q, w)
		}
	}
}

func (r *RateController) decide(ctx context.Context, q string, w RateWindow) {
	c, err := r.store.Config(ctx, q)
	if err != nil || !c.Adaptive {
		return
	}
	d := NextRate(c, w)
	before, ok, err := r.store.SetRate(ctx, q, w.ID, d.Rate, d.Why)
	if err != nil {
		r.logger.Warn("adaptive rate: setting it failed", "queue", q, "err", err)
		return
	}
	if ok && before != d.Rate {
		r.logger.Info("admission rate changed", "queue", q, "from", before, "to", d.Rate, "why", d.Why,
			"p90", d.P90.String(), "target", c.TargetLatency.String(), "calls", d.Calls, "failed", d.Failed,
			"window", r.Window.String())
	}
}
