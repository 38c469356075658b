package queue

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Everyone in line polls status and almost no one is near the front, so
// most polls ask a question whose answer moves once per admission tick.
// snapshots answers those by arithmetic (the serving-counter idea of
// DESIGN.md §5a): this instance remembers each user's ticket from the
// store's own answers, and keeps one Snapshot of each queue's line for at
// most maxAge, fetched by one request while the others wait for it. A poll
// goes to the store as before when this instance does not know the user's
// ticket, when the snapshot cannot place it (the user left, was admitted,
// or the snapshot is incomplete), or when the user is near the front, where
// READY and the token need the store's exact answer (under MethodRandom,
// anyone in line is).
//
// Every change made through this instance (enter, leave, a new config, its
// admitter's ticks) makes the snapshot stale at once, so one instance answers
// exactly as the store would. Changes made through other instances show
// within maxAge: a position may then be up to one tick old.
//
// Tickets are remembered with the line's epoch. When the store answers with
// another epoch (it lost the queue and the queue was created again, tickets
// counting from 1), or with a last ticket below one already seen here (it
// went back in time: a failover to a replica that missed writes, a restore),
// every remembered ticket of the queue is dropped: a user the store no
// longer holds is never told a place from the old line.
type snapshots struct {
	store  line
	maxAge time.Duration
	// seed keys the hash of user ids the tickets are remembered by; random
	// per process, so no one can choose an id that collides with another's.
	seed maphash.Seed

	mu     sync.Mutex
	queues map[string]*lineView

	hits, misses atomic.Uint64
}

// snapshotMaxUsers bounds the tickets one instance remembers per queue; when
// full it starts over (those users' next poll asks the store and is
// remembered again).
const snapshotMaxUsers = 1 << 20

// lineView is what this instance knows of one queue's line.
type lineView struct {
	name string
	mu   sync.Mutex
	// tickets maps a user id's 64-bit keyed hash (snapshots.key) to the
	// user's ticket, from the store's answers. Keyed by the hash, not the
	// id, it costs 24–38 bytes a user whatever the id's length (a
	// map[string]int64 took 72 B with 12-byte ids and 104 B with the page's
	// 37-byte ones, at a million: docs/benchmarks.md). Two users share a
	// hash with probability n²/2⁶⁵ (3·10⁻⁸ for a million): then one of them
	// would be shown the other's place far back; never READY nor a token,
	// which only the store gives, within two batches of the front.
	tickets map[uint64]int64
	// shadows holds the shadow places the store has told of here (issue
	// 51), by the same key: shadowStanding answers them.
	shadows map[uint64]shadowPlace
	// epoch is the line's epoch the tickets belong to; seen is the highest
	// ticket the store has given here in it, or a user has shown here.
	epoch, seen int64
	// wentBack: the store went back in time within this epoch, and may
	// have given some tickets twice, before and after; which ones cannot be
	// told (the line may have grown again before it was noticed), so no
	// ticket shown is taken in this epoch any more (shown).
	wentBack bool
	// gen counts changes made through this instance; a snapshot is good
	// while gen is what it was when the snapshot was asked for.
	gen      uint64
	snap     Snapshot
	snapGen  uint64
	takenAt  time.Time     // zero: no snapshot yet
	fetching chan struct{} // closed when the fetch in flight ends
}

func newSnapshots(store line, maxAge time.Duration) *snapshots {
	return &snapshots{store: store, maxAge: maxAge, seed: maphash.MakeSeed(), queues: map[string]*lineView{}}
}

// view returns the queue's view, creating it when create is set. Views are
// only created from the store's answers about a queue that exists, so
// requests naming made-up queues cannot grow the map.
func (s *snapshots) view(queue string, create bool) *lineView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.queues[queue]
	if !ok && create {
		v = &lineView{name: queue, tickets: map[uint64]int64{}, shadows: map[uint64]shadowPlace{}}
		s.queues[queue] = v
	}
	return v
}

// status answers from the snapshot, or says it cannot (false): then the
// caller asks the store and tells remember what it said.
func (s *snapshots) status(ctx context.Context, queue, user string) (Standing, bool) {
	return s.standing(ctx, queue, user, s.maxAge, false)
}

