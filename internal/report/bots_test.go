package report_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
)

// TestRenderLikelyBots: a sale with a bot farm has a "Likely bots"
// section whose sentence and table say the farm's known figures: the
// signals by count (most first), the places marked, kept in the shadow
// line, refused, challenged and cleared, minute by minute and in all.
func TestRenderLikelyBots(t *testing.T) {
	sale, truth := reporttest.SaleWithBots("spring-drop")
	var b bytes.Buffer
	if err := report.Render(&b, sale, report.Options{Now: reporttest.Start.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	section := sectionOf(t, b.String(), "bots")
	tb, n := truth.Bots, reporttest.English
	desc := fmt.Sprintf("The signals marked %s places as likely bots (Edge bot score %s, Suspect address range %s, Polled too fast %s): "+
		"%s were kept in the shadow line, %s refused and %s given a costlier proof of work; an operator cleared %s into the line.",
		n(tb.Suspects), n(tb.Signals["edge_score"]), n(tb.Signals["address_range"]), n(tb.Signals["poll_rate"]),
		n(tb.Shadowed), n(tb.Refused), n(tb.Challenged), n(tb.Cleared))
	head := "<th scope=\"col\">From</th><th scope=\"col\">Edge bot score</th><th scope=\"col\">Suspect address range</th>" +
		"<th scope=\"col\">Polled too fast</th><th scope=\"col\">Marked</th><th scope=\"col\">Kept in the shadow line</th>" +
		"<th scope=\"col\">Refused</th><th scope=\"col\">Given a costlier proof of work</th><th scope=\"col\">Cleared into the line</th>"
	row := func(first string, c reporttest.Bots) string {
		out := "<th scope=\"row\">" + first + "</th>"
		for _, v := range []int64{c.Signals["edge_score"], c.Signals["address_range"], c.Signals["poll_rate"], c.Suspects, c.Shadowed, c.Refused, c.Challenged, c.Cleared} {
			out += "<td>" + n(v) + "</td>"
		}
		return out
	}
	want := []string{"<h2 id=\"bots-h\">Likely bots</h2>", desc, head, row("In all", tb)}
	for _, minute := range []int{0, 3, 9, 11} { // the farm at work, its last minute, a late clearing
		want = append(want, row(reporttest.Start.Add(time.Duration(minute)*time.Minute).Format("2006-01-02 15:04"), truth.BotsByMinute[minute]))
	}
	for _, w := range want {
		if !strings.Contains(section, w) {
			t.Errorf("the section lacks %q", w)
		}
	}
	if tb.Cleared == 0 || truth.BotsByMinute[11].Cleared == 0 || tb.Refused == 0 || tb.Challenged == 0 {
		t.Fatalf("the farm's figures do not exercise the section: %+v, minute 11 %+v", tb, truth.BotsByMinute[11])
	}
}

// TestRenderLikelyBotsInEveryLanguage: every language's section has its
// placeholders filled.
func TestRenderLikelyBotsInEveryLanguage(t *testing.T) {
	sale, _ := reporttest.SaleWithBots("spring-drop")
	for _, lang := range report.Languages() {
		var b bytes.Buffer
		if err := report.Render(&b, sale, report.Options{Lang: lang}); err != nil {
			t.Fatal(err)
		}
		if left := regexp.MustCompile(`\{[a-z0-9]+\}`).FindString(sectionOf(t, b.String(), "bots")); left != "" {
			t.Errorf("%s: a placeholder left unfilled: %s", lang, left)
		}
	}
}

// TestNoLikelyBotsNoSection: a sale in which no likely bot was counted
// has no such section, not an empty one.
func TestNoLikelyBotsNoSection(t *testing.T) {
	sale, _ := reporttest.Sale("spring-drop")
	var b bytes.Buffer
	if err := report.Render(&b, sale, report.Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="bots"`) || strings.Contains(b.String(), "Likely bots") {
		t.Error("a sale without likely bots has a section about them")
	}
}

// sectionOf is the report's section of id.
func sectionOf(t *testing.T, html, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(html, `<section id="`+id+`"`)
	section, _, closed := strings.Cut(rest, "</section>")
	if !ok || !closed {
		t.Fatalf("the report has no section %q", id)
	}
	return section
}
