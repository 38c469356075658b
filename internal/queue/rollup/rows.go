package rollup

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Write is what one instance adds to a queue's row of the minute it is in
// (queue.Store.Roll): safe to repeat and to race (the package doc).
type Write struct {
	// Add is added to the row's fields; Max raises them to at least,
	// Min lowers them to at most, Set sets them.
	Add, Max, Min map[string]int64
	Set           map[string]string
	// Keep is how long the row is kept after this write (the retention).
	Keep time.Duration
}

// Empty says the write changes nothing.
func (w Write) Empty() bool {
	return len(w.Add) == 0 && len(w.Max) == 0 && len(w.Min) == 0 && len(w.Set) == 0
}

// MaxRange bounds the span one read of rows covers (operate.Operator.Rollups):
// a month of minutes.
const MaxRange = 31 * 24 * time.Hour

// Row is one minute of a queue as a store keeps it.
type Row struct {
	Minute time.Time // its start
	Fields map[string]string
}

// The funnel: the line's totals (queue.Stats), raised in every row to what
// an instance read (Max) and lowered in "from." fields to its first
// reading in the minute (Min); the shadow line's places taken and those
// cleared into the line (issue 51) are totals of the store's alike.
var funnel = []string{"entered", "left", "skipped", "admitted", "used", "expired", "shadowed", "cleared"}

// The likely bots' fields that the instance judging them adds (issue 51;
// events.SuspectTally): places marked by signal (SuspectField of package
// suspect's names; a place with two signals counts under both), places
// marked at all, and those refused (403) or given the costlier proof of
// work. Build reads them into Figures.
const (
	suspectPrefix      = "suspect_"
	SuspectPlaces      = "suspects"
	RefusedSuspects    = "refused_suspects"
	ChallengedSuspects = "challenged_suspects"
)

// SuspectField is the row field counting places that signal marked.
func SuspectField(signal string) string { return suspectPrefix + signal }

// Reading is the line's state as one instance read it: its totals since
// the queue was created (the shadow line's places taken and those cleared
// among them), its length, its pre-queue and the rate in force.
type Reading struct {
	Entered, Left, Skipped, Admitted, Used, Expired int64
	Shadowed, Cleared                               int64
	Length, PreQueue                                int64
	Rate                                            float64
	// Lanes are the queue's lanes as its stats list them (issue 53; none
	// without lanes), their Admitted and Redeemed the totals since the
	// queue was made.
	Lanes []LaneFigures
}

// A lane's fields in a row (issue 53): its share (millionths), length and
// codes left as last read (Set), its totals admitted and redeemed raised
// (Max) and their first reading in the minute (Min, "from."), as the
// funnel's; laneOrder lists the lanes as the stats did, and each
// admitted user's time in line in a lane other than the public is also
// counted in that lane's buckets (laneTimePrefix).
const (
	laneOrder      = "lanes"
	laneTimePrefix = "tl:"
)

// An admitted user's estimate in a row (issue 54): counted by how it fared
// (coverPrefix and Outcome's word), and, when scored apart, its ratio in
// the apart ones' buckets (the scored ones' are "r<bucket>").
const (
	coverPrefix      = "cover:"
	apartRatioPrefix = "ra:"
)

func laneField(name, what string) string { return "lane:" + name + ":" + what }

// Equal reports whether r and o read the same.
func (r Reading) Equal(o Reading) bool { return reflect.DeepEqual(r, o) }

