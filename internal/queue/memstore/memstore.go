// Package memstore keeps the waiting line in this process: the embedded
// default that lets anyone run waitroom with no setup. Each method is one
// critical section (as each Redis method is one script), admission is
// planned by the same admission.PlanTick as on Redis, and the store passes the
// same suite, storetest. It serves one instance only: run several
// instances on Redis.
//
// New keeps the line in memory only. Open keeps it in a directory too
// (durable.go): every step that changes a queue is written, under the
// queue's lock and so in the order the steps ran, to a journal that a
// restart replays, and compacted now and then into a snapshot.
package memstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/suspect"
)

// Store is the in-process implementation of queue.Store.
type Store struct {
	now func() time.Time

	mu     sync.Mutex
	queues map[string]*state
	epoch  int64 // the last queue's epoch: each new queue gets a later one

	usedMu sync.Mutex
	used   map[usedKey]time.Time // FirstUse markers → when they lapse
	// usedSweep counts markers added since expired ones were last swept.
	usedSweep int
	usedOps   int64 // FirstUse and Roll steps journaled (as state.ops)
	// rows are the queues' per-minute rows (rollup.go), swept of the
	// lapsed at rowsSwept.
	rows      map[string]map[int64]*row
	rowsSwept time.Time
	// sessions are the admin page's signed-in sessions by their hash
	// (staff_sso.go).
	sessions map[string]staff.Session
	// tokens are the named tokens (staff_roles.go).
	tokens []staff.Token
	// audit is the audit log, in At's order (staff_audit.go).
	audit []auditRecord

	disk *disk // the journal (Open); nil in memory only
}

type usedKey struct{ queue, key string }

// joined is a place's taking: when, the wait shown then (seconds;
// rollup.NoneShown: none) and the range shown beside it (issue 54: both
// NoneShown when none was, no wait shown or the line could not say).
type joined struct {
	At               time.Time
	Shown, Low, High int64
}

// told is the taking of a place at now whose newcomer was told e
// (queue.Pace.Estimate): its median whether known or not, as the answer
// carries it, its range only when known.
func told(now time.Time, e estimate.Estimate) joined {
	j := joined{At: now, Shown: e.Seconds, Low: rollup.NoneShown, High: rollup.NoneShown}
	if e.Known {
		j.Low, j.High = e.Low, e.High
	}
	return j
}

// untold is the taking of a place at at whose newcomer was shown no wait
// (placed by an opening, or cleared from the shadow line).
func untold(at time.Time) joined {
	return joined{At: at, Shown: rollup.NoneShown, Low: rollup.NoneShown, High: rollup.NoneShown}
}

var _ queue.Store = (*Store)(nil)

// New returns an empty Store. now is its clock (time.Now when nil): the one
// clock that orders admission ticks and expires tokens, as Redis TIME does.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{now: now, queues: map[string]*state{}, used: map[usedKey]time.Time{}}
}

type token struct {
	value   string
	expires time.Time
	// until is the sliding session's end (Extend), fixed at the first
	// extension; zero before it.
	until time.Time
}

type lock struct {
	until time.Time
	owner string
}

type issuedToken struct {
	user, value string
	expires     time.Time
}

type state struct {
	mu sync.Mutex
	// removed: the queue was deleted (DeleteQueue); a removed state is a
	// tombstone that only keeps ops. Written under both Store.mu and mu,
	// so either lock suffices to read it.
	removed bool
	// ops counts the steps journaled for this queue: each record carries
	// its number, so a replay skips what a snapshot holds already. rec is
	// the journal's number of the last one (what a read waits for under
	// fsync always).
	ops      int64
	rec      uint64
	cfg      queue.Config
	epoch    int64 // see queue.Snapshot.Epoch
	line     *line
	seq      int64
	tokens   map[string]token
	inflight map[string]lock
	// issued lists tokens in the order they were written, which is expiry
	// order while the TTL stays put, so the janitor drops expired ones
	// from the front without scanning them all.
	issued []issuedToken
	// leftTickets are, ascending, the tickets of users who left the line
	// (the janitor drops those below the head).
	leftTickets []int64

	// tick is admission's own state (admission.PlanTick), and seen when each
	// user near the front was last seen (no-shows); hidden holds those of
	// them whose page last said it was hidden (AbandonAfterHidden).
	tick   admission.TickState
	seen   map[string]time.Time
	hidden map[string]bool
	// joined is, for each user in line, when they took their place and
	// the wait they were shown (rollup.Wait), dropped with the place.
	joined map[string]joined

	admitted, consumed, left, expired, ret int64
	abandoned, inlineTotal                 int64

	// The adaptive rate in force and its last decision; the window being
	// gathered, its samples and the admitted total when it began
	// (RateWindow.Admitted); the recent changes.
	effRate        float64
	effLast        queue.RateDecision
	sampleWin      int64
	sampleFrom     int64 // the first window sample was gathered in
	sample         queue.RateSample
	sampleAdmitted int64
	rateLog        []queue.RateChange

	// The opening: who waits for it (user → arrival), and while it is
	// placed, the instant its pre-queue closed for (its draw's), who was
	// in it then (closed, in arrival order: its draw's participants,
	// whoever left since), the first, next and last reserved ticket and
	// the lease.
	preArrival                   int64
	pre                          map[string]int64
	openState                    string // "" (pending while OpensAt is set), "placing", "open"
	openAt                       time.Time
	closed                       []string
	openFirst, openNext, openEnd int64
	openOwner                    string
	openLease                    time.Time
	// draws is the name's ledger of draws (draws.go), which outlives
	// this state: a tombstone and a queue made again keep the same one.
	draws *ledger

	// sh is the shadow line (EnterShadow) and the places cleared from it
	// into the line (shadow.go).
	sh shadow

	// ln is the queue's lanes other than the public one, its access codes
	// and each lane's totals (lanes.go).
	ln lanes

	// ho is the queue's handoff links and moved marks (handoff.go).
	ho handoffs

	// stock is what the queue has left to sell (SetStock).
	stock queue.Stock
	// changed says when the states a shop is told of last changed.
	changed queue.Changes
}

