package redisstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
)

// Enters travel together. On sale night the enters of one queue reach an
// instance thousands a second, and each was one enter.lua call, whose part
// shared by every user (the call itself, the config and admission read, the
// clock, the line's length) cost Redis more than the user's own (in line?
// holding a token? the ticket and the join). So while a call of a queue's
// enters is under way, the enters that arrive for that queue wait for it and
// go together in the next one: one enter.lua call for many users, each
// handled in arrival order exactly as alone, in one atomic step. Nothing
// waits for a batch to fill: an enter that finds a call free goes at once,
// alone; only enters that would have queued behind Redis anyway share a
// call (measured in docs/benchmarks.md, "Enters travel together").

// enterCalls is how many enter.lua calls of one queue an instance has under
// way at once: two, so one travels or waits for Redis while the other runs.
const enterCalls = 2

// maxEnterBatch bounds the users of one call, so one call never holds Redis
// long (each user is a few commands, about 5 µs).
const maxEnterBatch = 64

// enter is one user's enter waiting for its batch's call.
type enter struct {
	ctx   context.Context
	user  string
	entry queue.Standing
	err   error
	done  chan struct{}
}

// enterBatches is, per queue, the calls under way and the enters waiting.
type enterBatches struct {
	mu     sync.Mutex
	queues map[string]*queueEnters
}

type queueEnters struct {
	running int
	waiting []*enter
}

// Enter implements queue.Store.
func (s *Store) Enter(ctx context.Context, name, user string) (queue.Standing, error) {
	b := &s.enters
	b.mu.Lock()
	q := b.queues[name]
	if q == nil {
		if b.queues == nil {
			b.queues = map[string]*queueEnters{}
		}
		q = &queueEnters{}
		b.queues[name] = q
	}
	if q.running < enterCalls {
		q.running++
		b.mu.Unlock()
		e := enter{ctx: ctx, user: user}
		s.enterTogether(ctx, name, []*enter{&e})
		s.nextEnters(name, q)
		return e.entry, e.err
	}
	e := &enter{ctx: ctx, user: user, done: make(chan struct{})}
	q.waiting = append(q.waiting, e)
	b.mu.Unlock()
	select {
	case <-e.done:
		return e.entry, e.err
	case <-ctx.Done(): // its call may still put it in line, as a call cut short by a timeout may
		return queue.Standing{}, unavailable(ctx.Err())
	}
}

// nextEnters hands a finished call's turn to the enters waiting for it,
// if any, on a goroutine of its own, so the caller that had the turn
// returns at once.
func (s *Store) nextEnters(name string, q *queueEnters) {
	b := &s.enters
	b.mu.Lock()
	if len(q.waiting) == 0 {
		if q.running--; q.running == 0 {
			delete(b.queues, name)
		}
		b.mu.Unlock()
		return
	}
	n := min(len(q.waiting), maxEnterBatch)
	batch := q.waiting[:n:n]
	q.waiting = append([]*enter(nil), q.waiting[n:]...)
	b.mu.Unlock()
	go func() {
		// The batch is many callers': it runs to the end whichever of them
		// stops waiting, within the bound of a background call.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), perqueue.CallTimeout)
		s.enterTogether(ctx, name, batch)
		cancel()
		for _, e := range batch {
			close(e.done)
		}
		s.nextEnters(name, q)
	}()
}

// enterTogether runs enter.lua once for the enters whose callers still
// wait, setting each one's entry or error.
func (s *Store) enterTogether(ctx context.Context, name string, batch []*enter) {
	args := make([]any, 0, len(batch))
	live := batch[:0:0]
	for _, e := range batch {
		if err := e.ctx.Err(); err != nil { // gave up before its turn: never entered
			e.err = unavailable(err)
			continue
		}
		args = append(args, e.user)
		live = append(live, e)
	}
	if len(live) == 0 {
		return
	}
	r, err := s.run(ctx, enterScript, name, args).Slice()
	var line queue.PaceState
	var epoch int64
	var block reply
	switch {
	case err != nil:
		err = unavailable(err)
	case len(r) > 0 && r[0] == int64(kindUnknownQueue):
		err = queue.ErrQueueNotFound
	case len(r) != len(live)+1:
		err = fmt.Errorf("enter.lua answered %d users of %d", len(r)-1, len(live))
	default:
		block.r, _ = r[len(live)].([]any)
		line, epoch = block.paceState(0, enterScript)
		err = block.err
	}
	for i, e := range live {
		if e.err = err; err == nil {
			e.entry, e.err = parseEnter(r[i], line, epoch)
		}
		if e.err == nil && e.entry.Lane != "" { // a place in another lane: its share of the rate
			e.entry.Pace.LaneShare = block.laneShare(0, e.entry.Lane)
		}
	}
}

// parseEnter reads one user's reply of enter.lua, with the line's state
// its call's pace block carried.
func parseEnter(v any, line queue.PaceState, epoch int64) (queue.Standing, error) {
	r, ok := v.([]any)
	if !ok || len(r) == 0 {
		return queue.Standing{}, fmt.Errorf("unexpected enter.lua reply %v", v)
	}
	switch kind, _ := r[0].(int64); kind {
	case kindLineFull:
		return queue.Standing{}, queue.ErrQueueFull
	case kindSoldOut:
		return queue.Standing{}, queue.ErrSoldOut
	}
	p := reply{r: r}
	e, at, err := p.standing()
	if err != nil {
		return e, err
	}
	line.Length = p.int(at) // the line as this user's enter left it
	e.Pace, e.Epoch = queue.LinePace(line), epoch
	return e, p.err
}
