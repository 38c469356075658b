package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
)

// fortnight is the known sale over and over for 14 days, the rollups'
// retention: 20,160 minutes.
func fortnight() report.Sale {
	sale, _ := reporttest.Sale("q")
	long := report.Sale{Queue: "q"}
	for d := range 14 * 24 * 60 / len(sale.Minutes) {
		for _, m := range sale.Minutes {
			m.Start = m.Start.Add(time.Duration(d*len(sale.Minutes)) * time.Minute)
			long.Minutes = append(long.Minutes, m)
		}
	}
	return long
}

// However long the span, a chart draws at most 240 points and its table
// has as many rows, so the file stays small.
func TestRenderLongSpan(t *testing.T) {
	var b bytes.Buffer
	if err := report.Render(&b, fortnight(), report.Options{}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if !strings.Contains(html, "the charts draw 120 minutes as one point") {
		t.Errorf("14 days are not drawn 2 hours to a point")
	}
	sections := strings.Split(html, "<section")
	for _, s := range sections {
		if rows := strings.Count(s, "<tr>"); rows > 241 {
			t.Errorf("a section with %d rows: %.80s", rows, s)
		}
	}
	t.Logf("14 days of minutes: %d KB", b.Len()/1024)
}

func BenchmarkRender(b *testing.B) {
	sale, _ := reporttest.Sale("q")
	for name, s := range map[string]report.Sale{"45 minutes": sale, "14 days": fortnight()} {
		b.Run(name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := report.Render(&buf, s, report.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes/file")
		})
	}
}
