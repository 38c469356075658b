// Package watch keeps what operators watch, every instance for itself:
// the line's store's health queue by queue (HealthCheck, for readiness
// and metrics) and each queue's recent numbers (History, for the admin
// page's charts).
package watch

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
)

// Health is what the store answered at its last check, queue by queue: on
// Redis Cluster each queue lives in one slot, so a node down takes its
// queues with it and leaves the others served.
type Health struct {
	CheckedAt time.Time
	// Reachable: some part of the store answered (all of it, or on Redis
	// Cluster the nodes still up). False: no queue can be served.
	Reachable bool
	// Err says why the store is unreachable (nil when it is not).
	Err error
	// Queues are the queues checked, sorted; the default queue is always
	// among them.
	Queues []string
	// Down lists the queues whose keys did not answer (their requests
	// answer 503 + Retry-After), sorted.
	Down []string
	// Missing lists the queues the store answered for but does not hold
	// (listed, or the default queue, with no config: Redis lost its data).
	Missing []string
}

// State is the store's state in one word: "up" (every queue answered),
// "degraded" (some did not) or "down" (nothing answered).
func (h Health) State() string {
	switch {
	case !h.Reachable:
		return "down"
	case len(h.Down) > 0:
		return "degraded"
	}
	return "up"
}

// HealthCheck watches the store: every HealthEvery it asks every known
// queue's keys for the queue's config, each queue at once under its own
// deadline, and keeps the answer for readiness and the metrics to read
// without a round trip of their own. It logs the store's and each queue's
// changes of state, once each.
type HealthCheck struct {
	svc *operate.Operator
	// probe is the store asked (the service's, or the same Redis through
	// a client of its own, so the checks never queue behind the
	// requests' auto-pipeline).
	probe  queue.Inspector
	logger *slog.Logger
	// Reach, if set, asks whether any part of the store answers when no
	// queue did (on Redis Cluster: any primary answers PING), so a store
	// whose queues all live on a node that is down still counts as
	// reachable. Nil: the store is reachable when some queue answered.
	Reach func(ctx context.Context) error
	// OnDown, if set, is told after each check that found queues down
	// (on Redis Cluster: look for the replica promoted in its place).
	OnDown func(ctx context.Context, down []string)

	mu   sync.Mutex
	last Health
}

// HealthEvery is how often HealthCheck asks the store.
const HealthEvery = time.Second

// NewHealthCheck returns a HealthCheck of the queues svc knows, asking
// probe (svc's store, or a client of its own to the same store).
func NewHealthCheck(svc *operate.Operator, probe queue.Inspector, logger *slog.Logger) *HealthCheck {
	return &HealthCheck{svc: svc, probe: probe, logger: logger}
}

// Run checks every HealthEvery until ctx ends.
func (c *HealthCheck) Run(ctx context.Context) {
	perqueue.Every(ctx, HealthEvery, func() { c.Check(ctx) })
}

// Last is the last check's answer (the zero Health before the first).
func (c *HealthCheck) Last() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Check asks the store now, keeps the answer and returns it.
func (c *HealthCheck) Check(ctx context.Context) Health {
	list, cancel := context.WithTimeout(ctx, perqueue.CallTimeout)
	names := c.svc.KnownQueues(list)
	cancel()
	if !slices.Contains(names, queue.DefaultQueue) {
		names = append(slices.Clip(names), queue.DefaultQueue)
	}
	h := Health{Queues: slices.Sorted(slices.Values(names))}
	var mu sync.Mutex
	var answered int
	var lastErr error
	perqueue.Each(ctx, h.Queues, perqueue.CallTimeout, func(ctx context.Context, q string) {
		_, err := c.probe.Config(ctx, q)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			answered++
		case errors.Is(err, queue.ErrQueueNotFound):
			answered++
			h.Missing = append(h.Missing, q)
		default:
			h.Down = append(h.Down, q)
			lastErr = err
		}
	})
	if ctx.Err() != nil {
		return c.Last() // shutting down: nothing was learnt
	}
	slices.Sort(h.Down)
	slices.Sort(h.Missing)
	h.Reachable = answered > 0
	if !h.Reachable && c.Reach != nil {
		reach, cancel := context.WithTimeout(ctx, perqueue.CallTimeout)
		err := c.Reach(reach)
		cancel()
		h.Reachable = err == nil
		if err != nil {
			lastErr = err
		}
	}
	if !h.Reachable {
		h.Err = lastErr
	}
	h.CheckedAt = time.Now()

	c.mu.Lock()
	before := c.last
	c.last = h
	c.mu.Unlock()
	c.logChanges(before, h)
	if len(h.Down) > 0 && c.OnDown != nil {
		c.OnDown(ctx, h.Down)
	}
	return h
}

// logChanges logs what changed since the last check: the store as a whole,
// else each queue that went down or came back.
func (c *HealthCheck) logChanges(before, now Health) {
	first := before.CheckedAt.IsZero()
	switch {
	case !now.Reachable && (first || before.Reachable):
		c.logger.Error("the line's store does not answer: every queue answers 503 until it is back", "err", now.Err)
		return
	case now.Reachable && !first && !before.Reachable:
		c.logger.Info("the line's store answers again", "queues_down", len(now.Down))
	}
	if !now.Reachable {
		return
	}
	wasDown := map[string]bool{}
	if before.Reachable {
		for _, q := range before.Down {
			wasDown[q] = true
		}
	}
	for _, q := range now.Down {
		if !wasDown[q] {
			c.logger.Warn("a queue's store does not answer (on Redis Cluster: the node holding its slot); its requests answer 503 until it is back, other queues are served",
				"queue", q)
		}
		delete(wasDown, q)
	}
	for _, q := range slices.Sorted(maps.Keys(wasDown)) {
		c.logger.Info("a queue's store answers again", "queue", q)
	}
}
