package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/report"
)

// herdTokenTTL is the herd queue's tokenTtlSeconds: a READY answer's
// expiresAt less it is when admission let the user in, on the store's
// clock (the same machine's).
const herdTokenTTL = 600 * time.Second

// HerdSale is a herd run's sale as the instance's own report tells it,
// beside the bench's figures for the same people (issue 38: the report's
// time in line within 5% of the bench's). Time in line means, on each
// side:
//   - Lived: what the bench's users lived, from the enter's request asked
//     to the READY answer received: the wait for one of the client's
//     connections and the poll's delay included.
//   - Bench: the report's own definition, timed from outside: from the
//     enter's request written (the place is taken while it is answered)
//     to admission, read from the READY answer (expiresAt less the token
//     TTL: the store's clock at the admission tick).
//   - Report: what the sale's report prints, read from the instance's
//     rows (GET /admin/v1/queues/{q}/rollups) by the report's own code
//     (report.Sale.TimeInLine, Histogram.Quantile): from taking the place
//     to admission, as the store timed both, in buckets 5% wide.
//
// Bench and Report differ by the few milliseconds between a request
// written and its place taken, and by the bucket (within 5%); Lived is
// longer by the client's connection waits and the poll's delay.
type HerdSale struct {
	Queue                   string
	LivedP50, LivedP95      time.Duration
	BenchP50, BenchP95      time.Duration
	ReportP50, ReportP95    time.Duration
	Admitted, ReportCounted int64 // admitted as the bench saw them, and as the report counted them
	// HTML is the report as GET /admin/v1/queues/{q}/report served it
	// (Write saves it as HerdReportFile names it, beside the charts).
	HTML []byte `json:"-"`
}

// HerdReportFile names the file a herd mode's report is saved in.
func HerdReportFile(mode string) string {
	return "bench-herd-report-" + strings.NewReplacer("+", "-", " ", "-").Replace(mode) + ".html"
}

// timeEnter is the enter's context, with a trace that records when its
// request was written (the last try's, under doRetrying): the store takes
// the place while answering it.
func timeEnter(ctx context.Context, written *atomic.Int64) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { written.Store(time.Now().UnixNano()) },
	})
}

// admittedAt is when admission let a user in, from their READY answer
// (zero when it does not say).
func admittedAt(body map[string]any) time.Time {
	s, _ := body["expiresAt"].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.Add(-herdTokenTTL)
}

// get reads an admin route's body.
func (c *client) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", c.admin)
	res, err := c.poll.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", path, res.StatusCode, b)
	}
	return b, err
}

// saleRows reads the queue's rows as the report does (report.Sale).
func (c *client) saleRows(ctx context.Context, q string) (report.Sale, error) {
	var s report.Sale
	b, err := c.get(ctx, "/admin/v1/queues/"+q+"/rollups")
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	return s, err
}

// herdRowsPatience bounds the waits for the instance's rows: it writes
// them on a pass every second.
const herdRowsPatience = 20 * time.Second

// awaitFirstRow waits for the queue's first row: the funnel counts from
// the line's first reading, so the crowd comes after it.
func awaitFirstRow(ctx context.Context, c *client, q string) error {
	for deadline := time.Now().Add(herdRowsPatience); ; {
		s, err := c.saleRows(ctx, q)
		if err == nil && len(s.Minutes) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the queue's first row: none after %v (%v)", herdRowsPatience, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// herdSale reads the sale's report from the instance, once its rows hold
// everyone the bench saw let in, and puts the bench's figures beside it.
func herdSale(ctx context.Context, c *client, q string, out []userOutcome) (*HerdSale, error) {
	s := &HerdSale{Queue: q}
	var lived, timed []time.Duration
	for _, u := range out {
		if u.told.IsZero() {
			continue
		}
		s.Admitted++
		lived = append(lived, u.told.Sub(u.asked))
		if !u.placed.IsZero() && !u.admitted.IsZero() {
			timed = append(timed, max(u.admitted.Sub(u.placed), 0))
		}
	}
	slices.Sort(lived)
	slices.Sort(timed)
	s.LivedP50, s.LivedP95 = percentile(lived, 50), percentile(lived, 95)
	s.BenchP50, s.BenchP95 = percentile(timed, 50), percentile(timed, 95)

	var sale report.Sale
	var err error
	for deadline := time.Now().Add(herdRowsPatience); ; {
		sale, err = c.saleRows(ctx, q)
		if err == nil && sale.TimeInLine().Count() >= s.Admitted || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		return s, err
	}
	h := sale.TimeInLine()
	s.ReportCounted = h.Count()
	for _, p := range []struct {
		q  float64
		to *time.Duration
	}{{0.5, &s.ReportP50}, {0.95, &s.ReportP95}} {
		if v, ok := h.Quantile(p.q); ok {
			*p.to = time.Duration(v * float64(time.Second))
		}
	}
	s.HTML, err = c.get(ctx, "/admin/v1/queues/"+q+"/report")
	return s, err
}

// ratio is a ÷ b (0 when b is).
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// herdSaleMarkdown puts each mode's time in line as the sale's report
// tells it beside the bench's (HerdSale says what each means), with a
// link to the report (reports: mode → link).
func herdSaleMarkdown(h *HerdReport, reports map[string]string) string {
	var b strings.Builder
	for _, m := range h.Modes {
		if m.Sale == nil {
			return ""
		}
	}
	b.WriteString("Time in line, the bench against the sale's report (issue 38: within 5%). **Report**: what `waitroom report` and " +
		"`GET /admin/v1/queues/{q}/report` print, read from the instance's rows (`GET /admin/v1/queues/{q}/rollups`) by the report's own code " +
		"(`report.Sale.TimeInLine`, `Histogram.Quantile`): from taking the place to admission, on the store's clock, in buckets 5% wide. " +
		"**Bench**: the same span timed from outside, from the enter's request written (the place is taken while it is answered) to admission " +
		"as the READY answer dates it (`expiresAt` less the token TTL). **Lived**: from the enter asked to READY received, as the user lived it: " +
		"it adds the wait for one of the client's connections and the poll's delay, so it is the longer; it is not what the report measures.\n\n")
	b.WriteString("| mode | admitted (bench / report) | p50 lived | p50 bench | p50 report | report ÷ bench | p95 lived | p95 bench | p95 report | report ÷ bench | the report |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range h.Modes {
		s := m.Sale
		file := "—"
		if l := reports[m.Mode.Name]; l != "" {
			file = fmt.Sprintf("[%s](%s)", HerdReportFile(m.Mode.Name), l)
		}
		fmt.Fprintf(&b, "| %s | %d / %d | %s | %s | %s | **%.3f×** | %s | %s | %s | **%.3f×** | %s |\n",
			m.Mode.Name, s.Admitted, s.ReportCounted, secs(s.LivedP50), secs(s.BenchP50), secs(s.ReportP50), ratio(s.ReportP50, s.BenchP50),
			secs(s.LivedP95), secs(s.BenchP95), secs(s.ReportP95), ratio(s.ReportP95, s.BenchP95), file)
	}
	b.WriteString("\n")
	return b.String()
}

// secs writes a duration in seconds, to the millisecond.
func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