// Write is the write of reading r, with add (Pending.Take) added.
func (r Reading) Write(add map[string]int64, keep time.Duration) Write {
	totals := []int64{r.Entered, r.Left, r.Skipped, r.Admitted, r.Used, r.Expired, r.Shadowed, r.Cleared}
	w := Write{Add: add, Max: map[string]int64{"maxLength": r.Length}, Min: map[string]int64{}, Keep: keep,
		Set: map[string]string{"length": strconv.FormatInt(r.Length, 10), "preQueue": strconv.FormatInt(r.PreQueue, 10),
			"rate": strconv.FormatInt(int64(math.Round(r.Rate*1000)), 10)}}
	for i, name := range funnel {
		w.Max[name], w.Min["from."+name] = totals[i], totals[i]
	}
	names := make([]string, len(r.Lanes))
	for i, l := range r.Lanes {
		names[i] = l.Name
		w.Set[laneField(l.Name, "share")] = strconv.FormatInt(int64(math.Round(l.Share*1e6)), 10)
		w.Set[laneField(l.Name, "length")] = strconv.FormatInt(l.Length, 10)
		w.Set[laneField(l.Name, "codesLeft")] = strconv.FormatInt(l.CodesLeft, 10)
		for what, n := range map[string]int64{"admitted": l.Admitted, "redeemed": l.Redeemed} {
			w.Max[laneField(l.Name, what)], w.Min["from."+laneField(l.Name, what)] = n, n
		}
	}
	if len(names) > 0 {
		w.Set[laneOrder] = strings.Join(names, ",")
	}
	return w
}

// MomentWrite is the write that records a moment of the sale in the row
// of its minute's instance: data is the event's (JSON).
func MomentWrite(m Moment, keep time.Duration) Write {
	data, _ := json.Marshal(m.Data)
	return Write{Set: map[string]string{"moment:" + strconv.FormatInt(m.At.UnixMilli(), 10) + ":" + m.Type: string(data)}, Keep: keep}
}

// Minute is one minute of a queue's sale, the one shape of it: as Build
// makes it from the rows, with the rows' own histograms (H = Histogram:
// bucket → count, in milli-units), and as the sale's report reads and
// draws it, with buckets bounded in units (report.Minute =
// Minute[report.Histogram], whose JSON the admin API's rollups route
// answers). Only the histograms differ between the two; WithHistograms
// turns one into the other.
type Minute[H any] struct {
	Figures
	// TimeInLine counts the minute's admitted by their time in line
	// (Histogram: ms in Bucket's buckets; the report's: seconds),
	// EstimateRatio those scored (issue 54: shown a range at join, nothing
	// unforeseeable after: Outcome in or out) by their wait realised over
	// the wait shown (1: exact; 2: twice as long; Histogram: × 1000,
	// Wait.Ratio), and ApartRatio those scored apart (apart_in, apart_out)
	// alike. Rows written before issue 54 counted everyone shown a wait in
	// EstimateRatio.
	TimeInLine    H `json:"timeInLine"`
	EstimateRatio H `json:"estimateRatio"`
	ApartRatio    H `json:"apartEstimateRatio,omitempty"`
	// LaneTimeInLine counts, for each lane other than the public (issue
	// 53), its admitted by their time in line as TimeInLine does (the
	// public lane's are TimeInLine less these); none without lanes, or
	// in rows written before the stores said an admitted user's lane
	// (Wait.Lane).
	LaneTimeInLine map[string]H `json:"laneTimeInLine,omitempty"`
}

// LaneFigures are one lane's figures in a minute (issue 53): its share in
// force (0 to 1) and the users waiting in it at the minute's end, those it
// let in and the access codes redeemed for it within the minute, and the
// redemptions its codes still held at the minute's end.
type LaneFigures struct {
	Name      string  `json:"name"`
	Share     float64 `json:"share"`
	Length    int64   `json:"length"`
	Admitted  int64   `json:"admitted"`
	Redeemed  int64   `json:"redeemed"`
	CodesLeft int64   `json:"codesLeft"`
}