// rateLogSize bounds the recent rate changes kept for the admin chart.
const rateLogSize = 300

// in runs f on the named queue under its lock, with the store's clock in
// whole milliseconds, as Redis keeps it: each method is one critical
// section, so no call slips between a check and its act.
func in[T any](s *Store, name string, f func(q *state, now time.Time) (T, error)) (T, error) {
	s.mu.Lock()
	q, ok := s.queues[name]
	s.mu.Unlock()
	if !ok {
		var zero T
		return zero, queue.ErrQueueNotFound
	}
	q.mu.Lock()
	if q.removed {
		q.mu.Unlock()
		var zero T
		return zero, queue.ErrQueueNotFound
	}
	v, err := f(q, s.now().Truncate(time.Millisecond))
	n := q.rec
	q.mu.Unlock()
	// Under fsync always, what a read saw is on disk before it is told:
	// a token a status shows is not lost to a crash a moment later.
	if werr := s.await(n); werr != nil {
		return v, werr
	}
	return v, err
}

// change is in for a step that may change the queue: f also says whether
// it did, and then the step (o, with the clock it ran at) is journaled
// under the same lock, so the journal has each queue's steps in the order
// they ran. Under fsync always it answers once the record is on disk.
func change[T any](s *Store, o *op, f func(q *state, now time.Time) (T, bool, error)) (T, error) {
	var zero T
	if err := s.writable(); err != nil {
		return zero, err
	}
	s.mu.Lock()
	q, ok := s.queues[o.queue]
	s.mu.Unlock()
	if !ok {
		return zero, queue.ErrQueueNotFound
	}
	q.mu.Lock()
	if q.removed {
		q.mu.Unlock()
		return zero, queue.ErrQueueNotFound
	}
	now := s.now().Truncate(time.Millisecond)
	v, changed, err := f(q, now)
	var n uint64
	if changed {
		q.ops++
		q.rec = s.record(o, q.ops, now)
	}
	n = q.rec // a step that changed nothing answers from what the last one wrote
	q.mu.Unlock()
	if werr := s.await(n); werr != nil {
		return zero, werr
	}
	return v, err
}

// orNothing: a call on an unknown queue has nothing to do (as on Redis).
func orNothing(err error) error {
	if errors.Is(err, queue.ErrQueueNotFound) {
		return nil
	}
	return err
}

// PutConfig implements queue.Store. A new queue gets an epoch from the
// clock (µs), never one given before.
func (s *Store) PutConfig(_ context.Context, name string, c queue.Config) error {
	return s.putConfig(name, c, 0)
}

// putConfig is PutConfig; a replayed creation brings the epoch it was
// given (else 0).
func (s *Store) putConfig(name string, c queue.Config, epoch int64) error {
	if err := s.writable(); err != nil {
		return err
	}
	s.mu.Lock()
	q, existed := s.queues[name]
	if !existed || q.removed {
		if epoch == 0 {
			epoch = max(s.epoch+1, s.now().UnixMicro())
		}
		s.epoch = max(s.epoch, epoch)
		fresh := newState(epoch)
		if existed { // a removed queue's steps go on counting (DeleteQueue), its draws stay listed
			q.mu.Lock()
			fresh.ops, fresh.draws = q.ops, q.draws
			q.mu.Unlock()
		}
		q, existed = fresh, false
	}
	// Locked before anyone can find it: no step of a new queue is
	// journaled ahead of its creation.
	q.mu.Lock()
	s.queues[name] = q
	s.mu.Unlock()
	now := s.now().Truncate(time.Millisecond)
	q.putConfig(c, !existed, now)
	q.ops++
	q.rec = s.record(&op{kind: opPutConfig, queue: name, list: queue.StoreFields(c), n: q.epoch}, q.ops, now)
	n := q.rec
	q.mu.Unlock()
	return s.await(n)
}

// newState is an empty queue's state.
func newState(epoch int64) *state {
	q := &state{line: newLine(), tokens: map[string]token{}, inflight: map[string]lock{},
		seen: map[string]time.Time{}, hidden: map[string]bool{}, joined: map[string]joined{}, pre: map[string]int64{}, epoch: epoch, draws: newLedger()}
	q.sh.index()
	return q
}

// DeleteQueue implements queue.Store. The queue's state is dropped and a
// tombstone keeps its count of steps, so the journal numbers a queue's
// steps on across a removal and a creation under the same name (a
// compaction's snapshot and the log segment it overlaps agree on which
// steps each holds), and its ledger of draws, which outlives the queue.
func (s *Store) DeleteQueue(_ context.Context, name string) error {
	if err := s.writable(); err != nil {
		return err
	}
	s.mu.Lock()
	q, ok := s.queues[name]
	if !ok {
		s.mu.Unlock()
		return nil
	}
	q.mu.Lock()
	if q.removed {
		q.mu.Unlock()
		s.mu.Unlock()
		return nil
	}
	q.removed = true // whoever holds q finds the queue gone
	tomb := newState(0)
	tomb.removed, tomb.ops, tomb.draws = true, q.ops+1, q.draws
	now := s.now().Truncate(time.Millisecond)
	tomb.rec = s.record(&op{kind: opDeleteQueue, queue: name}, tomb.ops, now)
	s.queues[name] = tomb
	n := tomb.rec
	q.mu.Unlock()
	s.mu.Unlock()
	return s.await(n)
}

