// Package spend spends entry tokens: the rules of a token's use, the same
// wherever it is spent: the built-in order API (package order) and gateway
// mode in front of any backend (package gateway). A use checks the token and
// takes its in-flight lock for this request alone (a concurrent second use is
// refused and never reaches the backend), runs the protected call, then
// consumes the token if the call succeeded and keeps it otherwise, so a
// failed order can be retried and one token never buys twice. Every call's
// latency and outcome is reported, because the backend's measured health is
// what admission follows.
package spend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// Outcome is how a protected call ended, for the token and for the
// backend's health.
type Outcome int

const (
	// Succeeded: the call did what the token was for; it is consumed.
	Succeeded Outcome = iota
	// Spent: the backend says this token already bought (a unique key
	// refused it); it is consumed, and the call says nothing of health.
	Spent
	// Refused: the backend answered but did not do it (a 4xx, out of stock,
	// a declined payment); the token is kept for a retry.
	Refused
	// Failed: the backend failed (a 5xx, a lost connection, an exhausted
	// pool); the token is kept.
	Failed
	// TimedOut: no answer in time; the token is kept.
	TimedOut
)

var outcomeNames = [...]string{"succeeded", "spent", "refused", "failed", "timed_out"}

// String is the outcome's metric label.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// consumes reports whether the token is spent after this outcome.
func (o Outcome) consumes() bool { return o == Succeeded || o == Spent }

// Overloaded reports whether the outcome says the backend is struggling,
// which admission should answer by letting people in more slowly.
func (o Outcome) Overloaded() bool { return o == Failed || o == TimedOut }

// Tokens is the part of the line a use needs (queue.Store has it).
type Tokens interface {
	BeginUse(ctx context.Context, queue, user, token, owner string, lock time.Duration) error
	EndUse(ctx context.Context, queue, user, token, owner string, consumed bool) error
	Extend(ctx context.Context, queue, user, token string) (time.Time, error)
}

// Token names one entry token: whose, for which line.
type Token struct {
	Queue, User, Value string
}

// Call is one protected call that ran: its queue, how long it took from the
// token check to its end, how long of that it waited for a connection of
// the backend's pool and then held one (Wait; 0 where none is known), and
// how it ended.
type Call struct {
	Queue              string
	Took, Waited, Held time.Duration
	Outcome            Outcome
}

// Observer is told of every protected call that ran.
type Observer func(Call)

// poolKey carries a call's *poolTimes in its context (Wait).
type poolKey struct{}

// poolTimes sums what a call waited for the backend's pool and held it;
// queued counts its queue's calls waiting now, this one while waiting,
// taken from the guard only once the call waits (a gateway's calls never
// do, and pay nothing for it).
type poolTimes struct {
	mu           sync.Mutex
	waited, held time.Duration
	guard        *Guard
	queue        string
	queued       *atomic.Int64
	waiting      bool
}

// Wait starts timing the protected call ctx belongs to waiting for a
// connection of the backend's pool. The order store calls it before it
// asks the pool, then what it returns once it has the connection, which
// starts timing the hold, then what that returns once it gives the
// connection back (a call that never got one is done waiting when it
// ends). The pool's size divided by what a call holds it for is what the
// backend bears, and the calls waiting for it the backlog in front of it
// (admission's adaptive rate). Outside a protected call it times nothing.
func Wait(ctx context.Context) (acquired func() (released func())) {
	t, ok := ctx.Value(poolKey{}).(*poolTimes)
	if !ok {
		return func() func() { return func() {} }
	}
	asked := time.Now()
	t.setWaiting(true)
	return func() func() {
		got := time.Now()
		t.setWaiting(false)
		t.add(&t.waited, got.Sub(asked))
		return func() { t.add(&t.held, time.Since(got)) }
	}
}

func (t *poolTimes) add(to *time.Duration, d time.Duration) {
	t.mu.Lock()
	*to += d
	t.mu.Unlock()
}

