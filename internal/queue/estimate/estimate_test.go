package estimate_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// rangesPath holds the shared cases: Go runs them here, the waiting page's
// JavaScript twin through node (internal/httpapi).
const rangesPath = "testdata/ranges.json"

// rangeCases is testdata/ranges.json as it is laid out: its about, and one
// case a line.
type rangeCases struct {
	About string      `json:"about"`
	Cases []rangeCase `json:"cases"`
}

type rangeCase struct {
	Name     string     `json:"name"`
	Params   caseParams `json:"params"`
	Position int64      `json:"position"`
	Length   int64      `json:"length"`
	Want     caseWant   `json:"want"`
}

// caseParams is estimate.Params as the page's JavaScript reads it.
type caseParams struct {
	Rate     float64    `json:"rate"`
	Claim    float64    `json:"claim"`
	Spread   float64    `json:"spread"`
	Tick     int64      `json:"tick"`
	Interval float64    `json:"interval"`
	Drawn    bool       `json:"drawn"`
	Steps    []caseStep `json:"steps"`
}

type caseStep struct {
	After float64 `json:"after"`
	Rate  float64 `json:"rate"`
}

type caseWant struct {
	Seconds int64 `json:"seconds"`
	Low     int64 `json:"low"`
	High    int64 `json:"high"`
	Known   bool  `json:"known"`
}

func (p caseParams) params() estimate.Params {
	out := estimate.Params{Rate: p.Rate, Claim: p.Claim, Spread: p.Spread, Tick: p.Tick, Interval: p.Interval, Drawn: p.Drawn}
	for _, s := range p.Steps {
		out.Steps = append(out.Steps, estimate.Step{After: s.After, Rate: s.Rate})
	}
	return out
}

// TestRanges: estimate.Of gives each shared case its want (the median, the
// range and whether it is known). WAITROOM_UPDATE_CASES=1 rewrites the
// wants from Go instead (then check the diff: TestRangesByHand and the
// properties below are what hold Go itself to the formula).
func TestRanges(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(rangesPath)
	if err != nil {
		t.Fatal(err)
	}
	var f rangeCases
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", rangesPath, err)
	}
	if len(f.Cases) < 20 {
		t.Fatalf("%s holds %d cases, want at least 20", rangesPath, len(f.Cases))
	}
	for i, c := range f.Cases {
		e := estimate.Of(c.Position, c.Length, c.Params.params())
		got := caseWant{Seconds: e.Seconds, Low: e.Low, High: e.High, Known: e.Known}
		if os.Getenv("WAITROOM_UPDATE_CASES") != "" {
			f.Cases[i].Want = got
			continue
		}
		if got != c.Want {
			t.Errorf("%s: Of(%d, %d, %+v) = %+v, want %+v", c.Name, c.Position, c.Length, c.Params, got, c.Want)
		}
	}
	if os.Getenv("WAITROOM_UPDATE_CASES") != "" {
		writeRanges(t, f)
	}
}

