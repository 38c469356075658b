package staff

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// fakeTokens is a TokenStore in a map that counts its reads and touches
// and can be taken away.
type fakeTokens struct {
	byHash  map[string]Token
	reads   int
	touches int
	away    error
}

func (f *fakeTokens) PutToken(_ context.Context, t Token) error {
	for _, k := range f.byHash {
		if k.Name == t.Name {
			return ErrTokenExists
		}
	}
	f.byHash[t.Hash] = t
	return nil
}

func (f *fakeTokens) TokenByHash(_ context.Context, hash string) (Token, bool, error) {
	f.reads++
	if f.away != nil {
		return Token{}, false, f.away
	}
	t, ok := f.byHash[hash]
	return t, ok, nil
}

func (f *fakeTokens) Tokens(context.Context) ([]Token, error) { return nil, nil }

func (f *fakeTokens) DeleteToken(_ context.Context, name string) (bool, error) {
	for h, t := range f.byHash {
		if t.Name == name {
			delete(f.byHash, h)
			return true, nil
		}
	}
	return false, nil
}

func (f *fakeTokens) TouchToken(_ context.Context, hash string, at time.Time) error {
	f.touches++
	t := f.byHash[hash]
	t.LastUsed = at
	f.byHash[hash] = t
	return nil
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time      { return c.now }
func (c *fakeClock) Add(d time.Duration) { c.now = c.now.Add(d) }
func newChecker() (*Checker, *fakeTokens, *fakeClock) {
	store, clock := &fakeTokens{byHash: map[string]Token{}}, &fakeClock{now: time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)}
	return NewChecker(store, clock.Now), store, clock
}

