package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// The audit log (staff.AuditStore, issue 56): audit_append.lua and
// audit_read.lua, on keys of their own under the hash tag {:staff} (a
// colon is never in a queue's name, so no queue's keys are these).
var (
	auditAppendScript = mustScript("audit_append")
	auditReadScript   = mustScript("audit_read")
)

var _ staff.AuditStore = (*Store)(nil)

// auditPage is how many entries one call of audit_read.lua reads.
const auditPage = 256

func (s *Store) auditKey() string        { return s.prefix + "{:staff}:audit" }
func (s *Store) auditCounterKey() string { return s.prefix + "{:staff}:audit:n" }

// Append implements staff.AuditStore.
func (s *Store) Append(ctx context.Context, e staff.Entry, keep time.Duration) (staff.Entry, error) {
	e.ID = ""
	e.At = e.At.UTC().Truncate(time.Millisecond)
	blob, err := json.Marshal(e)
	if err != nil {
		return staff.Entry{}, fmt.Errorf("the audit entry: %w", err)
	}
	args := []any{e.At.UnixMilli(), blob, max(keep.Milliseconds(), 1)}
	id, err := auditAppendScript.call(ctx, s.rdb, []string{s.auditKey(), s.auditCounterKey()}, args).Text()
	if err != nil {
		return staff.Entry{}, unavailable(fmt.Errorf("scripts/generated/waitroom.lua (audit_append.lua): %w", err))
	}
	// Read back as the log answers it: JSON's values (a number a float64).
	var kept staff.Entry
	if err := json.Unmarshal(blob, &kept); err != nil {
		return staff.Entry{}, err
	}
	kept.ID = id
	return kept, nil
}

// Audit implements staff.AuditStore: the newest f.Most() entries f
// selects, oldest first, read a page at a time from the newest in f's
// span of time, each page from where the last ended.
func (s *Store) Audit(ctx context.Context, f staff.Filter) ([]staff.Entry, error) {
	hi, lo := "+inf", "-inf"
	if !f.Until.IsZero() {
		hi = strconv.FormatInt(f.Until.UnixMilli(), 10)
	}
	if !f.Since.IsZero() {
		lo = strconv.FormatInt(f.Since.UnixMilli(), 10)
	}
	var out []staff.Entry
	// Each page goes on from the last member read (audit_read.lua): an
	// offset would walk the log anew for each page, and shift as entries
	// are kept meanwhile.
	for after := ""; len(out) < f.Most(); {
		page, err := auditReadScript.call(ctx, s.rdb, []string{s.auditKey()}, []any{hi, lo, after, auditPage}).StringSlice()
		if err != nil {
			return nil, unavailable(fmt.Errorf("scripts/generated/waitroom.lua (audit_read.lua): %w", err))
		}
		for _, m := range page {
			e, err := readAuditMember(m)
			if err != nil {
				return nil, err
			}
			if f.Matches(e) && len(out) < f.Most() {
				out = append(out, e)
			}
		}
		if len(page) < auditPage {
			break
		}
		after = page[len(page)-1]
	}
	slices.Reverse(out)
	return out, nil
}

// readAuditMember reads a member of the log: "<id> <json>".
func readAuditMember(m string) (staff.Entry, error) {
	id, blob, ok := strings.Cut(m, " ")
	var e staff.Entry
	if !ok {
		return e, fmt.Errorf("redisstore: an audit entry without its JSON: %.40q", m)
	}
	if err := json.Unmarshal([]byte(blob), &e); err != nil {
		return e, fmt.Errorf("redisstore: audit entry %s: %w", id, err)
	}
	e.ID = id
	return e, nil
}