// writeRanges writes f one case a line, steps always a list (the page
// reads them without a nil check).
func writeRanges(t *testing.T, f rangeCases) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteString(`{"about": `)
	if err := enc.Encode(f.About); err != nil {
		t.Fatal(err)
	}
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(",\n\"cases\": [\n")
	for i, c := range f.Cases {
		if c.Params.Steps == nil {
			c.Params.Steps = []caseStep{}
		}
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
		if i < len(f.Cases)-1 {
			buf.Truncate(buf.Len() - 1)
			buf.WriteString(",\n")
		}
	}
	buf.WriteString("]}\n")
	if err := os.WriteFile(rangesPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRangesByHand: a few estimates worked out from the formula written
// out here, so a rewrite of the shared cases from Go cannot carry a wrong
// model along with it.
func TestRangesByHand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		pos, len int64
		p        estimate.Params
		want     estimate.Estimate
	}{
		// 1000 / 100 = 10 s; f = 1 + 1.645 × 0.05 = 1.08225;
		// low = floor(10 / 1.08225 − 0.1) = floor(9.14) = 9,
		// high = ceil(10 × 1.08225 + 0.1) = ceil(10.92) = 11.
		{"steady", 1000, 1000, estimate.Params{Rate: 100, Claim: 1, Spread: 0.05, Tick: 10, Interval: 0.1}, estimate.Estimate{Seconds: 10, Low: 9, High: 11, Known: true}},
		// 500 × 0.7 / 100 = 3.5 s; σ = sqrt(0.05² + 0.3 / 350) = 0.05791…,
		// f = 1.09526…; low = floor(3.5 / f − 0.1) = floor(3.0955) = 3,
		// high = ceil(3.5 × f + 0.1) = ceil(3.933) = 4.
		{"no-shows", 500, 500, estimate.Params{Rate: 100, Claim: 0.7, Spread: 0.05, Tick: 10, Interval: 0.1}, estimate.Estimate{Seconds: 4, Low: 3, High: 4, Known: true}},
		// 50/s for 10 s moves 500 places, the other 1500 at 100/s take
		// 15 s: 25 s; f = 1.08225: low = floor(23.100… − 0.1) = 23,
		// high = ceil(25 × f + 0.1) = ceil(27.156) = 28.
		{"a step up", 2000, 2000, estimate.Params{Rate: 50, Claim: 1, Spread: 0.05, Tick: 5, Interval: 0.1, Steps: []estimate.Step{{After: 10, Rate: 100}}}, estimate.Estimate{Seconds: 25, Low: 23, High: 28, Known: true}},
		// 3000 places by 30 s, none until 90 s, 2000 more by 110 s.
		// low = floor(110 / 1.08225 − 0.1) = floor(101.54) = 101,
		// high = ceil(110 × 1.08225 + 0.1) = ceil(119.1475) = 120.
		{"a paused step", 5000, 5000, estimate.Params{Rate: 100, Claim: 1, Spread: 0.05, Tick: 10, Interval: 0.1, Steps: []estimate.Step{{After: 30}, {After: 90, Rate: 100}}}, estimate.Estimate{Seconds: 110, Low: 101, High: 120, Known: true}},
		// A draw of 1000: the middle 500.5 / 100 = 5.005 s → 6; the 5th
		// percentile's 50 places 0.5 s → floor(0.5 / f − 0.1) = 0; the 95th's
		// 950 places 9.5 s → ceil(9.5 × f + 0.1) = ceil(10.381) = 11.
		{"a draw", 1000, 1000, estimate.Params{Rate: 100, Claim: 1, Spread: 0.05, Tick: 10, Interval: 0.1, Drawn: true}, estimate.Estimate{Seconds: 6, Low: 0, High: 11, Known: true}},
		{"within the tick", 10, 10, estimate.Params{Rate: 100, Claim: 1, Spread: 0.05, Tick: 10, Interval: 0.1}, estimate.Estimate{Seconds: 0, Low: 0, High: 1, Known: true}},
		{"never reached", 5000, 5000, estimate.Params{Rate: 100, Claim: 1, Spread: 0.05, Tick: 10, Interval: 0.1, Steps: []estimate.Step{{After: 10}}}, estimate.Estimate{Reason: estimate.UnknownPaused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := estimate.Of(tc.pos, tc.len, tc.p); got != tc.want {
				t.Errorf("Of(%d, %d, %+v) = %+v, want %+v", tc.pos, tc.len, tc.p, got, tc.want)
			}
		})
	}
}

