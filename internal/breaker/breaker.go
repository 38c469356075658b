// Package breaker keeps requests from each waiting out the line's store
// timeouts while it does not answer (issue 23's --on-store-error): a store
// call that fails opens its queue's breaker; while it is open, requests
// about that queue are answered at once without asking the store (503 under
// --on-store-error wait, a degraded admission under admit), and the store
// is probed once a second; the first probe that succeeds closes it.
//
// Breakers are per queue because on Redis Cluster a node down takes only
// the queues whose slots it holds: a partial outage stays partial.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
)

// ProbeEvery is how often an open breaker asks the store whether it is back
// (a call made past it that succeeds closes it sooner: Succeeded).
const ProbeEvery = time.Second

// MaxOpen bounds the breakers open at once: a queue's name comes from the
// request's path, and during an outage made-up names must not each cost a
// probe a second. Beyond it, a queue's calls meet the store's failure
// themselves.
const MaxOpen = 1000

// Breaker is the breakers of every queue.
type Breaker struct {
	// open is the set of open queues, replaced whole on each change (copy
	// on write): the check each request makes is one atomic load and, only
	// while some breaker is open, one map read, with no lock and no
	// allocation.
	open atomic.Pointer[map[string]struct{}]

	now      func() time.Time
	probe    func(ctx context.Context, queue string) error
	logger   *slog.Logger
	onChange func(queue string, open bool)

	// opened is told when the open set stops being empty: Run sleeps
	// while it is.
	opened chan struct{}

	mu     sync.Mutex // writers: Failed, Tick
	states map[string]*state
}

// state is an open breaker's bookkeeping.
type state struct {
	since, nextProbe time.Time
	err              error // the failure that opened it, then the last probe's
	failures         int   // calls failed while open (logged at closing)
}

// Options configures a Breaker.
type Options struct {
	// Probe asks the store whether the queue answers; nil or
	// queue.ErrQueueNotFound is an answer.
	Probe func(ctx context.Context, queue string) error
	// Now is the clock (time.Now when nil); tests step it.
	Now    func() time.Time
	Logger *slog.Logger
	// OnChange, if set, is told of each breaker's change of state.
	OnChange func(queue string, open bool)
}

// New returns a Breaker with every queue closed.
func New(o Options) *Breaker {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Breaker{now: o.Now, probe: o.Probe, logger: o.Logger, onChange: o.OnChange, states: map[string]*state{},
		opened: make(chan struct{}, 1)}
	b.open.Store(&map[string]struct{}{})
	return b
}

// Open reports whether the queue's breaker is open: its store failed and
// has not answered a probe since. Nil-safe (a nil Breaker is always closed).
func (b *Breaker) Open(queue string) bool {
	if b == nil {
		return false
	}
	open := *b.open.Load()
	if len(open) == 0 {
		return false
	}
	_, ok := open[queue]
	return ok
}

// OpenQueues lists the queues whose breaker is open, sorted.
func (b *Breaker) OpenQueues() []string {
	if b == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(*b.open.Load()))
}

// Failed records a failure of the queue's store: the breaker opens (if it
// was closed) and the first probe is due ProbeEvery from now.
func (b *Breaker) Failed(queue string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.states[queue]; ok {
		s.failures++
		return
	}
	if len(b.states) >= MaxOpen {
		return // its calls meet the failure themselves, as without a breaker
	}
	now := b.now()
	b.states[queue] = &state{since: now, nextProbe: now.Add(ProbeEvery), err: err}
	b.publish()
	b.logger.Error("the line's store failed: its breaker is open, requests are answered at once without it (--on-store-error) and the store is probed once a second",
		"queue", queue, "err", err)
	if b.onChange != nil {
		b.onChange(queue, true)
	}
}

// Succeeded records that the queue's store answered a call made past the
// breaker (the admission loop's tick, a spent token's compare-and-delete):
// the store is back, so an open breaker closes at once, without waiting for
// its probe. Closed, it costs one atomic load.
func (b *Breaker) Succeeded(queue string) {
	if !b.Open(queue) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.states[queue]; ok {
		b.close(queue, s)
		b.publish()
		if b.onChange != nil {
			b.onChange(queue, false)
		}
	}
}

// close forgets the queue's open state and logs it (b.mu held; the caller
// publishes).
func (b *Breaker) close(queue string, s *state) {
	delete(b.states, queue)
	b.logger.Info("the line's store answers again: its breaker is closed, requests ask it again",
		"queue", queue, "open_for", b.now().Sub(s.since), "requests_answered_without_it", s.failures)
}

// publish replaces the open set with the states' queues (b.mu held).
func (b *Breaker) publish() {
	open := make(map[string]struct{}, len(b.states))
	for q := range b.states {
		open[q] = struct{}{}
	}
	b.open.Store(&open)
	if len(open) > 0 {
		select {
		case b.opened <- struct{}{}:
		default:
		}
	}
}

// Tick probes every open queue whose probe is due, each under its own
// deadline and all at once (a queue whose store hangs costs only its own
// probe), and closes those whose store answered. It returns the queues
// closed.
func (b *Breaker) Tick(ctx context.Context) []string {
	now := b.now()
	b.mu.Lock()
	var due []string
	for q, s := range b.states {
		if !now.Before(s.nextProbe) {
			due = append(due, q)
			s.nextProbe = now.Add(ProbeEvery)
		}
	}
	b.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	results := make([]error, len(due))
	var wg sync.WaitGroup
	for i, q := range due {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, perqueue.CallTimeout)
			defer cancel()
			if err := b.probe(ctx, q); err != nil && !errors.Is(err, queue.ErrQueueNotFound) {
				results[i] = err
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil // shutting down: nothing was learnt
	}
	var closed []string
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range due {
		s := b.states[q]
		if s == nil {
			continue
		}
		if results[i] != nil {
			s.err = results[i]
			continue
		}
		b.close(q, s)
		closed = append(closed, q)
	}
	if len(closed) > 0 {
		b.publish()
		if b.onChange != nil {
			for _, q := range closed {
				b.onChange(q, false)
			}
		}
	}
	slices.Sort(closed)
	return closed
}

// tickEvery is how often Run looks for due probes: a breaker closes within
// about ProbeEvery plus this of its store coming back.
const tickEvery = 100 * time.Millisecond

// Run probes the open breakers (Tick) until ctx ends, and sleeps while
// none is open.
func (b *Breaker) Run(ctx context.Context) {
	for {
		if len(*b.open.Load()) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-b.opened:
			}
		}
		t := time.NewTimer(perqueue.UntilBeat(tickEvery))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if len(*b.open.Load()) > 0 {
			b.Tick(ctx)
		}
	}
}

// ErrOpen is the answer to a call about a queue whose breaker is open: the
// store was not asked. It wraps queue.ErrUnavailable (503 + Retry-After).
var ErrOpen = fmt.Errorf("%w: the breaker is open (the store failed; it is probed once a second)", queue.ErrUnavailable)
