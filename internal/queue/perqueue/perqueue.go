// Package perqueue is what the loops that visit every queue share: a call
// per queue at once, each under its own deadline, a ticker, and a log of
// each queue's trouble once when it starts and once when it ends.
package perqueue

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// On Redis Cluster each queue lives in one hash slot, so one node down
// takes down the queues whose slots it holds and no others. The loops that
// visit every queue (admission's discovery, the adaptive rate, no-show
// marks, the history, the metrics, the store's health) must keep that
// partial: a queue whose store does not answer may cost its own call's
// timeout, never the other queues' turn. So they visit the queues at once,
// each under its own deadline, and log a queue's trouble once when it
// starts and once when it ends, not once per call.

// CallTimeout bounds one background call about one queue. The Redis
// client gives up on a node after about a second (a dial or a read), so
// this is only reached by a call queued behind others.
const CallTimeout = 2 * time.Second

// Each calls fn for every queue at once, each with a context that
// ends after timeout, and returns when all have returned.
func Each(ctx context.Context, queues []string, timeout time.Duration, fn func(ctx context.Context, queue string)) {
	var wg sync.WaitGroup
	for _, q := range queues {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			fn(ctx, q)
		})
	}
	wg.Wait()
}

// Troubles remembers which queues' calls of one kind are failing, so a
// loop logs a queue's trouble when it begins and when it ends: once per
// change of state, however many calls fail in between.
type Troubles struct {
	logger *slog.Logger
	// what names the calls in the log ("admission tick").
	what string

	mu     sync.Mutex
	failed map[string]int // queue → calls failed in a row
}

// NewTroubles returns Troubles logging to logger about the calls named what.
func NewTroubles(logger *slog.Logger, what string) *Troubles {
	return &Troubles{logger: logger, what: what, failed: map[string]int{}}
}

// Result records one call about queue: it logs the first failure after a
// success (with the error) and the first success after failures (with how
// many failed), and reports how many calls have failed in a row now.
func (t *Troubles) Result(queue string, err error, attrs ...any) int {
	t.mu.Lock()
	before := t.failed[queue]
	if err == nil {
		delete(t.failed, queue)
	} else {
		t.failed[queue] = before + 1
	}
	t.mu.Unlock()
	if queue != "" { // "": a call about no one queue (listing them)
		attrs = append([]any{"queue", queue}, attrs...)
	}
	switch {
	case err != nil && before == 0:
		t.logger.Warn(t.what+" failed; logged again when it recovers", append(attrs, "err", err)...)
	case err == nil && before > 0:
		t.logger.Info(t.what+" recovered", append(attrs, "after_failures", before)...)
	}
	if err != nil {
		return before + 1
	}
	return 0
}

// Every runs fn every d until ctx ends.
func Every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}
