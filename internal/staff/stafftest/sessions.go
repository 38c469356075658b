package stafftest

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// Clock is the store's clock, as the line stores' suite keeps it
// (storetest.FakeClock, storetest.WallClock).
type Clock interface {
	Now() time.Time
	// Sleep lets d pass for the store.
	Sleep(d time.Duration)
}

// RunSessions runs the sessions' suite (staff.SessionStore). open returns
// an empty store for one test (for Redis, one with a key prefix no other
// test uses) and the clock it keeps.
func RunSessions(t *testing.T, open func(t *testing.T) (staff.SessionStore, Clock)) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, staff.SessionStore, Clock)
	}{
		{"KeptAndReadBack", sessionsKept},
		{"DeletedIsGone", sessionsDeleted},
		{"ExpiredIsGone", sessionsExpire},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, clock := open(t)
			c.run(t, s, clock)
		})
	}
}

func newSession(clock Clock, name string, life time.Duration) staff.Session {
	now := clock.Now().Truncate(time.Millisecond)
	return staff.Session{Hash: staff.HashToken("cookie-" + name), Subject: "sub-" + name, Email: name + "@shop.example",
		Role: staff.Operator, CSRF: "csrf-" + name, Created: now, Expires: now.Add(life)}
}

func mustSession(t *testing.T, s staff.SessionStore, want staff.Session) {
	t.Helper()
	got, ok, err := s.Session(context.Background(), want.Hash)
	if err != nil || !ok {
		t.Fatalf("Session(%s) = %v, %v; want it kept", want.Email, ok, err)
	}
	if got.Hash != want.Hash || got.Subject != want.Subject || got.Email != want.Email || got.Role != want.Role ||
		got.CSRF != want.CSRF || !got.Created.Equal(want.Created) || !got.Expires.Equal(want.Expires) {
		t.Fatalf("Session = %+v, want %+v", got, want)
	}
}

func mustNoSession(t *testing.T, s staff.SessionStore, hash, why string) {
	t.Helper()
	if got, ok, err := s.Session(context.Background(), hash); err != nil || ok {
		t.Fatalf("Session %s = %+v, %v, %v; want none", why, got, ok, err)
	}
}

func sessionsKept(t *testing.T, s staff.SessionStore, clock Clock) {
	ctx := context.Background()
	a, b := newSession(clock, "ana", time.Hour), newSession(clock, "bo", 8*time.Hour)
	b.Role = staff.Admin
	for _, ss := range []staff.Session{a, b} {
		if err := s.PutSession(ctx, ss); err != nil {
			t.Fatal(err)
		}
	}
	mustSession(t, s, a)
	mustSession(t, s, b)
	mustNoSession(t, s, staff.HashToken("cookie-nobody"), "never made")
	// The cookie's value is no key: only its hash finds the session.
	mustNoSession(t, s, "cookie-ana", "by the cookie's value")
}

func sessionsDeleted(t *testing.T, s staff.SessionStore, clock Clock) {
	ctx := context.Background()
	a, b := newSession(clock, "ana", time.Hour), newSession(clock, "bo", time.Hour)
	for _, ss := range []staff.Session{a, b} {
		if err := s.PutSession(ctx, ss); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteSession(ctx, a.Hash); err != nil {
		t.Fatal(err)
	}
	mustNoSession(t, s, a.Hash, "signed out")
	mustSession(t, s, b)
	if err := s.DeleteSession(ctx, a.Hash); err != nil {
		t.Fatalf("signing out twice: %v", err)
	}
	if err := s.DeleteSession(ctx, staff.HashToken("never")); err != nil {
		t.Fatalf("deleting a session never made: %v", err)
	}
}

func sessionsExpire(t *testing.T, s staff.SessionStore, clock Clock) {
	ctx := context.Background()
	past := newSession(clock, "past", -time.Second)
	if err := s.PutSession(ctx, past); err != nil {
		t.Fatal(err)
	}
	mustNoSession(t, s, past.Hash, "expired when put")
	short, long := newSession(clock, "short", 300*time.Millisecond), newSession(clock, "long", time.Hour)
	for _, ss := range []staff.Session{short, long} {
		if err := s.PutSession(ctx, ss); err != nil {
			t.Fatal(err)
		}
	}
	mustSession(t, s, short)
	clock.Sleep(400 * time.Millisecond) // the store's clock: a fake one jumps
	mustNoSession(t, s, short.Hash, "after its expiry")
	mustSession(t, s, long)
}
