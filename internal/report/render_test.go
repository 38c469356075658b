package report_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/language"

	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
	"github.com/waitroom/waitroom/internal/web"
)

// renderScenario renders the known sale, with its bot farm;
// WAITROOM_REPORT_OUT keeps it.
func renderScenario(t *testing.T, lang string) string {
	t.Helper()
	sale, _ := reporttest.SaleWithBots("spring-drop")
	var b bytes.Buffer
	if err := report.Render(&b, sale, report.Options{Lang: lang, Now: reporttest.Start.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("WAITROOM_REPORT_OUT"); out != "" {
		os.WriteFile(strings.ReplaceAll(out, "{lang}", lang), b.Bytes(), 0o644)
	}
	return b.String()
}

// Every language: its own title, its lang, every placeholder filled.
func TestRenderScenario(t *testing.T) {
	titles := map[string]string{"en": "The sale of spring-drop", "ko": "spring-drop 판매 보고서"}
	for _, lang := range report.Languages() {
		html := renderScenario(t, lang)
		if !strings.Contains(html, `<html lang="`+lang+`">`) || !strings.Contains(html, "<h1>"+titles[lang]+"</h1>") {
			t.Errorf("%s: no lang or title %q", lang, titles[lang])
		}
		if left := regexp.MustCompile(`\{[a-z0-9]+\}`).FindString(html); left != "" {
			t.Errorf("%s: a placeholder left unfilled: %s", lang, left)
		}
		t.Logf("%s: %d bytes", lang, len(html))
	}
}

// The report is the operators', in the admin page's languages, each with
// every text English has.
func TestReportLanguages(t *testing.T) {
	if got, want := report.Languages(), web.AdminLanguages(); !slices.Equal(got, want) {
		t.Errorf("the report's languages %v, the admin page's %v", got, want)
	}
	read := func(code string) map[string]string {
		raw, err := os.ReadFile("messages/" + code + ".json")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("messages/%s.json: %v", code, err)
		}
		return m
	}
	en := read("en")
	for _, code := range report.Languages()[1:] {
		m := read(code)
		for k := range en {
			if m[k] == "" {
				t.Errorf("messages/%s.json lacks %s", code, k)
			}
		}
		for k := range m {
			if _, ok := en[k]; !ok {
				t.Errorf("messages/%s.json has %s, which English has not", code, k)
			}
		}
	}
	for _, tt := range []struct{ asked, want string }{{"ko-KR", "ko"}, {"en-GB", "en"}, {"ja", "en"}, {"", "en"}} {
		var tags []language.Tag
		if tt.asked != "" {
			tags = append(tags, language.MustParse(tt.asked))
		}
		if got := report.Language(tags...); got != tt.want {
			t.Errorf("Language(%s) = %s, want %s", tt.asked, got, tt.want)
		}
	}
	if err := report.Render(io.Discard, report.Sale{}, report.Options{Lang: "ja"}); err == nil {
		t.Error("a report in a language it has no texts for")
	}
}

// One file, self-contained: no script, nothing fetched, every text in it.
func TestRenderIsSelfContained(t *testing.T) {
	html := renderScenario(t, "en")
	_, truth := reporttest.Sale("spring-drop")
	for _, bad := range []string{"<script", "src=", "href=", "url(", "@import", "{{", "moment.", "http:", "https:"} {
		if strings.Contains(html, bad) {
			t.Errorf("the report contains %q", bad)
		}
	}
	for _, want := range []string{`<html lang="en">`, "<title>Report: spring-drop · waitroom</title>", truth.EnteredText() + " took a place",
		"2026-12-04 20:33</th><td>Sold out</td><td>0 units left</td>", `role="img" aria-labelledby="wait-h wait-d"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// A span with nothing in it says so, and still lists what happened.
func TestRenderEmpty(t *testing.T) {
	var b bytes.Buffer
	from := reporttest.Start
	sale := report.Sale{Queue: "quiet", From: from, Until: from.Add(time.Hour),
		Moments: []report.Moment{{At: from.Add(time.Minute), Kind: report.MomentPaused}, {At: from.Add(2 * time.Minute), Kind: "queue.renamed", Detail: "x"}}}
	if err := report.Render(&b, sale, report.Options{Location: time.FixedZone("KST", 9*3600)}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"Nothing was recorded for this queue between 2026-12-05 05:00 and 2026-12-05 06:00",
		"<td>Paused</td>", "<td>queue.renamed</td><td>x</td>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the empty report lacks %q", want)
		}
	}
	if strings.Contains(html, "<svg") {
		t.Error("the empty report draws charts")
	}
}

// Quiet minutes before and after the sale (a store keeps every minute) are
// left out: the charts span the sale.
func TestRenderTrimsQuietMinutes(t *testing.T) {
	sale, _ := reporttest.Sale("spring-drop")
	var padded []report.Minute
	for i := -600; i < 0; i++ {
		padded = append(padded, report.Minute{Figures: rollup.Figures{Start: reporttest.Start.Add(time.Duration(i) * time.Minute), RatePerSecond: 15}})
	}
	padded = append(padded, sale.Minutes...)
	end := sale.Minutes[len(sale.Minutes)-1].Start
	for i := 1; i <= 600; i++ {
		padded = append(padded, report.Minute{Figures: rollup.Figures{Start: end.Add(time.Duration(i) * time.Minute), RatePerSecond: 25}})
	}
	sale.Minutes, sale.From, sale.Until = padded, time.Time{}, time.Time{}
	var b bytes.Buffer
	if err := report.Render(&b, sale, report.Options{}); err != nil {
		t.Fatal(err)
	}
	if want := "From 2026-12-04 20:00 to 2026-12-04 20:45 (UTC), by the minute."; !strings.Contains(b.String(), want) {
		t.Errorf("the report does not span the sale alone: %q", want)
	}
}
