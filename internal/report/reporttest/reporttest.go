// Package reporttest is a sale whose every figure is known: a line
// simulated second by second, person by person, kept as the store keeps
// it (per-minute rollups with ~5% histograms) and as the truth (each
// person's wait), for tests of the report and of whatever feeds it.
package reporttest

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/report"
)

// Start is the scenario's first minute.
var Start = time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)

// The scenario, second by second from Start: who arrives, at what rate the
// line is let in, when it pauses and sells out.
const (
	Seconds   = 45 * 60
	pauseFrom = 1500 // admission paused for two minutes
	pauseTo   = 1620
	soldOutAt = 1980 // sold out: admission and entering stop
	entryTTL  = 300
)

func arrivals(s int) int {
	switch {
	case s < 300:
		return 60
	case s < 900:
		return 10
	case s < 1200:
		return 2
	}
	return 30 // a second wave, more than admission takes: a line when it sells out
}

func rate(s int) float64 {
	switch {
	case s >= pauseFrom && s < pauseTo:
		return 0
	case s < 900:
		return 15
	}
	return 25
}

// Truth is what happened to every person, exactly.
type Truth struct {
	// Waits are the seconds each admitted person waited, sorted; Ratios
	// the wait realised over the wait shown of those scored (shown more
	// than 0 and a range, and not caught in line by the pause), sorted,
	// and ApartRatios those of the people scored apart (in line when the
	// pause came).
	Waits, Ratios, ApartRatios []float64
	// Coverage is how the range each admitted person was shown fared
	// (rollup.Wait.Outcome), in all and in each minute from Start.
	Coverage         rollup.Coverage
	CoverageByMinute []rollup.Coverage
	// PeakLine is the longest the line was, PeakAt the minute it first was.
	PeakLine                                                 int64
	PeakAt                                                   time.Time
	SoldOut                                                  time.Time
	Entered, Left, Skipped, Admitted, Used, Ordered, Expired int64
	// Bots are SaleWithBots' likely bots in all, BotsByMinute in each
	// minute from Start; none in Sale's.
	Bots         Bots
	BotsByMinute []Bots
}

// Bots are likely bots counted (issue 51), as the sale's rows count them:
// places the signals marked, by signal, and what became of them.
type Bots struct {
	Suspects, Shadowed, Refused, Challenged, Cleared int64
	Signals                                          map[string]int64
}

// EnteredText is how many took a place, as the English report writes it
// (26,160).
func (t Truth) EnteredText() string { return English(t.Entered) }

