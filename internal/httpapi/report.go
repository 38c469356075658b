package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/web"
)

// reportSecurityPolicy lets the report be what it is, one file of HTML with
// its own style: no script, nothing fetched.
const reportSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// queueReport is GET /admin/v1/queues/{queue}/report: the sale's report,
// one self-contained HTML file, in the language asked for (?lang=, else
// Accept-Language) and the time zone (?tz=, an IANA name; UTC).
func (s *Server) queueReport(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	if _, err := s.Operate.Config(r.Context(), q); err != nil { // 400 bad name, 404 no such queue
		s.writeError(w, r, err)
		return
	}
	since, until, loc, err := reportQuery(r.URL.Query(), time.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	source := s.Reports
	if source == nil {
		source = storeRows{s.Operate}
	}
	sale, err := source.Sale(r.Context(), q, since, until)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sale.Queue, sale.From, sale.Until = q, since, until
	if sale.Audit, err = s.auditOf(r.Context(), q, since, until); err != nil {
		s.writeError(w, r, err)
		return
	}
	asked := web.RequestLanguages(r)
	lang := report.Language(append(asked[0], asked[1]...)...)
	var buf bytes.Buffer
	if err := report.Render(&buf, sale, report.Options{Lang: lang, Location: loc}); err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Language", lang)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", reportSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(buf.Bytes())
}

// reportQuery reads the report's span and time zone: since and until are
// RFC 3339 instants (since absent: from the first minute kept; until
// absent: now), tz an IANA name (absent: UTC).
func reportQuery(v url.Values, now time.Time) (since, until time.Time, loc *time.Location, err error) {
	at := func(name string) (time.Time, error) {
		if v.Get(name) == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339, v.Get(name))
		if err != nil {
			return t, errWith(errBadRequest, name+": want an RFC 3339 instant (2026-12-04T20:00:00Z)")
		}
		return t, nil
	}
	if since, err = at("since"); err != nil {
		return
	}
	if until, err = at("until"); err != nil {
		return
	}
	if until.IsZero() {
		until = now
	}
	if !since.IsZero() && !since.Before(until) {
		return since, until, nil, errWith(errBadRequest, "since must be before until")
	}
	loc = time.UTC
	if tz := v.Get("tz"); tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil || tz == "Local" {
			return since, until, nil, errWith(errBadRequest, "tz: want an IANA time zone name (UTC, Asia/Seoul)")
		}
	}
	return since, until, loc, nil
}

// storeRows is the report's source unless Options.Reports names another:
// the queue's per-minute rows in the store (operate.Operator.Rollups).
type storeRows struct{ queue *operate.Operator }

// Sale reads the rows from since (zero: as far back as a request may
// reach, rollup.MaxRange, which holds the default retention; a minute less,
// since the store reads from the start of since's minute) to until.
func (r storeRows) Sale(ctx context.Context, q string, since, until time.Time) (report.Sale, error) {
	if since.IsZero() {
		since = until.Add(-rollup.MaxRange + time.Minute)
	}
	rows, err := r.queue.Rollups(ctx, q, since, until)
	if err != nil {
		return report.Sale{}, err
	}
	return saleOf(rows), nil
}