// Figures are a minute's figures but its histograms.
type Figures struct {
	// Start is the minute's first instant (UTC, on the minute).
	Start time.Time `json:"start"`
	// LineLength is the users waiting at the minute's end (the last
	// reading in it), LineMax the most any reading in it saw, PreQueue
	// the users waiting for the opening (opensAt) at its end.
	LineLength int64 `json:"lineLength"`
	LineMax    int64 `json:"lineMax"`
	PreQueue   int64 `json:"preQueue"`
	// RatePerSecond is the admission rate in force at the minute's end
	// (users/s; 0 while paused).
	RatePerSecond float64 `json:"ratePerSecond"`
	// The funnel within the minute: joined the line, left it, skipped as
	// no-shows, admitted (given an entry), entries used (tokens spent),
	// orders placed, and entries that expired unused.
	Entered  int64 `json:"entered"`
	Left     int64 `json:"left"`
	Skipped  int64 `json:"skipped"`
	Admitted int64 `json:"admitted"`
	Used     int64 `json:"used"`
	Ordered  int64 `json:"ordered"`
	Expired  int64 `json:"expired"`
	// Likely bots within the minute (issue 51), absent from a minute with
	// none: the places signals marked (Suspects; by signal, package
	// suspect's names, in Signals: a place with two counts under both),
	// the places put in the shadow line, refused (403 suspected_bot) and
	// given the costlier proof of work, and the shadow line's places an
	// operator cleared into the line. Shadowed and Cleared are the store's
	// totals' growth; the others are counted by the instances that judged
	// the places, and a crashed instance's last second of them is lost.
	Suspects           int64            `json:"suspects,omitempty"`
	Signals            map[string]int64 `json:"signals,omitempty"`
	Shadowed           int64            `json:"shadowed,omitempty"`
	RefusedSuspects    int64            `json:"refusedSuspects,omitempty"`
	ChallengedSuspects int64            `json:"challengedSuspects,omitempty"`
	Cleared            int64            `json:"cleared,omitempty"`
	// Lanes are the queue's lanes in the minute (issue 53), in the order
	// its stats listed them; absent without lanes.
	Lanes []LaneFigures `json:"lanes,omitempty"`
	// EstimateCoverage counts the minute's admitted (those timed, as
	// TimeInLine) by how the range shown at join fared (issue 54;
	// Wait.Outcome); absent from a minute that admitted nobody timed, and
	// from rows written before issue 54.
	EstimateCoverage Coverage `json:"estimateCoverage,omitzero"`
}

// WithHistograms is m with its histograms redrawn by f (the report's
// bounded buckets from the rows' counts).
func WithHistograms[H, G any](m Minute[H], f func(H) G) Minute[G] {
	out := Minute[G]{Figures: m.Figures, TimeInLine: f(m.TimeInLine), EstimateRatio: f(m.EstimateRatio), ApartRatio: f(m.ApartRatio)}
	for name, h := range m.LaneTimeInLine {
		if out.LaneTimeInLine == nil {
			out.LaneTimeInLine = map[string]G{}
		}
		out.LaneTimeInLine[name] = f(h)
	}
	return out
}

// Moment is a moment of the sale: an event of package events (its type,
// queue.opened, stock.sold_out, phase.started, …), its instant and data.
type Moment struct {
	At   time.Time      `json:"at"`
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// Rollup is a queue's minutes from Since to Until, oldest first, and its
// moments among them, oldest first.
type Rollup struct {
	Queue   string              `json:"queue"`
	Since   time.Time           `json:"since"`
	Until   time.Time           `json:"until"`
	Minutes []Minute[Histogram] `json:"minutes"`
	Moments []Moment            `json:"moments"`
}

// Build turns rows, oldest first, into minutes and moments. A minute's
// funnel is the growth of the totals from the row before it (so what
// happened while no instance read the line counts in the next minute
// read), or, for the first row or after the totals went back (the queue
// was deleted and made again), from the minute's first reading.
func Build(rows []Row) ([]Minute[Histogram], []Moment) {
	minutes := make([]Minute[Histogram], 0, len(rows))
	var moments []Moment
	var before map[string]int64
	for _, r := range rows {
		f := parse(r.Fields)
		m := Minute[Histogram]{Figures: Figures{Start: r.Minute.UTC(), LineLength: f["length"], LineMax: f["maxLength"], PreQueue: f["preQueue"],
			RatePerSecond: float64(f["rate"]) / 1000, Ordered: f["ordered"]}, TimeInLine: Histogram{}, EstimateRatio: Histogram{}, ApartRatio: Histogram{}}
		counts := make([]int64, len(funnel))
		for i, name := range funnel {
			counts[i] = growth(f, before, name)
		}
		m.Lanes, m.LaneTimeInLine = lanesOf(r.Fields, f, before)
		m.Entered, m.Left, m.Skipped, m.Admitted, m.Used, m.Expired = counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]
		m.Shadowed, m.Cleared = counts[6], counts[7]
		m.Suspects, m.RefusedSuspects, m.ChallengedSuspects = f[SuspectPlaces], f[RefusedSuspects], f[ChallengedSuspects]
		readCounts(&m, f)
		moments = append(moments, parseMoments(r.Fields)...)
		minutes = append(minutes, m)
		if _, ok := f["entered"]; ok {
			before = f
		}
	}
	slices.SortStableFunc(moments, func(a, b Moment) int { return a.At.Compare(b.At) })
	return minutes, moments
}

