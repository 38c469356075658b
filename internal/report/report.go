// Package report owns the sale's report: one queue's per-minute figures
// over a span (a Sale) made into one self-contained HTML file, with its
// charts drawn as inline SVG and every chart's figures also as a table, so
// that the file can be mailed, archived and opened anywhere, years later,
// with no script, font or request to anywhere.
//
// The package knows neither HTTP nor the store. The figures come from a
// Source: `waitroom report` reads them through the admin API, the admin
// route that serves the report reads them from the store; each adapts its
// side's type to Sale, which is also the JSON shape the admin API's
// rollups route answers (json tags below; json_test.go holds an example,
// and the test that keeps it the shape).
package report

import (
	"context"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/staff"
)

// Sale is one queue's figures over a span: what Render draws.
type Sale struct {
	Queue string `json:"queue"`
	// From and Until are the span asked for; zero: unbounded. The charts
	// span the minutes that have figures.
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
	// Minutes are the rollups, oldest first, one per minute that has any;
	// a minute missing is a minute nothing was recorded in.
	Minutes []Minute `json:"minutes"`
	// Moments are what happened to the sale, oldest first.
	Moments []Moment `json:"moments"`
	// Audit is who changed the sale within the span: the queue's entries
	// of the audit log (issue 56), oldest first. The rollups' JSON leaves
	// it out: the report's sources read it from the log (GET
	// /admin/v1/audit).
	Audit []staff.Entry `json:"audit,omitempty"`
}

// Minute is one minute of one queue: the rollup's row (rollup.Minute),
// its histograms as buckets bounded in units (time in line in seconds).
type Minute = rollup.Minute[Histogram]

// Histogram is a sparse histogram: only buckets with a count, in
// ascending order, none overlapping. Buckets about 5% wide give
// percentiles within 5% (Quantile).
type Histogram []Bucket

// Bucket counts the observations v with Lo < v ≤ Hi (Lo = Hi = 0: the
// observations that were exactly 0).
type Bucket struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Count int64   `json:"count"`
}

// Moment is one thing that happened to the sale.
type Moment struct {
	At time.Time `json:"at"`
	// Kind is the webhook event's type (internal/events): queue.opened,
	// queue.closed, queue.paused, queue.resumed, stock.sold_out,
	// stock.restocked, phase.started, rate.changed. Another is shown as it
	// is written.
	Kind string `json:"kind"`
	// Detail says more, in the operator's words or the server's
	// ("members", "100/s → 80/s: latency 412 ms above 300 ms").
	Detail string `json:"detail,omitempty"`
}

// The kinds of moment the report names in its own words.
const (
	MomentOpened       = "queue.opened"
	MomentClosed       = "queue.closed"
	MomentPaused       = "queue.paused"
	MomentResumed      = "queue.resumed"
	MomentSoldOut      = "stock.sold_out"
	MomentRestocked    = "stock.restocked"
	MomentPhaseStarted = "phase.started"
	MomentRateChanged  = "rate.changed"
)

// Source gives a queue's figures between since and until (zero: from the
// first kept, to now). A queue that does not exist is the source's error;
// a span with nothing in it is a Sale without minutes.
type Source interface {
	Sale(ctx context.Context, queue string, since, until time.Time) (Sale, error)
}
