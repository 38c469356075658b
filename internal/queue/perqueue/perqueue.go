// Package perqueue is what the loops that visit every queue share: a call
// per queue at once, each under its own deadline, the beat the loops keep
// time by, and a log of each queue's trouble once when it starts and once
// when it ends.
package perqueue

import (
	"context"
	"log/slog"
	"math/rand/v2"
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

// Every runs fn on every beat of d (UntilBeat) until ctx ends.
func Every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTimer(UntilBeat(d))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
		t.Reset(UntilBeat(d))
	}
}

// The loops of one process keep time together. On an idle instance what
// costs is not the work of a loop's turn but waking the process for it
// (the Go scheduler's threads, the netpoller, the syscalls: about 250 µs of
// CPU for a timer alone on the benchmark's machine, docs/benchmarks.md §6),
// so loops that each kept their own ticker, started a few milliseconds
// apart, woke it once each. Every loop of the same period instead wakes on
// the same instants, the process's beats: multiples of the period from
// the Unix epoch, shifted by a phase drawn once per process, so the turns
// of one instance share one wakeup (and their calls one pipeline), while
// those of different instances do not all reach the store at the same
// moment.
var phase = time.Duration(rand.Int64N(int64(time.Hour)))

// UntilBeat is how long until this process's next beat of period d, at
// least a quarter of d away (so a turn that ended just before a beat,
// the timer and the wall clock a hair apart, does not run again at once).
func UntilBeat(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	wait := d - time.Duration((time.Now().UnixNano()-int64(phase))%int64(d))
	if wait < d/4 {
		wait += d
	}
	return wait
}