// readCounts reads a row's counts that its instances added (f: its
// numbers): the likely bots by signal, the estimates' outcomes, and the
// histograms' buckets.
func readCounts(m *Minute[Histogram], f map[string]int64) {
	for k, n := range f {
		if signal, ok := strings.CutPrefix(k, suspectPrefix); ok && n > 0 {
			if m.Signals == nil {
				m.Signals = map[string]int64{}
			}
			m.Signals[signal] = n
			continue
		}
		if outcome, ok := strings.CutPrefix(k, coverPrefix); ok {
			m.EstimateCoverage.count(outcome, n)
			continue
		}
		h, b := histogramOf(m, k)
		if h != nil {
			h[b] += n
		}
	}
}

// histogramOf is the histogram a row's field counts a bucket of, and the
// bucket; nil when the field is no bucket.
func histogramOf(m *Minute[Histogram], field string) (Histogram, int) {
	var h Histogram
	rest := field
	if lt, ok := strings.CutPrefix(field, laneTimePrefix); ok {
		name, b, _ := strings.Cut(lt, ":")
		h, rest = m.LaneTimeInLine[name], b
	} else if b, ok := strings.CutPrefix(field, apartRatioPrefix); ok {
		h, rest = m.ApartRatio, b
	} else if b, ok := strings.CutPrefix(field, "t"); ok {
		h, rest = m.TimeInLine, b
	} else if b, ok := strings.CutPrefix(field, "r"); ok {
		h, rest = m.EstimateRatio, b
	}
	b, err := strconv.Atoi(rest)
	if err != nil {
		return nil, 0
	}
	return h, b
}

// growth is how much the total name grew in the row f: from the row
// before it, or, for the first row or after the totals went back (the
// queue was deleted and made again), from the minute's first reading.
func growth(f, before map[string]int64, name string) int64 {
	from, ok := before[name]
	if !ok || from > f[name] {
		from = f["from."+name]
	}
	return max(f[name]-from, 0)
}

// lanesOf reads a row's lanes (fields; f its numbers, before the row
// before's) and makes each lane but the public an empty histogram of time
// in line (nil without lanes).
func lanesOf(fields map[string]string, f, before map[string]int64) ([]LaneFigures, map[string]Histogram) {
	if fields[laneOrder] == "" {
		return nil, nil
	}
	var out []LaneFigures
	times := map[string]Histogram{}
	for _, name := range strings.Split(fields[laneOrder], ",") {
		out = append(out, LaneFigures{Name: name, Share: float64(f[laneField(name, "share")]) / 1e6, Length: f[laneField(name, "length")],
			Admitted: growth(f, before, laneField(name, "admitted")), Redeemed: growth(f, before, laneField(name, "redeemed")),
			CodesLeft: f[laneField(name, "codesLeft")]})
		if name != publicLane {
			times[name] = Histogram{}
		}
	}
	return out, times
}

// publicLane is lane.Public (a package above this one): the lane whose
// time in line is the whole's less the others'.
const publicLane = "public"

