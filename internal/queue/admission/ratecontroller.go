package admission

import (
	"context"
	"crypto/rand"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
)

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

	// id names this instance's pool in the samples (queue.RateSample.Pools);
	// pool is its connections (0: none known, SetPool); flushed is when
	// the samples were last handed over.
	id      string
	pool    int
	queued  func(queue string) int64
	flushed time.Time
}

// NewRateController returns a RateController over store.
func NewRateController(store loopStore, logger *slog.Logger) *RateController {
	return &RateController{store: store, logger: logger, Window: DefaultRateWindow, pending: map[string]*queue.RateSample{},
		sampled: make(chan struct{}, 1), folds: perqueue.NewTroubles(logger, "adaptive rate: handing samples to the store"),
		id: rand.Text()[:12]}
}

// SetPool tells the controller that the protected calls run on a pool of
// n connections this instance holds (the order store's), which they time
// waiting for and holding (spend.Wait): the adaptive rate then knows what
// the backend bears and what waits in front of it (NextRate). queued
// tells how many of a queue's calls wait for a connection now.
func (r *RateController) SetPool(n int, queued func(queue string) int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pool, r.queued = n, queued
}

// maxSampledQueues bounds the queues one instance gathers samples for
// between two flushes (queue names come from valid tokens, so this is far
// above what real traffic needs).
const maxSampledQueues = 10_000

// Observe records one protected call: its queue, its latency from the
// token check to its answer, how long it waited for a connection of the
// pool and held one (0: none), and whether it failed or timed out.
func (r *RateController) Observe(name string, took, waited, held time.Duration, overloaded bool) {
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
	s.Add(took, waited, held, overloaded)
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
	r.sharePool(batch, time.Now())
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

// sharePool names in each queue's sample the connections of this
// instance's pool its calls had: the pool less what the other queues'
// calls held of it since the last flush. One queue selling alone has the
// whole pool; two at once each have what they use and what is idle, so
// neither counts the other's connections as its own.
func (r *RateController) sharePool(batch map[string]*queue.RateSample, now time.Time) {
	since := min(r.Window, max(r.Window/flushesPerWindow/2, now.Sub(r.flushed)))
	r.flushed = now
	if r.pool == 0 {
		return
	}
	var held int64
	for _, s := range batch {
		held += s.HeldMicros
	}
	for q, s := range batch {
		others := float64(held-s.HeldMicros) / float64(since.Microseconds())
		s.Pools = map[string]int64{r.id: max(1, int64(math.Round(float64(r.pool)-others)))}
		s.Queued = map[string]int64{r.id: r.queued(q)}
	}
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
			"admitted", w.Admitted, "capacity", math.Round(d.Capacity*10)/10, "calls_per_user", math.Round(d.CallsPerUser*100)/100,
			"window", w.Span.String())
	}
}

// MergeSample adds o to s, o's pools and queued calls replacing s's of the
// same instance (each instance's latest count is the one that stands): how
// a store folds an instance's samples into a window.
func MergeSample(s *queue.RateSample, o queue.RateSample) {
	s.Calls += o.Calls
	s.Overloaded += o.Overloaded
	s.LatencyMicros += o.LatencyMicros
	s.WaitedMicros += o.WaitedMicros
	s.HeldMicros += o.HeldMicros
	for b, n := range o.Latency {
		if s.Latency == nil {
			s.Latency = map[int]int64{}
		}
		s.Latency[b] += n
	}
	for id, n := range o.Pools {
		if s.Pools == nil {
			s.Pools = map[string]int64{}
		}
		s.Pools[id] = n
	}
	for id, n := range o.Queued {
		if s.Queued == nil {
			s.Queued = map[string]int64{}
		}
		s.Queued[id] = n
	}
}
