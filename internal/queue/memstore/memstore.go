// Package memstore keeps the waiting line in this process: the embedded
// default that lets anyone run waitroom with no setup. It follows the Redis
// store step for step (each method is one critical section, as each Redis
// method is one script) and passes the same suite, storetest. It serves one
// instance only: run several instances on Redis.
package memstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
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
}

type usedKey struct{ queue, key string }

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
	mu       sync.Mutex
	cfg      queue.Config
	epoch    int64 // see queue.Snapshot.Epoch
	line     *line
	seq      int64
	tokens   map[string]token
	inflight map[string]lock
	// issued lists tokens in the order they were written, which is expiry
	// order while the TTL stays put, so expired ones are dropped from the
	// front without scanning them all.
	issued []issuedToken
	// leftTickets are, ascending, the tickets of users who left the line,
	// none below the head after an admission (as the Redis left key).
	leftTickets []int64

	next                                   time.Time // when the next admission tick is due
	lastCall                               string    // the first token of the call that claimed the last tick
	carry                                  float64
	admitted, consumed, left, expired, ret int64
	abandoned                              int64
	inline, inlineTotal                    int64 // admitted by AdmitNow: since the last tick, ever
	winStart                               time.Time
	winCount                               int64
	measured                               float64

	// The line's pace (queue.PaceState): its clock runs from paceAt while
	// people wait and admission runs (zero: stopped).
	paceRate, paceBusy float64
	paceAt             time.Time
	moved              time.Time

	// No-shows: when each user near the front was last seen, how far from
	// the front that matters, and since when unseen users are fair game.
	seen        map[string]time.Time
	reach       int64
	checkpoints []checkpoint // oldest first, at most 3

	// The adaptive rate in force and its last decision; the window being
	// gathered, its samples and the admitted total when it began
	// (RateWindow.Admitted); the recent changes.
	effRate        float64
	effLast        queue.RateDecision
	sampleWin      int64
	sample         queue.RateSample
	sampleAdmitted int64
	rateLog        []queue.RateChange
	preArrival     int64

	// The opening: who waits for it (user → arrival), and while it is
	// placed, the next and last reserved ticket and the lease.
	pre               map[string]int64
	openState         string // "" (pending while OpensAt is set), "placing", "open"
	openNext, openEnd int64
	openOwner         string
	openLease         time.Time
}

// checkpoint is the ticket at the no-show watermark at one time (as
// admit.lua's ckN_at, ckN_t).
type checkpoint struct {
	at     time.Time
	ticket int64
}

// rateLogSize bounds the recent rate changes kept for the admin chart.
const rateLogSize = 300

func (s *Store) queue(name string) (*state, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return nil, queue.ErrQueueNotFound
	}
	return q, nil
}

// PutConfig implements queue.Store, with put_config.lua's rules.
func (s *Store) PutConfig(_ context.Context, name string, c queue.Config) error {
	s.mu.Lock()
	q, ok := s.queues[name]
	if !ok {
		// As put_config.lua, an epoch from the clock (µs), and never one
		// given before.
		s.epoch = max(s.epoch+1, s.now().UnixMicro())
		q = &state{line: newLine(), tokens: map[string]token{}, inflight: map[string]lock{},
			seen: map[string]time.Time{}, pre: map[string]int64{}, epoch: s.epoch}
		s.queues[name] = q
	}
	s.mu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now().Truncate(time.Millisecond)
	before, rateBefore := q.cfg, q.rateInForce()
	q.cfg = c
	// A shortened interval applies at once.
	if q.next.After(now.Add(c.Interval)) {
		q.next = now
	}
	// The adaptive rate starts from half the configured one (queue.AdaptiveStart)
	// and stays within its bounds.
	why := "the configured rate"
	switch {
	case c.Adaptive && before.Adaptive && q.effRate > 0:
		q.effRate, why = clamp(q.effRate, c.MinRate, c.MaxRate), "adaptive bounds changed"
	case c.Adaptive:
		q.effRate, why = queue.AdaptiveStart(c), queue.AdaptiveStartWhy
		q.effLast = queue.RateDecision{Window: q.effLast.Window, Why: why} // nothing remembered of an earlier backend
	default:
		q.effRate = 0
		if before.Adaptive {
			why = "adaptive off: the configured rate"
		}
	}
	if r := q.rateInForce(); !ok || r != rateBefore {
		q.logRate(now, r, why)
	}
	// A new AbandonAfter forgets the no-show checkpoints taken for the old
	// one: nobody is judged until the new one has passed.
	if c.AbandonAfter != before.AbandonAfter {
		q.checkpoints = nil
	}
	// A new opening time starts a new pre-queue; taking it away from one
	// that has people opens the line now.
	if !c.OpensAt.Equal(before.OpensAt) && q.openState != "placing" {
		q.openState = ""
	}
	if c.OpensAt.IsZero() && len(q.pre) > 0 && q.openState == "" {
		q.cfg.OpensAt = now
	}
	return nil
}

