package report

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// maxPoints bounds the points a chart draws and the rows its table has:
// a sale of hours is drawn minute by minute, a span of days a few minutes
// to a point, and the file stays small whatever the span.
const maxPoints = 240

// widths are the periods a point may stand for, in minutes.
var widths = []int{1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440}

// funnel is what happened to people, counted.
type funnel struct {
	Entered, Left, Skipped, Admitted, Used, Ordered, Expired int64
}

func (f *funnel) add(m Minute) {
	f.Entered += m.Entered
	f.Left += m.Left
	f.Skipped += m.Skipped
	f.Admitted += m.Admitted
	f.Used += m.Used
	f.Ordered += m.Ordered
	f.Expired += m.Expired
}

// quiet: nobody was in line or came, went or bought in the minute, and
// no likely bot was counted.
func quiet(m Minute) bool {
	var f funnel
	f.add(m)
	var b bots
	b.add(m)
	return f == funnel{} && b.none() && m.LineLength == 0 && m.LineMax == 0 && m.PreQueue == 0
}

// period is consecutive minutes drawn as one point.
type period struct {
	Start   time.Time
	Minutes int // the width
	// The line at the period's last recorded minute's end, and its most.
	LineLength, LineMax, PreQueue int64
	// RatePerSecond is the rate in force at the period's end.
	RatePerSecond        float64
	funnel               funnel
	bots                 bots
	TimeInLine, Estimate Histogram
	// coverage is how the ranges shown fared (issue 54).
	coverage rollup.Coverage
	// laneAdmitted counts each lane's admitted in the period (issue 53).
	laneAdmitted map[string]int64
	// The minutes' histograms, merged once the period is whole.
	waits, ratios []Histogram
}

// admittedPerSecond is the period's admission rate.
func (p period) admittedPerSecond() float64 {
	return float64(p.funnel.Admitted) / (60 * float64(p.Minutes))
}

// figures are a sale worked out: its periods and its totals.
type figures struct {
	sale          Sale
	first, last   time.Time // the first and last minutes' starts
	width         int       // minutes per period
	periods       []period  // only periods with a minute in them
	total         funnel
	bots          bots      // the likely bots, in all
	peak          int64     // the longest the line was
	peakAt        time.Time // the first minute it was
	wait, ratio   Histogram
	apartRatio    Histogram       // the realised ÷ shown of those scored apart
	coverage      rollup.Coverage // how the ranges shown fared, in all
	soldOut       time.Time       // the first sell-out in the span (zero: none)
	preQueue      bool            // anyone ever waited for the opening
	admittedAtAll bool
	lanes         []laneTotals // none without lanes
}

// workOut sorts the sale's minutes, groups them into periods and adds up
// its totals.
func workOut(s Sale) figures {
	ms := slices.Clone(s.Minutes)
	slices.SortFunc(ms, func(a, b Minute) int { return a.Start.Compare(b.Start) })
	// A store may keep a minute for every minute of its retention: the
	// quiet ones before the sale and after it are no part of the report.
	for len(ms) > 0 && quiet(ms[0]) {
		ms = ms[1:]
	}
	for len(ms) > 0 && quiet(ms[len(ms)-1]) {
		ms = ms[:len(ms)-1]
	}
	f := figures{sale: s}
	for _, m := range s.Moments {
		if m.Kind == MomentSoldOut && (f.soldOut.IsZero() || m.At.Before(f.soldOut)) {
			f.soldOut = m.At
		}
	}
	if len(ms) == 0 {
		return f
	}
	f.first, f.last = ms[0].Start, ms[len(ms)-1].Start
	span := int(f.last.Sub(f.first)/time.Minute) + 1
	f.width = widths[len(widths)-1]
	for _, w := range widths {
		if (span+w-1)/w <= maxPoints {
			f.width = w
			break
		}
	}
	var ratios, aparts []Histogram
	for _, m := range ms {
		f.total.add(m)
		f.bots.add(m)
		if top := max(m.LineMax, m.LineLength); top > f.peak || f.peakAt.IsZero() {
			f.peak, f.peakAt = top, m.Start
		}
		f.preQueue = f.preQueue || m.PreQueue > 0
		ratios, aparts = append(ratios, m.EstimateRatio), append(aparts, m.ApartRatio)
		f.coverage = f.coverage.Plus(m.EstimateCoverage)
		f.addLanes(m)
		f.addToPeriod(m)
	}
	f.wait, f.ratio, f.apartRatio = Sale{Minutes: ms}.TimeInLine(), Merge(ratios...), Merge(aparts...)
	for i := range f.periods {
		p := &f.periods[i]
		p.TimeInLine, p.Estimate, p.waits, p.ratios = Merge(p.waits...), Merge(p.ratios...), nil, nil
	}
	f.admittedAtAll = f.wait.Count() > 0
	return f
}

// addToPeriod adds a minute (in order) to the period it falls in.
func (f *figures) addToPeriod(m Minute) {
	width := time.Duration(f.width) * time.Minute
	start := f.first.Add(m.Start.Sub(f.first) / width * width)
	if n := len(f.periods); n == 0 || !f.periods[n-1].Start.Equal(start) {
		f.periods = append(f.periods, period{Start: start, Minutes: f.width})
	}
	p := &f.periods[len(f.periods)-1]
	p.LineLength, p.PreQueue, p.RatePerSecond = m.LineLength, m.PreQueue, m.RatePerSecond
	p.LineMax = max(p.LineMax, m.LineMax, m.LineLength)
	p.funnel.add(m)
	p.bots.add(m)
	p.addLanes(m.Lanes)
	p.waits, p.ratios = append(p.waits, m.TimeInLine), append(p.ratios, m.EstimateRatio)
	p.coverage = p.coverage.Plus(m.EstimateCoverage)
}
