package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/storetest"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/staff/stafftest"
)

// TestSessions runs the sessions' suite in memory and kept in a directory.
func TestSessions(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		stafftest.RunSessions(t, func(t *testing.T) (staff.SessionStore, stafftest.Clock) {
			clock := storetest.NewFakeClock()
			return memstore.New(clock.Now), clock
		})
	})
	t.Run("durable", func(t *testing.T) {
		stafftest.RunSessions(t, func(t *testing.T) (staff.SessionStore, stafftest.Clock) {
			clock := storetest.NewFakeClock()
			return mustOpen(t, t.TempDir(), journal.Always, clock.Now), clock
		})
	})
}

// TestSessionsSurviveRestart: a restart from the journal alone, and from a
// snapshot with the journal after it, keeps the live sessions and the
// sign-outs, and drops the expired.
func TestSessionsSurviveRestart(t *testing.T) {
	for _, compact := range []bool{false, true} {
		name := map[bool]string{false: "journal", true: "snapshot"}[compact]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewFakeClock()
			dir := t.TempDir()
			s := mustOpen(t, dir, journal.Always, clock.Now)
			now := clock.Now()
			mk := func(name string, life time.Duration) staff.Session {
				return staff.Session{Hash: staff.HashToken(name), Email: name + "@shop.example", Role: staff.Viewer,
					CSRF: "c-" + name, Created: now, Expires: now.Add(life)}
			}
			kept, out, short := mk("kept", time.Hour), mk("out", time.Hour), mk("short", time.Minute)
			for _, ss := range []staff.Session{kept, out, short} {
				if err := s.PutSession(ctx, ss); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.DeleteSession(ctx, out.Hash); err != nil {
				t.Fatal(err)
			}
			if compact {
				if err := s.Compact(); err != nil {
					t.Fatal(err)
				}
			}
			late := mk("late", time.Hour)
			if err := s.PutSession(ctx, late); err != nil {
				t.Fatal(err)
			}
			s.Close()
			clock.Sleep(2 * time.Minute)
			s = mustOpen(t, dir, journal.Always, clock.Now)
			for _, ss := range []staff.Session{kept, late} {
				if got, ok, err := s.Session(ctx, ss.Hash); err != nil || !ok || got.Email != ss.Email || got.CSRF != ss.CSRF {
					t.Errorf("after the restart, %s = %+v %v %v", ss.Email, got, ok, err)
				}
			}
			for _, ss := range []staff.Session{out, short} {
				if _, ok, _ := s.Session(ctx, ss.Hash); ok {
					t.Errorf("after the restart, %s is back", ss.Email)
				}
			}
		})
	}
}