// putConfig keeps admission in step with a new config: a shortened interval
// applies at once; the adaptive rate starts from the configured one
// (admission.AdaptiveStart) and stays within its bounds; a new AbandonAfter
// forgets the checkpoints taken for the old one (nobody is judged until it
// has passed); a new opening time starts a new pre-queue, and taking it
// away from one that has people opens the line now; pausing, resuming and
// another method are stamped (queue.Changes).
func (q *state) putConfig(c queue.Config, created bool, now time.Time) {
	before, rateBefore := q.cfg, q.rateInForce()
	q.cfg = c
	if !created && c.Paused != before.Paused {
		q.changed.Paused = now
	}
	if !created && c.Method != before.Method {
		q.changed.Method = now
	}
	if q.tick.Next.After(now.Add(c.Interval)) {
		q.tick.Next = now
	}
	why := "the configured rate"
	switch {
	case c.Adaptive && before.Adaptive && q.effRate > 0:
		q.effRate, why = c.RateInForce(q.effRate), "adaptive bounds changed"
	case c.Adaptive:
		q.effRate, why = admission.AdaptiveStart(c), admission.AdaptiveStartWhy
		q.effLast = queue.RateDecision{Window: q.effLast.Window, Why: why} // nothing remembered of an earlier backend
	default:
		q.effRate = 0
		if before.Adaptive {
			why = "adaptive off: the configured rate"
		}
	}
	// Switching the adaptive rate on or off is a change in the chart even
	// at the same number: what sets the rate from now on is not the same.
	if r := q.rateInForce(); created || r != rateBefore || c.Adaptive != before.Adaptive {
		q.logRate(now, r, why)
	}
	if c.AbandonAfter != before.AbandonAfter {
		q.tick.Checkpoints = nil
	}
	if !c.OpensAt.Equal(before.OpensAt) && q.openState != "placing" {
		q.openState = ""
	}
	if c.OpensAt.IsZero() && len(q.pre) > 0 && q.openState == "" {
		q.cfg.OpensAt = now
	}
}

// rateInForce is the rate admission uses now.
func (q *state) rateInForce() float64 { return q.cfg.RateInForce(q.effRate) }

func (q *state) logRate(at time.Time, rate float64, why string) {
	q.rateLog = append(q.rateLog, queue.RateChange{At: at.UTC(), Rate: rate, Why: why})
	if len(q.rateLog) > rateLogSize {
		q.rateLog = slices.Delete(q.rateLog, 0, len(q.rateLog)-rateLogSize)
	}
}

// pending says the opening is still ahead.
func (q *state) pending() bool { return !q.cfg.OpensAt.IsZero() && q.openState == "" }

// pace is the line's queue.Pace now.
func (q *state) pace(now time.Time) queue.Pace {
	return queue.LinePace(queue.PaceState{
		Config: q.cfg.InForce(now), EffectiveRate: q.effRate, PaceRate: q.tick.PaceRate, PaceBusy: q.tick.PaceBusy,
		Moved: q.tick.Moved, Now: now, Length: q.waitingAll(), Reach: q.tick.Reach,
		Pending: q.pending(), Placing: q.openState == "placing", Stock: q.stock,
		CapRoom: q.tick.CapRoom, Capped: q.tick.Capped, LaneShare: q.tick.LaneShares[lane.Public],
		PaceClaimed: q.tick.PaceClaimed, PaceDeparted: q.tick.PaceDeparted, RateMean: q.tick.RateMean, RateVar: q.tick.RateVar, Changes: q.tick.Changes,
	})
}

// Config implements queue.Store.
func (s *Store) Config(_ context.Context, name string) (queue.Config, error) {
	return in(s, name, func(q *state, _ time.Time) (queue.Config, error) { return q.cfg, nil })
}

