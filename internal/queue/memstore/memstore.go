// Package memstore keeps the waiting line in this process: the embedded
// default that lets anyone run waitroom with no setup. It follows the Redis
// store step for step (each method is one critical section, as each Redis
// method is one script) and passes the same suite, storetest. It serves one
// instance only: run several instances on Redis.
package memstore

import (
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
}

var _ queue.Store = (*Store)(nil)

// New returns an empty Store. now is its clock (time.Now when nil): the one
// clock that orders admission ticks and expires tokens, as Redis TIME does.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{now: now, queues: map[string]*state{}}
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
	carry                                  float64
	admitted, consumed, left, expired, ret int64
	inline, inlineTotal                    int64 // admitted by AdmitNow: since the last tick, ever
	winStart                               time.Time
	winCount                               int64
	measured                               float64
}

func (s *Store) queue(name string) (*state, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return nil, queue.ErrQueueNotFound
	}
	return q, nil
}

// PutConfig implements queue.Store.
func (s *Store) PutConfig(_ context.Context, name string, c queue.Config) error {
	s.mu.Lock()
	q, ok := s.queues[name]
	if !ok {
		// As put_config.lua, an epoch from the clock (µs), and never one
		// given before.
		s.epoch = max(s.epoch+1, s.now().UnixMicro())
		q = &state{line: newLine(), tokens: map[string]token{}, inflight: map[string]lock{}, epoch: s.epoch}
		s.queues[name] = q
	}
	s.mu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cfg = c
	// As put_config.lua: a shortened interval applies at once.
	if now := s.now().Truncate(time.Millisecond); q.next.After(now.Add(c.Interval)) {
		q.next = now
	}
	return nil
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

// Enter implements queue.Store.
func (s *Store) Enter(_ context.Context, name, user string) (queue.Entry, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Entry{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.standing(user, s.now()); ok {
		return e, nil
	}
	if _, ok := q.tokens[user]; ok { // expired: forget it, line up again
		delete(q.tokens, user)
		q.expired++
	}
	if q.line.len() >= q.cfg.Capacity {
		return queue.Entry{}, queue.ErrQueueFull
	}
	q.seq++
	q.line.push(user, q.seq)
	n := q.line.len()
	return queue.Entry{State: queue.Waiting, Position: n, Length: n, Ticket: q.seq, Epoch: q.epoch, Config: q.cfg}, nil
}

// Status implements queue.Store.
func (s *Store) Status(_ context.Context, name, user string) (queue.Entry, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Entry{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.standing(user, s.now()); ok {
		return e, nil
	}
	return queue.Entry{State: queue.NotInQueue, Epoch: q.epoch, Config: q.cfg}, nil
}

// standing is the user's place in line or valid token; the caller holds q.mu.
func (q *state) standing(user string, now time.Time) (queue.Entry, bool) {
	if r, ok := q.line.rank(user); ok {
		t, _ := q.line.ticket(user)
		return queue.Entry{State: queue.Waiting, Position: r + 1, Length: q.line.len(), Ticket: t, Epoch: q.epoch, Config: q.cfg}, true
	}
	if t, ok := q.tokens[user]; ok && t.expires.After(now) {
		return queue.Entry{State: queue.Ready, Token: t.value, ExpiresAt: t.expires.UTC().Truncate(time.Millisecond), Epoch: q.epoch, Config: q.cfg}, true
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
		i, _ := slices.BinarySearch(q.leftTickets, t)
		q.leftTickets = slices.Insert(q.leftTickets, i, t)
		q.left++
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

// Snapshot implements queue.Store.
func (s *Store) Snapshot(_ context.Context, name string) (queue.Snapshot, error) {
	q, err := s.queue(name)
	if err != nil {
		return queue.Snapshot{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	sn := queue.Snapshot{Head: q.line.headTicket(), Last: q.seq, Length: q.line.len(), Epoch: q.epoch, Config: q.cfg, Complete: true}
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
	if now.Before(due) {
		return queue.Admission{NextIn: due.Sub(now)}, nil
	}
	next := due.Add(q.cfg.Interval)
	if next.Before(now) {
		next = now // more than one tick behind: make up one, drop the rest
	}
	q.forgetExpired(now)

	var admitted []string
	carry := 0.0
	if !q.cfg.Paused {
		quota := q.cfg.PerTick() + q.carry
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
		admitted = q.line.popFront(n)
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
	q.inline = 0
	// Rounded as admit.lua stores it (%.6f), so both stores admit on the
	// same ticks: unrounded, 0.1 ten times is 0.9999999999999999.
	q.next, q.carry = next, math.Round(carry*1e6)/1e6
	return queue.Admission{Ticked: true, Admitted: admitted, NextIn: next.Sub(now)}, nil
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
	busy := queue.Entry{State: queue.NotInQueue, Epoch: q.epoch, Config: q.cfg}
	if q.cfg.Paused || q.line.len() > 0 {
		return busy, nil
	}
	quota := min(int64(q.cfg.PerTick()+q.carry), int64(q.cfg.BatchSize))
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
	return queue.Entry{State: queue.Ready, Token: t.value, ExpiresAt: t.expires.UTC(), Epoch: q.epoch, Config: q.cfg}, nil
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
	}
	if !q.winStart.IsZero() && now.Sub(q.winStart) < 10*time.Second {
		st.MeasuredRate = q.measured
	}
	return st, nil
}

// Ping implements queue.Store; memory always answers.
func (s *Store) Ping(context.Context) error { return nil }
