package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/staff"
)

// AuditLog reads the audit log (package staff; the line's store keeps it).
type AuditLog interface {
	Audit(ctx context.Context, f staff.Filter) ([]staff.Entry, error)
}

// record keeps a change the admin API made itself (the operator's calls
// record theirs): nil-safe.
func (s *Server) record(r *http.Request, e staff.Entry) {
	if s.Audit == nil {
		return
	}
	if e.Op == "" {
		e.Op = r.Pattern
	}
	if e.Queue == "" {
		e.Queue = r.PathValue("queue")
	}
	s.Audit.Record(r.Context(), e)
}

// productBefore is the product a change is about to change, for its
// record (nil: none yet, or not read).
func (s *Server) productBefore(r *http.Request) *order.Product {
	if s.Audit == nil {
		return nil
	}
	p, err := s.Orders.Product(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil
	}
	return &p
}

// recordProduct keeps a product put: each field that changed.
func (s *Server) recordProduct(r *http.Request, before *order.Product, after order.Product) {
	var b order.Product
	if before != nil {
		b = *before
	}
	var changes []staff.Change
	add := func(field string, bv, av any, same bool) {
		if !same || before == nil {
			if before == nil {
				bv = nil
			}
			changes = append(changes, staff.Change{Field: field, Before: bv, After: av})
		}
	}
	add("name", b.Name, after.Name, b.Name == after.Name)
	add("stock", b.Stock, after.Stock, b.Stock == after.Stock)
	add("queue", b.Queue, after.Queue, b.Queue == after.Queue)
	if len(changes) > 0 {
		s.record(r, staff.Entry{Queue: after.Queue, Detail: "product " + after.ID, Changes: changes})
	}
}

// auditOf is the queue's entries of the audit log from since (zero: the
// first kept) to until, for its report's "What happened".
func (s *Server) auditOf(ctx context.Context, q string, since, until time.Time) ([]staff.Entry, error) {
	if s.AuditLog == nil {
		return nil, nil
	}
	return s.AuditLog.Audit(ctx, staff.Filter{Queue: q, Since: since, Until: until, Limit: staff.MaxAuditLimit})
}

// auditJSON is GET /admin/v1/audit's answer.
type auditJSON struct {
	Entries []staff.Entry `json:"entries"`
}

// listAudit answers the audit log's entries, oldest first (the newest
// last): ?queue=, ?actor= (a token's name, an e-mail, queues-file,
// backend: a part of who, any case), ?since= and ?until= (RFC 3339),
// ?limit= (the newest that many; 1..1000, 100).
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := staff.Filter{Queue: q.Get("queue"), Actor: q.Get("actor"), Limit: 100}
	for _, t := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(t.name); v != "" {
			at, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				s.writeError(w, r, errWith(errBadRequest, t.name+" must be an RFC 3339 time (2026-12-24T20:00:00Z)"))
				return
			}
			*t.to = at
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > staff.MaxAuditLimit {
			s.writeError(w, r, errWith(errBadRequest, "limit must be an integer, 1.."+strconv.Itoa(staff.MaxAuditLimit)))
			return
		}
		f.Limit = n
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		s.writeError(w, r, errWith(errBadRequest, "until must not come before since"))
		return
	}
	if len(f.Queue) > 200 || len(f.Actor) > 200 {
		s.writeError(w, r, errWith(errBadRequest, "queue and actor are at most 200 characters"))
		return
	}
	var entries []staff.Entry
	var err error
	if s.AuditLog != nil {
		entries, err = s.AuditLog.Audit(r.Context(), f)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if entries == nil {
		entries = []staff.Entry{}
	}
	writeJSON(w, http.StatusOK, auditJSON{Entries: entries})
}