func (t *poolTimes) setWaiting(w bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting == w {
		return
	}
	t.waiting = w
	if t.queued == nil {
		t.queued = t.guard.queuedOf(t.queue)
	}
	if w {
		t.queued.Add(1)
	} else {
		t.queued.Add(-1)
	}
}

// observed runs call with a context that times its pool (Wait), and
// tells the observer of it however it ends.
func (g *Guard) observed(ctx context.Context, queue string, call func(ctx context.Context) Outcome) (outcome Outcome) {
	t := &poolTimes{guard: g, queue: queue}
	outcome = Failed // should call panic
	start := time.Now()
	defer func() {
		took := time.Since(start)
		t.setWaiting(false)
		t.mu.Lock()
		defer t.mu.Unlock()
		g.observe(Call{Queue: queue, Took: took, Waited: t.waited, Held: t.held, Outcome: outcome})
	}()
	return call(context.WithValue(ctx, poolKey{}, t))
}

// Guard runs protected calls under the token rules.
type Guard struct {
	tokens  Tokens
	lockTTL time.Duration
	observe Observer

	// confirmed remembers tokens Check found valid, until the time given,
	// so that a browser loading a checkout page and its parts costs one
	// store read, not one per request. Use forgets a token it ends.
	mu        sync.Mutex
	confirmed map[Token]time.Time
	// queued counts, per queue, the calls waiting for a connection of the
	// backend's pool now (Wait).
	queued map[string]*atomic.Int64
}

// Queued is how many of queue's protected calls wait for a connection of
// the backend's pool now: the backlog in front of it as it stands, where
// the waits of the calls that ended tell it only as it was (the adaptive
// rate).
func (g *Guard) Queued(queue string) int64 {
	g.mu.Lock()
	n := g.queued[queue]
	g.mu.Unlock()
	if n == nil {
		return 0
	}
	return n.Load()
}

// queuedOf is queue's counter of calls waiting for the pool.
func (g *Guard) queuedOf(queue string) *atomic.Int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.queued[queue]
	if n == nil {
		if len(g.queued) >= maxConfirmed { // queue names come from valid tokens: far above real traffic
			return &atomic.Int64{}
		}
		n = &atomic.Int64{}
		g.queued[queue] = n
	}
	return n
}

// CheckTrust is how long Check trusts a token it found valid without
// asking the store again. A token spent through another instance may so
// open a --protect-session route for up to this long; never a --protect
// route, whose Use always asks the store.
const CheckTrust = time.Second

// maxConfirmed bounds the tokens Check remembers (about 150 bytes each);
// when full it starts over.
const maxConfirmed = 100_000

// DefaultLockTTL bounds a token's in-flight lock, should its holder die
// mid-call: the lock lapses by itself after it.
const DefaultLockTTL = 30 * time.Second

// NewGuard returns a Guard over tokens. lockTTL ≤ 0 means DefaultLockTTL;
// observe may be nil.
func NewGuard(tokens Tokens, lockTTL time.Duration, observe Observer) *Guard {
	if lockTTL <= 0 {
		lockTTL = DefaultLockTTL
	}
	if observe == nil {
		observe = func(Call) {}
	}
	return &Guard{tokens: tokens, lockTTL: lockTTL, observe: observe, confirmed: map[Token]time.Time{}, queued: map[string]*atomic.Int64{}}
}

