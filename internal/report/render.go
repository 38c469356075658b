package report

import (
	"bytes"
	_ "embed"
	"html/template"
	"io"
	"slices"
	"strconv"
	"time"
)

//go:embed report.html
var pageText string

var page = template.Must(template.New("report").Parse(pageText))

// Options says how a report is written.
type Options struct {
	// Lang is one of Languages() ("": English).
	Lang string
	// Location is the time zone instants are written in (nil: UTC).
	Location *time.Location
	// Now is when the report is made, as it says (zero: now).
	Now time.Time
}

// Render writes the sale's report: one HTML file that needs nothing else.
func Render(w io.Writer, s Sale, o Options) error {
	if o.Lang == "" {
		o.Lang = codes[0]
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	x, err := textsFor(o.Lang)
	if err != nil {
		return err
	}
	v := build(workOut(s), x, o)
	// Whole or not at all: a failure leaves w untouched.
	var buf bytes.Buffer
	if err := page.Execute(&buf, v); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// view is what the template sees.
type view struct {
	Lang, Title, DocTitle, Span, Generated string
	T                                      map[string]string
	Empty                                  bool
	Figures                                []figure
	Charts                                 []chart
	Funnel                                 funnelView
	Moments                                table
	Audit                                  table // who changed what (issue 56)
	Geo                                    chartGeometry
}

// figure is one of the summary's figures; Value is the same as a number
// (seconds, a count, an RFC 3339 instant), for whoever reads the file by
// program.
type figure struct {
	ID, Label, Text, Value string
	// At is the instant the figure is about (the longest line's minute),
	// also as RFC 3339.
	At string
}

func build(f figures, x texts, o Options) view {
	loc := o.Location
	v := view{Lang: x.code, T: x.m, Empty: len(f.periods) == 0, Geo: chartGeo,
		Title:     x.t("title", "queue", f.sale.Queue),
		DocTitle:  x.t("docTitle", "queue", f.sale.Queue),
		Generated: x.t("generated", "at", clock(o.Now, loc)),
	}
	from, until := f.sale.From, f.sale.Until
	if from.IsZero() {
		from = f.first
	}
	if until.IsZero() && !v.Empty {
		until = f.last.Add(time.Minute)
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return x.t("notKnown")
		}
		return clock(t, loc)
	}
	switch {
	case v.Empty:
		v.Span = x.t("empty", "from", at(from), "until", at(until))
	case f.width > 1:
		v.Span = x.t("spanPeriods", "from", at(from), "until", at(until), "zone", loc.String(), "n", x.count(int64(f.width)))
	default:
		v.Span = x.t("span", "from", at(from), "until", at(until), "zone", loc.String())
	}
	v.Moments = momentsTable(f.sale.Moments, x, loc)
	v.Audit = auditTable(f.sale.Audit, x, loc)
	if v.Empty {
		return v
	}
	v.Figures = summary(f, x, loc)
	v.Charts = []chart{lineChart(f, x, loc), admissionChart(f, x, loc), waitChart(f, x, loc), estimateChart(f, x, loc), coverageChart(f, x, loc)}
	if len(f.lanes) > 0 { // a queue without lanes has no such section
		v.Charts = append(v.Charts, lanesChart(f, x, loc))
	}
	if !f.bots.none() { // a sale without likely bots has no such section
		v.Charts = append(v.Charts, botsChart(f, x, loc))
	}
	v.Funnel = funnelOf(f.total, x)
	return v
}

// summary is the sale in a few figures.
func summary(f figures, x texts, loc *time.Location) []figure {
	t := f.total
	out := []figure{
		{ID: "fig-peak", Label: x.t("figPeak"), Text: x.t("figPeakText", "n", x.count(f.peak), "at", clock(f.peakAt, loc)),
			Value: strconv.FormatInt(f.peak, 10), At: f.peakAt.UTC().Format(time.RFC3339)},
		{ID: "fig-entered", Label: x.t("figEntered"), Text: x.count(t.Entered), Value: strconv.FormatInt(t.Entered, 10)},
		{ID: "fig-admitted", Label: x.t("figAdmitted"), Text: x.count(t.Admitted), Value: strconv.FormatInt(t.Admitted, 10)},
		{ID: "fig-ordered", Label: x.t("figOrdered"), Text: x.t("figOrderedText", "n", x.count(t.Ordered), "pct", x.percent(t.Ordered, t.Admitted)),
			Value: strconv.FormatInt(t.Ordered, 10)},
	}
	sold := figure{ID: "fig-sold-out", Label: x.t("figSoldOut"), Text: x.t("figNotSoldOut")}
	if !f.soldOut.IsZero() {
		sold.Text, sold.At = clock(f.soldOut, loc), f.soldOut.UTC().Format(time.RFC3339)
	}
	out = append(out, sold)
	for _, p := range []struct {
		id  string
		q   float64
		say string
	}{{"p50", 0.5, "p50"}, {"p90", 0.9, "p90"}, {"p95", 0.95, "p95"}, {"p99", 0.99, "p99"}} {
		fig := figure{ID: "fig-wait-" + p.id, Label: x.t("figWait", "p", p.say), Text: x.t("notKnown")}
		if s, ok := f.wait.Quantile(p.q); ok {
			fig.Text, fig.Value = x.duration(s), strconv.FormatFloat(s, 'f', 1, 64)
		}
		out = append(out, fig)
	}
	for _, r := range []struct {
		id, label string
		q         float64
	}{{"fig-estimate-p50", "figEstimate", 0.5}, {"fig-estimate-p90", "figEstimate90", 0.9}} {
		fig := figure{ID: r.id, Label: x.t(r.label), Text: x.t("notKnown")}
		if v, ok := f.ratio.Quantile(r.q); ok {
			fig.Text, fig.Value = x.ratio(v), strconv.FormatFloat(v, 'f', 3, 64)
		}
		out = append(out, fig)
	}
	return append(out, coverageFigure(f, x))
}

// momentsTable lists what happened, oldest first.
func momentsTable(ms []Moment, x texts, loc *time.Location) table {
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, func(a, b Moment) int { return a.At.Compare(b.At) })
	t := table{Head: []string{x.t("colAt"), x.t("colMoment"), x.t("colDetail")}}
	for _, m := range ms {
		t.Rows = append(t.Rows, []string{clock(m.At, loc), x.t("moment." + m.Kind), m.Detail})
	}
	return t
}
