package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestHerdReport runs the herd section's short form and opens each sale's
// report, as the instance served it, in a real chromium: it renders (a
// heading, the time in line's figures, the charts) and axe-core finds
// nothing at WCAG 2.1 AA. Figures are not asserted (bench/run.sh's
// business): the report ÷ the bench's time in line is only logged.
// With WAITROOM_HERD_REPORT_DIR set the reports are kept there.
func TestHerdReport(t *testing.T) {
	browser := apptest.StartBrowser(t)
	axe := testenv.Axe(t)
	o := Options{
		RedisURL:    testenv.RedisURL(t),
		DatabaseURL: testenv.DatabaseURL(t),
		Short:       true,
		Sections:    []string{"herd"},
	}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a guard against a hang
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Herd == nil || len(r.Herd.Modes) != len(HerdModes) {
		t.Fatalf("herd: %+v", r.Herd)
	}
	dir := os.Getenv("WAITROOM_HERD_REPORT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, m := range r.Herd.Modes {
		t.Run(m.Mode.Name, func(t *testing.T) {
			s := m.Sale
			if s == nil || len(s.HTML) == 0 {
				t.Fatalf("no report: %+v", s)
			}
			t.Logf("time in line p50 %v p95 %v entered to admitted, the report's %v (×%.3f) and %v (×%.3f); %d of %d admitted counted",
				s.BenchP50, s.BenchP95, s.ReportP50, ratio(s.ReportP50, s.BenchP50), s.ReportP95, ratio(s.ReportP95, s.BenchP95),
				s.ReportCounted, s.Admitted)
			name := HerdReportFile(m.Mode.Name)
			if err := os.WriteFile(filepath.Join(dir, name), s.HTML, 0o644); err != nil {
				t.Fatal(err)
			}
			v := apptest.NewVisitor(t, browser, &apptest.Instance{T: t, Base: "file://" + dir}, "")
			v.Open("/" + name)
			if got := v.Text("h1"); got == "" {
				t.Fatalf("no heading: %s", v.Screen())
			}
			// Every table open, so that axe audits them too.
			v.MustEval(`document.querySelectorAll('details').forEach(d => d.open = true), true`, nil)
			found, err := v.Axe(axe)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				t.Errorf("axe: %s", f)
			}
			var shown struct {
				P50, P95 string
				Charts   int
			}
			v.MustEval(`({p50: document.querySelector('#fig-wait-p50 data')?.value ?? '',
				p95: document.querySelector('#fig-wait-p95 data')?.value ?? '',
				charts: document.querySelectorAll('svg.chart').length})`, &shown)
			if s.ReportCounted > 0 && (shown.P50 == "" || shown.P95 == "") || shown.Charts == 0 {
				t.Errorf("the report shows time in line p50 %q p95 %q and %d charts, for %d admitted counted", shown.P50, shown.P95, shown.Charts, s.ReportCounted)
			}
			t.Logf("rendered: %d charts, time in line p50 %s s p95 %s s as the page shows them", shown.Charts, shown.P50, shown.P95)
		})
	}
}