// Use checks the token, takes its in-flight lock for this call alone, runs
// call, and ends the use by the outcome call returns: consumed on Succeeded
// or Spent, kept otherwise. It returns an error only when call did not run:
// queue.ErrTokenInvalid (missing, wrong, expired or someone else's),
// queue.ErrTokenInUse (another request holds it), or the store's failure.
//
// The lock is released on every way out, panics and departed clients
// included. Should the store fail while ending the use, the end is asked
// again for up to endUseRetry, then the lock lapses by itself after the
// lock TTL; a consumption lost that way cannot buy twice
// where the backend keeps the token's id under a unique key (the order
// store does; a gateway's backend can, with the entry's jti).
func (g *Guard) Use(ctx context.Context, t Token, call func(ctx context.Context) Outcome) error {
	// The lock belongs to this request alone: a retried BeginUse whose reply
	// was lost finds its own lock, and only this request can release it.
	owner := newOwner()
	if err := g.tokens.BeginUse(ctx, t.Queue, t.User, t.Value, owner, g.lockTTL); err != nil {
		if !errors.Is(err, queue.ErrTokenInvalid) && !errors.Is(err, queue.ErrTokenInUse) {
			// The store failed or the client left: the script may have run
			// and taken the lock anyway. Release it, best effort.
			_ = g.tokens.EndUse(context.WithoutCancel(ctx), t.Queue, t.User, t.Value, owner, false)
		}
		return err
	}
	outcome := Failed // should call panic
	defer func() {
		g.endUse(context.WithoutCancel(ctx), t, owner, outcome.consumes())
		if outcome.consumes() {
			g.forget(t)
		}
	}()
	outcome = g.observed(ctx, t.Queue, call)
	return nil
}

// endUseRetry bounds how long a use's end is asked again while the store
// does not answer it, before the call's answer goes out. After a Redis
// restart an instance's client may refuse new connections for up to a
// second though Redis answers again (go-redis's pool, after as many
// failed dials as its size, fails every dial at once until a probe, once
// a second, gets through); an end lost then left a bought token live and
// locked for the lock TTL (the fairness check's redis-kill histories:
// 201, then the token READY and "order in progress"). EndUse is safe to
// ask again: only this owner's lock is released, only this token deleted.
const endUseRetry = 2 * time.Second

// endUse ends the use (Tokens.EndUse), asking again while the store is
// unavailable, for up to endUseRetry; past that the lock lapses by itself
// (Use).
func (g *Guard) endUse(ctx context.Context, t Token, owner string, consumed bool) {
	deadline := time.Now().Add(endUseRetry)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := g.tokens.EndUse(ctx, t.Queue, t.User, t.Value, owner, consumed)
		if err == nil || !errors.Is(err, queue.ErrUnavailable) || time.Now().Add(wait).After(deadline) {
			return
		}
		time.Sleep(wait)
	}
}

// Check runs call if the token is valid, without locking or consuming it:
// a route that needs an entry but does not spend it, such as the pages of a
// multi-step checkout, which a browser may load several at once. Like Use,
// it returns an error only when call did not run, and reports the call.
//
// The check is a use of the entry (queue.Store.Extend): where the queue
// has sliding sessions (sessionMaxSeconds) it gives the token its TTL
// again. A token found valid is trusted for CheckTrust (never past its
// expiry) without asking the store again, so a session is extended at most
// once a CheckTrust per instance.
func (g *Guard) Check(ctx context.Context, t Token, call func(ctx context.Context) Outcome) error {
	if !g.trusted(t) {
		expires, err := g.tokens.Extend(ctx, t.Queue, t.User, t.Value)
		if err != nil {
			return err
		}
		until := time.Now().Add(CheckTrust)
		if expires.Before(until) {
			until = expires
		}
		g.trust(t, until)
	}
	g.observed(ctx, t.Queue, call)
	return nil
}

// Release ends the token at once, whatever its state: deleted and counted
// as spent, if it is still this token (the backend ends an entry early),
// its live-token slot free for the next admission tick. Nobody's in-flight
// lock is touched: it asks as an owner of its own.
func (g *Guard) Release(ctx context.Context, t Token) error {
	g.forget(t)
	return g.tokens.EndUse(context.WithoutCancel(ctx), t.Queue, t.User, t.Value, newOwner(), true)
}

func (g *Guard) trusted(t Token) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.confirmed[t]
	return ok && time.Now().Before(until)
}

func (g *Guard) trust(t Token, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.confirmed) >= maxConfirmed {
		clear(g.confirmed)
	}
	g.confirmed[t] = until
}

func (g *Guard) forget(t Token) {
	g.mu.Lock()
	delete(g.confirmed, t)
	g.mu.Unlock()
}

// newOwner names one request's hold on a token lock.
func newOwner() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
