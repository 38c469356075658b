package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// The suite's part for sliding sessions (sessionMaxSeconds), on each store.
func init() {
	register(suiteTest{"SlidingSessionLastsWhileUsedUpToItsMax", testSlidingSession})
}

// testSlidingSession: with SessionMax set, each Extend gives the token
// TokenTTL from then, so a token used often enough outlives its TTL, but
// never past SessionMax after it was issued, when it is gone; Extend of a
// wrong token is ErrTokenInvalid; with SessionMax 0 Extend checks and
// changes nothing.
func testSlidingSession(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	// Uses come every 300 ms: a TTL of 2 s keeps the token through a pause
	// of the machine of 1.7 s between two of them (and between its
	// admission and the first read of it); the loop ends once the expiry
	// reaches the session's end, a second past the first expiry. That is
	// on a fake clock. On the wall clock (Redis's TIME) a loaded machine
	// once paused longer than 2 s between the admission and that read (at
	// load 20 beside a busy core): there the TTL is 5 s and the session
	// 11 s, pauses of up to 4.7 s.
	ttl, most := 2*time.Second, 5*time.Second
	if _, fake := clock.(*FakeClock); !fake {
		ttl, most = 5*time.Second, 11*time.Second
	}
	c := fastConfig()
	c.TokenTTL, c.SessionMax = ttl, most
	q := newQueue(t, s, c)
	mustEnter(t, s, q, "a")
	if got := admitDue(t, s, clock, q, 1); len(got) != 1 {
		t.Fatalf("admitted %v", got)
	}
	a := mustStatus(t, s, q, "a")
	ends := a.ExpiresAt.Add(most - ttl) // issued + SessionMax
	if _, err := s.Extend(ctx, q, "a", a.Token+"x"); !errors.Is(err, queue.ErrTokenInvalid) {
		t.Fatalf("Extend of a wrong token: %v, want ErrTokenInvalid", err)
	}
	last := a.ExpiresAt
	for {
		clock.Sleep(300 * time.Millisecond)
		exp, err := s.Extend(ctx, q, "a", a.Token)
		if err != nil {
			t.Fatalf("Extend at %v before the session's end: %v", ends.Sub(clock.Now()), err)
		}
		if exp.Before(last) || exp.After(ends) {
			t.Fatalf("Extend answered %v: before the last expiry %v, or past the session's end %v", exp, last, ends)
		}
		last = exp
		if exp.Equal(ends) {
			break
		}
		if clock.Now().After(ends) {
			t.Fatalf("the expiry never reached the session's end %v (last %v)", ends, last)
		}
	}
	if !ends.After(a.ExpiresAt.Add(ttl)) {
		t.Fatalf("the session's end %v is within a TTL of the first expiry %v", ends, a.ExpiresAt)
	}
	if !clock.Now().After(a.ExpiresAt) {
		t.Fatalf("the loop ended at %v, before the first expiry %v", clock.Now(), a.ExpiresAt)
	}
	if e := mustStatus(t, s, q, "a"); e.State != queue.Ready || !e.ExpiresAt.Equal(ends) {
		t.Fatalf("past its first expiry, while used: %+v, want READY until %v", e, ends)
	}
	if _, err := s.Sweep(ctx, q); err != nil { // the janitor must not take it on its first expiry
		t.Fatal(err)
	}
	if e := mustStatus(t, s, q, "a"); e.State != queue.Ready {
		t.Fatalf("after a sweep: %+v, want READY", e)
	}
	clock.Sleep(ends.Sub(clock.Now()) + 50*time.Millisecond)
	if _, err := s.Extend(ctx, q, "a", a.Token); !errors.Is(err, queue.ErrTokenInvalid) {
		t.Fatalf("Extend past the session's end: %v, want ErrTokenInvalid", err)
	}
	if e := mustStatus(t, s, q, "a"); e.State != queue.NotInQueue {
		t.Fatalf("past the session's end: %+v, want NOT_IN_QUEUE", e)
	}

	c.SessionMax = 0
	off := newQueue(t, s, c)
	mustEnter(t, s, off, "b")
	admitDue(t, s, clock, off, 1)
	b := mustStatus(t, s, off, "b")
	clock.Sleep(300 * time.Millisecond)
	if exp, err := s.Extend(ctx, off, "b", b.Token); err != nil || !exp.Equal(b.ExpiresAt) {
		t.Fatalf("Extend without sliding sessions: %v, %v; want the expiry unchanged, %v", exp, err, b.ExpiresAt)
	}
}
