package staff

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/ratelimit"
)

// CheckFor is how long a check of a named token is trusted: a revoke takes
// effect on every instance within it, and while the store is away a token
// checked within it still works.
const CheckFor = time.Second

// touchEvery is how often a token's LastUsed is written: at most once a
// minute per token and instance, so that a script polling the admin API
// costs the store nothing per request.
const touchEvery = time.Minute

// maxMisses bounds the "not found" answers kept: a flood of made-up
// tokens of the right shape cannot grow them past it, and each new one
// pushes out the oldest (no scan). The tokens the store found are kept
// apart (known), so the flood never pushes out one in use.
const maxMisses = 4096

// Lookups of a token this instance does not know (not found, or never
// checked here) cost the store a script call each, and nobody needs to be
// signed in to send one: they are limited per client address range (as
// the audit log groups them: addrRange) and in all. Past either, the token
// is refused unchecked (fail closed); the tokens known here are checked
// again each CheckFor whatever the budget, so a guesser never slows them.
var (
	lookupsPerRange = ratelimit.Limit{Rate: 1.0 / 6, Burst: 10}
	lookupsInAll    = ratelimit.Limit{Rate: 50, Burst: 100}
)

var (
	// ErrTokenUnknown: the bearer is no kept token (never made, revoked,
	// or expired): refused as credentials that name nobody.
	ErrTokenUnknown = errors.New("unknown, revoked or expired token")
	// ErrTokenName: a token's name that is not 1 to 64 of [a-zA-Z0-9._-].
	ErrTokenName = errors.New("a token's name is 1 to 64 characters of a-z, A-Z, 0-9, '.', '_' and '-'")
	// errTooManyUnknown: an unknown token refused without asking the
	// store, the lookups' budget spent.
	errTooManyUnknown = fmt.Errorf("%w (too many unknown tokens tried: it was not looked up; try again in a minute)", ErrTokenUnknown)
)

// Checker checks named tokens against the store, caching each answer
// (found or not) for CheckFor, and makes and revokes them. One serves an
// instance; it is safe for concurrent use.
type Checker struct {
	store TokenStore
	now   func() time.Time

	mu     sync.Mutex
	known  map[string]checked // by HashToken: the tokens the store found
	misses misses             // the hashes it did not

	perRange, inAll *ratelimit.Buckets // lookups of tokens not known
}

// checked is one cached answer.
type checked struct {
	token   Token
	at      time.Time // when the store said so
	touched time.Time // when this instance last wrote LastUsed
}

// misses are the hashes the store did not find, each with when it said so:
// at most maxMisses, the oldest answer dropped first.
type misses struct {
	at   map[string]time.Time
	ring []string // in the order kept; next is the slot written next
	next int
}

// NewChecker is a Checker on store, reading time from now (nil: time.Now).
func NewChecker(store TokenStore, now func() time.Time) *Checker {
	if now == nil {
		now = time.Now
	}
	return &Checker{store: store, now: now, known: map[string]checked{},
		misses:   misses{at: map[string]time.Time{}, ring: make([]string, 0, maxMisses)},
		perRange: ratelimit.New(lookupsPerRange, now), inAll: ratelimit.New(lookupsInAll, now)}
}

// Check answers the actor a bearer token sent from addr (the client's
// address, "" unknown) stands for: ErrTokenUnknown for one not kept or
// expired, or not looked up (too many unknown tokens from addr's range or
// in all); the store's error when the store cannot say and the token was
// not checked within CheckFor (the caller answers 503).
func (c *Checker) Check(ctx context.Context, bearer, addr string) (Actor, error) {
	if !LooksLikeToken(bearer) {
		return Actor{}, ErrTokenUnknown
	}
	hash := HashToken(bearer)
	now := c.now()
	c.mu.Lock()
	e, ok := c.known[hash]
	var missed time.Time
	if !ok {
		missed = c.misses.at[hash]
	}
	c.mu.Unlock()
	switch {
	case ok && fresh(now, e.at):
	case !ok && fresh(now, missed):
		return Actor{}, ErrTokenUnknown
	default:
		if !ok && !c.mayLookUp(addr) {
			return Actor{}, errTooManyUnknown
		}
		t, found, err := c.store.TokenByHash(ctx, hash)
		if err != nil {
			return Actor{}, err
		}
		if !found {
			c.miss(hash, now)
			return Actor{}, ErrTokenUnknown
		}
		e = checked{token: t, at: now, touched: e.touched}
		c.mu.Lock()
		c.known[hash] = e
		c.mu.Unlock()
	}
	if !e.token.Live(now) {
		return Actor{}, ErrTokenUnknown
	}
	if now.Sub(e.touched) >= touchEvery {
		c.touch(ctx, hash, now)
	}
	return Actor{Kind: KindToken, Name: e.token.Name, Role: e.token.Role}, nil
}

