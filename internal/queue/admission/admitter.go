package admission

import (
	"context"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// loopStore is what the loops need of a store: their steps (queue.Store's
// loops), and the queues and their configs.
type loopStore = queue.Store

// Admitter lets users in. Every instance runs one; they need no leader,
// because the store decides whether a tick is due from its own clock and the
// last tick it recorded, so N instances together admit the configured rate.
type Admitter struct {
	store  loopStore
	logger *slog.Logger
	// line is told after every tick that moved the line (no-shows skipped
	// included), with whom it admitted and their waits (the service's
	// snapshots, the sale's metrics), after every tick that moved nobody
	// (the service's held requests), and of each opening placed; it wakes
	// the queue's loop when someone joins through this instance (Wake).
	line *signals.Line
	// ensure runs at every discovery before the queues are listed, to
	// create again the queues that must exist (the default queue, after
	// Redis lost its data); nil for none.
	ensure func(ctx context.Context)
	// Discover is how often the list of queues and their configs is re-read.
	Discover time.Duration
	// Jitter adds a random part of half an interval after each due time
	// (default true). Off only to reproduce the unjittered schedule in the
	// herd benchmark (bench/, --admission-jitter=false).
	Jitter bool
	// IdleEvery is how often a queue whose line is empty is ticked, when
	// no opening or phase is scheduled on it (1 s).
	IdleEvery time.Duration
	// Drawer draws an opening's order, checkably (Commit, OpenLine):
	// the app gives it the participants' key and the beacon, if any.
	Drawer Drawer
	// owner names this instance when it holds an opening's lease.
	owner string
	// ticks and listing log failed ticks (per queue) and failed listings
	// of the queues once per change of state.
	ticks, listing *perqueue.Troubles

	mu    sync.Mutex
	loops map[string]*queueLoop // by queue; Run's
}

// idleEvery is how often a queue whose line is empty is ticked
// (Admitter.IdleEvery): an idle queue then costs each instance a read a
// second, not ten. Someone joining through this instance wakes its loop at
// once (Wake); one joining through another instance wakes that one's.
const idleEvery = time.Second

// NewAdmitter returns an Admitter over store, on the instance's line of
// signals: it listens to line for who joined (Wake) and tells it what each
// tick did. ensure, if not nil, runs at every discovery before the queues
// are listed, to create again the queues that must exist.
func NewAdmitter(store loopStore, logger *slog.Logger, line *signals.Line, ensure func(ctx context.Context)) *Admitter {
	a := &Admitter{store: store, logger: logger, line: line, ensure: ensure, Discover: time.Second, Jitter: true, IdleEvery: idleEvery,
		owner: queue.NewTokens(1)[0], loops: map[string]*queueLoop{},
		ticks: perqueue.NewTroubles(logger, "admission tick"), listing: perqueue.NewTroubles(logger, "admission: listing the queues")}
	line.Listen(signals.Listener{Joined: a.Wake})
	return a
}

// Run admits until ctx ends, one loop per queue; queues created later are
// picked up within Discover.
func (a *Admitter) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	a.discover(ctx, &wg)
	perqueue.Every(ctx, a.Discover, func() { a.discover(ctx, &wg) })
}

type queueLoop struct {
	mu  sync.Mutex
	cfg queue.Config
	// wake wakes the loop when discover finds a new config, so a shorter
	// interval (or a resume) takes effect at the next tick rather than
	// after a sleep planned under the old config, and when someone joins
	// an idle line (Wake).
	wake chan struct{}
	// idle: the loop sleeps the idle queue's long sleep, which only then
	// Wake cuts short (a busy queue's loop ticks within an interval anyway,
	// and a wake per enter would be a read per enter).
	idle atomic.Bool
	// joined: Wake was called since the loop's last tick began; the tick
	// may have read the line before them, so the loop does not sleep long.
	joined atomic.Bool
}