// randomParams is a line as a sale may have it: rates from a twentieth to
// thousands a second, any share of no-shows, any spread from the floor to
// 1, ticks from 50 ms to 3 s, and up to three rate changes ahead (some to
// nobody let in).
func randomParams(rnd *rand.Rand) estimate.Params {
	p := estimate.Params{
		Rate:     0.05 * math.Pow(10, 5*rnd.Float64()),
		Claim:    1,
		Spread:   estimate.SpreadFloor + (1-estimate.SpreadFloor)*rnd.Float64(),
		Interval: []float64{0.05, 0.1, 0.29, 1, 3}[rnd.IntN(5)],
		Drawn:    rnd.IntN(5) == 0,
	}
	if rnd.IntN(2) == 0 {
		p.Claim = 0.05 + 0.95*rnd.Float64()
	}
	p.Tick = min(int64(p.Rate/p.Claim*p.Interval), int64(1+rnd.IntN(100)))
	at := 0.0
	for range rnd.IntN(4) {
		at += 600 * rnd.Float64()
		rate := 0.0
		if rnd.IntN(4) > 0 {
			rate = 0.05 * math.Pow(10, 5*rnd.Float64())
		}
		p.Steps = append(p.Steps, estimate.Step{After: at, Rate: rate})
	}
	return p
}

// randomPlace is a position and its line's length, from 1 to a million.
func randomPlace(rnd *rand.Rand) (position, length int64) {
	position = int64(math.Pow(10, 6*rnd.Float64()))
	return position, position + int64(rnd.IntN(1000))
}

// longer says whether wait a is at least wait b, a wait not known (the
// front never reaches the place) being longer than any.
func longer(a, b estimate.Estimate) bool {
	switch {
	case !a.Known:
		return true
	case !b.Known:
		return false
	}
	return a.Seconds >= b.Seconds && a.Low >= b.Low && a.High >= b.High
}

// TestRangeProperties: over thousands of random lines, the range holds the
// median and is never below 0; it widens (High up, Low down) as the rate
// grows less certain; the median grows with the position; with everyone
// taking their turn and no change ahead the median is today's point,
// ceil(position / rate) beyond the tick (a draw's: ceil((length + 1) / 2
// / rate)); and a rate change that lowers the rate never shortens the
// wait, at any percentile.
func TestRangeProperties(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(54, 1))
	for i := range 20_000 {
		p := randomParams(rnd)
		pos, length := randomPlace(rnd)
		e := estimate.Of(pos, length, p)
		if !e.Known {
			if e != (estimate.Estimate{Reason: estimate.UnknownPaused}) {
				t.Fatalf("%d: Of(%d, %d, %+v) = %+v: not known, yet not all 0 with reason paused", i, pos, length, p, e)
			}
		} else if e.Low < 0 || e.Low > e.Seconds || e.Seconds > e.High {
			t.Fatalf("%d: Of(%d, %d, %+v) = %+v: want 0 ≤ Low ≤ Seconds ≤ High", i, pos, length, p, e)
		}
		checkSpread(t, rnd, pos, length, p, e)
		checkPosition(t, rnd, pos, length, p, e)
		checkPoint(t, pos, length, p)
		checkSlower(t, rnd, pos, length, p, e)
	}
}

// checkSpread: a wider spread, all else equal, keeps the median and widens
// the range.
func checkSpread(t *testing.T, rnd *rand.Rand, pos, length int64, p estimate.Params, e estimate.Estimate) {
	t.Helper()
	q := p
	q.Spread += rnd.Float64()
	w := estimate.Of(pos, length, q)
	if w.Known != e.Known || w.Seconds != e.Seconds || w.High < e.High || w.Low > e.Low {
		t.Fatalf("Of(%d, %d, %+v) = %+v, but with spread %v %+v: want the same median in a range as wide or wider", pos, length, p, e, q.Spread, w)
	}
}

// checkPosition: further back, the median is no shorter.
func checkPosition(t *testing.T, rnd *rand.Rand, pos, length int64, p estimate.Params, e estimate.Estimate) {
	t.Helper()
	if p.Drawn {
		return // a draw's position is not used
	}
	back := pos + 1 + int64(rnd.IntN(int(pos)))
	w := estimate.Of(back, back, p)
	if e.Known && w.Known && w.Seconds < e.Seconds || !e.Known && w.Known {
		t.Fatalf("Of(%d, %d, %+v) = %+v, but at %d %+v: want a median no shorter further back", pos, length, p, e, back, w)
	}
}