// stillWaiting answers a held poll's recheck (Service.HoldFrom) from a
// snapshot no older than maxAge, the front included: so every poll held on
// this instance shares one read of the line per recheck instead of each
// reading its own standing. It only ever says the user still waits, and
// where: a user the snapshot does not place (admitted, gone, not known
// here, a line it cannot count) is asked of the store, which alone says
// READY and gives the token.
func (s *snapshots) stillWaiting(ctx context.Context, queue, user string, maxAge time.Duration) (Standing, bool) {
	return s.standing(ctx, queue, user, maxAge, true)
}

// standing is status and stillWaiting: from a snapshot no older than
// maxAge; within two batches of the front only when front is set.
func (s *snapshots) standing(ctx context.Context, queue, user string, maxAge time.Duration, front bool) (Standing, bool) {
	v := s.view(queue, false)
	if v == nil {
		s.misses.Add(1)
		return Standing{}, false
	}
	k := s.key(user)
	v.mu.Lock()
	_, known := v.tickets[k]
	sp, shadow := v.shadows[k]
	v.mu.Unlock()
	if shadow {
		return s.shadowStanding(ctx, v, k, sp, maxAge)
	}
	if !known {
		s.misses.Add(1)
		return Standing{}, false
	}
	sn, ok := s.fresh(ctx, v, maxAge)
	if !ok {
		s.misses.Add(1)
		return Standing{}, false
	}
	// Read again: the fetch may have found another epoch and dropped it.
	v.mu.Lock()
	ticket, known := v.tickets[k]
	sameLine := v.epoch == sn.Epoch
	v.mu.Unlock()
	if !known || !sameLine {
		s.misses.Add(1)
		return Standing{}, false
	}
	pos, _, ok := Position(ticket, sn.Head, sn.Last, sn.Left, sn.Cleared, 0)
	ok = ok && sn.Complete // an incomplete snapshot answers no one
	// Within two batches of the front the next tick or two may admit the
	// user: only the store can say READY and hand out the token (a held
	// poll's recheck asks only whether they still wait: front). While an
	// opening is placed, those still to be placed hold no ticket in the
	// line yet: only the store counts them.
	// In a queue that draws whom it lets in, anyone may be next: only the
	// store can say whether they still wait.
	if !ok || !front && pos <= 2*int64(sn.Pace.Batch) || sn.Pace.Placing || sn.Pace.Drawn {
		s.misses.Add(1)
		return Standing{}, false
	}
	s.hits.Add(1)
	return Standing{State: Waiting, Position: pos, Length: sn.Length, Ticket: ticket, Pace: sn.Pace, Epoch: sn.Epoch}, true
}

// fresh returns a snapshot no older than maxAge and newer than this
// instance's last change, fetching it if need be; one fetch per queue is in
// flight at a time and the others wait for it. False when the store failed
// or the snapshot went stale again while waiting: ask the store.
func (s *snapshots) fresh(ctx context.Context, v *lineView, maxAge time.Duration) (Snapshot, bool) {
	v.mu.Lock()
	if sn, ok := v.current(maxAge); ok {
		v.mu.Unlock()
		return sn, true
	}
	if wait := v.fetching; wait != nil {
		v.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return Snapshot{}, false
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.current(maxAge)
	}
	done := make(chan struct{})
	v.fetching = done
	gen, epoch, seen := v.gen, v.epoch, v.seen
	v.mu.Unlock()

	// Not cancelled with this request: others are waiting for the answer.
	sn, err := s.store.Snapshot(context.WithoutCancel(ctx), v.name)

	v.mu.Lock()
	defer v.mu.Unlock()
	v.fetching = nil
	close(done)
	if err != nil {
		return Snapshot{}, false
	}
	// A ticket this instance was given before the fetch began is one the
	// store issued before it answered: a last ticket below it means the
	// store lost writes. (Compared with what was seen when the fetch
	// began, so a ticket handed out meanwhile raises no alarm.)
	if sn.Epoch != epoch || sn.Last < seen {
		v.forget(sn.Epoch)
		v.wentBack = v.wentBack || sn.Epoch == epoch
		gen = v.gen
	}
	v.snap, v.snapGen, v.takenAt = sn, gen, time.Now()
	return v.current(maxAge)
}