// Fill puts in the minutes from the first of minutes to end that have no
// row: nothing changed in them (an instance writes a queue's row only when
// its numbers moved), so each is the minute before it with no counts.
func Fill(minutes []Minute[Histogram], end time.Time) []Minute[Histogram] {
	if len(minutes) == 0 {
		return minutes
	}
	out := make([]Minute[Histogram], 0, len(minutes))
	for i, m := range minutes {
		out = append(out, m)
		next := end.Truncate(time.Minute)
		if i+1 < len(minutes) {
			next = minutes[i+1].Start.Add(-time.Minute)
		}
		for t := m.Start.Add(time.Minute); !t.After(next); t = t.Add(time.Minute) {
			out = append(out, Minute[Histogram]{Figures: Figures{Start: t, LineLength: m.LineLength, LineMax: m.LineLength,
				PreQueue: m.PreQueue, RatePerSecond: m.RatePerSecond, Lanes: stillLanes(m.Lanes)}, TimeInLine: Histogram{}, EstimateRatio: Histogram{}, ApartRatio: Histogram{}})
		}
	}
	return out
}

// stillLanes are the lanes of a minute in which nothing moved: as they
// stood, none let in and no code redeemed.
func stillLanes(lanes []LaneFigures) []LaneFigures {
	if lanes == nil {
		return nil
	}
	out := slices.Clone(lanes)
	for i := range out {
		out[i].Admitted, out[i].Redeemed = 0, 0
	}
	return out
}

// parse reads a row's numeric fields.
func parse(fields map[string]string) map[string]int64 {
	f := make(map[string]int64, len(fields))
	for k, v := range fields {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			f[k] = n
		}
	}
	return f
}

// parseMoments reads a row's moments ("moment:<ms>:<type>" → data).
func parseMoments(fields map[string]string) []Moment {
	var out []Moment
	for k, v := range fields {
		rest, ok := strings.CutPrefix(k, "moment:")
		if !ok {
			continue
		}
		ms, typ, _ := strings.Cut(rest, ":")
		at, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			continue
		}
		m := Moment{At: time.UnixMilli(at).UTC(), Type: typ, Data: map[string]any{}}
		_ = json.Unmarshal([]byte(v), &m.Data)
		out = append(out, m)
	}
	return out
}

// Pending gathers what this instance observed and has not yet written
// (admitted users' waits, orders), per queue, until Take: the additive part
// of the next Write.
type Pending struct {
	mu sync.Mutex
	by map[string]map[string]int64
}

// Admitted counts one admitted user's wait: its time in line, how its
// estimate fared (Wait.Outcome) and, scored or scored apart, its ratio.
func (p *Pending) Admitted(queue string, w Wait) {
	d, ok := w.TimeInLine()
	if !ok {
		return
	}
	b := strconv.Itoa(Bucket(float64(d.Milliseconds())))
	add := map[string]int64{"t" + b: 1}
	if w.Lane != "" && w.Lane != publicLane {
		add[laneTimePrefix+w.Lane+":"+b] = 1
	}
	outcome, _ := w.Outcome()
	add[coverPrefix+outcome] = 1
	if r, ok := w.Ratio(); ok && outcome != OutcomeUnknown {
		ratios := "r"
		if w.Apart {
			ratios = apartRatioPrefix
		}
		add[ratios+strconv.Itoa(Bucket(r*1000))] = 1
	}
	p.Return(queue, add)
}

// Ordered counts one order placed.
func (p *Pending) Ordered(queue string) { p.add(queue, "ordered") }

func (p *Pending) add(queue, field string) { p.Return(queue, map[string]int64{field: 1}) }

// Add adds counts of fields observed (events.SuspectTally's), to go with
// the next write.
func (p *Pending) Add(queue string, add map[string]int64) { p.Return(queue, add) }

// Return gives back what a failed write took, to go with the next.
func (p *Pending) Return(queue string, add map[string]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string]map[string]int64{}
	}
	if p.by[queue] == nil {
		p.by[queue] = map[string]int64{}
	}
	for k, n := range add {
		p.by[queue][k] += n
	}
}

// Take hands over what queue has pending (nil: nothing). A write that
// fails gives it back (Return).
func (p *Pending) Take(queue string) map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.by[queue]
	delete(p.by, queue)
	return m
}
