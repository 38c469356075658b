package report_test

// The report as its readers get it: a file opened in a real chromium, with
// nothing else. axe-core finds nothing at WCAG 2.1 AA, in every language,
// the page asks for nothing beyond itself, and the figures it prints are
// the known sale's (reporttest): counts and instants exactly, percentiles
// within 5% of the exact ones.

import (
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
	"github.com/waitroom/waitroom/internal/testenv"
)

func TestReportBrowser(t *testing.T) {
	browser := apptest.StartBrowser(t)
	axe := testenv.Axe(t)
	sale, truth := reporttest.SaleWithBots("spring-drop")
	for _, lang := range report.Languages() {
		t.Run(lang, func(t *testing.T) {
			html := renderScenario(t, lang)
			dir := t.TempDir()
			file := filepath.Join(dir, "report.html")
			if err := os.WriteFile(file, []byte(html), 0o644); err != nil {
				t.Fatal(err)
			}
			v := apptest.NewVisitor(t, browser, &apptest.Instance{T: t, Base: "file://" + dir}, lang)
			var mu sync.Mutex
			var asked []string
			chromedp.Listen(v.Ctx, func(ev any) {
				if e, ok := ev.(*network.EventRequestWillBeSent); ok {
					mu.Lock()
					asked = append(asked, e.Request.URL)
					mu.Unlock()
				}
			})
			v.Open("/report.html")
			if got := v.Text("h1"); got == "" {
				t.Fatalf("no heading: %s", v.Screen())
			}
			// Open every table, so that axe audits them too.
			v.MustEval(`document.querySelectorAll('details').forEach(d => d.open = true), true`, nil)
			found, err := v.Axe(axe)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				t.Errorf("axe: %s", f)
			}
			var lang2 string
			v.MustEval(`document.documentElement.lang`, &lang2)
			if lang2 != lang {
				t.Errorf("<html lang=%q>, want %q", lang2, lang)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, u := range asked {
				if p, err := url.Parse(u); err != nil || p.Scheme != "file" || p.Path != filepath.ToSlash(file) {
					t.Errorf("the report asked for %s: it must need nothing beyond itself", u)
				}
			}
			checkFigures(t, v, truth)
			checkCharts(t, v, len(sale.Minutes))
		})
	}
}

// checkFigures reads the summary's figures as the page shows them and holds
// them to the known sale's.
func checkFigures(t *testing.T, v *apptest.Visitor, truth reporttest.Truth) {
	t.Helper()
	var figs map[string]struct {
		Value, At, Text string
	}
	v.MustEval(`Object.fromEntries([...document.querySelectorAll('.figures dd')].map(dd =>
		[dd.id, {value: dd.querySelector('data')?.value ?? '', at: dd.dataset.at ?? '', text: dd.textContent.trim()}]))`, &figs)
	exact := map[string]int64{"fig-peak": truth.PeakLine, "fig-entered": truth.Entered, "fig-admitted": truth.Admitted, "fig-ordered": truth.Ordered}
	for id, want := range exact {
		if got := figs[id].Value; got != strconv.FormatInt(want, 10) || figs[id].Text == "" {
			t.Errorf("%s: %q (%q), want %d", id, got, figs[id].Text, want)
		}
	}
	c := truth.Coverage
	if got, want := figs["fig-coverage"].Value, strconv.FormatFloat(float64(c.In)/float64(c.In+c.Out), 'f', 4, 64); got != want {
		t.Errorf("fig-coverage: %q (%q), want %s", got, figs["fig-coverage"].Text, want)
	}
	for id, want := range map[string]time.Time{"fig-peak": truth.PeakAt, "fig-sold-out": truth.SoldOut} {
		if got := figs[id].At; got != want.Format(time.RFC3339) {
			t.Errorf("%s at %q, want %s", id, got, want.Format(time.RFC3339))
		}
	}
	near := map[string]float64{
		"fig-wait-p50": reporttest.Quantile(truth.Waits, 0.5), "fig-wait-p90": reporttest.Quantile(truth.Waits, 0.9),
		"fig-wait-p95": reporttest.Quantile(truth.Waits, 0.95), "fig-wait-p99": reporttest.Quantile(truth.Waits, 0.99),
		"fig-estimate-p50": reporttest.Quantile(truth.Ratios, 0.5), "fig-estimate-p90": reporttest.Quantile(truth.Ratios, 0.9),
	}
	for id, want := range near {
		got, err := strconv.ParseFloat(figs[id].Value, 64)
		if err != nil || math.Abs(got-want) > 0.05*want {
			t.Errorf("%s: %q (%q), want within 5%% of %.2f", id, figs[id].Value, figs[id].Text, want)
		} else {
			t.Logf("%s: %.2f shown as %q, exact %.2f (%.2f%% off)", id, got, figs[id].Text, want, 100*math.Abs(got-want)/want)
		}
	}
}

// checkCharts: every chart is drawn, labelled by its heading and sentence,
// and its table has a row per minute (the coverage's and the likely bots'
// a row more, in all).
func checkCharts(t *testing.T, v *apptest.Visitor, minutes int) {
	t.Helper()
	var charts []struct {
		ID    string
		Name  string
		Lines int
		Rows  int
	}
	v.MustEval(`[...document.querySelectorAll('section[id]')].filter(s => s.querySelector('svg.chart')).map(s => ({
		id: s.id,
		name: s.querySelector('svg.chart').getAttribute('aria-labelledby').split(' ').map(id => document.getElementById(id).textContent).join(' '),
		lines: s.querySelectorAll('svg.chart path.line').length,
		rows: s.querySelectorAll('tbody tr').length}))`, &charts)
	want := map[string]int{"line": minutes, "admission": minutes, "wait": minutes, "estimate": minutes, "coverage": minutes + 1, "bots": minutes + 1, "funnel": 7}
	for _, c := range charts {
		if c.Name == "" || c.Rows != want[c.ID] || c.ID != "funnel" && c.Lines < 2 {
			t.Errorf("chart %s: named %q, %d lines, %d rows in its table; want a name, lines and %d rows", c.ID, c.Name, c.Lines, c.Rows, want[c.ID])
		}
		delete(want, c.ID)
	}
	if len(want) > 0 {
		t.Errorf("charts missing: %v", want)
	}
}