func clamp(v, lo, hi float64) float64 { return max(lo, min(v, hi)) }

// rateInForce is the rate admission uses now; the caller holds q.mu.
func (q *state) rateInForce() float64 {
	if q.cfg.Adaptive && q.effRate > 0 {
		return clamp(q.effRate, q.cfg.MinRate, q.cfg.MaxRate)
	}
	return q.cfg.RatePerSecond
}

func (q *state) logRate(at time.Time, rate float64, why string) {
	q.rateLog = append(q.rateLog, queue.RateChange{At: at.UTC(), Rate: rate, Why: why})
	if len(q.rateLog) > rateLogSize {
		q.rateLog = slices.Delete(q.rateLog, 0, len(q.rateLog)-rateLogSize)
	}
}

// pending says the opening is still ahead; the caller holds q.mu.
func (q *state) pending() bool { return !q.cfg.OpensAt.IsZero() && q.openState == "" }

// pace is the line's queue.Pace now; the caller holds q.mu.
func (q *state) pace(now time.Time) queue.Pace {
	return queue.LinePace(queue.PaceState{
		Config: q.cfg, EffectiveRate: q.effRate, PaceRate: q.paceRate, PaceBusy: q.paceBusy,
		Moved: q.moved, Now: now, Length: q.line.len(), Reach: q.reach,
		Pending: q.pending(), Placing: q.openState == "placing",
	})
}