// poke wakes the loop unless a wake is pending already.
func (l *queueLoop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Wake tells the queue's loop that someone joined its line or was let
// straight in through this instance: an idle queue's loop, which ticks only
// once a second, ticks at once. Cheap enough for every enter.
func (a *Admitter) Wake(queue string) {
	a.mu.Lock()
	l := a.loops[queue]
	a.mu.Unlock()
	if l == nil {
		return
	}
	l.joined.Store(true)
	if l.idle.CompareAndSwap(true, false) {
		l.poke()
	}
}

func (l *queueLoop) config() queue.Config { l.mu.Lock(); defer l.mu.Unlock(); return l.cfg }

// setConfig records cfg and wakes the loop if it changed.
func (l *queueLoop) setConfig(cfg queue.Config) {
	l.mu.Lock()
	changed := !slices.Equal(queue.StoreFields(cfg), queue.StoreFields(l.cfg))
	l.cfg = cfg
	l.mu.Unlock()
	if changed {
		l.poke()
	}
}

func (a *Admitter) discover(ctx context.Context, wg *sync.WaitGroup) {
	// A queue whose node is down must not hold up the others' discovery:
	// every read is bounded, and the configs are read at once.
	if a.ensure != nil {
		ensure, cancel := context.WithTimeout(ctx, perqueue.CallTimeout)
		a.ensure(ensure)
		cancel()
	}
	list, cancel := context.WithTimeout(ctx, perqueue.CallTimeout)
	names, err := a.store.Queues(list)
	cancel()
	if ctx.Err() != nil {
		return
	}
	a.listing.Result("", err)
	if err != nil {
		// On Redis Cluster the list lives on one node: while it is down,
		// the queues already known keep their loops and configs.
		return
	}
	configs := make([]queue.Config, len(names))
	found := make([]bool, len(names))
	index := make(map[string]int, len(names))
	for i, name := range names {
		index[name] = i
	}
	perqueue.Each(ctx, names, perqueue.CallTimeout, func(ctx context.Context, name string) {
		i := index[name]
		if cfg, err := a.store.Config(ctx, name); err == nil {
			configs[i], found[i] = cfg, true
		}
	})
	for i, name := range names {
		if !found[i] {
			continue
		}
		cfg := configs[i]
		a.mu.Lock()
		l, ok := a.loops[name]
		if !ok {
			l = &queueLoop{cfg: cfg, wake: make(chan struct{}, 1)}
			a.loops[name] = l
		}
		a.mu.Unlock()
		if !ok {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.loop(ctx, name, l)
			}()
			continue
		}
		l.setConfig(cfg)
	}
}

// loop ticks one queue. After each attempt it sleeps until the next tick is
// due plus a random part of half an interval: the jitter that keeps the
// instances (and the users they admit) from moving in lockstep. The store
// makes up at most one late tick, so a stalled loop never releases a burst.
// It never sleeps longer than one interval of the queue's current config,
// whatever the store said (a clock that went back, a config changed
// elsewhere), and a new config wakes it at once.
func (a *Admitter) loop(ctx context.Context, name string, l *queueLoop) {
	rnd := mrand.New(mrand.NewPCG(mrand.Uint64(), mrand.Uint64()))
	timer := time.NewTimer(0)
	defer timer.Stop()
	var opened time.Time      // the opening this loop saw done
	var committedAt time.Time // when this loop last made sure of the commitment
	var swept time.Time       // when the janitor last swept the name
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-l.wake:
			timer.Stop()
		}
		l.idle.Store(false)
		cfg := l.config()
		// Made sure of once a second while the opening is ahead, not once:
		// the queue may be deleted and made again with the same opening (a
		// new life needs a new commitment), and the admin API's own commit
		// may have failed. Each is one idempotent step in the store.
		if at := cfg.OpensAt; !at.IsZero() && !at.Equal(opened) && time.Since(committedAt) >= commitEvery {
			a.commit(ctx, name, at)
			committedAt = time.Now()
		}
		if at := cfg.OpensAt; !at.IsZero() && !at.Equal(opened) && time.Now().After(at.Add(-cfg.Interval)) {
			if a.open(ctx, name) {
				opened = at
			}
		}
		if time.Since(swept) >= sweepEvery {
			a.sweep(ctx, name)
			swept = time.Now()
		}
		var wait time.Duration
		l.joined.Store(false)
		tick, cancel := context.WithTimeout(ctx, perqueue.CallTimeout)
		res, err := a.store.Admit(tick, name, queue.NewTokens(cfg.BatchSize))
		cancel()
		// Told even when the loop is stopping: the users are let in all
		// the same (a tick answered as the run ended had dropped them from
		// the counts; TestThreeAdmittersShareTheRate saw 420 of 430).
		moved := len(res.Admitted) > 0 || res.Skipped > 0
		switch {
		case err == nil && moved:
			a.line.Moved(name, res.Admitted, res.Waited)
			a.letIn(name, cfg, res)
		case err == nil:
			a.line.Read(name)
		}
		if ctx.Err() != nil {
			return
		}
		failures := a.ticks.Result(name, err)
		switch {
		case err != nil:
			wait = min(time.Duration(failures)*cfg.Interval, 5*time.Second)
		default:
			wait = min(res.NextIn, cfg.Interval)
			// An empty line is read once a second, unless an opening or a
			// phase is scheduled: those start within a tick of their time.
			// idle is set before joined is read, so a Wake either finds it
			// set (and pokes) or is seen here. The read is on the process's
			// beat, with its other loops (perqueue.UntilBeat), and without
			// jitter: an empty line lets nobody in.
			if res.Idle && cfg.OpensAt.IsZero() && len(cfg.Phases) == 0 {
				l.idle.Store(true)
				if !l.joined.Load() || !l.idle.CompareAndSwap(true, false) {
					wait = max(wait, perqueue.UntilBeat(a.IdleEvery))
					break
				}
			}
			if a.Jitter {
				wait += time.Duration(rnd.Int64N(int64(cfg.Interval/2) + 1))
			}
		}
		timer.Reset(wait)
	}
}

