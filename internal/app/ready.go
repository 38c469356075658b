package app

// Readiness (/readyz): whether this instance can do its job.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/queue"
)

// ready is /readyz (httpapi.Options.Ready): whether this instance can do
// its job. A fault outside the instance limits only what it touches:
//
//   - gateway mode forwards every unprotected route whatever the line's
//     store does, so it is ready while it can reach the upstream's
//     address; the store's state is reported, not a reason (a protected
//     route answers 503 + Retry-After while its queue's store is away);
//   - serve mode can serve nothing without a store, so a store that does
//     not answer at all makes it unready; a Redis Cluster with some nodes
//     down does not (their queues answer 503, the others are served): the
//     queues are listed in degradedQueues. The default queue missing (Redis
//     lost its data: created again within a second), an order database
//     that does not answer, and under --redis-strict-eviction a Redis that
//     may evict waitroom's keys make it unready too. Under
//     --on-store-error admit a store that does not answer is reported, not
//     a reason: orders go on, on degraded tokens, and the instance must
//     stay in the load balancer for them.
//
// The store's breakers (open while a queue's store failed and no probe has
// found it back) are reported in storeBreaker and breakerOpenQueues.
//
// strict (?strict=1) is the all-or-nothing answer: every part whole.
// The store's state is the health check's, refreshed every second in the
// background: a probe costs the store no round trip.
func (m *Main) ready(ctx context.Context, strict bool) (httpapi.Readiness, error) {
	h := m.line.health.Last()
	r := httpapi.Readiness{Store: h.State(), OnStoreError: string(m.line.degraded.Mode()), StoreBreaker: "closed"}
	if open := m.line.breaker.OpenQueues(); len(open) > 0 {
		r.StoreBreaker, r.BreakerOpenQueues = "open", open
	}
	if h.Reachable { // else every queue is down: "store": "down" says it
		r.DegradedQueues = h.Down
	}
	// What keeps the store from being whole, worst first.
	var storeProblem error
	switch {
	case !h.Reachable && m.line.degraded.Admits() && !strict:
		r.Warnings = append(r.Warnings, "the line's store does not answer: protected requests are admitted degraded (--on-store-error admit)")
	case !h.Reachable:
		storeProblem = fmt.Errorf("%w: the line's store does not answer: %v", queue.ErrUnavailable, h.Err)
	case slices.Contains(h.Missing, queue.DefaultQueue):
		storeProblem = fmt.Errorf("%w: the default queue is missing from the store (did Redis lose its data?); "+
			"the admission loop creates it again within a second", httpapi.ErrNotReady)
		r.Warnings = append(r.Warnings, storeProblem.Error())
	case m.line.eviction != nil:
		if problem := m.line.eviction.Problem(ctx); problem != "" {
			if m.Config.RedisStrictEviction {
				storeProblem = fmt.Errorf("%w: --redis-strict-eviction: %s", httpapi.ErrNotReady, problem)
			}
			r.Warnings = append(r.Warnings, problem)
		}
	}
	if strict && storeProblem == nil && len(h.Down) > 0 {
		storeProblem = fmt.Errorf("%w: strict: the store does not answer for %s", httpapi.ErrNotReady, strings.Join(h.Down, ", "))
	}

	if m.Gateway != nil {
		if err := m.Gateway.UpstreamReachable(ctx); err != nil {
			r.Upstream = "unreachable"
			return r, fmt.Errorf("%w: cannot forward: %v", httpapi.ErrNotReady, err)
		}
		r.Upstream = "reachable"
		if strict {
			return r, storeProblem
		}
		return r, nil
	}
	if storeProblem != nil {
		return r, storeProblem
	}
	if m.sale.orderStore != nil {
		return r, m.sale.orderStore.Ping(ctx)
	}
	return r, nil
}
