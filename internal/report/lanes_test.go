package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
)

// laneSale is two minutes of a queue with a members lane and the public:
// members let in 30 and 30 (their waits 10 s and 20 s), the public 60 and
// 90 (30 s each), 12 codes redeemed. timed: the rows say who waited in
// which lane.
func laneSale(timed bool) report.Sale {
	at := func(m int) time.Time { return time.Date(2026, 12, 4, 20, m, 0, 0, time.UTC) }
	seconds := func(s float64, n int64) report.Histogram {
		return report.Histogram{{Lo: s / 1.05, Hi: s, Count: n}}
	}
	minute := func(m int, members, public, redeemed, left int64, memberWait float64) report.Minute {
		out := report.Minute{Figures: rollup.Figures{Start: at(m), LineLength: 500, LineMax: 520, RatePerSecond: 2, Entered: 200,
			Admitted: members + public, Lanes: []rollup.LaneFigures{
				{Name: "members", Share: 0.3, Length: 40, Admitted: members, Redeemed: redeemed, CodesLeft: left},
				{Name: "public", Share: 0.7, Length: 460, Admitted: public}}},
			TimeInLine: report.Merge(seconds(memberWait, members), seconds(30, public))}
		if timed {
			out.LaneTimeInLine = map[string]report.Histogram{"members": seconds(memberWait, members)}
		}
		return out
	}
	return report.Sale{Queue: "drop", From: at(0), Until: at(2),
		Minutes: []report.Minute{minute(0, 30, 60, 5, 95, 10), minute(1, 30, 90, 7, 88, 20)}}
}

// TestRenderLanes: a queue with lanes has a "Lanes" section whose table
// gives each lane's share, admitted (and their part of all), length at
// the end, time in line, codes redeemed and left, and whose chart's table
// each lane's admissions a second, period by period; a queue without
// lanes has no such section.
func TestRenderLanes(t *testing.T) {
	render := func(s report.Sale) string {
		var b bytes.Buffer
		if err := report.Render(&b, s, report.Options{Now: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	section := sectionOf(t, render(laneSale(true)), "lanes")
	cells := func(first string, rest ...string) string {
		return `<th scope="row">` + first + "</th><td>" + strings.Join(rest, "</td><td>") + "</td>"
	}
	for _, want := range []string{
		`<h2 id="lanes-h">Lanes</h2>`,
		"Each lane&#39;s part of those let in, against its share: members 28.6% (share 30%), public 71.4% (share 70%).",
		cells("members", "30%", "60", "28.6%", "40", "10 s", "20 s", "12", "88"),
		cells("public", "70%", "150", "71.4%", "460", "29 s", "30 s", "0", "0"),
		cells("2026-12-04 20:00", "0.5", "1"),
		cells("2026-12-04 20:01", "0.5", "1.5"),
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the section lacks %q", want)
		}
	}
	if s := sectionOf(t, render(laneSale(false)), "lanes"); !strings.Contains(s, "no lane&#39;s time in line is known") ||
		!strings.Contains(s, cells("members", "30%", "60", "28.6%", "40", "–", "–", "12", "88")) {
		t.Errorf("rows that do not say who waited where show times in line: %s", s)
	}
	sale, _ := reporttest.Sale("spring-drop")
	if strings.Contains(render(sale), `id="lanes"`) {
		t.Error("a queue without lanes has a Lanes section")
	}
}
