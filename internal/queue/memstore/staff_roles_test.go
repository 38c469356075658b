package memstore_test

import (
	"testing"

	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/storetest"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/staff/stafftest"
)

// TestTokens runs the named tokens' suite on the store in memory and on
// the durable one, whose restart replays the journal and then starts
// again from a snapshot of what that replay left.
func TestTokens(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		stafftest.RunTokens(t, func(t *testing.T) (staff.TokenStore, stafftest.Restarter) {
			return memstore.New(storetest.NewFakeClock().Now), nil
		})
	})
	t.Run("durable", func(t *testing.T) {
		stafftest.RunTokens(t, func(t *testing.T) (staff.TokenStore, stafftest.Restarter) {
			dir, now := t.TempDir(), storetest.NewFakeClock().Now
			s := mustOpen(t, dir, journal.Always, now)
			return s, func(t *testing.T) staff.TokenStore {
				s.Close()
				s = mustOpen(t, dir, journal.Always, now) // from the journal
				if err := s.Compact(); err != nil {
					t.Fatal(err)
				}
				s.Close()
				s = mustOpen(t, dir, journal.Always, now) // from the snapshot
				return s
			}
		})
	})
}
