package staff

import (
	"context"
	"errors"
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
		if a, err := c.Check(ctx, secret); err != nil || a != (Actor{Kind: KindToken, Name: "ops-night", Role: Operator}) {
			t.Fatalf("Check = %+v %v", a, err)
		}
	}
	if store.reads != 1 {
		t.Fatalf("%d reads for three checks within a second, want 1", store.reads)
	}
	store.DeleteToken(ctx, "ops-night") // revoked through another instance
	clock.Add(CheckFor - time.Millisecond)
	if _, err := c.Check(ctx, secret); err != nil {
		t.Fatalf("within the second: %v", err)
	}
	clock.Add(time.Millisecond)
	if _, err := c.Check(ctx, secret); !errors.Is(err, ErrTokenUnknown) {
		t.Fatalf("a second after its last check, a revoked token: %v, want ErrTokenUnknown", err)
	}
	other, _, _ := c.Create(ctx, "ci", Viewer, time.Time{})
	c.Check(ctx, other)
	if ok, err := c.Revoke(ctx, "ci"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := c.Check(ctx, other); !errors.Is(err, ErrTokenUnknown) {
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
	if _, err := c.Check(ctx, checked); err != nil {
		t.Fatal(err)
	}
	store.away = errors.New("connection refused")
	clock.Add(CheckFor / 2)
	if _, err := c.Check(ctx, checked); err != nil {
		t.Fatalf("checked half a second ago, store away: %v", err)
	}
	if _, err := c.Check(ctx, unchecked); !errors.Is(err, store.away) {
		t.Fatalf("never checked, store away: %v, want the store's error", err)
	}
	clock.Add(CheckFor / 2)
	if _, err := c.Check(ctx, checked); !errors.Is(err, store.away) {
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
	if _, err := c.Check(ctx, soon); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Hour)
	if _, err := c.Check(ctx, soon); !errors.Is(err, ErrTokenUnknown) {
		t.Fatalf("an expired token: %v", err)
	}
	reads := store.reads
	for _, bad := range []string{"", "admin-token", "wr_short", NewToken() + "x"} {
		if _, err := c.Check(ctx, bad); !errors.Is(err, ErrTokenUnknown) {
			t.Errorf("Check(%q) = %v", bad, err)
		}
	}
	if store.reads != reads {
		t.Error("a bearer of another shape was looked up in the store")
	}
	if _, err := c.Check(ctx, NewToken()); !errors.Is(err, ErrTokenUnknown) {
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
		if _, err := c.Check(ctx, secret); err != nil {
			t.Fatal(err)
		}
		clock.Add(time.Second)
	}
	if store.touches != 2 {
		t.Fatalf("%d writes of LastUsed in two minutes, want 2", store.touches)
	}
}

// TestCheckerCacheIsBounded: a flood of made-up tokens keeps at most
// maxCached answers.
func TestCheckerCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	c, _, _ := newChecker()
	for range maxCached + 100 {
		c.Check(ctx, NewToken())
	}
	if len(c.cache) > maxCached {
		t.Fatalf("%d answers cached, want at most %d", len(c.cache), maxCached)
	}
}
