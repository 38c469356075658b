package report

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"
)

// bots is what the signals marked as likely bots (issue 51), counted:
// places marked (Suspects) and by signal (a place with two counts under
// both), and what became of them.
type bots struct {
	Suspects, Shadowed, Refused, Challenged, Cleared int64
	Signals                                          map[string]int64
}

func (b *bots) add(m Minute) {
	b.Suspects += m.Suspects
	b.Shadowed += m.Shadowed
	b.Refused += m.RefusedSuspects
	b.Challenged += m.ChallengedSuspects
	b.Cleared += m.Cleared
	for s, n := range m.Signals {
		if b.Signals == nil {
			b.Signals = map[string]int64{}
		}
		b.Signals[s] += n
	}
}

// none: no signal marked anyone and nothing became of anyone.
func (b bots) none() bool {
	return b.Suspects == 0 && b.Shadowed == 0 && b.Refused == 0 && b.Challenged == 0 && b.Cleared == 0 && len(b.Signals) == 0
}

// outcomes are what became of the marked places, in the chart's and the
// table's order: its text key and its count.
func (b bots) outcomes() []struct {
	key string
	n   int64
} {
	return []struct {
		key string
		n   int64
	}{{"botsShadowed", b.Shadowed}, {"botsRefused", b.Refused}, {"botsChallenged", b.Challenged}, {"botsCleared", b.Cleared}}
}

// signalsByCount are the signals that marked anyone, most first (then by
// name, so the order is the same every time).
func (b bots) signalsByCount() []string {
	return slices.SortedFunc(maps.Keys(b.Signals), func(x, y string) int {
		return cmp.Or(cmp.Compare(b.Signals[y], b.Signals[x]), strings.Compare(x, y))
	})
}

// botsChart is the "Likely bots" section: the signals by count and what
// became of the places they marked, per period and in all (the table's
// last row); the chart draws what became of them. Only a sale in which
// anything was counted has the section (build).
func botsChart(f figures, x texts, loc *time.Location) chart {
	t := f.bots
	signals := t.signalsByCount()
	said := make([]string, len(signals))
	for i, s := range signals {
		said[i] = x.t("botsSignal", "signal", x.signal(s), "n", x.count(t.Signals[s]))
	}
	c := chart{ID: "bots", Heading: x.t("botsHeading"),
		Desc: x.t("botsDesc", "suspects", x.count(t.Suspects), "signals", x.known(len(said) > 0, strings.Join(said, x.t("listSep"))),
			"shadowed", x.count(t.Shadowed), "refused", x.count(t.Refused), "challenged", x.count(t.Challenged), "cleared", x.count(t.Cleared))}
	c.Table.Head = []string{x.t("colPeriod")}
	for _, s := range signals {
		c.Table.Head = append(c.Table.Head, x.signal(s))
	}
	c.Table.Head = append(c.Table.Head, x.t("botsMarked"))
	for _, o := range t.outcomes() {
		c.Table.Head = append(c.Table.Head, x.t(o.key))
	}
	row := func(first string, b bots) []string {
		r := []string{first}
		for _, s := range signals {
			r = append(r, x.count(b.Signals[s]))
		}
		r = append(r, x.count(b.Suspects))
		for _, o := range b.outcomes() {
			r = append(r, x.count(o.n))
		}
		return r
	}
	lines := make([]drawn, len(t.outcomes()))
	highest := 0.0
	for i, o := range t.outcomes() {
		lines[i].name = x.t(o.key)
		for _, p := range f.periods {
			n := p.bots.outcomes()[i].n
			if o.n > 0 { // an outcome that never happened draws no line
				lines[i].pts = append(lines[i].pts, point{p.at(), float64(n)})
			}
			highest = max(highest, float64(n))
		}
	}
	for _, p := range f.periods {
		c.Table.Rows = append(c.Table.Rows, row(clock(p.Start, loc), p.bots))
	}
	c.Table.Rows = append(c.Table.Rows, row(x.t("botsTotal"), t))
	f.draw(&c, loc, highest, yAxis{niceTop, func(v float64) string { return x.count(int64(v)) }}, lines)
	return c
}