// forget drops every remembered ticket: the store's line is not the one
// they were given in. The caller holds v.mu.
func (v *lineView) forget(epoch int64) {
	clear(v.tickets)
	clear(v.shadows)
	if epoch != v.epoch {
		v.wentBack = false
	}
	v.epoch, v.seen = epoch, 0
	v.gen++
}

// current is the snapshot if it is still good; the caller holds v.mu. It
// is a copy (no allocation: the next fetch replaces v.snap, and Left is
// never changed in place).
func (v *lineView) current(maxAge time.Duration) (Snapshot, bool) {
	if v.takenAt.IsZero() || v.snapGen != v.gen || time.Since(v.takenAt) > maxAge {
		return Snapshot{}, false
	}
	return v.snap, true
}

// remember records what the store said of a user: a waiting user's ticket,
// or that they no longer wait. Only a waiting user (so a queue that exists)
// creates the queue's view.
//
// A user waiting for an opening holds no ticket and is not remembered: the
// snapshot cannot tell who left the pre-queue through another instance, so
// only the store answers them (the fairness check found an instance telling
// a user who had left that they still waited for the opening).
//
// A place in a lane other than the public's is not remembered either: the
// snapshot is the public lane's, whose line holds that ticket as a gap, so
// only the store places it (within its lane).
func (s *snapshots) remember(queue, user string, e Standing) {
	waiting := e.State == Waiting && e.Ticket != 0 && !e.PreQueue && isPublic(e.Lane) // a shadow place in the pre-queue holds a ticket
	v := s.view(queue, waiting)
	if v == nil {
		return
	}
	k := s.key(user)
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.shadows, k)
	if !waiting {
		delete(v.tickets, k)
		return
	}
	if e.Epoch != v.epoch {
		v.forget(e.Epoch)
	}
	if e.Shadow { // numbered in the shadow line: never a ticket of the real one
		delete(v.tickets, k)
		v.rememberShadow(k, e)
		return
	}
	if _, ok := v.tickets[k]; !ok && len(v.tickets) >= snapshotMaxUsers {
		clear(v.tickets)
	}
	v.tickets[k] = e.Ticket
	v.seen = max(v.seen, e.Ticket)
}

// shown remembers a ticket the user showed, signed by this service (so the
// line gave it to them), as remember does a store's answer, but only into a
// view of the queue whose epoch is the ticket's (a ticket shown never drops
// what the store said) and never over a ticket the store gave here. That is
// safe because the snapshot places a ticket only if it lies at or above the
// head and is not among the leavers: a user who since left, was let in or
// skipped holds a ticket the snapshot does not place, and the store is
// asked. (Within a tick of a planned no-show being seen after all,
// admission may let in people behind them without listing them as leavers;
// their next call is placed until the no-show leaves the head, as with a
// ticket the store gave, and their READY comes from the store.)
//
// A store that went back in time within the epoch (a restore, a replica
// that missed writes) gives again tickets it had given before: a ticket
// shown then may be someone else's now. The ticket raises seen, since the
// store did give it, so the next read of the line notices a store whose
// last ticket is now below it (fresh); once one has been noticed, no
// ticket shown is taken in the epoch, and the store answers as it did
// before tickets were shown. (One that goes unnoticed, the line having
// grown past every ticket seen here, is answered by the store near the
// front: docs/operations.md, "Nobody is told a place the store no longer
// holds".)
func (s *snapshots) shown(queue, user string, epoch, ticket int64) {
	v := s.view(queue, false)
	if v == nil {
		return
	}
	k := s.key(user)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.epoch == 0 || epoch != v.epoch || v.wentBack || len(v.tickets) >= snapshotMaxUsers {
		return
	}
	v.seen = max(v.seen, ticket)
	if _, shadow := v.shadows[k]; shadow { // a shadow ticket numbers no place here
		return
	}
	if _, known := v.tickets[k]; !known {
		v.tickets[k] = ticket
	}
}

// key is what a user's ticket is remembered by.
func (s *snapshots) key(user string) uint64 { return maphash.String(s.seed, user) }

// changed says this instance changed the queue's line or config: the
// snapshot it holds is stale.
func (s *snapshots) changed(queue string) {
	v := s.view(queue, false)
	if v == nil {
		return // nothing held, nothing stale
	}
	v.mu.Lock()
	v.gen++
	v.mu.Unlock()
}