// letIn tells the line of the users a tick let in, when the queue tells
// the shop of them (notifyOnReady, as this loop last read the config: a
// change takes effect within Discover). The shadow line's let in are told
// too: their tokens are as real as anyone's, and a suspect must not learn
// from the shop's silence that its place was in the shadow line.
func (a *Admitter) letIn(name string, cfg queue.Config, res queue.Admission) {
	if !cfg.NotifyOnReady || len(res.Admitted) == 0 {
		return
	}
	at := res.Expires.Add(-cfg.TokenTTL)
	if len(res.Waited) > 0 {
		at = res.Waited[0].Admitted // the tick's time by the store's clock
	}
	a.line.LetIn(name, res.Admitted, at, res.Expires)
}

// sweepEvery is how often each queue's janitor runs (Store.Sweep), and
// sweepsAtMost how many sweeps it runs in a row while more is left.
const (
	sweepEvery   = time.Second
	sweepsAtMost = 100
)

// sweep is the janitor, run between ticks, never inside one: it forgets
// expired tokens, lapsed locks and leavers below the head, which nothing
// waits for (asynq's janitor shape).
func (a *Admitter) sweep(ctx context.Context, queue string) {
	for range sweepsAtMost {
		more, err := a.store.Sweep(ctx, queue)
		if err != nil && ctx.Err() == nil {
			a.logger.Warn("janitor: sweeping failed", "queue", queue, "err", err)
		}
		if err != nil || !more {
			return
		}
	}
}

// commitEvery is how often an admission loop makes sure the opening ahead
// has its commitment, and commitTimeout bounds that step (a beacon that
// does not answer must not hold the loop's ticks back).
const (
	commitEvery   = time.Second
	commitTimeout = 2 * time.Second
)

// commit makes sure the queue's opening at opensAt has a commitment,
// published as soon as the opening is set; a new one is logged.
func (a *Admitter) commit(ctx context.Context, queue string, opensAt time.Time) {
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	c, ok, err := Commit(ctx, a.store, queue, opensAt, a.Drawer)
	switch {
	case err != nil:
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			a.logger.Warn("committing to the opening's draw failed; tried again in a second", "queue", queue, "err", err)
		}
	case ok && time.Since(c.MadeAt) < commitEvery+commitTimeout:
		a.logger.Info("the opening's draw is committed to", "queue", queue, "opens_at", opensAt, "commitment", c.Hash)
	}
}

// open places the queue's opening if it is due by the store's clock; it
// reports whether none is pending any more (placed, by this instance or
// another).
func (a *Admitter) open(ctx context.Context, queue string) bool {
	start := time.Now()
	o, placed, err := OpenLine(ctx, a.store, queue, a.owner, a.Drawer)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			a.logger.Warn("opening the line failed", "queue", queue, "err", err)
		}
		return false
	case o.Due:
		a.logger.Info("line opened: the pre-queue placed in the order drawn", "queue", queue, "placed", placed, // named: leavers since the close among them
			"took", time.Since(start).String())
		a.line.Moved(queue, nil, nil)
		return true
	}
	return !o.Busy && o.In == 0
}