// TestCheckerCachesASecond: a token is read from the store at most once a
// second; a revoke made on another instance (straight in the store) is
// seen within that second, and one made here at once.
func TestCheckerCachesASecond(t *testing.T) {
	ctx := context.Background()
	c, store, clock := newChecker()
	secret, _, err := c.Create(ctx, "ops-night", Operator, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if a, err := c.Check(ctx, secret, from); err != nil || a != (Actor{Kind: KindToken, Name: "ops-night", Role: Operator}) {
			t.Fatalf("Check = %+v %v", a, err)
		}
	}
	if store.reads != 1 {
		t.Fatalf("%d reads for three checks within a second, want 1", store.reads)
	}
	store.DeleteToken(ctx, "ops-night") // revoked through another instance
	clock.Add(CheckFor - time.Millisecond)
	if _, err := c.Check(ctx, secret, from); err != nil {
		t.Fatalf("within the second: %v", err)
	}
	clock.Add(time.Millisecond)
	if _, err := c.Check(ctx, secret, from); !errors.Is(err, ErrTokenUnknown) {
		t.Fatalf("a second after its last check, a revoked token: %v, want ErrTokenUnknown", err)
	}
	other, _, _ := c.Create(ctx, "ci", Viewer, time.Time{})
	c.Check(ctx, other, from)
	if ok, err := c.Revoke(ctx, "ci"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := c.Check(ctx, other, from); !errors.Is(err, ErrTokenUnknown) {
		t.Fatalf("a token revoked through this instance: %v, want refused at once", err)
	}
}

// TestCheckerWhileTheStoreIsAway: a token checked within the last second
// still works; others, and it a second later, get the store's error.
func TestCheckerWhileTheStoreIsAway(t *testing.T) {
	ctx := context.Background()
	c, store, clock := newChecker()
	checked, _, _ := c.Create(ctx, "checked", Admin, time.Time{})
	unchecked, _, _ := c.Create(ctx, "unchecked", Admin, time.Time{})
	if _, err := c.Check(ctx, checked, from); err != nil {
		t.Fatal(err)
	}
	store.away = errors.New("connection refused")
	clock.Add(CheckFor / 2)
	if _, err := c.Check(ctx, checked, from); err != nil {
		t.Fatalf("checked half a second ago, store away: %v", err)
	}
	if _, err := c.Check(ctx, unchecked, from); !errors.Is(err, store.away) {
		t.Fatalf("never checked, store away: %v, want the store's error", err)
	}
	clock.Add(CheckFor / 2)
	if _, err := c.Check(ctx, checked, from); !errors.Is(err, store.away) {
		t.Fatalf("checked a second ago, store away: %v, want the store's error", err)
	}
}

// TestCheckerRefusesWhatIsNoToken: an expired token, an unknown one, and
// anything not shaped like one (never looked up).
func TestCheckerRefusesWhatIsNoToken(t *testing.T) {
	ctx := context.Background()
	c, store, clock := newChecker()
	soon, _, err := c.Create(ctx, "soon", Viewer, clock.now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Check(ctx, soon, from); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Hour)
	if _, err := c.Check(ctx, soon, from); !errors.Is(err, ErrTokenUnknown) {
		t.Fatalf("an expired token: %v", err)
	}
	reads := store.reads
	for _, bad := range []string{"", "admin-token", "wr_short", NewToken() + "x"} {
		if _, err := c.Check(ctx, bad, from); !errors.Is(err, ErrTokenUnknown) {
			t.Errorf("Check(%q) = %v", bad, err)
		}
	}
	if store.reads != reads {
		t.Error("a bearer of another shape was looked up in the store")
	}
	if _, err := c.Check(ctx, NewToken(), from); !errors.Is(err, ErrTokenUnknown) {
		t.Errorf("an unknown token: %v", err)
	}
	if _, _, err := c.Create(ctx, "past", Viewer, clock.now.Add(-time.Second)); !errors.Is(err, ErrTokenExpiry) {
		t.Errorf("an expiry in the past: %v", err)
	}
	for _, name := range []string{"", "has space", "slash/", string(make([]byte, 65))} {
		if _, _, err := c.Create(ctx, name, Viewer, time.Time{}); !errors.Is(err, ErrTokenName) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	if _, _, err := c.Create(ctx, "root", "root", time.Time{}); !errors.Is(err, ErrUnknownRole) {
		t.Errorf("role root: %v", err)
	}
}

// TestCheckerTouchesOnceAMinute: LastUsed is written at the first use and
// then at most once a minute, however often the token is used.
func TestCheckerTouchesOnceAMinute(t *testing.T) {
	ctx := context.Background()
	c, store, clock := newChecker()
	secret, _, _ := c.Create(ctx, "poller", Viewer, time.Time{})
	for range 120 { // two minutes of a request every second
		if _, err := c.Check(ctx, secret, from); err != nil {
			t.Fatal(err)
		}
		clock.Add(time.Second)
	}
	if store.touches != 2 {
		t.Fatalf("%d writes of LastUsed in two minutes, want 2", store.touches)
	}
}

// from is the client address the tests' tokens are sent from.
const from = "192.0.2.7"

// TestCheckerGuessingCostsTheStoreLittle: made-up tokens from one address
// range are looked up at most the range's burst, then a few a minute; from
// many ranges, the budget in all; a token in use is never slowed nor
// pushed out, and another address's new token is still looked up.
func TestCheckerGuessingCostsTheStoreLittle(t *testing.T) {
	ctx := context.Background()
	c, store, clock := newChecker()
	inUse, _, _ := c.Create(ctx, "in-use", Operator, time.Time{})
	if _, err := c.Check(ctx, inUse, from); err != nil {
		t.Fatal(err)
	}
	reads := store.reads
	for i := range 1000 {
		addr := fmt.Sprintf("203.0.113.%d", i%250) // one /24
		if _, err := c.Check(ctx, NewToken(), addr); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("a made-up token: %v", err)
		}
		if _, err := c.Check(ctx, inUse, from); err != nil {
			t.Fatalf("the token in use, amid the guesses: %v", err)
		}
	}
	if n := store.reads - reads; n != lookupsPerRange.Burst {
		t.Fatalf("1000 guesses from one /24 cost %d lookups, want %d", n, lookupsPerRange.Burst)
	}
	clock.Add(time.Minute)
	reads = store.reads
	for i := range 1000 {
		c.Check(ctx, NewToken(), fmt.Sprintf("2001:db8:%x::1", i)) // a /64 each
	}
	if n := store.reads - reads; n != lookupsInAll.Burst {
		t.Fatalf("1000 guesses from 1000 ranges cost %d lookups, want %d (the budget in all)", n, lookupsInAll.Burst)
	}
	if len(c.misses.at) > maxMisses || len(c.misses.ring) > maxMisses {
		t.Fatalf("%d misses kept, want at most %d", len(c.misses.at), maxMisses)
	}
	reads = store.reads
	if _, err := c.Check(ctx, inUse, from); err != nil || store.reads != reads+1 {
		t.Fatalf("the token in use, a minute on: %v, %d lookups (want 1: checked again, whatever the budget)", err, store.reads-reads)
	}
	clock.Add(time.Second) // the budget in all refills
	fresh, _, _ := c.Create(ctx, "fresh", Viewer, time.Time{})
	if a, err := c.Check(ctx, fresh, "198.51.100.9"); err != nil || a.Name != "fresh" {
		t.Fatalf("a new token from another address: %+v %v", a, err)
	}
}

// TestCheckerMissesAreBounded: more made-up tokens than maxMisses keep
// maxMisses answers, the oldest pushed out first.
func TestCheckerMissesAreBounded(t *testing.T) {
	ctx := context.Background()
	c, _, clock := newChecker()
	first := NewToken()
	c.Check(ctx, first, from)
	for i := range maxMisses + 100 {
		clock.Add(time.Second) // the budgets refill
		c.Check(ctx, NewToken(), fmt.Sprintf("2001:db8:%x::1", i))
	}
	if len(c.misses.at) != maxMisses || len(c.misses.ring) != maxMisses {
		t.Fatalf("%d misses kept (ring %d), want %d", len(c.misses.at), len(c.misses.ring), maxMisses)
	}
	if _, ok := c.misses.at[HashToken(first)]; ok {
		t.Error("the oldest miss was kept")
	}
}
