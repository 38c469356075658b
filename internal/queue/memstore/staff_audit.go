package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// The audit log (staff.AuditStore, issue 56), Redis's {:staff}:audit's
// twin: kept beside the FirstUse markers and the rows, under usedMu and
// with their count of journaled steps (opAudit), because like them it
// belongs to no queue. Each entry is kept as its JSON, as Redis keeps it,
// so that both stores answer the same values (a number is a float64 after
// the round trip on either).

var _ staff.AuditStore = (*Store)(nil)

// auditRecord is one entry of the log: its JSON (ID set), and when it
// lapses. A snapshot keeps them as they are (usedImage.Audit).
type auditRecord struct {
	At    time.Time
	Until time.Time
	Blob  []byte
}

// Append implements staff.AuditStore.
func (s *Store) Append(_ context.Context, e staff.Entry, keep time.Duration) (staff.Entry, error) {
	if err := s.writable(); err != nil {
		return staff.Entry{}, err
	}
	e.ID = ""
	blob, err := json.Marshal(e)
	if err != nil {
		return staff.Entry{}, fmt.Errorf("the audit entry: %w", err)
	}
	s.usedMu.Lock()
	now := s.now().Truncate(time.Millisecond)
	s.usedOps++
	n := s.record(&op{kind: opAudit, blob: blob, dur: keep}, s.usedOps, now)
	e, err = s.appendAudit(blob, keep, s.usedOps, now)
	s.usedMu.Unlock()
	if err != nil {
		return staff.Entry{}, err
	}
	return e, s.await(n)
}

// appendAudit keeps the entry blob holds, as step seq, at now (under
// usedMu; a replay runs it again at the step's clock and number). Its ID
// is its time in Unix ms and the step's number, as Redis's counter makes
// them: ascending with At.
func (s *Store) appendAudit(blob []byte, keep time.Duration, seq int64, now time.Time) (staff.Entry, error) {
	var e staff.Entry
	if err := json.Unmarshal(blob, &e); err != nil {
		return staff.Entry{}, fmt.Errorf("%w: the audit entry: %w", errBadRecord, err)
	}
	e.ID = auditID(e.At, seq)
	blob, _ = json.Marshal(e) // it was read from JSON: cannot fail
	s.audit = slices.DeleteFunc(s.audit, func(r auditRecord) bool { return !r.Until.After(now) })
	r := auditRecord{At: e.At, Until: e.At.Add(max(keep, time.Millisecond)), Blob: blob}
	// After every entry of the same time or earlier: the log stays in At's
	// order, the order of their keeping among equal times.
	i, _ := slices.BinarySearchFunc(s.audit, e.At, func(r auditRecord, at time.Time) int {
		if r.At.After(at) {
			return 1
		}
		return -1
	})
	s.audit = slices.Insert(s.audit, i, r)
	return e, nil
}

// auditID is an entry's ID: its time in Unix ms and its number, padded so
// that IDs of one millisecond sort as their numbers.
func auditID(at time.Time, n int64) string { return fmt.Sprintf("%d-%012d", at.UnixMilli(), n) }

// Audit implements staff.AuditStore: the newest f.Most() entries f selects,
// oldest first.
func (s *Store) Audit(_ context.Context, f staff.Filter) ([]staff.Entry, error) {
	s.usedMu.Lock()
	defer s.usedMu.Unlock()
	now := s.now()
	var out []staff.Entry
	for i := len(s.audit) - 1; i >= 0 && len(out) < f.Most(); i-- {
		r := s.audit[i]
		if !r.Until.After(now) {
			continue
		}
		var e staff.Entry
		if err := json.Unmarshal(r.Blob, &e); err != nil {
			return nil, err
		}
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// replayAudit runs an opAudit step again (replay).
func (s *Store) replayAudit(o op) error {
	s.usedMu.Lock()
	defer s.usedMu.Unlock()
	s.usedOps = o.seq
	_, err := s.appendAudit(o.blob, o.dur, o.seq, o.at)
	return err
}
