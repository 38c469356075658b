package report

import (
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// The range shown beside a wait (issue 54) holds its 5th to 95th
// percentile: 90% of the waits scored should fall within it, the line of
// reference the coverage chart draws.
const coverageAim = 0.9

// coverageOf is the share of those scored whose wait fell within their
// range, and of those scored apart, with false where nobody was.
func coverageOf(c rollup.Coverage) (scored float64, scoredOK bool, apart float64, apartOK bool) {
	if n := c.In + c.Out; n > 0 {
		scored, scoredOK = float64(c.In)/float64(n), true
	}
	if n := c.ApartIn + c.ApartOut; n > 0 {
		apart, apartOK = float64(c.ApartIn)/float64(n), true
	}
	return scored, scoredOK, apart, apartOK
}

// coverageFigure is the summary's figure: the share of those scored whose
// wait fell within the range they were shown.
func coverageFigure(f figures, x texts) figure {
	fig := figure{ID: "fig-coverage", Label: x.t("figCoverage"), Text: x.t("notKnown")}
	if share, ok, _, _ := coverageOf(f.coverage); ok {
		scored := f.coverage.In + f.coverage.Out
		fig.Text = x.t("figCoverageText", "pct", x.percent(f.coverage.In, scored), "n", x.count(scored))
		fig.Value = strconv.FormatFloat(share, 'f', 4, 64)
	}
	return fig
}

// coverageChart is the section beside the estimates' ratio: how often the
// range shown at a place's taking came true, period by period and in all
// (the table's last row), for those scored and, apart, for those a pause
// or a rate cut caught in line; with the scored ones' realised ÷ shown
// beside, and those shown no range counted.
func coverageChart(f figures, x texts, loc *time.Location) chart {
	c := chart{ID: "coverage", Heading: x.t("coverageHeading")}
	t := f.coverage
	if t == (rollup.Coverage{}) {
		c.Desc, c.Empty = x.t("coverageNone"), true
		return c
	}
	c.Desc = coverageDesc(f, x)
	c.Table.Head = []string{x.t("colPeriod"), x.t("colScored"), x.t("colWithin"), x.t("seriesCoverage"), x.t("seriesRatio50"),
		x.t("seriesRatio90"), x.t("colApart"), x.t("seriesCoverageApart"), x.t("colNoRange")}
	row := func(first string, k rollup.Coverage, ratio Histogram) []string {
		q := func(p float64) string { v, ok := ratio.Quantile(p); return x.known(ok, x.ratio(v)) }
		return []string{first, x.count(k.In + k.Out), x.count(k.In), x.percent(k.In, k.In+k.Out), q(0.5), q(0.9),
			x.count(k.ApartIn + k.ApartOut), x.percent(k.ApartIn, k.ApartIn+k.ApartOut), x.count(k.Unknown)}
	}
	var scored, apart []point
	for _, p := range f.periods {
		s, sOK, a, aOK := coverageOf(p.coverage)
		if sOK {
			scored = append(scored, point{p.at(), 100 * s})
		}
		if aOK {
			apart = append(apart, point{p.at(), 100 * a})
		}
		c.Table.Rows = append(c.Table.Rows, row(clock(p.Start, loc), p.coverage, p.Estimate))
	}
	c.Table.Rows = append(c.Table.Rows, row(x.t("coverageTotal"), t, f.ratio))
	aim := []point{{f.first, 100 * coverageAim}, {f.last.Add(time.Duration(f.width) * time.Minute), 100 * coverageAim}}
	f.draw(&c, loc, 100, yAxis{func(float64) (float64, float64) { return 100, 25 }, func(v float64) string { return x.t("percent", "n", x.decimal(v, 0)) }},
		[]drawn{{name: x.t("seriesCoverage"), pts: scored}, {name: x.t("seriesCoverageApart"), pts: apart},
			{name: x.t("seriesAim"), pts: aim, whole: true}})
	return c
}

// coverageDesc says how the ranges fared in all: those scored, those
// scored apart, and those shown none.
func coverageDesc(f figures, x texts) string {
	t := f.coverage
	q := func(h Histogram, p float64) string { v, ok := h.Quantile(p); return x.known(ok, x.ratio(v)) }
	desc := x.t("coverageScored", "scored", x.count(t.In+t.Out), "pct", x.percent(t.In, t.In+t.Out), "in", x.count(t.In),
		"p50", q(f.ratio, 0.5), "p90", q(f.ratio, 0.9))
	if apart := t.ApartIn + t.ApartOut; apart > 0 {
		desc += " " + x.t("coverageApart", "apart", x.count(apart), "pct", x.percent(t.ApartIn, apart), "in", x.count(t.ApartIn),
			"p50", q(f.apartRatio, 0.5))
	} else {
		desc += " " + x.t("coverageApartNone")
	}
	if t.Unknown > 0 {
		desc += " " + x.t("coverageUnknown", "n", x.count(t.Unknown))
	}
	return desc
}
