package stafftest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// RunAudit is the audit log's suite (staff.AuditStore): open returns an
// empty log on a store of its own, on the wall clock.
func RunAudit(t *testing.T, open func(t *testing.T) staff.AuditStore) {
	t.Run("KeptInOrderWithIDs", func(t *testing.T) { auditInOrder(t, open(t)) })
	t.Run("Filters", func(t *testing.T) { auditFilters(t, open(t)) })
	t.Run("NewestWithinLimit", func(t *testing.T) { auditLimit(t, open(t)) })
	t.Run("DroppedAfterKeep", func(t *testing.T) { auditKeep(t, open(t)) })
	t.Run("ConcurrentAppends", func(t *testing.T) { auditConcurrent(t, open(t)) })
	t.Run("ReadWhileAppending", func(t *testing.T) { auditReadWhileAppending(t, open(t)) })
}

const hour = time.Hour

func entry(at time.Time, q string, a staff.Actor, op string) staff.Entry {
	return staff.Entry{At: at, Actor: a, Queue: q, Op: op, Outcome: staff.Done}
}

var (
	ana    = staff.Actor{Kind: staff.KindSignIn, Subject: "sub-ana", Email: "ana@shop.example", Role: staff.Admin, Addr: "192.0.2.7"}
	night  = staff.Actor{Kind: staff.KindToken, Name: "ops-night", Role: staff.Operator, Addr: "192.0.2.8"}
	file   = staff.Actor{Kind: staff.KindQueuesFile}
	nobody = staff.Actor{Kind: staff.KindNobody, Addr: "198.51.100.1"}
)

func mustAppend(t *testing.T, s staff.AuditStore, e staff.Entry) staff.Entry {
	t.Helper()
	kept, err := s.Append(context.Background(), e, hour)
	if err != nil {
		t.Fatalf("Append(%+v): %v", e, err)
	}
	return kept
}

func mustAudit(t *testing.T, s staff.AuditStore, f staff.Filter) []staff.Entry {
	t.Helper()
	got, err := s.Audit(context.Background(), f)
	if err != nil {
		t.Fatalf("Audit(%+v): %v", f, err)
	}
	return got
}

func ops(es []staff.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Op
	}
	return out
}

func wantOps(t *testing.T, what string, got []staff.Entry, want ...string) {
	t.Helper()
	if fmt.Sprint(ops(got)) != fmt.Sprint(want) {
		t.Errorf("%s: ops %q, want %q", what, ops(got), want)
	}
}

func auditInOrder(t *testing.T, s staff.AuditStore) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	if got := mustAudit(t, s, staff.Filter{}); len(got) != 0 {
		t.Fatalf("an empty log answered %d entries", len(got))
	}
	changed := staff.Entry{At: now.Add(-time.Second), Actor: ana, Queue: "shoes", Op: "PATCH /admin/v1/queues/{queue}", Outcome: staff.Done,
		Changes: []staff.Change{{Field: "ratePerSecond", Before: 100.0, After: 25.5}, {Field: "paused", Before: false, After: true},
			{Field: "message", Before: "", After: map[string]any{"en": "Soon", "ko": "곧"}}}}
	a := mustAppend(t, s, changed)
	b := mustAppend(t, s, entry(now, "shoes", night, "sold-out"))
	c := mustAppend(t, s, entry(now, "", nobody, "GET /admin/v1/queues"))
	if a.ID == "" || a.ID == b.ID || b.ID == c.ID || !(b.ID < c.ID) {
		t.Fatalf("IDs %q %q %q: want set, distinct, ascending", a.ID, b.ID, c.ID)
	}
	got := mustAudit(t, s, staff.Filter{})
	wantOps(t, "all", got, changed.Op, "sold-out", "GET /admin/v1/queues")
	if len(got) != 3 {
		return
	}
	e := got[0]
	if e.ID != a.ID || !e.At.Equal(changed.At) || e.Actor != ana || e.Queue != "shoes" || e.Outcome != staff.Done || len(e.Changes) != 3 {
		t.Fatalf("read back %+v, want %+v with ID %s", e, changed, a.ID)
	}
	if fmt.Sprint(e.Changes) != fmt.Sprint(a.Changes) || e.Changes[0].After != 25.5 || e.Changes[1].After != true {
		t.Errorf("changes read back %v, appended answered %v", e.Changes, a.Changes)
	}
	if m, ok := e.Changes[2].After.(map[string]any); !ok || m["ko"] != "곧" {
		t.Errorf("a text by language read back as %#v", e.Changes[2].After)
	}
}