// Config implements queue.Store.
func (s *Store) Config(_ context.Context, name string) (queue.Config, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Config{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cfg, nil
}

// Queues implements queue.Store.
func (s *Store) Queues(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.queues))
	for n := range s.queues {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Enter implements queue.Store, with enter.lua's rules.
func (s *Store) Enter(_ context.Context, name, user string) (queue.Entry, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Entry{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now().Truncate(time.Millisecond)
	if e, ok := q.standing(user, now); ok {
		if e.State == queue.Waiting && !e.PreQueue {
			q.markOnEnter(user, e.Position, now)
		}
		return e, nil
	}
	if _, ok := q.tokens[user]; ok { // expired: forget it, line up again
		delete(q.tokens, user)
		q.expired++
	}
	if q.line.len()+int64(len(q.pre)) >= q.cfg.Capacity {
		return queue.Entry{}, queue.ErrQueueFull
	}
	if q.pending() {
		q.preArrival++
		q.pre[user] = q.preArrival
		return queue.Entry{State: queue.Waiting, PreQueue: true, Pace: q.pace(now)}, nil
	}
	if q.line.len() == 0 {
		q.moved = now // someone starts waiting: the front has not stood still
	}
	q.seq++
	q.line.push(user, q.seq)
	n := q.line.len()
	q.markOnEnter(user, n, now)
	return queue.Entry{State: queue.Waiting, Position: n, Length: n, Ticket: q.seq, Pace: q.pace(now), Epoch: q.epoch}, nil
}

// markOnEnter: a user entering near the front is seen at once, before any
// instance's marks could arrive; the caller holds q.mu.
func (q *state) markOnEnter(user string, position int64, now time.Time) {
	if q.cfg.AbandonAfter > 0 && (q.reach == 0 || position <= q.reach) {
		q.seen[user] = now
	}
}

// Status implements queue.Store.
func (s *Store) Status(_ context.Context, name, user string) (queue.Entry, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Entry{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now()
	if e, ok := q.standing(user, now); ok {
		return e, nil
	}
	return queue.Entry{State: queue.NotInQueue, Pace: q.pace(now), Epoch: q.epoch}, nil
}

// standing is the user's place in line or in the pre-queue, or their valid
// token; the caller holds q.mu.
func (q *state) standing(user string, now time.Time) (queue.Entry, bool) {
	if r, ok := q.line.rank(user); ok {
		t, _ := q.line.ticket(user)
		return queue.Entry{State: queue.Waiting, Position: r + 1, Length: q.line.len(), Ticket: t, Pace: q.pace(now), Epoch: q.epoch}, true
	}
	if _, ok := q.pre[user]; ok {
		return queue.Entry{State: queue.Waiting, PreQueue: true, Pace: q.pace(now), Epoch: q.epoch}, true
	}
	if t, ok := q.tokens[user]; ok && t.expires.After(now) {
		return queue.Entry{State: queue.Ready, Token: t.value, ExpiresAt: t.expires.UTC().Truncate(time.Millisecond), Pace: q.pace(now), Epoch: q.epoch}, true
	}
	return queue.Entry{}, false
}

// Leave implements queue.Store.
func (s *Store) Leave(_ context.Context, name, user string) (bool, error) {
	q, err := s.queue(name)
	if err != nil {
		return false, nil // as on Redis: nothing to remove
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if t, ok := q.line.ticket(user); ok {
		q.line.remove(user)
		q.addLeft(t)
		q.left++
		delete(q.seen, user)
		return true, nil
	}
	if _, ok := q.pre[user]; ok {
		delete(q.pre, user)
		if q.openState == "placing" { // they held a reserved ticket: entered and left
			q.left++
		}
		return true, nil
	}
	if t, ok := q.tokens[user]; ok {
		delete(q.tokens, user)
		q.countGone(t, s.now(), &q.ret)
		return true, nil
	}
	return false, nil
}

// countGone counts a token that was just deleted: on counter, or as expired
// if its time was up (as Stats counted it already, so totals never go back).
// The caller holds q.mu.
func (q *state) countGone(t token, now time.Time, counter *int64) {
	if !t.expires.After(now) {
		counter = &q.expired
	}
	*counter++
}

// addLeft records a ticket that left a gap in the line; the caller holds q.mu.
func (q *state) addLeft(t int64) {
	i, _ := slices.BinarySearch(q.leftTickets, t)
	q.leftTickets = slices.Insert(q.leftTickets, i, t)
}

// Snapshot implements queue.Store.
func (s *Store) Snapshot(_ context.Context, name string) (queue.Snapshot, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Snapshot{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	sn := queue.Snapshot{Head: q.line.headTicket(), Last: q.seq, Length: q.line.len(), Pace: q.pace(s.now()), Epoch: q.epoch, Complete: true}
	if sn.Head > 0 {
		from, _ := slices.BinarySearch(q.leftTickets, sn.Head)
		left := q.leftTickets[from:]
		sn.Complete = len(left) <= queue.SnapshotMaxLeft
		sn.Left = slices.Clone(left[:min(len(left), queue.SnapshotMaxLeft)])
	}
	return sn, nil
}

// Admit implements queue.Store, with admit.lua's rules: a tick is due when
// the clock reaches next; claiming it moves next one interval on, but never
// leaves more than one tick of backlog.
func (s *Store) Admit(_ context.Context, name string, tokens []string) (queue.Admission, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Admission{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now().Truncate(time.Millisecond)
	due := q.next
	if due.IsZero() {
		due = now
	}
	// As admit.lua: a due time more than one interval away means the clock
	// went back; wait one interval from now, not until then.
	if limit := now.Add(q.cfg.Interval); due.After(limit) {
		due, q.next = limit, limit
	}
	// As admit.lua: the same call again (its tokens name it) admits nobody,
	// or two people would hold one token.
	if len(tokens) > 0 && tokens[0] == q.lastCall {
		return queue.Admission{NextIn: max(due.Sub(now), 0)}, nil
	}
	if now.Before(due) {
		return queue.Admission{NextIn: due.Sub(now)}, nil
	}
	next := due.Add(q.cfg.Interval)
	if next.Before(now) {
		next = now // more than one tick behind: make up one, drop the rest
	}
	q.forgetExpired(now)

	rate := q.rateInForce()
	placing := q.openState == "placing" // the opening's pre-queue goes in first
	lenBefore := q.line.len()
	reach := q.reachFor(rate) // before the tick moves the pace, as admit.lua
	judged, watermark := q.watermark(now, rate)
	var admitted []string
	skipped := 0
	carry := 0.0
	if !q.cfg.Paused && !placing {
		quota := rate*q.cfg.Interval.Seconds() + q.carry
		n := int(quota)
		carry = quota - float64(n)
		if n > q.cfg.BatchSize {
			n, carry = q.cfg.BatchSize, 0
		}
		if n > len(tokens) {
			n, carry = len(tokens), carry+float64(n-len(tokens))
		}
		// As admit.lua: those let straight in since the last tick came out
		// of this tick's quota.
		n = max(n-int(q.inline), 0)
		// As admit.lua: the live-token cap (expired tokens were just dropped).
		if limit := q.cfg.MaxActiveTokens; limit > 0 {
			if room := int(limit) - len(q.tokens); room < n {
				n, carry = max(room, 0), 0
			}
		}
		admitted, skipped = q.popPresent(n, now, judged)
		if n > 0 { // as admit.lua: leavers below the new head no longer matter
			below, _ := slices.BinarySearch(q.leftTickets, q.line.headTicket())
			if q.line.len() == 0 {
				below = len(q.leftTickets)
			}
			q.leftTickets = slices.Delete(q.leftTickets, 0, below)
		}
		for i, u := range admitted {
			t := token{value: tokens[i], expires: now.Add(q.cfg.TokenTTL)}
			q.tokens[u] = t
			q.issued = append(q.issued, issuedToken{user: u, value: t.value, expires: t.expires})
		}
		if len(admitted) < n {
			carry = 0
		}
	}

	if q.winStart.IsZero() {
		q.winStart = now
	}
	q.winCount += int64(len(admitted))
	if el := now.Sub(q.winStart); el >= 5*time.Second {
		q.measured = float64(q.winCount) / el.Seconds()
		q.winStart, q.winCount = now, 0
	}
	q.admitted += int64(len(admitted))
	q.abandoned += int64(skipped)
	q.inline = 0
	q.tickPace(now, lenBefore, len(admitted)+skipped, q.cfg.Paused || placing)
	if q.cfg.AbandonAfter > 0 {
		q.reach = reach
		if watermark >= 0 {
			q.checkpoints = append(q.checkpoints, checkpoint{now, watermark})
			q.checkpoints = q.checkpoints[max(0, len(q.checkpoints)-3):]
		}
	} else {
		q.reach, q.checkpoints = 0, nil
	}
	// Rounded as admit.lua stores it (%.6f), so both stores admit on the
	// same ticks: unrounded, 0.1 ten times is 0.9999999999999999.
	q.next, q.carry = next, math.Round(carry*1e6)/1e6
	if len(tokens) > 0 {
		q.lastCall = tokens[0]
	}
	return queue.Admission{Ticked: true, Admitted: admitted, Skipped: skipped, NextIn: next.Sub(now)}, nil
}

// skipScan bounds how many users beyond its budget one tick may pass over
// as no-shows, as admit.lua does.
const skipScan = 1000

// reachFor is how far from the front seen marks matter: four times what
// leaves the front over AbandonAfter; the caller holds q.mu.
func (q *state) reachFor(rate float64) int64 {
	return int64(math.Ceil(4*q.cfg.AbandonAfter.Seconds()*max(rate, q.paceRate))) + 2*int64(q.cfg.BatchSize)
}

// watermark reads admit.lua's no-show checkpoints: the highest ticket that
// was within the reach of seen marks at least AbandonAfter ago (judged; -1
// none), and the ticket at the edge of the reach now when a new checkpoint
// is due (else -1).
// The caller holds q.mu.
func (q *state) watermark(now time.Time, rate float64) (judged, ticket int64) {
	judged, ticket = -1, -1
	a := q.cfg.AbandonAfter
	if a == 0 {
		return judged, ticket
	}
	for _, c := range q.checkpoints {
		if now.Sub(c.at) >= a {
			judged = max(judged, c.ticket)
		}
	}
	if n := len(q.checkpoints); n == 0 || now.Sub(q.checkpoints[n-1].at) >= a/2 {
		ticket = 0
		if t, ok := q.line.ticketAt(min(q.reachFor(rate), q.line.len()) - 1); ok {
			ticket = t
		}
	}
	return judged, ticket
}

// popPresent takes up to n users from the front who are present, passing
// over (and out of line) no-shows: not seen for AbandonAfter and with a
// ticket judged (watermark); the caller holds q.mu.
func (q *state) popPresent(n int, now time.Time, judged int64) (admitted []string, skipped int) {
	a := q.cfg.AbandonAfter
	for len(admitted) < n && skipped < skipScan {
		ticket := q.line.headTicket()
		front := q.line.popFront(1)
		if len(front) == 0 {
			break
		}
		u := front[0]
		seen, marked := q.seen[u]
		delete(q.seen, u)
		if a == 0 || marked && now.Sub(seen) <= a || ticket > judged {
			admitted = append(admitted, u)
		} else {
			skipped++
		}
	}
	return admitted, skipped
}

// tickPace advances the line's pace and the time its front last moved by
// one tick in which `left` users left the front of a line `length` long
// (before the tick); stopped: paused, or an opening being placed. The
// caller holds q.mu. As admit.lua.
func (q *state) tickPace(now time.Time, length int64, left int, stopped bool) {
	if stopped || length == 0 {
		q.paceAt = time.Time{}
	} else {
		dt := q.cfg.Interval.Seconds()
		if !q.paceAt.IsZero() {
			dt = now.Sub(q.paceAt).Seconds()
		}
		q.paceRate, q.paceBusy = queue.AdvancePace(q.paceRate, q.paceBusy, dt, left)
		q.paceRate, q.paceBusy = math.Round(q.paceRate*1e6)/1e6, math.Round(q.paceBusy*1e3)/1e3
		q.paceAt = time.Time{}
		if q.line.len() > 0 {
			q.paceAt = now
		}
	}
	if stopped || length == 0 || left > 0 {
		q.moved = now
	}
}

// AdmitNow implements queue.Store, with admit_now.lua's rules.
func (s *Store) AdmitNow(_ context.Context, name, user, tok string) (queue.Entry, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Entry{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now().Truncate(time.Millisecond)
	if e, ok := q.standing(user, now); ok {
		return e, nil
	}
	busy := queue.Entry{State: queue.NotInQueue, Pace: q.pace(now), Epoch: q.epoch}
	// An opening ahead is not a quiet line: its pre-queue goes first.
	if q.cfg.Paused || q.line.len() > 0 || q.pending() || q.openState == "placing" {
		return busy, nil
	}
	quota := min(int64(q.rateInForce()*q.cfg.Interval.Seconds()+q.carry), int64(q.cfg.BatchSize))
	if q.inline >= quota {
		return busy, nil
	}
	if limit := q.cfg.MaxActiveTokens; limit > 0 && q.live(now) >= limit {
		return busy, nil
	}
	if _, ok := q.tokens[user]; ok { // expired: forget it, as Enter does
		q.expired++
	}
	q.seq++ // entered and admitted at once: the totals still balance
	t := token{value: tok, expires: now.Add(q.cfg.TokenTTL)}
	q.tokens[user] = t
	q.issued = append(q.issued, issuedToken{user: user, value: t.value, expires: t.expires})
	q.inline++
	q.inlineTotal++
	q.admitted++
	q.winCount++
	return queue.Entry{State: queue.Ready, Token: t.value, ExpiresAt: t.expires.UTC(), Pace: q.pace(now), Epoch: q.epoch}, nil
}

// live counts the tokens not yet expired at now; the caller holds q.mu.
func (q *state) live(now time.Time) int64 {
	n := int64(0)
	for _, t := range q.tokens {
		if t.expires.After(now) {
			n++
		}
	}
	return n
}

// forgetExpired drops tokens whose time is up; the caller holds q.mu.
func (q *state) forgetExpired(now time.Time) {
	i := 0
	for ; i < len(q.issued) && !q.issued[i].expires.After(now); i++ {
		it := q.issued[i]
		if t, ok := q.tokens[it.user]; ok && t.value == it.value {
			delete(q.tokens, it.user)
			q.expired++
		}
	}
	q.issued = q.issued[i:]
}

// BeginUse implements queue.Store.
func (s *Store) BeginUse(_ context.Context, name, user, tok, owner string, lockFor time.Duration) error {
	q, err := s.queue(name)
	if err != nil {
		return queue.ErrTokenInvalid
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now()
	t, ok := q.tokens[user]
	if !ok || !sameToken(t.value, tok) || !t.expires.After(now) {
		return queue.ErrTokenInvalid
	}
	if l, ok := q.inflight[user]; ok && l.until.After(now) && l.owner != owner {
		return queue.ErrTokenInUse
	}
	q.inflight[user] = lock{until: now.Add(lockFor), owner: owner}
	// Forget lapsed locks of others, as begin_use.lua does; the map holds
	// only orders in flight, so the sweep is short.
	for u, l := range q.inflight {
		if !l.until.After(now) {
			delete(q.inflight, u)
		}
	}
	return nil
}

// sameToken compares digests in constant time, as begin_use.lua compares
// digests: the time taken says nothing about the stored token.
func sameToken(a, b string) bool {
	da, db := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(da[:], db[:]) == 1
}

// EndUse implements queue.Store.
func (s *Store) EndUse(_ context.Context, name, user, tok, owner string, consumed bool) error {
	q, err := s.queue(name)
	if err != nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if l, ok := q.inflight[user]; ok && l.owner == owner {
		delete(q.inflight, user)
	}
	if t, ok := q.tokens[user]; consumed && ok && t.value == tok {
		delete(q.tokens, user)
		q.countGone(t, s.now(), &q.consumed)
	}
	return nil
}

// Stats implements queue.Store.
func (s *Store) Stats(_ context.Context, name string) (queue.Stats, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Stats{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now()
	// As stats.lua: nothing changes; tokens whose time is up but not yet
	// swept count as expired.
	var unswept int64
	for _, t := range q.tokens {
		if !t.expires.After(now) {
			unswept++
		}
	}
	st := queue.Stats{
		Config: q.cfg, Length: q.line.len(), ActiveTokens: int64(len(q.tokens)) - unswept,
		EnteredTotal: q.seq, AdmittedTotal: q.admitted, LeftTotal: q.left,
		ConsumedTotal: q.consumed, ExpiredTotal: q.expired + unswept, ReturnedTotal: q.ret, InlineTotal: q.inlineTotal,
		AbandonedTotal: q.abandoned, PreQueued: int64(len(q.pre)),
		EffectiveRate: q.rateInForce(),
	}
	if q.cfg.Adaptive {
		st.EffectiveWhy = q.effLast.Why
	}
	if !q.winStart.IsZero() && now.Sub(q.winStart) < 10*time.Second {
		st.MeasuredRate = q.measured
	}
	return st, nil
}

// Seen implements queue.Store.
func (s *Store) Seen(_ context.Context, name string, users []string) error {
	q, err := s.queue(name)
	if err != nil {
		return nil // nobody to mark
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now().Truncate(time.Millisecond)
	for _, u := range users {
		if _, ok := q.line.ticket(u); ok {
			q.seen[u] = now
		}
	}
	return nil
}

// FoldRate implements queue.Store, as fold_rate.lua.
func (s *Store) FoldRate(_ context.Context, name string, sample queue.RateSample, window time.Duration) (queue.RateWindow, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.RateWindow{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.cfg.Adaptive {
		q.sampleWin, q.sample = 0, queue.RateSample{}
		return queue.RateWindow{}, nil
	}
	win := s.now().UnixMilli() / window.Milliseconds()
	out := queue.RateWindow{ID: win, Folded: win}
	switch {
	case q.sampleWin == win:
	case q.sampleWin == win-1 && q.sample.Calls < queue.RateMinCalls:
		q.sampleWin = win // too few to decide on: they join this window
	default:
		if q.sampleWin == win-1 {
			out = queue.RateWindow{Claimed: true, ID: q.sampleWin, Folded: win, Samples: q.sample, Rate: q.rateInForce(),
				Waiting: q.line.len(), Admitted: q.admitted - q.sampleAdmitted, Last: q.effLast}
			out.Last.Rate = out.Rate // as fold_rate.lua: the rate in force, whatever changed it since
		}
		q.sampleWin, q.sample, q.sampleAdmitted = win, queue.RateSample{}, q.admitted
	}
	q.sample.Calls += sample.Calls
	q.sample.Overloaded += sample.Overloaded
	for b, n := range sample.Latency {
		if q.sample.Latency == nil {
			q.sample.Latency = map[int]int64{}
		}
		q.sample.Latency[b] += n
	}
	return out, nil
}

// SetRate implements queue.Store, as set_rate.lua.
func (s *Store) SetRate(_ context.Context, name string, d queue.RateDecision) (float64, bool, error) {
	q, err := s.queue(name)
	if err != nil {
		return 0, false, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	before := q.rateInForce()
	if !q.cfg.Adaptive || d.Window <= q.effLast.Window {
		return before, false, nil
	}
	q.effRate, q.effLast = clamp(d.Rate, q.cfg.MinRate, q.cfg.MaxRate), d
	if q.effRate != before {
		q.logRate(s.now().Truncate(time.Millisecond), q.effRate, d.Why)
	}
	return before, true, nil
}

// RateChanges implements queue.Store.
func (s *Store) RateChanges(_ context.Context, name string) ([]queue.RateChange, error) {
	q, err := s.queue(name)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.rateLog), nil
}

// OpenDue implements queue.Store, as open_due.lua.
func (s *Store) OpenDue(_ context.Context, name, owner string, lease time.Duration) (queue.Opening, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Opening{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now().Truncate(time.Millisecond)
	if q.openState == "open" || q.cfg.OpensAt.IsZero() && q.openState == "" {
		return queue.Opening{}, nil
	}
	if q.openState == "" {
		if now.Before(q.cfg.OpensAt) {
			return queue.Opening{In: q.cfg.OpensAt.Sub(now)}, nil
		}
		if len(q.pre) == 0 {
			q.openState = "open"
			return queue.Opening{}, nil
		}
		// Close the pre-queue: a ticket is reserved for each of its users,
		// so whoever enters from now on is behind all of them.
		q.openNext, q.openEnd = q.seq+1, q.seq+int64(len(q.pre))
		q.seq = q.openEnd
		q.openState = "placing"
	} else if q.openOwner != owner && now.Before(q.openLease) {
		return queue.Opening{Busy: true}, nil
	}
	q.openOwner, q.openLease = owner, now.Add(lease)
	pending := make([]string, 0, len(q.pre))
	for u := range q.pre {
		pending = append(pending, u)
	}
	slices.SortFunc(pending, func(a, b string) int { return cmp.Compare(q.pre[a], q.pre[b]) })
	return queue.Opening{Due: true, Pending: pending}, nil
}

// Place implements queue.Store, as place.lua.
func (s *Store) Place(_ context.Context, name, owner string, users []string, lease time.Duration) (bool, error) {
	q, err := s.queue(name)
	if err != nil {
		return false, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.openState != "placing" || q.openOwner != owner {
		return false, queue.ErrNotOwner
	}
	now := s.now().Truncate(time.Millisecond)
	for _, u := range users {
		if _, ok := q.pre[u]; !ok {
			continue // left the pre-queue meanwhile: the reserved ticket stays a gap
		}
		delete(q.pre, u)
		q.line.place(u, q.openNext)
		q.openNext++
	}
	q.openLease = now.Add(lease)
	if len(q.pre) > 0 {
		return false, nil
	}
	for t := q.openNext; t <= q.openEnd; t++ { // the tickets of those who left
		q.addLeft(t)
	}
	q.openState, q.openOwner = "open", ""
	q.moved = now
	return true, nil
}

// Ping implements queue.Store; memory always answers.
func (s *Store) Ping(context.Context) error { return nil }

// FirstUse implements queue.Store, as first_use.lua: the first call with a
// key records it until ttl passes.
func (s *Store) FirstUse(_ context.Context, name, key string, ttl time.Duration) (bool, error) {
	now := s.now()
	k := usedKey{name, key}
	s.usedMu.Lock()
	defer s.usedMu.Unlock()
	if until, ok := s.used[k]; ok && now.Before(until) {
		return false, nil
	}
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
	return true, nil
}