// checkPoint: with everyone taking their turn and no change ahead, the
// median is ceil(place / rate) beyond the tick, whatever the spread.
func checkPoint(t *testing.T, pos, length int64, p estimate.Params) {
	t.Helper()
	p.Claim, p.Steps = 1, nil
	place, mid := pos, float64(pos)
	if p.Drawn {
		place, mid = length, float64(length+1)/2
	}
	if place <= p.Tick {
		return
	}
	if got, want := estimate.Of(pos, length, p).Seconds, int64(math.Ceil(mid/p.Rate)); got != want {
		t.Fatalf("Of(%d, %d, %+v).Seconds = %d, want ceil(%v / %v) = %d", pos, length, p, got, mid, p.Rate, want)
	}
}

// checkSlower: a step that lowers the rate from some time on (to any share
// of it, nobody let in included) never shortens the wait.
func checkSlower(t *testing.T, rnd *rand.Rand, pos, length int64, p estimate.Params, e estimate.Estimate) {
	t.Helper()
	at := 1200 * rnd.Float64()
	q, rate, i := p, p.Rate, 0
	for ; i < len(p.Steps) && p.Steps[i].After <= at; i++ {
		rate = p.Steps[i].Rate
	}
	slower := estimate.Step{After: at, Rate: rate * rnd.Float64()}
	q.Steps = append(append(append([]estimate.Step{}, p.Steps[:i]...), slower), p.Steps[i:]...)
	if w := estimate.Of(pos, length, q); !longer(w, e) {
		t.Fatalf("Of(%d, %d, %+v) = %+v, but with the rate lowered to %v from %v s %+v: want no shorter", pos, length, p, e, slower.Rate, at, w)
	}
	q = p
	q.Rate *= rnd.Float64()
	if w := estimate.Of(pos, length, q); !longer(w, e) {
		t.Fatalf("Of(%d, %d, %+v) = %+v, but at rate %v now %+v: want no shorter", pos, length, p, e, q.Rate, w)
	}
}

// TestPrior: before anything is measured the spread is the floor's double
// for a fixed rate, and wider for each of what may move and has not been
// seen: an adaptive rate, no-shows.
func TestPrior(t *testing.T) {
	t.Parallel()
	fixed, adaptive, noShows, both := estimate.Prior(false, false), estimate.Prior(true, false), estimate.Prior(false, true), estimate.Prior(true, true)
	if fixed != 0.1 || adaptive != math.Sqrt(0.1) || noShows != adaptive || both != math.Sqrt(0.19) {
		t.Errorf("Prior = %v fixed, %v adaptive, %v with no-shows, %v both; want 0.1, √0.1, √0.1, √0.19", fixed, adaptive, noShows, both)
	}
	if fixed <= estimate.SpreadFloor {
		t.Errorf("the prior of a fixed rate %v is no wider than a fitted one's floor %v", fixed, estimate.SpreadFloor)
	}
}

// TestAhead: changes become steps seconds from now, in their order; those
// at now or before are dropped (the rate in force already has them).
func TestAhead(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_800_000_000_000)
	changes := []estimate.Change{{At: now.Add(-time.Second), Rate: 10}, {At: now, Rate: 20}, {At: now.Add(1500 * time.Millisecond), Rate: 0}, {At: now.Add(time.Minute), Rate: 50}}
	got := estimate.Ahead(changes, now)
	want := []estimate.Step{{After: 1.5, Rate: 0}, {After: 60, Rate: 50}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Ahead = %+v, want %+v", got, want)
	}
	if got := estimate.Ahead(nil, now); got != nil {
		t.Errorf("Ahead(nil) = %+v, want none", got)
	}
}
