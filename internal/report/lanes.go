package report

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// laneTotals is one lane (issue 53) over the sale: its share and length
// as last read, what it let in and the codes redeemed for it, the
// redemptions its codes still held at the end, and its time in line.
type laneTotals struct {
	name                          string
	share                         float64
	length                        int64
	admitted, redeemed, codesLeft int64
	wait                          Histogram
}

// addLanes adds a minute (in order) to the sale's lanes: each lane in the
// order the stats list them, a lane first seen later after the others.
func (f *figures) addLanes(m Minute) {
	others := make([]Histogram, 0, len(m.LaneTimeInLine))
	for _, l := range m.Lanes {
		i := slices.IndexFunc(f.lanes, func(t laneTotals) bool { return t.name == l.Name })
		if i < 0 {
			f.lanes, i = append(f.lanes, laneTotals{name: l.Name}), len(f.lanes)
		}
		t := &f.lanes[i]
		t.share, t.length, t.codesLeft = l.Share, l.Length, l.CodesLeft
		t.admitted += l.Admitted
		t.redeemed += l.Redeemed
		if h, ok := m.LaneTimeInLine[l.Name]; ok {
			t.wait = Merge(t.wait, h)
			others = append(others, h)
		}
	}
	if i := slices.IndexFunc(f.lanes, func(t laneTotals) bool { return t.name == lane.Public }); i >= 0 && len(m.Lanes) > 0 {
		f.lanes[i].wait = Merge(f.lanes[i].wait, less(m.TimeInLine, others...))
	}
}

// less is h with the observations of others taken out, bucket by bucket
// (the public lane's time in line: the whole's less the other lanes').
func less(h Histogram, others ...Histogram) Histogram {
	type bounds struct{ lo, hi float64 }
	n := map[bounds]int64{}
	for _, b := range h {
		n[bounds{b.Lo, b.Hi}] += b.Count
	}
	for _, o := range others {
		for _, b := range o {
			n[bounds{b.Lo, b.Hi}] -= b.Count
		}
	}
	out := Histogram{}
	for k, c := range n {
		if c > 0 {
			out = append(out, Bucket{Lo: k.lo, Hi: k.hi, Count: c})
		}
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Or(cmp.Compare(a.Hi, b.Hi), cmp.Compare(a.Lo, b.Lo)) })
	return out
}

// lanesTimed says whether the sale's rows say who waited in which lane:
// every lane but the public that let anyone in has times in line. Both
// stores say each admitted user's lane (rollup.Wait.Lane); rows written
// before they did show no lane's time.
func (f figures) lanesTimed() bool {
	for _, t := range f.lanes {
		if t.name != lane.Public && t.admitted > 0 && t.wait.Count() == 0 {
			return false
		}
	}
	return true
}

// addLanes adds a minute's lanes' admissions to its period.
func (p *period) addLanes(lanes []rollup.LaneFigures) {
	for _, l := range lanes {
		if p.laneAdmitted == nil {
			p.laneAdmitted = map[string]int64{}
		}
		p.laneAdmitted[l.Name] += l.Admitted
	}
}

// lanesChart is the "Lanes" section of a queue with lanes: a table of
// each lane's figures over the sale (its admissions against its share,
// its length at the end, its time in line, its codes redeemed and left),
// and a chart of each lane's admissions a second, period by period, with
// its table. A sale without lanes has no such section (build).
func lanesChart(f figures, x texts, loc *time.Location) chart {
	timed := f.lanesTimed()
	said := make([]string, len(f.lanes))
	lead := table{Head: []string{x.t("colLane"), x.t("colLaneShare"), x.t("figAdmitted"), x.t("colOfAdmitted"), x.t("colLaneLength"),
		x.t("seriesP50"), x.t("seriesP90"), x.t("colRedeemed"), x.t("colCodesLeft")}}
	for i, t := range f.lanes {
		share := x.decimal(100*t.share, 1)
		said[i] = x.t("laneSaid", "lane", t.name, "pct", x.percent(t.admitted, f.total.Admitted), "share", x.t("percent", "n", share))
		q := func(p float64) string { v, ok := t.wait.Quantile(p); return x.known(ok && timed, x.duration(v)) }
		lead.Rows = append(lead.Rows, []string{t.name, x.t("percent", "n", share), x.count(t.admitted), x.percent(t.admitted, f.total.Admitted),
			x.count(t.length), q(0.5), q(0.9), x.count(t.redeemed), x.count(t.codesLeft)})
	}
	desc := x.t("laneDesc", "lanes", strings.Join(said, x.t("listSep")))
	if !timed {
		desc += " " + x.t("laneNotTimed")
	}
	c := chart{ID: "lanes", Heading: x.t("laneHeading"), Desc: desc, Lead: &lead}
	c.Table.Head = []string{x.t("colPeriod")}
	lines := make([]drawn, len(f.lanes))
	highest := 0.0
	for i, t := range f.lanes {
		c.Table.Head = append(c.Table.Head, x.t("laneAdmitted", "lane", t.name))
		lines[i].name = x.t("laneAdmitted", "lane", t.name)
	}
	for _, p := range f.periods {
		row := []string{clock(p.Start, loc)}
		for i, t := range f.lanes {
			perSecond := float64(p.laneAdmitted[t.name]) / (60 * float64(p.Minutes))
			lines[i].pts = append(lines[i].pts, point{p.at(), perSecond})
			highest = max(highest, perSecond)
			row = append(row, x.decimal(perSecond, 1))
		}
		c.Table.Rows = append(c.Table.Rows, row)
	}
	f.draw(&c, loc, highest, yAxis{niceTop, func(v float64) string { return x.decimal(v, 1) }}, lines)
	return c
}