func auditFilters(t *testing.T, s staff.AuditStore) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	mustAppend(t, s, entry(now.Add(-3*time.Minute), "shoes", file, "reload"))
	mustAppend(t, s, entry(now.Add(-2*time.Minute), "shoes", ana, "PATCH"))
	mustAppend(t, s, entry(now.Add(-time.Minute), "hats", night, "restock"))
	mustAppend(t, s, entry(now, "hats", ana, "PUT"))
	for _, c := range []struct {
		f    staff.Filter
		want []string
	}{
		{staff.Filter{Queue: "shoes"}, []string{"reload", "PATCH"}},
		{staff.Filter{Queue: "socks"}, nil},
		{staff.Filter{Actor: "ANA@shop"}, []string{"PATCH", "PUT"}},
		{staff.Filter{Actor: "sub-ana"}, []string{"PATCH", "PUT"}},
		{staff.Filter{Actor: "ops-night"}, []string{"restock"}},
		{staff.Filter{Actor: "queues-file"}, []string{"reload"}},
		{staff.Filter{Since: now.Add(-2 * time.Minute)}, []string{"PATCH", "restock", "PUT"}},
		{staff.Filter{Until: now.Add(-time.Minute)}, []string{"reload", "PATCH", "restock"}},
		{staff.Filter{Since: now.Add(-150 * time.Second), Until: now.Add(-30 * time.Second), Queue: "hats"}, []string{"restock"}},
		{staff.Filter{Queue: "hats", Actor: "ana"}, []string{"PUT"}},
	} {
		wantOps(t, fmt.Sprintf("%+v", c.f), mustAudit(t, s, c.f), c.want...)
	}
}

func auditLimit(t *testing.T, s staff.AuditStore) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	// More than a Redis page (256), so that the read goes on past one.
	const n = 300
	for i := range n {
		q := "other"
		if i%100 == 0 {
			q = "rare"
		}
		mustAppend(t, s, entry(now.Add(time.Duration(i-n)*time.Millisecond), q, night, fmt.Sprint(i)))
	}
	wantOps(t, "limit 3", mustAudit(t, s, staff.Filter{Limit: 3}), "297", "298", "299")
	wantOps(t, "rare, past a page", mustAudit(t, s, staff.Filter{Queue: "rare"}), "0", "100", "200")
	wantOps(t, "rare, limit 2", mustAudit(t, s, staff.Filter{Queue: "rare", Limit: 2}), "100", "200")
	if got := mustAudit(t, s, staff.Filter{}); len(got) != n {
		t.Errorf("no limit: %d entries, want %d", len(got), n)
	}
	if got := mustAudit(t, s, staff.Filter{Limit: staff.MaxAuditLimit + 5}); len(got) != n {
		t.Errorf("a limit above the most: %d entries, want %d", len(got), n)
	}
}

func auditKeep(t *testing.T, s staff.AuditStore) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	mustAppend(t, s, entry(now.Add(-2*hour), "shoes", ana, "old"))
	mustAppend(t, s, entry(now, "shoes", ana, "new"))
	wantOps(t, "after an entry older than the retention", mustAudit(t, s, staff.Filter{}), "new")
}

func auditConcurrent(t *testing.T, s staff.AuditStore) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	const n = 40
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e, err := s.Append(context.Background(), entry(now, "shoes", night, fmt.Sprint(i)), hour)
			if err != nil {
				t.Error(err)
			}
			ids[i] = e.ID
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" || seen[id] {
			t.Fatalf("IDs %q: want each set and distinct", ids)
		}
		seen[id] = true
	}
	got := mustAudit(t, s, staff.Filter{})
	if len(got) != n {
		t.Fatalf("%d kept, want %d", len(got), n)
	}
	for i := 1; i < n; i++ {
		if got[i-1].ID >= got[i].ID {
			t.Fatalf("entries of one millisecond out of their IDs' order: %q then %q", got[i-1].ID, got[i].ID)
		}
	}
}

// auditReadWhileAppending: a read of many pages while entries are kept
// (newer ones, as they come) answers each entry once, in order: a page
// goes on from where the last ended, not from an offset that the new
// entries shift.
func auditReadWhileAppending(t *testing.T, s staff.AuditStore) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	const n = 900 // more than three Redis pages (256)
	for i := range n {
		mustAppend(t, s, entry(now.Add(time.Duration(i-n)*time.Millisecond), "shoes", night, fmt.Sprint(i)))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if _, err := s.Append(context.Background(), entry(now.Add(time.Duration(i)*time.Millisecond), "shoes", night, "new"), hour); err != nil {
				t.Error(err)
				return
			}
		}
	})
	defer wg.Wait()
	defer close(done)
	for range 20 {
		got := mustAudit(t, s, staff.Filter{Since: now.Add(-n * time.Millisecond)})
		for i := 1; i < len(got); i++ {
			if got[i-1].ID >= got[i].ID {
				t.Fatalf("a read while entries were kept: %q then %q (read twice, or out of order)", got[i-1].ID, got[i].ID)
			}
		}
	}
}
