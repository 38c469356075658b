package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/staff/stafftest"
)

// TestAudit runs the audit log's suite in memory and kept in a directory.
func TestAudit(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		stafftest.RunAudit(t, func(t *testing.T) staff.AuditStore { return memstore.New(time.Now) })
	})
	t.Run("durable", func(t *testing.T) {
		stafftest.RunAudit(t, func(t *testing.T) staff.AuditStore { return mustOpen(t, t.TempDir(), journal.No, time.Now) })
	})
}

// TestAuditSurvivesRestart: the log read after a restart from the snapshot
// and the journal after it is the log as it was, IDs and all, and its
// entries go on being numbered after the last.
func TestAuditSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, _, err := memstore.Open(dir, memstore.Options{Fsync: journal.Always, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	add := func(s *memstore.Store, op string) {
		t.Helper()
		if _, err := s.Append(ctx, staff.Entry{At: at, Actor: staff.Actor{Kind: staff.KindBackend}, Queue: "shoes", Op: op, Outcome: staff.Done,
			Changes: []staff.Change{{Field: "unitsLeft", Before: 3.0, After: 0.0}}}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	add(s, "in the snapshot")
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	add(s, "in the journal")
	before, _ := s.Audit(ctx, staff.Filter{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, journal.Always, time.Now)
	after, err := s.Audit(ctx, staff.Filter{})
	if err != nil || fmt.Sprint(after) != fmt.Sprint(before) || len(after) != 2 {
		t.Fatalf("after a restart: %v, %v; before: %v", after, err, before)
	}
	add(s, "after")
	all, _ := s.Audit(ctx, staff.Filter{})
	if len(all) != 3 || all[2].ID <= all[1].ID {
		t.Fatalf("an entry after the restart: %v", all)
	}
}