// Queues implements queue.Store.
func (s *Store) Queues(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.queues))
	for n, q := range s.queues {
		if !q.removed {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Enter implements queue.Store.
func (s *Store) Enter(_ context.Context, name, user string) (queue.Standing, error) {
	return change(s, &op{kind: opEnter, queue: name, user: user}, func(q *state, now time.Time) (queue.Standing, bool, error) {
		return q.enter(user, now)
	})
}

// arrive is how every enter starts, in either line: whoever holds a place
// (in the line, the pre-queue or the shadow line) or a live token is told
// where they stand (held), marked seen if near the front; a token whose
// time is up is forgotten, and they line up again. changed says whether
// the queue changed.
func (q *state) arrive(user string, now time.Time) (e queue.Standing, held, changed bool) {
	if e, ok := q.standing(user, now); ok {
		marked := e.State == queue.Waiting && !e.PreQueue && !e.Shadow && q.markSeen(user, e.Position, now)
		return e, true, marked
	}
	t, expired := q.tokens[user]
	if expired { // forget it, line up again
		q.dropToken(user, t, now, &q.expired)
	}
	return queue.Standing{}, false, expired
}

// enter is Enter under the lock; it also says whether the queue changed
// (a re-entry only marks its user seen, if that).
func (q *state) enter(user string, now time.Time) (queue.Standing, bool, error) {
	e, held, changed := q.arrive(user, now)
	if held {
		return e, changed, nil
	}
	if err := q.refuse(); err != nil {
		return queue.Standing{}, changed, err
	}
	return q.placePublic(user, now), true, nil
}

// placePublic gives the user, who holds no place, one at the back of the
// (public) line, or in the pre-queue while the opening is ahead.
func (q *state) placePublic(user string, now time.Time) queue.Standing {
	if q.pending() {
		q.preArrival++
		q.pre[user] = q.preArrival
		return queue.Standing{State: queue.Waiting, PreQueue: true, Pace: q.pace(now)}
	}
	if q.waitingAll() == 0 {
		q.tick.Moved = now // someone starts waiting: the front has not stood still
	}
	q.seq++
	q.line.push(user, q.seq)
	n := q.waiting() + q.unplaced() // behind an opening still being placed too
	q.markSeen(user, n, now)
	p := q.pace(now)
	q.joined[user] = told(now, p.Estimate(n, n))
	return queue.Standing{State: queue.Waiting, Position: n, Length: n, Ticket: q.seq, Pace: p, Epoch: q.epoch}
}

// refuse says why a person holding no place may not take one: the line
// is full (every lane and the pre-queue count), or sold out.
func (q *state) refuse() error {
	if q.waitingAll()+int64(len(q.pre)) >= q.cfg.Capacity {
		return queue.ErrQueueFull
	}
	if q.stock.SoldOut() {
		return queue.ErrSoldOut
	}
	return nil
}

// unplaced is, while an opening is being placed, how many of its pre-queue
// are still to be placed in the public lane: they are ahead of everyone
// who entered after its close (tickets above openEnd), and the line's
// length counts them. The caller holds q.mu.
func (q *state) unplaced() int64 {
	if q.openState != "placing" {
		return 0
	}
	return int64(len(q.pre) - len(q.ln.pre))
}

// markSeen: a user entering or asking for their status near the front is
// seen at once, before their instance's batched marks could arrive (a user
// back from a long absence would be skipped meanwhile, though asking). It
// reports whether it marked. Whether their page is hidden is kept: only
// the page says so, in the batched mark that follows (Seen).
func (q *state) markSeen(user string, position int64, now time.Time) bool {
	if q.cfg.AbandonAfter > 0 && (q.tick.Reach == 0 || position <= q.tick.Reach) {
		q.seen[user] = now
		return true
	}
	return false
}

// Status implements queue.Store. A mark it makes is journaled as Seen's
// (the same change); a store whose journal failed still answers, and
// keeps the mark in memory only.
func (s *Store) Status(_ context.Context, name, user string) (queue.Standing, error) {
	return in(s, name, func(q *state, now time.Time) (queue.Standing, error) {
		if e, ok := q.standing(user, now); ok {
			if e.State == queue.Waiting && !e.PreQueue && !e.Shadow && q.markSeen(user, e.Position, now) && s.writable() == nil {
				q.ops++
				q.rec = s.record(&op{kind: opSeen, queue: name, list: []string{user}, flag: q.hidden[user]}, q.ops, now)
			}
			return e, nil
		}
		if e, ok := q.movedStanding(user, now); ok {
			return e, nil
		}
		return q.notInQueue(now), nil
	})
}

func (q *state) notInQueue(now time.Time) queue.Standing {
	return queue.Standing{State: queue.NotInQueue, Pace: q.pace(now), Epoch: q.epoch}
}

// standing is the user's place in line (a cleared one's has no ticket:
// the snapshot's Cleared places it), in the shadow line or in the
// pre-queue, or their valid token.
func (q *state) standing(user string, now time.Time) (queue.Standing, bool) {
	if r, t, cleared, ok := q.rankOf(user); ok {
		n := q.unplaced()
		if n > 0 && (t > q.openEnd || cleared && t >= q.openEnd) {
			r += n
		}
		e := queue.Standing{State: queue.Waiting, Position: r + 1, Length: q.waiting() + n, Ticket: t, Pace: q.pace(now), Epoch: q.epoch}
		if cleared {
			e.Ticket = 0
		}
		return e, true
	}
	if len(q.ln.lines) > 0 {
		if e, ok := q.laneStanding(user, now); ok {
			return e, true
		}
	}
	if t, ok := q.sh.byUser[user]; ok {
		i, _ := q.sh.find(t)
		return q.shadowStanding(q.sh.Places[i], now), true
	}
	if _, ok := q.pre[user]; ok {
		name := q.ln.pre[user]
		return queue.Standing{State: queue.Waiting, PreQueue: true, Pace: q.lanePace(now, name), Epoch: q.epoch, Lane: name}, true
	}
	if t, ok := q.tokens[user]; ok && t.expires.After(now) {
		return queue.Standing{State: queue.Ready, Token: t.value, ExpiresAt: t.expires.UTC(), Pace: q.pace(now), Epoch: q.epoch}, true
	}
	return queue.Standing{}, false
}

// Leave implements queue.Store.
func (s *Store) Leave(_ context.Context, name, user string) (bool, error) {
	left, err := change(s, &op{kind: opLeave, queue: name, user: user}, func(q *state, now time.Time) (bool, bool, error) {
		left := q.leave(user, now)
		return left, left, nil
	})
	return left, orNothing(err)
}

func (q *state) leave(user string, now time.Time) bool {
	if t, ok := q.line.ticket(user); ok {
		q.pop(user, now)
		q.addLeft(t)
		q.left++
		return true
	}
	if _, ok := q.sh.clearedAt[user]; ok { // no ticket: no gap
		q.pop(user, now)
		q.left++
		return true
	}
	if _, l := q.laneOf(user); l != nil { // their ticket is a gap already
		q.pop(user, now)
		q.left++
		return true
	}
	if _, ok := q.sh.take(user); ok {
		q.sh.Left++
		return true
	}
	if _, ok := q.pre[user]; ok {
		delete(q.pre, user)
		q.dropPreLane(user)
		if q.openState == "placing" { // they held a reserved ticket: entered and left
			q.left++
		}
		return true
	}
	if t, ok := q.tokens[user]; ok {
		q.dropToken(user, t, now, &q.ret)
		return true
	}
	return false
}

// addLeft records a ticket that left a gap in the line.
func (q *state) addLeft(t int64) {
	i, _ := slices.BinarySearch(q.leftTickets, t)
	q.leftTickets = slices.Insert(q.leftTickets, i, t)
}

// dropToken deletes the user's token and counts it on counter, or as
// expired if its time was up (as Stats counted it already, so totals never
// go back).
func (q *state) dropToken(user string, t token, now time.Time, counter *int64) {
	delete(q.tokens, user)
	if !t.expires.After(now) {
		counter = &q.expired
	}
	*counter++
}

// issue writes a token for the user.
func (q *state) issue(user, value string, expires time.Time) {
	q.tokens[user] = token{value: value, expires: expires}
	q.issued = append(q.issued, issuedToken{user: user, value: value, expires: expires})
}

// Snapshot implements queue.Store.
func (s *Store) Snapshot(_ context.Context, name string) (queue.Snapshot, error) {
	return in(s, name, func(q *state, now time.Time) (queue.Snapshot, error) {
		sn := queue.Snapshot{Head: q.line.headTicket(), Last: q.seq, Length: q.waiting(), Pace: q.pace(now), Epoch: q.epoch, Complete: true}
		for _, c := range q.sh.Cleared {
			sn.Cleared = append(sn.Cleared, c.At)
		}
		if sn.Head > 0 {
			from, _ := slices.BinarySearch(q.leftTickets, sn.Head)
			left := q.leftTickets[from:]
			sn.Complete = len(left) <= queue.SnapshotMaxLeft
			sn.Left = slices.Clone(left[:min(len(left), queue.SnapshotMaxLeft)])
		}
		return sn, nil
	})
}

// Admit implements queue.Store: admission.PlanTick decides, under the lock.
func (s *Store) Admit(_ context.Context, name string, tokens []string) (queue.Admission, error) {
	return s.admit(name, tokens, nil)
}

// admit is Admit drawing, under MethodRandom, with the random values given
// (a journaled tick replayed), or fresh ones (admission.DrawValues) if none.
func (s *Store) admit(name string, tokens []string, values []uint64) (queue.Admission, error) {
	o := &op{kind: opAdmit, queue: name, n: int64(len(tokens))}
	return change(s, o, func(q *state, now time.Time) (queue.Admission, bool, error) {
		tick := admission.TickInput{Config: q.cfg.InForce(now), State: q.tick, Now: now, Tokens: len(tokens), EffectiveRate: q.effRate,
			Placing: q.openState == "placing", Pending: q.pending(), Length: q.waiting(), Stock: q.stock}
		tick.Lanes = q.laneInputs(tick.Config)
		byLane := len(tick.Lanes) > 0 || len(tick.Config.Lanes) > 0 // each lane's admitted counted
		if q.cfg.ShadowAdmits == suspect.AdmitLast {
			tick.Shadow, tick.ShadowFront = int64(len(q.sh.Places)), q.shadowFront
		}
		if len(tokens) > 0 {
			tick.Call = tokens[0]
		}
		if admission.LiveCapped(tick.Config, q.stock) {
			tick.Live = q.live(now)
		}
		p, err := admission.PlanTick(tick, q.front)
		if err != nil || !p.Write {
			return p.Admission(), false, err
		}
		a := p.Admission()
		if p.Shadow {
			a.Waited = q.admitShadow(p, tokens, now)
			o.list = tokens[:min(len(tokens), max(1, len(a.Admitted)))]
			q.tick = p.State
			apart(a.Waited, p.State.Surprise)
			return a, true, nil
		}
		if p.Draw > 0 || len(p.DrawLanes) > 0 {
			if values == nil {
				values = admission.DrawValues(p.Draws)
			}
			o.blob = encodeDraws(values)
			a.Admitted, a.Waited, a.Skipped = q.draw(p, tick.Lanes, byLane, values, tokens, now)
		}
		// The journal keeps the tokens given out and the call's name (its
		// first token), and a draw's random values; the rest only count.
		o.list = tokens[:min(len(tokens), max(1, len(a.Admitted)))]
		for i, w := range slices.Concat(p.Admitted, p.Skipped) {
			if wait := q.pop(w.User, now); i < len(p.Admitted) {
				wait.Lane = w.Lane // the plan's: "" for the public
				a.Waited = append(a.Waited, wait)
			}
		}
		for i, w := range p.Admitted {
			q.issue(w.User, tokens[i], p.Expires)
		}
		if byLane {
			q.countAdmitted(p.Admitted)
		}
		q.admitted += int64(len(a.Admitted))
		q.abandoned += int64(a.Skipped)
		q.tick = p.State
		apart(a.Waited, p.State.Surprise)
		return a, true, nil
	})
}

// draw lets in p.Draw users drawn at random (queue.MethodRandom); its
// twin is admit.lua's draw, step for step: each value picks the rank
// admission.DrawIndex gives in the line as it is then, so one drawn leaves
// before the next is drawn; a no-show drawn (p.Absent) leaves without a
// token. A user drawn leaves a gap in the line, as a leaver does, for the
// snapshot. Then each other lane's part (p.DrawLanes) from the values
// after (drawLanes).
func (q *state) draw(p admission.TickPlan, lanes []admission.LaneInput, byLane bool, values []uint64, tokens []string, now time.Time) (admitted []string, waited []rollup.Wait, skipped int) {
	d := &drawn{}
	for _, r := range values {
		if len(d.admitted) == p.Draw || q.waiting() == 0 || d.skipped == drawSkips {
			break
		}
		d.used++
		ws, _ := q.front(admission.DrawIndex(r, q.waiting()), 1)
		w := ws[0]
		absent := p.Absent.NoShow(w)
		if _, cleared := q.sh.clearedAt[w.User]; !cleared {
			q.addLeft(w.Ticket)
		}
		wait := q.pop(w.User, now)
		if absent {
			d.skipped++
		} else {
			q.issue(w.User, tokens[len(d.admitted)], p.Expires)
			d.admitted, d.waited = append(d.admitted, w.User), append(d.waited, wait)
		}
	}
	if byLane && len(d.admitted) > 0 {
		q.count(lane.Public, laneCounts{Admitted: int64(len(d.admitted))})
	}
	q.drawLanes(p, lanes, values, tokens, now, d)
	return d.admitted, d.waited, d.skipped
}

// pop takes the user out of the line, let in, passed over as a no-show
// or leaving, and their seen mark and place's taking with them (admit.lua's
// pop); it answers the taking as a wait admitted now, its lane the
// caller's to say (the plan's, or the lane drawn from).
func (q *state) pop(user string, now time.Time) rollup.Wait {
	q.removeFromLine(user)
	delete(q.seen, user)
	delete(q.hidden, user)
	j, ok := q.joined[user]
	delete(q.joined, user)
	if !ok {
		return rollup.Wait{Low: rollup.NoneShown, High: rollup.NoneShown, Admitted: now}
	}
	return rollup.Wait{Entered: j.At, Shown: j.Shown, Low: j.Low, High: j.High, Admitted: now}
}

// apart marks the waits of those who took their place before the tick's
// surprise (admission.TickState.Surprise: a pause, or the rate cut at
// once, after they were told their wait), whom the sale's report scores
// apart (rollup.Wait.Apart). A wait with no taking kept has no estimate
// to score.
func apart(waits []rollup.Wait, surprise time.Time) {
	for i := range waits {
		waits[i].Apart = !waits[i].Entered.IsZero() && waits[i].Entered.Before(surprise)
	}
}

// front is admission.Front on the line, with the seen marks.
func (q *state) front(from, n int64) ([]admission.Waiter, error) {
	ws := q.lineFront(from, n)
	for i := range ws {
		q.marks(&ws[i])
	}
	return ws, nil
}

// marks gives w their seen mark: when, and whether hidden.
func (q *state) marks(w *admission.Waiter) {
	w.Seen, w.Hidden = q.seen[w.User], q.hidden[w.User]
}

// AdmitNow implements queue.Store.
func (s *Store) AdmitNow(_ context.Context, name, user, tok string) (queue.Standing, error) {
	return change(s, &op{kind: opAdmitNow, queue: name, user: user, token: tok}, func(q *state, now time.Time) (queue.Standing, bool, error) {
		if e, ok := q.standing(user, now); ok {
			return e, false, nil
		}
		// An opening ahead is not a quiet line: its pre-queue goes first.
		if q.cfg.Paused || q.waitingAll() > 0 || q.pending() || q.openState == "placing" {
			return q.notInQueue(now), false, nil
		}
		c := q.cfg.InForce(now)
		var live int64
		if admission.LiveCapped(c, q.stock) {
			live = q.live(now)
		}
		if !admission.MayAdmitNow(c, q.effRate, q.tick, q.stock, live) {
			return q.notInQueue(now), false, nil
		}
		if t, ok := q.tokens[user]; ok { // expired: forget it, as Enter does
			q.dropToken(user, t, now, &q.expired)
		}
		q.seq++ // entered and admitted at once: the totals still balance
		q.issue(user, tok, now.Add(c.TokenTTL))
		q.tick.Inline++
		q.tick.WinCount++
		q.inlineTotal++
		q.admitted++
		e, _ := q.standing(user, now)
		return e, true, nil
	})
}

// live counts the tokens not yet expired at now.
func (q *state) live(now time.Time) int64 {
	n := int64(0)
	for _, t := range q.tokens {
		if t.expires.After(now) {
			n++
		}
	}
	return n
}

// Sweep implements queue.Store: expired tokens, lapsed locks and leavers
// below the head go.
func (s *Store) Sweep(_ context.Context, name string) (bool, error) {
	_, err := change(s, &op{kind: opSweep, queue: name}, func(q *state, now time.Time) (struct{}, bool, error) {
		before := len(q.issued) + len(q.inflight) + len(q.leftTickets)
		i := 0
		for ; i < len(q.issued) && !q.issued[i].expires.After(now); i++ {
			it := q.issued[i]
			// An extended token (Extend) is listed again at its new expiry.
			if t, ok := q.tokens[it.user]; ok && t.value == it.value && !t.expires.After(now) {
				q.dropToken(it.user, t, now, &q.expired)
			}
		}
		q.issued = q.issued[i:]
		for u, l := range q.inflight {
			if !l.until.After(now) {
				delete(q.inflight, u)
			}
		}
		below := len(q.leftTickets)
		if head := q.line.headTicket(); head > 0 {
			below, _ = slices.BinarySearch(q.leftTickets, head)
		}
		q.leftTickets = slices.Delete(q.leftTickets, 0, below)
		handoffsBefore := len(q.ho.Codes) + len(q.ho.Moved)
		q.ho.sweep(now)
		return struct{}{}, len(q.issued)+len(q.inflight)+len(q.leftTickets) < before || len(q.ho.Codes)+len(q.ho.Moved) < handoffsBefore, nil
	})
	return false, orNothing(err)
}

// BeginUse implements queue.Store.
func (s *Store) BeginUse(_ context.Context, name, user, tok, owner string, lockFor time.Duration) error {
	o := &op{kind: opBeginUse, queue: name, user: user, token: tok, owner: owner, dur: lockFor}
	_, err := change(s, o, func(q *state, now time.Time) (struct{}, bool, error) {
		t, ok := q.tokens[user]
		if !ok || !sameToken(t.value, tok) || !t.expires.After(now) {
			return struct{}{}, false, queue.ErrTokenInvalid
		}
		if l, ok := q.inflight[user]; ok && l.until.After(now) && l.owner != owner {
			return struct{}{}, false, queue.ErrTokenInUse
		}
		q.inflight[user] = lock{until: now.Add(lockFor), owner: owner}
		return struct{}{}, true, nil
	})
	if errors.Is(err, queue.ErrQueueNotFound) {
		return queue.ErrTokenInvalid
	}
	return err
}

// sameToken compares digests in constant time: the time taken says nothing
// about the stored token.
func sameToken(a, b string) bool {
	da, db := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(da[:], db[:]) == 1
}

// EndUse implements queue.Store.
func (s *Store) EndUse(_ context.Context, name, user, tok, owner string, consumed bool) error {
	o := &op{kind: opEndUse, queue: name, user: user, token: tok, owner: owner, flag: consumed}
	_, err := change(s, o, func(q *state, now time.Time) (struct{}, bool, error) {
		changed := false
		if l, ok := q.inflight[user]; ok && l.owner == owner {
			delete(q.inflight, user)
			changed = true
		}
		if t, ok := q.tokens[user]; consumed && ok && t.value == tok {
			q.dropToken(user, t, now, &q.consumed)
			changed = true
		}
		return struct{}{}, changed, nil
	})
	return orNothing(err)
}

// Extend implements queue.Store.
func (s *Store) Extend(_ context.Context, name, user, tok string) (time.Time, error) {
	o := &op{kind: opExtend, queue: name, user: user, token: tok}
	exp, err := change(s, o, func(q *state, now time.Time) (time.Time, bool, error) {
		t, ok := q.tokens[user]
		if !ok || !sameToken(t.value, tok) || !t.expires.After(now) {
			return time.Time{}, false, queue.ErrTokenInvalid
		}
		c := q.cfg.InForce(now)
		if c.SessionMax <= 0 {
			return t.expires.UTC(), false, nil
		}
		if t.until.IsZero() {
			t.until = t.expires.Add(c.SessionMax - c.TokenTTL)
		}
		next := now.Add(c.TokenTTL)
		if next.After(t.until) {
			next = t.until
		}
		if next.After(t.expires) {
			t.expires = next
			q.issued = append(q.issued, issuedToken{user: user, value: t.value, expires: next})
		}
		q.tokens[user] = t
		return t.expires.UTC(), true, nil
	})
	if errors.Is(err, queue.ErrQueueNotFound) {
		return time.Time{}, queue.ErrTokenInvalid
	}
	return exp, err
}

// SetStock implements queue.Store.
func (s *Store) SetStock(_ context.Context, name string, st queue.Stock, onlyLower bool) (queue.Stock, error) {
	o := &op{kind: opSetStock, queue: name, n: st.Units, flag: st.Known}
	if onlyLower {
		o.owner = "lower"
	}
	return change(s, o, func(q *state, now time.Time) (queue.Stock, bool, error) {
		if onlyLower && q.stock.Known && (!st.Known || st.Units >= q.stock.Units) {
			return q.stock, false, nil
		}
		changed := q.stock != st
		if q.stock.SoldOut() != st.SoldOut() {
			q.changed.SoldOut = now
		}
		q.stock = st
		return st, changed, nil
	})
}

// Stats implements queue.Store. Nothing changes: tokens whose time is up but
// not yet swept count as expired.
func (s *Store) Stats(_ context.Context, name string) (queue.Stats, error) {
	return in(s, name, func(q *state, now time.Time) (queue.Stats, error) {
		unswept := int64(len(q.tokens)) - q.live(now)
		st := queue.Stats{
			Config: q.cfg, Length: q.waitingAll(), ActiveTokens: int64(len(q.tokens)) - unswept,
			EnteredTotal: q.seq + q.sh.ClearedTotal - q.sh.ClearedPre, AdmittedTotal: q.admitted, LeftTotal: q.left,
			ConsumedTotal: q.consumed, ExpiredTotal: q.expired + unswept, ReturnedTotal: q.ret, InlineTotal: q.inlineTotal,
			AbandonedTotal: q.abandoned, PreQueued: int64(len(q.pre)),
			EffectiveRate: q.rateInForce(), Stock: q.stock, Changed: q.changed,
			ShadowLength: int64(len(q.sh.Places)), ShadowEnteredTotal: q.sh.Seq, ShadowAdmittedTotal: q.sh.Admitted,
			ShadowLeftTotal: q.sh.Left, ClearedTotal: q.sh.ClearedTotal,
		}
		if q.cfg.Adaptive {
			st.EffectiveWhy = q.effLast.Why
		}
		st.MeasuredRate = q.tick.MeasuredRate(now)
		st.Lanes = q.laneStats(q.cfg.InForce(now))
		return st, nil
	})
}

// Seen implements queue.Store. (A journal from before issue 55 holds
// no flag: its marks replay as visible, as they were.)
func (s *Store) Seen(_ context.Context, name string, users []string, hidden bool) error {
	_, err := change(s, &op{kind: opSeen, queue: name, list: users, flag: hidden}, func(q *state, now time.Time) (struct{}, bool, error) {
		changed := false
		for _, u := range users {
			_, ticketed := q.line.ticket(u)
			if _, cleared := q.sh.clearedAt[u]; ticketed || cleared || len(q.ln.lines) > 0 && q.inLane(u) {
				switch {
				case hidden:
					q.hidden[u] = true
				case q.hidden[u] && now.Sub(q.seen[u]) < admission.HiddenHolds:
					// Perhaps a poll made before its page was hidden,
					// flushed after the beacon: kept hidden.
				default:
					delete(q.hidden, u)
				}
				q.seen[u], changed = now, true
			}
		}
		return struct{}{}, changed, nil
	})
	return orNothing(err) // nobody to mark
}

// FoldRate implements queue.Store.
func (s *Store) FoldRate(_ context.Context, name string, sample queue.RateSample, window time.Duration) (queue.RateWindow, error) {
	o := &op{kind: opFoldRate, queue: name, dur: window, blob: mustJSON(sample)}
	return change(s, o, func(q *state, now time.Time) (queue.RateWindow, bool, error) {
		if !q.cfg.Adaptive {
			changed := q.sampleWin != 0 || q.sample.Calls != 0
			q.sampleWin, q.sample = 0, queue.RateSample{}
			return queue.RateWindow{}, changed, nil
		}
		win := now.UnixMilli() / window.Milliseconds()
		out := queue.RateWindow{ID: win, Folded: win}
		late := q.sampleWin < win && win-q.sampleWin <= admission.RateLateWindows
		switch {
		case q.sampleWin == win:
		case late && q.sample.Calls < admission.RateMinCalls:
			q.sampleWin = win // too few to decide on: they join this window
		default:
			if late {
				out = queue.RateWindow{Claimed: true, ID: q.sampleWin, Folded: win, Samples: q.sample, Rate: q.rateInForce(),
					Waiting: q.waitingAll(), Admitted: q.admitted - q.sampleAdmitted, Last: q.effLast,
					Span: time.Duration(q.sampleWin-cmp.Or(q.sampleFrom, q.sampleWin)+1) * window}
				out.Last.Rate = out.Rate // the rate in force, whatever changed it since
			}
			q.sampleWin, q.sampleFrom, q.sample, q.sampleAdmitted = win, win, queue.RateSample{}, q.admitted
		}
		admission.MergeSample(&q.sample, sample)
		return out, true, nil
	})
}

// SetRate implements queue.Store.
func (s *Store) SetRate(_ context.Context, name string, d queue.RateDecision) (float64, bool, error) {
	var before float64
	ok, err := change(s, &op{kind: opSetRate, queue: name, blob: mustJSON(d)}, func(q *state, now time.Time) (bool, bool, error) {
		before = q.rateInForce()
		if !q.cfg.Adaptive || d.Window <= q.effLast.Window {
			return false, false, nil
		}
		q.effRate, q.effLast = q.cfg.RateInForce(d.Rate), d
		if q.effRate != before {
			q.logRate(now, q.effRate, d.Why)
		}
		return true, true, nil
	})
	return before, ok, err
}

// RateChanges implements queue.Store.
func (s *Store) RateChanges(_ context.Context, name string) ([]queue.RateChange, error) {
	return in(s, name, func(q *state, _ time.Time) ([]queue.RateChange, error) { return slices.Clone(q.rateLog), nil })
}

// OpenDue implements queue.Store.
func (s *Store) OpenDue(_ context.Context, name, owner string, lease time.Duration) (queue.Opening, error) {
	return change(s, &op{kind: opOpenDue, queue: name, owner: owner, dur: lease}, func(q *state, now time.Time) (queue.Opening, bool, error) {
		if q.openState == "open" || q.cfg.OpensAt.IsZero() && q.openState == "" {
			return queue.Opening{}, false, nil
		}
		if q.openState == "" {
			if now.Before(q.cfg.OpensAt) {
				return queue.Opening{In: q.cfg.OpensAt.Sub(now)}, false, nil
			}
			if len(q.pre) == 0 {
				q.openState = "open"
				return queue.Opening{}, true, nil
			}
			// Close the pre-queue: a ticket is reserved for each of its
			// users, so whoever enters from now on is behind all of them.
			// The instant is kept: a config changed while it is placed
			// does not change which commitment its draw is of.
			// So is who is in it: the draw is of them, made maybe long
			// after (a beacon's round waited for), and one leaving since
			// must not change who takes part once the randomness is out.
			q.openAt = q.cfg.OpensAt.Truncate(time.Millisecond).UTC()
			q.openFirst, q.openNext, q.openEnd = q.seq+1, q.seq+1, q.seq+int64(len(q.pre))
			q.seq = q.openEnd
			q.openState = "placing"
			q.closed = q.preInArrival()
		} else if q.openOwner != owner && now.Before(q.openLease) {
			return queue.Opening{Busy: true}, false, nil
		}
		q.openOwner, q.openLease = owner, now.Add(lease)
		return queue.Opening{Due: true, Pending: slices.Clone(q.closed), OpensAt: q.openAt, Epoch: q.epoch, First: q.openFirst, Next: q.openNext}, true, nil
	})
}

// preInArrival is the pre-queue's users in arrival order.
func (q *state) preInArrival() []string {
	users := make([]string, 0, len(q.pre))
	for u := range q.pre {
		users = append(users, u)
	}
	slices.SortFunc(users, func(a, b string) int { return cmp.Compare(q.pre[a], q.pre[b]) })
	return users
}

// Place implements queue.Store. The tickets start at 1, so first is never
// 0 in a call (0 is a journal's Place from before first was passed).
func (s *Store) Place(_ context.Context, name, owner string, first int64, users []string, lease time.Duration) (bool, error) {
	if first < 1 {
		return false, queue.ErrNotOwner // not the opening's next ticket, whatever it is
	}
	return s.place(name, owner, first, users, lease)
}

// place is Place; first 0 replays a Place journaled before first was
// passed (its op's n is 0): users placed at the next reserved tickets in
// order, skipping whoever left, as Place did then.
func (s *Store) place(name, owner string, first int64, users []string, lease time.Duration) (bool, error) {
	o := &op{kind: opPlace, queue: name, owner: owner, list: users, dur: lease, n: first}
	return change(s, o, func(q *state, now time.Time) (bool, bool, error) {
		if q.openState != "placing" || q.openOwner != owner || first != 0 && first != q.openNext {
			return false, false, queue.ErrNotOwner
		}
		if first != 0 && first+int64(len(users))-1 > q.openEnd {
			return false, false, fmt.Errorf("memstore: placing %d users from ticket %d, past the last reserved, %d", len(users), first, q.openEnd)
		}
		for i, u := range users {
			t := first + int64(i)
			if _, ok := q.pre[u]; !ok {
				if first != 0 {
					q.addLeft(t) // left the pre-queue meanwhile (or ""): the ticket stays a gap
				}
				continue
			}
			if first == 0 {
				t = q.openNext
				q.openNext++
			}
			delete(q.pre, u)
			if name, ok := q.ln.pre[u]; ok { // in their lane, a gap in the public line
				q.dropPreLane(u)
				q.laneLine(name).insert(u, t)
				q.addLeft(t)
			} else {
				q.line.place(u, t)
			}
			q.joined[u] = untold(now) // shown the opening's time, not a wait
		}
		if first != 0 {
			q.openNext = first + int64(len(users))
		}
		q.openLease = now.Add(lease)
		if len(q.pre) > 0 {
			return false, true, nil
		}
		for t := q.openNext; t <= q.openEnd; t++ { // the reserved tickets left over
			q.addLeft(t)
		}
		q.openState, q.openOwner, q.closed = "open", "", nil
		q.tick.Moved = now
		return true, true, nil
	})
}

// Ping implements queue.Store: memory always answers, but a store whose
// journal failed cannot keep a change.
func (s *Store) Ping(context.Context) error { return s.writable() }

// FirstUse implements queue.Store: the first call with a key records it
// until ttl passes.
func (s *Store) FirstUse(_ context.Context, name, key string, ttl time.Duration) (bool, error) {
	if err := s.writable(); err != nil {
		return false, err
	}
	s.usedMu.Lock()
	first, n := s.firstUse(name, key, ttl)
	s.usedMu.Unlock()
	return first, s.await(n)
}

// firstUse is FirstUse under usedMu; it returns the record to wait for.
func (s *Store) firstUse(name, key string, ttl time.Duration) (bool, uint64) {
	now := s.now()
	k := usedKey{name, key}
	if until, ok := s.used[k]; ok && now.Before(until) {
		return false, 0
	}
	s.usedOps++
	n := s.record(&op{kind: opFirstUse, queue: name, token: key, dur: ttl}, s.usedOps, now)
	s.used[k] = now.Add(max(ttl, time.Millisecond))
	// Markers lapse by themselves on Redis; here a sweep every so many
	// additions keeps the map to the live ones at an amortised O(1).
	if s.usedSweep++; s.usedSweep >= max(1024, len(s.used)/2) {
		s.usedSweep = 0
		for k, until := range s.used {
			if !now.Before(until) {
				delete(s.used, k)
			}
		}
	}
	return true, n
}
