package report_test

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
)

// renderEnglish is the sale's report in English.
func renderEnglish(t *testing.T, s report.Sale) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.Render(&b, s, report.Options{Now: reporttest.Start.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// cells is a table row as the report writes it.
func cells(first string, rest ...string) string {
	return `<th scope="row">` + first + "</th><td>" + strings.Join(rest, "</td><td>") + "</td>"
}

// TestRenderCoverage: the known sale's "How often the range came true"
// says, in its sentence and in its table's minutes and last row, how many
// were scored and how many of them waited within the range shown at join,
// how many were scored apart (in line when the pause came) and how those
// fared, and how many were shown no range (they joined while paused), all
// exactly; the realised ÷ shown beside, within 5% of the truth. The
// summary has the coverage, and the estimates' ratio counts the scored
// alone.
func TestRenderCoverage(t *testing.T) {
	sale, truth := reporttest.Sale("spring-drop")
	html := renderEnglish(t, sale)
	section := sectionOf(t, html, "coverage")
	c, n := truth.Coverage, reporttest.English
	scored, apart := c.In+c.Out, c.ApartIn+c.ApartOut
	if c.In == 0 || c.Out == 0 || apart == 0 || c.Unknown == 0 || scored+apart+c.Unknown != truth.Admitted {
		t.Fatalf("the sale does not exercise the section: %+v of %d let in", c, truth.Admitted)
	}
	pct := func(part, whole int64) string {
		return strconv.FormatFloat(math.Round(1000*float64(part)/float64(whole))/10, 'f', -1, 64) + "%"
	}
	for _, want := range []string{
		`<h2 id="coverage-h">How often the range came true</h2>`,
		fmt.Sprintf("Of the %s scored (shown a range, and nothing unforeseeable after), %s waited within it (%s);", n(scored), pct(c.In, scored), n(c.In)),
		fmt.Sprintf("%s were scored apart, as they took their place before a pause or a rate cut that no estimate could foresee: %s of them waited within their range (%s),",
			n(apart), pct(c.ApartIn, apart), n(c.ApartIn)),
		fmt.Sprintf("%s were shown no range, as their wait was not known when they took their place", n(c.Unknown)),
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the section lacks %q", want)
		}
	}
	ratios := regexp.MustCompile(`was ([0-9.]+)× at the median, ([0-9.]+)× at the 90th percentile`).FindStringSubmatch(section)
	if ratios == nil {
		t.Fatalf("no ratios in the section's sentence")
	}
	for i, p := range []float64{0.5, 0.9} {
		got, _ := strconv.ParseFloat(ratios[i+1], 64)
		if want := reporttest.Quantile(truth.Ratios, p); math.Abs(got-want) > 0.05*want+0.005 {
			t.Errorf("the scored ones' ratio at p%v: %v, truth %.3f", 100*p, got, want)
		}
	}
	// A row: its counts exactly, its ratios (read from buckets) as any.
	row := func(first string, c rollup.Coverage) *regexp.Regexp {
		s, a := c.In+c.Out, c.ApartIn+c.ApartOut
		q := regexp.QuoteMeta
		return regexp.MustCompile(q(cells(first, n(s), n(c.In), known(s, pct(c.In, s)))) + `<td>[^<]*</td><td>[^<]*</td>` +
			q("<td>"+n(a)+"</td><td>"+known(a, pct(c.ApartIn, a))+"</td><td>"+n(c.Unknown)+"</td></tr>"))
	}
	minute := func(m int) string {
		return reporttest.Start.Add(time.Duration(m) * time.Minute).Format("2006-01-02 15:04")
	}
	want := []*regexp.Regexp{row("In all", c)}
	for _, m := range []int{0, 19, 27, 30, 32, 40} { // mixed, mixed, apart, no range, after, nobody let in
		want = append(want, row(minute(m), truth.CoverageByMinute[m]))
	}
	for _, w := range want {
		if !w.MatchString(section) {
			t.Errorf("the section lacks the row %s", w)
		}
	}
	fig := regexp.MustCompile(`id="fig-coverage"><data value="([0-9.]+)">([^<]*)</data>`).FindStringSubmatch(html)
	if wantText := pct(c.In, scored) + " of " + n(scored) + " scored"; fig == nil || fig[2] != wantText ||
		fig[1] != strconv.FormatFloat(float64(c.In)/float64(scored), 'f', 4, 64) {
		t.Errorf("the summary's coverage %q, want %q", fig, wantText)
	}
}

// known is s, or the sign of a figure not known when nobody was counted.
func known(whole int64, s string) string {
	if whole == 0 {
		return "–"
	}
	return s
}

// TestRenderCoverageWithoutApartOrRanges: a sale in which nobody was caught
// by a pause says so; one whose rows hold no outcome (written before
// waitroom kept the range, or nobody let in) says no range can be checked
// and draws nothing, rather than a coverage of 0%.
func TestRenderCoverageWithoutApartOrRanges(t *testing.T) {
	at := func(m int) time.Time { return reporttest.Start.Add(time.Duration(m) * time.Minute) }
	minute := func(m int, c rollup.Coverage) report.Minute {
		return report.Minute{Figures: rollup.Figures{Start: at(m), LineLength: 100, LineMax: 120, RatePerSecond: 2, Entered: 120,
			Admitted: c.In + c.Out + c.Unknown, EstimateCoverage: c},
			TimeInLine: report.Histogram{{Lo: 28.5, Hi: 30, Count: c.In + c.Out + c.Unknown}}, EstimateRatio: report.Histogram{{Lo: 1, Hi: 1, Count: c.In + c.Out}}}
	}
	sale := report.Sale{Queue: "calm", Minutes: []report.Minute{minute(0, rollup.Coverage{In: 9, Out: 1}), minute(1, rollup.Coverage{In: 8, Out: 2, Unknown: 3})}}
	section := sectionOf(t, renderEnglish(t, sale), "coverage")
	for _, want := range []string{
		"Of the 20 scored (shown a range, and nothing unforeseeable after), 85% waited within it (17);",
		"Nobody was scored apart: no pause or rate cut caught anyone in line.", "3 were shown no range",
		cells("2026-12-04 20:00", "10", "9", "90%", "1×", "1×", "0", "–", "0"),
		cells("2026-12-04 20:01", "10", "8", "80%", "1×", "1×", "0", "–", "3"),
		cells("In all", "20", "17", "85%", "1×", "1×", "0", "–", "3"),
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the section lacks %q", want)
		}
	}
	for i := range sale.Minutes {
		sale.Minutes[i].EstimateCoverage = rollup.Coverage{}
	}
	section = sectionOf(t, renderEnglish(t, sale), "coverage")
	if !strings.Contains(section, "No range can be checked") || strings.Contains(section, "<svg") {
		t.Errorf("rows without outcomes: %s", section)
	}
}