// fresh says whether an answer the store gave at at is still trusted now.
func fresh(now, at time.Time) bool { return now.Sub(at) < CheckFor && !now.Before(at) }

// mayLookUp spends one lookup of a token not known from addr's range's
// budget and the one in all.
func (c *Checker) mayLookUp(addr string) bool {
	if ok, _ := c.perRange.Take(addrRange(addr)); !ok {
		return false
	}
	ok, _ := c.inAll.Take("")
	return ok
}

// miss keeps the store's "not found" for hash (forgetting it as a token
// known here: revoked or expired elsewhere), within maxMisses.
func (c *Checker) miss(hash string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.known, hash)
	m := &c.misses
	if _, ok := m.at[hash]; ok {
		m.at[hash] = now
		return
	}
	if len(m.ring) < maxMisses {
		m.ring = append(m.ring, hash)
	} else {
		delete(m.at, m.ring[m.next])
		m.ring[m.next] = hash
		m.next = (m.next + 1) % maxMisses
	}
	m.at[hash] = now
}

// touch writes the token's LastUsed. Its failure fails no request: the
// token was found, and the next minute writes it again.
func (c *Checker) touch(ctx context.Context, hash string, now time.Time) {
	c.mu.Lock()
	if e, ok := c.known[hash]; ok {
		e.touched = now
		c.known[hash] = e
	}
	c.mu.Unlock()
	_ = c.store.TouchToken(ctx, hash, now)
}

// Create makes a token named name with role, lapsing at expires (zero:
// never), and keeps its hash: the token itself is answered once, here.
func (c *Checker) Create(ctx context.Context, name string, role Role, expires time.Time) (string, Token, error) {
	if err := ValidTokenName(name); err != nil {
		return "", Token{}, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return "", Token{}, err
	}
	now := c.now().UTC().Truncate(time.Millisecond)
	if !expires.IsZero() && !expires.After(now) {
		return "", Token{}, fmt.Errorf("%w: expiresAt %s is not in the future", ErrTokenExpiry, expires.Format(time.RFC3339))
	}
	secret := NewToken()
	t := Token{Name: name, Role: role, Hash: HashToken(secret), Created: now, Expires: expires.UTC()}
	if expires.IsZero() {
		t.Expires = time.Time{}
	}
	if err := c.store.PutToken(ctx, t); err != nil {
		return "", Token{}, err
	}
	return secret, t, nil
}

// ErrTokenExpiry: a token's expiry that is not in the future.
var ErrTokenExpiry = errors.New("invalid token expiry")

// List is every kept token, by name (never a token, only its record).
func (c *Checker) List(ctx context.Context) ([]Token, error) { return c.store.Tokens(ctx) }

// Revoke forgets the token named name (false: none was kept). This
// instance forgets its checks at once; the others within CheckFor.
func (c *Checker) Revoke(ctx context.Context, name string) (bool, error) {
	ok, err := c.store.DeleteToken(ctx, name)
	if err != nil || !ok {
		return ok, err
	}
	c.mu.Lock()
	for h, e := range c.known {
		if e.token.Name == name {
			delete(c.known, h)
		}
	}
	c.mu.Unlock()
	return true, nil
}

// ValidTokenName checks a token's name: 1 to 64 of [a-zA-Z0-9._-].
func ValidTokenName(name string) error {
	if len(name) < 1 || len(name) > 64 {
		return ErrTokenName
	}
	for _, ch := range name {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return ErrTokenName
		}
	}
	return nil
}
