package staff

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// CheckFor is how long a check of a named token is trusted: a revoke takes
// effect on every instance within it, and while the store is away a token
// checked within it still works.
const CheckFor = time.Second

// touchEvery is how often a token's LastUsed is written: at most once a
// minute per token and instance, so that a script polling the admin API
// costs the store nothing per request.
const touchEvery = time.Minute

// maxCached bounds the checks kept: a flood of made-up tokens of the right
// shape cannot grow the cache past it (beyond it a check not found is not
// kept, and the lapsed ones are dropped).
const maxCached = 4096

var (
	// ErrTokenUnknown: the bearer is no kept token (never made, revoked,
	// or expired): refused as credentials that name nobody.
	ErrTokenUnknown = errors.New("unknown, revoked or expired token")
	// ErrTokenName: a token's name that is not 1 to 64 of [a-zA-Z0-9._-].
	ErrTokenName = errors.New("a token's name is 1 to 64 characters of a-z, A-Z, 0-9, '.', '_' and '-'")
)

// Checker checks named tokens against the store, caching each answer
// (found or not) for CheckFor, and makes and revokes them. One serves an
// instance; it is safe for concurrent use.
type Checker struct {
	store TokenStore
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]checked // by HashToken
}

// checked is one cached answer.
type checked struct {
	token   Token
	found   bool
	at      time.Time // when the store said so
	touched time.Time // when this instance last wrote LastUsed
}

// NewChecker is a Checker on store, reading time from now (nil: time.Now).
func NewChecker(store TokenStore, now func() time.Time) *Checker {
	if now == nil {
		now = time.Now
	}
	return &Checker{store: store, now: now, cache: map[string]checked{}}
}

// Check answers the actor a bearer token stands for: ErrTokenUnknown for
// one not kept or expired; the store's error when the store cannot say and
// the token was not checked within CheckFor (the caller answers 503).
func (c *Checker) Check(ctx context.Context, bearer string) (Actor, error) {
	if !LooksLikeToken(bearer) {
		return Actor{}, ErrTokenUnknown
	}
	hash := HashToken(bearer)
	now := c.now()
	c.mu.Lock()
	e, ok := c.cache[hash]
	c.mu.Unlock()
	if !ok || now.Sub(e.at) >= CheckFor || now.Before(e.at) {
		t, found, err := c.store.TokenByHash(ctx, hash)
		if err != nil {
			return Actor{}, err
		}
		e = checked{token: t, found: found, at: now, touched: e.touched}
		c.keep(hash, e, now)
	}
	if !e.found || !e.token.Live(now) {
		return Actor{}, ErrTokenUnknown
	}
	if now.Sub(e.touched) >= touchEvery {
		c.touch(ctx, hash, now)
	}
	return Actor{Kind: KindToken, Name: e.token.Name, Role: e.token.Role}, nil
}

// keep caches e, within maxCached.
func (c *Checker) keep(hash string, e checked, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cache) >= maxCached {
		for h, old := range c.cache {
			if now.Sub(old.at) >= CheckFor {
				delete(c.cache, h)
			}
		}
		if len(c.cache) >= maxCached && !e.found {
			return
		}
	}
	c.cache[hash] = e
}

// touch writes the token's LastUsed. Its failure fails no request: the
// token was found, and the next minute writes it again.
func (c *Checker) touch(ctx context.Context, hash string, now time.Time) {
	c.mu.Lock()
	if e, ok := c.cache[hash]; ok {
		e.touched = now
		c.cache[hash] = e
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
	for h, e := range c.cache {
		if e.found && e.token.Name == name {
			delete(c.cache, h)
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
