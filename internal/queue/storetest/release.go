package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// The suite's part for entries that end early: the backend's release
// (X-Waitroom-Command: release: spend.Guard.Release, an EndUse as an owner
// of its own, counted as spent) and the user's own
// (Leave while READY), on each store.
func init() {
	register(suiteTest{"ReleasedEntryFreesItsSlot", testRelease})
}

// testRelease: under MaxActiveTokens 1 the one READY user holds the only
// slot; a release deletes their token at once (counted as consumed, a
// request holding its in-flight lock notwithstanding, whose lock stays its
// own), and the next tick admits the next in line; a release of a token
// that is no longer the user's deletes nothing. Giving an entry back (Leave)
// frees the slot the same way, counted as returned.
func testRelease(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.BatchSize, c.MaxActiveTokens, c.TokenTTL = 1, 1, time.Hour
	q := newQueue(t, s, c)
	for _, u := range []string{"a", "b", "c"} {
		mustEnter(t, s, q, u)
	}
	if got := admitDue(t, s, clock, q, 1); len(got) != 1 || got[0] != "a" {
		t.Fatalf("first tick admitted %v, want [a]", got)
	}
	if got := admitDue(t, s, clock, q, 1); len(got) != 0 {
		t.Fatalf("with a's token live the cap let in %v", got)
	}
	a := mustStatus(t, s, q, "a")
	if err := s.BeginUse(ctx, q, "a", a.Token, "in-flight", time.Minute); err != nil {
		t.Fatalf("BeginUse: %v", err)
	}
	release := func(token string) error { // as spend.Guard.Release asks
		return s.EndUse(ctx, q, "a", token, "the release", true)
	}
	if err := release("not-a-token"); err != nil {
		t.Fatalf("Release of another token: %v", err)
	}
	if e := mustStatus(t, s, q, "a"); e.State != queue.Ready {
		t.Fatalf("a release of a token not a's ended a's: %+v", e)
	}
	if err := release(a.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if e := mustStatus(t, s, q, "a"); e.State != queue.NotInQueue {
		t.Fatalf("a after release: %+v", e)
	}
	if err := s.BeginUse(ctx, q, "a", a.Token, "in-flight", time.Minute); !errors.Is(err, queue.ErrTokenInvalid) {
		t.Fatalf("the released token's use: %v, want ErrTokenInvalid", err)
	}
	if err := s.EndUse(ctx, q, "a", a.Token, "in-flight", false); err != nil {
		t.Fatalf("EndUse by the lock's holder: %v", err)
	}
	if got := admitDue(t, s, clock, q, 1); len(got) != 1 || got[0] != "b" {
		t.Fatalf("the tick after the release admitted %v, want [b]", got)
	}

	if _, err := s.Leave(ctx, q, "b"); err != nil {
		t.Fatalf("b gives the entry back: %v", err)
	}
	if e := mustStatus(t, s, q, "b"); e.State != queue.NotInQueue {
		t.Fatalf("b after giving it back: %+v", e)
	}
	if got := admitDue(t, s, clock, q, 1); len(got) != 1 || got[0] != "c" {
		t.Fatalf("the tick after b gave the entry back admitted %v, want [c]", got)
	}
	st, err := s.Stats(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if st.ConsumedTotal != 1 || st.ReturnedTotal != 1 || st.ActiveTokens != 1 || st.AdmittedTotal != 3 {
		t.Errorf("stats: consumed %d returned %d active %d admitted %d, want 1 1 1 3",
			st.ConsumedTotal, st.ReturnedTotal, st.ActiveTokens, st.AdmittedTotal)
	}
}
