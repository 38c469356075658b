package report_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/report"
)

// saleJSON is a Sale as the admin API's rollups route answers it, which
// `waitroom report` reads: the shape the route must keep.
const saleJSON = `{
  "queue": "spring-drop",
  "from": "2026-12-04T20:00:00Z",
  "until": "2026-12-04T21:00:00Z",
  "minutes": [
    {
      "start": "2026-12-04T20:00:00Z",
      "lineLength": 2700,
      "lineMax": 2710,
      "preQueue": 0,
      "ratePerSecond": 15,
      "entered": 3600,
      "left": 3,
      "skipped": 9,
      "admitted": 891,
      "used": 820,
      "ordered": 790,
      "expired": 0,
      "timeInLine": [
        {"lo": 0, "hi": 0, "count": 12},
        {"lo": 28.5, "hi": 29.8, "count": 40}
      ],
      "estimateRatio": [
        {"lo": 0.96, "hi": 1.0, "count": 31}
      ],
      "apartEstimateRatio": [
        {"lo": 1.8, "hi": 1.89, "count": 4}
      ],
      "estimateCoverage": {"in": 28, "out": 3, "apartIn": 1, "apartOut": 3, "unknown": 17}
    }
  ],
  "moments": [
    {"at": "2026-12-04T20:00:00Z", "kind": "queue.opened"},
    {"at": "2026-12-04T20:33:00Z", "kind": "stock.sold_out", "detail": "0 units left"}
  ]
}`

func TestSaleJSON(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 12, 4, 20, m, 0, 0, time.UTC) }
	want := report.Sale{Queue: "spring-drop", From: at(0), Until: at(60),
		Minutes: []report.Minute{{Figures: rollup.Figures{Start: at(0), LineLength: 2700, LineMax: 2710, RatePerSecond: 15,
			Entered: 3600, Left: 3, Skipped: 9, Admitted: 891, Used: 820, Ordered: 790,
			EstimateCoverage: rollup.Coverage{In: 28, Out: 3, ApartIn: 1, ApartOut: 3, Unknown: 17}},
			TimeInLine:    report.Histogram{{Count: 12}, {Lo: 28.5, Hi: 29.8, Count: 40}},
			EstimateRatio: report.Histogram{{Lo: 0.96, Hi: 1, Count: 31}},
			ApartRatio:    report.Histogram{{Lo: 1.8, Hi: 1.89, Count: 4}}}},
		Moments: []report.Moment{{At: at(0), Kind: report.MomentOpened}, {At: at(33), Kind: report.MomentSoldOut, Detail: "0 units left"}},
	}
	var got report.Sale
	if err := json.Unmarshal([]byte(saleJSON), &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the JSON read (-want +got):\n%s", d)
	}
	// And back: what a Go adapter writes is what the command reads.
	raw, _ := json.Marshal(want)
	var again report.Sale
	if err := json.Unmarshal(raw, &again); err != nil || !cmp.Equal(want, again) {
		t.Errorf("round trip: %v %s", err, cmp.Diff(want, again))
	}
}
