package report

import (
	"math"
	"time"
)

// plotOf is a chart's axes over the sale, with room for the highest value.
func (f figures) plotOf(highest float64, nice func(float64) (top, step float64)) (axes, float64) {
	top, step := nice(highest)
	return axes{from: f.first, to: f.last.Add(time.Duration(f.width) * time.Minute), top: top}, step
}

// at is where a period's point is drawn: its end, when its figures are
// complete (the line's length is the length at the minute's end).
func (p period) at() time.Time { return p.Start.Add(time.Duration(p.Minutes) * time.Minute) }

// gap is how far apart two points may be and still be joined.
func (f figures) gap() time.Duration { return time.Duration(f.width)*time.Minute + time.Second }

// yAxis is how a chart's values are gridded and labelled.
type yAxis struct {
	nice   func(highest float64) (top, step float64)
	format func(float64) string
}

// draw fills a chart's axes, lines and labels.
func (f figures) draw(c *chart, loc *time.Location, highest float64, y yAxis, lines []drawn) {
	a, step := f.plotOf(highest, y.nice)
	c.XTicks, c.YTicks = a.xTicks(loc), a.yTicks(step, y.format)
	for i, l := range lines {
		if len(l.pts) == 0 {
			continue
		}
		gap := f.gap()
		if l.whole {
			gap = a.to.Sub(a.from) + time.Second
		}
		c.Series = append(c.Series, series{Name: l.name, Class: "s" + string(rune('1'+i)), Path: a.path(l.pts, gap, l.step)})
	}
}

// drawn is a series before it is drawn: step holds each value until the
// next; whole joins its points however far apart (a line of reference).
type drawn struct {
	name        string
	pts         []point
	step, whole bool
}

func lineChart(f figures, x texts, loc *time.Location) chart {
	last := f.periods[len(f.periods)-1]
	c := chart{ID: "line", Heading: x.t("lineHeading"),
		Desc: x.t("lineDesc", "peak", x.count(f.peak), "at", clockShort(f.peakAt, loc), "end", x.count(last.LineLength))}
	var length, most, pre []point
	c.Table.Head = []string{x.t("colPeriod"), x.t("seriesLength"), x.t("seriesLineMax")}
	if f.preQueue {
		c.Table.Head = append(c.Table.Head, x.t("seriesPreQueue"))
	}
	for _, p := range f.periods {
		length = append(length, point{p.at(), float64(p.LineLength)})
		most = append(most, point{p.at(), float64(p.LineMax)})
		row := []string{clock(p.Start, loc), x.count(p.LineLength), x.count(p.LineMax)}
		if f.preQueue {
			pre = append(pre, point{p.at(), float64(p.PreQueue)})
			row = append(row, x.count(p.PreQueue))
		}
		c.Table.Rows = append(c.Table.Rows, row)
	}
	f.draw(&c, loc, float64(f.peak), yAxis{niceTop, func(v float64) string { return x.count(int64(v)) }},
		[]drawn{{name: x.t("seriesLength"), pts: length}, {name: x.t("seriesLineMax"), pts: most}, {name: x.t("seriesPreQueue"), pts: pre}})
	return c
}

func admissionChart(f figures, x texts, loc *time.Location) chart {
	var admitted, rate []point
	highest := 0.0
	c := chart{ID: "admission", Heading: x.t("admissionHeading"),
		Table: table{Head: []string{x.t("colPeriod"), x.t("figAdmitted"), x.t("seriesAdmitted"), x.t("seriesRate")}}}
	for _, p := range f.periods {
		perSecond := p.admittedPerSecond()
		highest = max(highest, perSecond, p.RatePerSecond)
		admitted = append(admitted, point{p.at(), perSecond})
		rate = append(rate, point{p.at(), p.RatePerSecond})
		c.Table.Rows = append(c.Table.Rows, []string{clock(p.Start, loc), x.count(p.funnel.Admitted), x.decimal(perSecond, 1), x.decimal(p.RatePerSecond, 1)})
	}
	peak := 0.0
	for _, p := range admitted {
		peak = max(peak, p.V)
	}
	c.Desc = x.t("admissionDesc", "admitted", x.count(f.total.Admitted), "peak", x.decimal(peak, 1))
	f.draw(&c, loc, highest, yAxis{niceTop, func(v float64) string { return x.decimal(v, 1) }},
		[]drawn{{name: x.t("seriesAdmitted"), pts: admitted}, {name: x.t("seriesRate"), pts: rate, step: true}})
	return c
}

