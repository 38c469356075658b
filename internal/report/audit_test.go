package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
	"github.com/waitroom/waitroom/internal/staff"
)

// TestRenderWhoChangedWhat: "What happened" lists the audit log's entries
// in time's order, each with who, what and its values before → after (a
// refusal with its reason and how many like it were not logged), in each
// language; none says so.
func TestRenderWhoChangedWhat(t *testing.T) {
	from := reporttest.Start
	sale := report.Sale{Queue: "drop", From: from, Until: from.Add(time.Hour), Audit: []staff.Entry{
		{At: from.Add(2 * time.Minute), Actor: staff.Actor{Kind: staff.KindBackend}, Op: "sold-out", Outcome: staff.Done,
			Changes: []staff.Change{{Field: "unitsLeft", Before: 7.0, After: 0.0}}},
		{At: from.Add(time.Minute), Actor: staff.Actor{Kind: staff.KindSignIn, Email: "ana@shop.example"}, Op: "PATCH /admin/v1/queues/{queue}", Outcome: staff.Done,
			Changes: []staff.Change{{Field: "paused", Before: false, After: true}, {Field: "message", Before: nil, After: map[string]any{"en": "Soon"}}}},
		{At: from.Add(3 * time.Minute), Actor: staff.Actor{Kind: staff.KindToken, Name: "night"}, Op: "PATCH /admin/v1/queues/{queue}", Outcome: staff.Refused,
			Detail: "ratePerSecond needs admin", Repeats: 4},
	}}
	for lang, want := range map[string][]string{
		"en": {"Who changed what", "<th scope=\"row\">2026-12-04 20:01</th><td>oidc ana@shop.example</td><td>PATCH /admin/v1/queues/{queue}</td><td>paused: false → true; message: none → {&#34;en&#34;:&#34;Soon&#34;}</td>",
			"<td>backend</td><td>sold-out</td><td>unitsLeft: 7 → 0</td>", "<td>refused: ratePerSecond needs admin; 4 more like it not logged</td>"},
		"ko": {"누가 무엇을 바꿨나", "message: 없음 → ", "거부됨: ratePerSecond needs admin; 같은 거부 4건 더(기록하지 않음)"},
	} {
		var b bytes.Buffer
		if err := report.Render(&b, sale, report.Options{Lang: lang, Location: time.UTC}); err != nil {
			t.Fatal(err)
		}
		html := b.String()
		for _, w := range want {
			if !strings.Contains(html, w) {
				t.Errorf("%s: the report lacks %q", lang, w)
			}
		}
		if lang == "en" && !(strings.Index(html, "ana@shop") < strings.Index(html, "<td>backend</td>")) {
			t.Error("the entries are not in time's order")
		}
	}
	var b bytes.Buffer
	report.Render(&b, report.Sale{Queue: "quiet", From: from, Until: from.Add(time.Hour)}, report.Options{})
	if !strings.Contains(b.String(), "Nobody changed the sale in this span") {
		t.Error("a span without changes does not say so")
	}
}