// English is n as the English report writes a count (26,160).
func English(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Quantile is the nearest-rank p-quantile of sorted values.
func Quantile(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

type person struct {
	arrived int
	shown   float64
	// low and high are the range shown beside shown (issue 54), -1 when
	// none was: while paused the wait is not known.
	low, high float64
	n         int // arrival number, from 1
}

// rangeFactor widens a shown wait into the range shown beside it, as the
// estimate's model does (estimate.Of: 1 + 1.645·σ, here σ = 0.15, and a
// tick of a second either way): wide enough for a wait that comes true,
// too narrow for one shown at 25/s while the line moved at 15/s.
const rangeFactor = 1 + 1.645*0.15

// Sale is the scenario as the report reads it, and the truth about it.
func Sale(queue string) (report.Sale, Truth) {
	sim := simulation{minutes: make([]report.Minute, Seconds/60)}
	for i := range sim.minutes {
		sim.minutes[i].Start = Start.Add(time.Duration(i) * time.Minute)
	}
	for s := range Seconds {
		sim.second(s)
	}
	slices.Sort(sim.truth.Waits)
	slices.Sort(sim.truth.Ratios)
	slices.Sort(sim.truth.ApartRatios)
	sim.truth.SoldOut = Start.Add(soldOutAt * time.Second)
	sale := report.Sale{Queue: queue, From: Start, Until: Start.Add(Seconds * time.Second), Minutes: sim.minutes, Moments: moments()}
	for i := range sale.Minutes {
		sale.Minutes[i].TimeInLine = Buckets(sim.waits[i], Growth)
		sale.Minutes[i].EstimateRatio = Buckets(sim.ratios[i], Growth)
		sale.Minutes[i].ApartRatio = Buckets(sim.apartRatios[i], Growth)
	}
	return sale, sim.truth
}

func moments() []report.Moment {
	at := func(s int) time.Time { return Start.Add(time.Duration(s) * time.Second) }
	return []report.Moment{
		{At: at(0), Kind: report.MomentOpened, Detail: "opensAt"},
		{At: at(900), Kind: report.MomentRateChanged, Detail: "15/s → 25/s"},
		{At: at(pauseFrom), Kind: report.MomentPaused},
		{At: at(pauseTo), Kind: report.MomentResumed},
		{At: at(soldOutAt), Kind: report.MomentSoldOut, Detail: "0 units left"},
	}
}

type simulation struct {
	line    []person
	minutes []report.Minute
	waits   map[int][]float64
	ratios  map[int][]float64
	// apartRatios are the ratios of those scored apart, by minute.
	apartRatios map[int][]float64
	truth       Truth
	n           int
	credit      float64
	popped      int
}

func (sim *simulation) second(s int) {
	m := &sim.minutes[s/60]
	m.RatePerSecond = rate(s)
	if s < soldOutAt {
		sim.arrive(s, m)
		sim.admit(s, m)
	}
	// Every 50th to arrive gives up after two minutes, if still waiting.
	sim.line = slices.DeleteFunc(sim.line, func(p person) bool {
		if p.n%50 == 0 && s-p.arrived == 120 {
			m.Left++
			sim.truth.Left++
			return true
		}
		return false
	})
	n := int64(len(sim.line))
	m.LineLength, m.LineMax = n, max(m.LineMax, n)
	if n > sim.truth.PeakLine {
		sim.truth.PeakLine, sim.truth.PeakAt = n, m.Start
	}
}

func (sim *simulation) arrive(s int, m *report.Minute) {
	for range arrivals(s) {
		sim.n++
		shown := math.Ceil(float64(len(sim.line)+1) / max(rate(s), 25))
		p := person{arrived: s, shown: shown, low: -1, high: -1, n: sim.n}
		if rate(s) > 0 {
			p.low, p.high = max(0, math.Floor(shown/rangeFactor-1)), math.Ceil(shown*rangeFactor+1)
		}
		sim.line = append(sim.line, p)
		m.Entered++
		sim.truth.Entered++
	}
}

func (sim *simulation) admit(s int, m *report.Minute) {
	if sim.waits == nil {
		sim.waits, sim.ratios, sim.apartRatios = map[int][]float64{}, map[int][]float64{}, map[int][]float64{}
		sim.truth.CoverageByMinute = make([]rollup.Coverage, len(sim.minutes))
	}
	sim.credit += rate(s)
	for sim.credit >= 1 && len(sim.line) > 0 {
		sim.credit--
		p := sim.line[0]
		sim.line = sim.line[1:]
		sim.popped++
		if sim.popped%100 == 0 { // a no-show, skipped
			m.Skipped++
			sim.truth.Skipped++
			continue
		}
		sim.let(s, m, p)
	}
	if len(sim.line) == 0 {
		sim.credit = min(sim.credit, 1) // no saving up while nobody waits
	}
}

// let lets p in at second s: most use their entry and order, some let it
// expire, and a few use it without ordering.
func (sim *simulation) let(s int, m *report.Minute, p person) {
	t := &sim.truth
	m.Admitted++
	t.Admitted++
	wait := float64(s - p.arrived)
	sim.waits[s/60] = append(sim.waits[s/60], wait)
	t.Waits = append(t.Waits, wait)
	sim.score(s, m, p)
	switch {
	case t.Admitted%13 == 0: // never came back: expired
		if e := (s + entryTTL) / 60; e < len(sim.minutes) {
			sim.minutes[e].Expired++
			t.Expired++
		}
	default:
		m.Used++
		t.Used++
		if t.Admitted%25 != 0 {
			m.Ordered++
			t.Ordered++
		}
	}
}

// score counts how the range p was shown fared, let in at second s: those
// in line when the pause came are scored apart, those shown no range (they
// took their place while paused) are not scored.
func (sim *simulation) score(s int, m *report.Minute, p person) {
	t, wait := &sim.truth, float64(s-p.arrived)
	within, apart := wait >= p.low && wait <= p.high, p.arrived < pauseFrom && s >= pauseFrom
	c := rollup.Coverage{}
	switch {
	case p.low < 0:
		c.Unknown = 1
	case apart && within:
		c.ApartIn = 1
	case apart:
		c.ApartOut = 1
	case within:
		c.In = 1
	default:
		c.Out = 1
	}
	m.EstimateCoverage = m.EstimateCoverage.Plus(c)
	t.Coverage = t.Coverage.Plus(c)
	t.CoverageByMinute[s/60] = t.CoverageByMinute[s/60].Plus(c)
	switch {
	case p.low < 0 || p.shown <= 0:
	case apart:
		sim.apartRatios[s/60] = append(sim.apartRatios[s/60], wait/p.shown)
		t.ApartRatios = append(t.ApartRatios, wait/p.shown)
	default:
		sim.ratios[s/60] = append(sim.ratios[s/60], wait/p.shown)
		t.Ratios = append(t.Ratios, wait/p.shown)
	}
}

// Growth is the scenario's buckets' ratio: 2^(1/16), 4.4% wide.
var Growth = math.Pow(2, 1.0/16)

// Buckets is values as a store would keep them: counts by bucket index,
// bucket i holding (growth^(i-1), growth^i], and 0 a bucket of its own.
func Buckets(values []float64, growth float64) report.Histogram {
	var zero int64
	counts := map[int]int64{}
	for _, v := range values {
		if v <= 0 {
			zero++
			continue
		}
		i := int(math.Ceil(math.Log(v) / math.Log(growth)))
		for v > math.Pow(growth, float64(i)) { // floating point at an edge
			i++
		}
		for v <= math.Pow(growth, float64(i-1)) {
			i--
		}
		counts[i]++
	}
	return report.Exponential(growth, zero, counts)
}

// The bot farm of SaleWithBots: botsPerSecond places a second through the
// first wave, marked by turns (one in three by its address range, the
// others by the edge's score, half of them polling too fast too); every
// tenth refused, every tenth from the fifth challenged, the rest kept in
// the shadow line, and every 97th an operator clears botClearAfter later.
const (
	botsUntil     = 600
	botsPerSecond = 5
	botClearAfter = 120
)

// SaleWithBots is Sale with a bot farm beside its people: the people's
// figures are Sale's (a cleared place is counted as cleared alone), and
// the truth's Bots and BotsByMinute say what the farm's rows count.
func SaleWithBots(queue string) (report.Sale, Truth) {
	sale, truth := Sale(queue)
	truth.BotsByMinute = make([]Bots, len(sale.Minutes))
	count := func(minute int, edit func(*Bots, *report.Minute)) {
		edit(&truth.Bots, &report.Minute{})
		edit(&truth.BotsByMinute[minute], &sale.Minutes[minute])
	}
	b := 0
	for s := range botsUntil {
		for range botsPerSecond {
			b++
			signals := []string{"address_range"}
			switch b % 3 {
			case 1:
				signals = []string{"edge_score", "poll_rate"}
			case 2:
				signals = []string{"edge_score"}
			}
			count(s/60, func(c *Bots, m *report.Minute) {
				c.Suspects++
				m.Suspects++
				for _, sig := range signals {
					c.Signals = addTo(c.Signals, sig)
					m.Signals = addTo(m.Signals, sig)
				}
				switch b % 10 {
				case 0:
					c.Refused++
					m.RefusedSuspects++
				case 5:
					c.Challenged++
					m.ChallengedSuspects++
				default:
					c.Shadowed++
					m.Shadowed++
				}
			})
			if b%10 != 0 && b%10 != 5 && b%97 == 0 {
				count((s+botClearAfter)/60, func(c *Bots, m *report.Minute) { c.Cleared++; m.Cleared++ })
			}
		}
	}
	return sale, truth
}

// addTo is counts with one more of name.
func addTo(counts map[string]int64, name string) map[string]int64 {
	if counts == nil {
		counts = map[string]int64{}
	}
	counts[name]++
	return counts
}