// quantiles are a histogram's values at ps, for the periods that have any.
func quantileLines(periods []period, h func(period) Histogram, ps ...float64) [][]point {
	out := make([][]point, len(ps))
	for _, p := range periods {
		for i, q := range ps {
			if v, ok := h(p).Quantile(q); ok {
				out[i] = append(out[i], point{p.at(), v})
			}
		}
	}
	return out
}

func waitChart(f figures, x texts, loc *time.Location) chart {
	c := chart{ID: "wait", Heading: x.t("waitHeading")}
	if !f.admittedAtAll {
		c.Desc, c.Empty = x.t("waitNone"), true
		return c
	}
	q := func(p float64) string { v, _ := f.wait.Quantile(p); return x.duration(v) }
	c.Desc = x.t("waitDesc", "p50", q(0.5), "p90", q(0.9), "p99", q(0.99))
	lines := quantileLines(f.periods, func(p period) Histogram { return p.TimeInLine }, 0.5, 0.9, 0.99)
	c.Table.Head = []string{x.t("colPeriod"), x.t("figAdmitted"), x.t("seriesP50"), x.t("seriesP90"), x.t("seriesP99")}
	highest := 0.0
	for _, p := range f.periods {
		row := []string{clock(p.Start, loc), x.count(p.TimeInLine.Count())}
		for _, qq := range []float64{0.5, 0.9, 0.99} {
			v, ok := p.TimeInLine.Quantile(qq)
			row = append(row, x.known(ok, x.duration(v)))
			highest = max(highest, v)
		}
		c.Table.Rows = append(c.Table.Rows, row)
	}
	f.draw(&c, loc, highest, yAxis{niceDuration, x.axisDuration},
		[]drawn{{name: x.t("seriesP50"), pts: lines[0]}, {name: x.t("seriesP90"), pts: lines[1]}, {name: x.t("seriesP99"), pts: lines[2]}})
	return c
}

// ratioCeiling is the highest estimate ratio the chart makes room for: a
// wait shown as "any moment now" that took minutes has a ratio in the
// hundreds, and would flatten every other line.
const ratioCeiling = 5

func estimateChart(f figures, x texts, loc *time.Location) chart {
	c := chart{ID: "estimate", Heading: x.t("estimateHeading")}
	if f.ratio.Count() == 0 {
		c.Desc, c.Empty = x.t("estimateNone"), true
		return c
	}
	q := func(p float64) string { v, _ := f.ratio.Quantile(p); return x.ratio(v) }
	c.Desc = x.t("estimateDesc", "p50", q(0.5), "p90", q(0.9))
	lines := quantileLines(f.periods, func(p period) Histogram { return p.Estimate }, 0.5, 0.9)
	c.Table.Head = []string{x.t("colPeriod"), x.t("seriesRatio50"), x.t("seriesRatio90")}
	highest := 1.0
	for _, p := range f.periods {
		row := []string{clock(p.Start, loc)}
		for _, qq := range []float64{0.5, 0.9} {
			v, ok := p.Estimate.Quantile(qq)
			row = append(row, x.known(ok, x.ratio(v)))
			highest = max(highest, math.Min(v, ratioCeiling))
		}
		c.Table.Rows = append(c.Table.Rows, row)
	}
	exact := []point{{f.first, 1}, {f.last.Add(time.Duration(f.width) * time.Minute), 1}}
	f.draw(&c, loc, highest, yAxis{niceTop, x.ratio}, []drawn{{name: x.t("seriesRatio50"), pts: lines[0]},
		{name: x.t("seriesRatio90"), pts: lines[1]}, {name: x.t("seriesExact"), pts: exact, whole: true}})
	return c
}
