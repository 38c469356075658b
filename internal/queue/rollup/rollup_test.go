package rollup_test

import (
	"encoding/json"
	"maps"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/queue/rollup"
)

func TestWaitRatioCountsAShownZeroAsOneSecond(t *testing.T) {
	at := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		w     rollup.Wait
		ratio float64
		ok    bool
	}{
		{"on time", rollup.Wait{Entered: at, Shown: 60, Admitted: at.Add(time.Minute)}, 1, true},
		{"twice", rollup.Wait{Entered: at, Shown: 30, Admitted: at.Add(time.Minute)}, 2, true},
		{"any moment now", rollup.Wait{Entered: at, Shown: 0, Admitted: at.Add(3 * time.Second)}, 3, true},
		{"none shown", rollup.Wait{Entered: at, Shown: rollup.NoneShown, Admitted: at.Add(time.Minute)}, 0, false},
		{"never waited", rollup.Wait{Admitted: at}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r, ok := c.w.Ratio(); ok != c.ok || math.Abs(r-c.ratio) > 1e-9 {
				t.Errorf("Ratio = %v, %v; want %v, %v", r, ok, c.ratio, c.ok)
			}
		})
	}
}

func TestQuantileWithinFivePercent(t *testing.T) {
	h := rollup.Histogram{}
	for v := 1; v <= 1000; v++ {
		h.Add(float64(v) * 1000) // 1 s to 1000 s, in ms
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		truth := q * 1000 * 1000
		if got := h.Quantile(q); got < truth || got > truth*1.05 {
			t.Errorf("p%v = %v, truth %v: not within 5%% above", q*100, got, truth)
		}
	}
}

// TestBuildCountsEachMinuteFromTheOneBefore: a minute's funnel is the
// growth of the totals since the row before it, the first row's since its
// own first reading; minutes no one wrote are filled in; moments are read
// back with their instants and data.
func TestBuildCountsEachMinuteFromTheOneBefore(t *testing.T) {
	m0 := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	moment := rollup.MomentWrite(rollup.Moment{At: m0.Add(90 * time.Second), Type: "stock.sold_out", Data: map[string]any{}}, time.Hour)
	rows := []rollup.Row{
		{Minute: m0, Fields: map[string]string{"entered": "50", "from.entered": "40", "admitted": "5", "from.admitted": "5", "length": "45", "maxLength": "45", "rate": "2500", "t100": "3", "ordered": "2"}},
		{Minute: m0.Add(time.Minute), Fields: map[string]string{"entered": "80", "from.entered": "60", "admitted": "25", "from.admitted": "20", "length": "55", "maxLength": "70", "rate": "2500"}},
		{Minute: m0.Add(3 * time.Minute), Fields: map[string]string{"entered": "81", "from.entered": "81", "admitted": "80", "from.admitted": "80", "length": "1", "maxLength": "1", "rate": "2500", "r1000": "55"}},
	}
	for k, v := range moment.Set {
		rows[1].Fields[k] = v
	}
	minutes, moments := rollup.Build(rows)
	minutes = rollup.Fill(minutes, m0.Add(4*time.Minute))
	type brief struct{ Entered, Admitted, Length, MaxLength, Ordered, Waits, Ratios int64 }
	var got []brief
	for _, m := range minutes {
		got = append(got, brief{m.Entered, m.Admitted, m.LineLength, m.LineMax, m.Ordered, m.TimeInLine.Count(), m.EstimateRatio.Count()})
	}
	want := []brief{{10, 0, 45, 45, 2, 3, 0}, {30, 20, 55, 70, 0, 0, 0}, {0, 0, 55, 55, 0, 0, 0}, {1, 55, 1, 1, 0, 0, 55}, {0, 0, 1, 1, 0, 0, 0}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("minutes (-want +got):\n%s", d)
	}
	if len(moments) != 1 || moments[0].Type != "stock.sold_out" || !moments[0].At.Equal(m0.Add(90*time.Second)) {
		t.Errorf("moments: %+v", moments)
	}
	if minutes[0].RatePerSecond != 2.5 {
		t.Errorf("rate %v, want 2.5", minutes[0].RatePerSecond)
	}
}

// TestBuildReadsTheLikelyBots: the shadow line's places taken and cleared
// are counted from the store's totals as the funnel is (the growth from
// the row before, or from the minute's first reading); the places the
// instances judged are the minute's own counts, added, by signal.
func TestBuildReadsTheLikelyBots(t *testing.T) {
	m0 := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	edge, ranges := rollup.SuspectField("edge_score"), rollup.SuspectField("address_range")
	rows := []rollup.Row{
		{Minute: m0, Fields: applied(
			rollup.Reading{Shadowed: 4}.Write(map[string]int64{edge: 3, rollup.SuspectPlaces: 3, rollup.RefusedSuspects: 1}, time.Hour),
			rollup.Reading{Shadowed: 10}.Write(map[string]int64{edge: 4, ranges: 5, rollup.SuspectPlaces: 8}, time.Hour))},
		{Minute: m0.Add(time.Minute), Fields: applied(
			rollup.Reading{Shadowed: 14, Cleared: 1}.Write(map[string]int64{ranges: 2, rollup.SuspectPlaces: 2, rollup.ChallengedSuspects: 2}, time.Hour))},
		{Minute: m0.Add(2 * time.Minute), Fields: applied(rollup.Reading{Shadowed: 14, Cleared: 1}.Write(nil, time.Hour))},
	}
	minutes, _ := rollup.Build(rows)
	var got []rollup.Figures
	for _, m := range minutes {
		got = append(got, rollup.Figures{Start: m.Start, Suspects: m.Suspects, Signals: m.Signals, Shadowed: m.Shadowed,
			RefusedSuspects: m.RefusedSuspects, ChallengedSuspects: m.ChallengedSuspects, Cleared: m.Cleared})
	}
	want := []rollup.Figures{
		{Start: m0, Suspects: 11, Signals: map[string]int64{"edge_score": 7, "address_range": 5}, Shadowed: 6, RefusedSuspects: 1},
		{Start: m0.Add(time.Minute), Suspects: 2, Signals: map[string]int64{"address_range": 2}, Shadowed: 4, ChallengedSuspects: 2, Cleared: 1},
		{Start: m0.Add(2 * time.Minute)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("minutes (-want +got):\n%s", d)
	}
}

// applied is a row's fields after writes, as a store applies them.
func applied(writes ...rollup.Write) map[string]string {
	f := map[string]int64{}
	for _, w := range writes {
		for k, n := range w.Add {
			f[k] += n
		}
		for k, n := range w.Max {
			if old, ok := f[k]; !ok || n > old {
				f[k] = n
			}
		}
		for k, n := range w.Min {
			if old, ok := f[k]; !ok || n < old {
				f[k] = n
			}
		}
	}
	out := map[string]string{}
	for k, n := range f {
		out[k] = strconv.FormatInt(n, 10)
	}
	for _, w := range writes {
		maps.Copy(out, w.Set)
	}
	return out
}

// TestBuildReadsTheLanes: a queue's lanes (issue 53) in the order its
// stats listed them, each lane's admitted and redeemed counted from its
// totals as the funnel is, its share, length and codes left as last read,
// and each admitted user's time in line in their lane's buckets too (the
// public lane's are the whole's less the others').
func TestBuildReadsTheLanes(t *testing.T) {
	m0 := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	reading := func(members, public int64) rollup.Reading {
		return rollup.Reading{Admitted: members + public, Lanes: []rollup.LaneFigures{
			{Name: "members", Share: 0.3, Length: 40 - members, Admitted: members, Redeemed: members / 2, CodesLeft: 100 - members/2},
			{Name: "public", Share: 0.7, Length: 500, Admitted: public}}}
	}
	var p rollup.Pending
	p.Admitted("q", rollup.Wait{Entered: m0, Admitted: m0.Add(2 * time.Second), Lane: "members"})
	p.Admitted("q", rollup.Wait{Entered: m0, Admitted: m0.Add(9 * time.Second)})
	rows := []rollup.Row{
		{Minute: m0, Fields: applied(reading(2, 5).Write(nil, time.Hour), reading(6, 14).Write(p.Take("q"), time.Hour))},
		{Minute: m0.Add(time.Minute), Fields: applied(reading(10, 23).Write(nil, time.Hour))},
	}
	minutes, _ := rollup.Build(rows)
	if len(minutes) != 2 {
		t.Fatalf("%d minutes", len(minutes))
	}
	want := [][]rollup.LaneFigures{
		{{Name: "members", Share: 0.3, Length: 34, Admitted: 4, Redeemed: 2, CodesLeft: 97}, {Name: "public", Share: 0.7, Length: 500, Admitted: 9}},
		{{Name: "members", Share: 0.3, Length: 30, Admitted: 4, Redeemed: 2, CodesLeft: 95}, {Name: "public", Share: 0.7, Length: 500, Admitted: 9}},
	}
	for i, m := range minutes {
		if d := cmp.Diff(want[i], m.Lanes); d != "" {
			t.Errorf("minute %d's lanes (-want +got):\n%s", i, d)
		}
	}
	if got := minutes[0].LaneTimeInLine; len(got) != 1 || got["members"].Count() != 1 || minutes[0].TimeInLine.Count() != 2 ||
		got["members"].Quantile(1) != rollup.Upper(rollup.Bucket(2000)) {
		t.Errorf("time in line by lane %v of %v", got, minutes[0].TimeInLine)
	}
	filled := rollup.Fill(minutes, m0.Add(2*time.Minute))
	if got := filled[2].Lanes; len(got) != 2 || got[0].Admitted != 0 || got[0].Length != 30 || got[1].Share != 0.7 {
		t.Errorf("a still minute's lanes: %+v", got)
	}
	if rows := applied(rollup.Reading{Admitted: 3}.Write(nil, time.Hour)); rows["lanes"] != "" {
		t.Errorf("a queue without lanes writes lanes: %q", rows["lanes"])
	}
}

// TestWaitOutcome: a wait is scored when a range was shown at join, apart
// when something unforeseeable came after, and within the range when its
// time in line is from Low to High inclusive.
func TestWaitOutcome(t *testing.T) {
	at := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	waited := func(seconds float64, low, high int64, apart bool) rollup.Wait {
		return rollup.Wait{Entered: at, Shown: (low + high) / 2, Low: low, High: high, Apart: apart,
			Admitted: at.Add(time.Duration(seconds * float64(time.Second)))}
	}
	for _, c := range []struct {
		name    string
		w       rollup.Wait
		outcome string
		ok      bool
	}{
		{"within", waited(60, 40, 90, false), rollup.OutcomeIn, true},
		{"at the low end", waited(40, 40, 90, false), rollup.OutcomeIn, true},
		{"at the high end", waited(90, 40, 90, false), rollup.OutcomeIn, true},
		{"a moment past the high end", waited(90.2, 40, 90, false), rollup.OutcomeOut, true},
		{"sooner than the low end", waited(39, 40, 90, false), rollup.OutcomeOut, true},
		{"any moment now, and so it was", waited(0.4, 0, 1, false), rollup.OutcomeIn, true},
		{"apart, within", waited(60, 40, 90, true), rollup.OutcomeApartIn, true},
		{"apart, beyond", waited(300, 40, 90, true), rollup.OutcomeApartOut, true},
		{"no range shown", waited(60, rollup.NoneShown, rollup.NoneShown, false), rollup.OutcomeUnknown, true},
		{"no range shown, apart", waited(60, rollup.NoneShown, rollup.NoneShown, true), rollup.OutcomeUnknown, true},
		{"placed by an opening", rollup.Wait{Entered: at, Shown: rollup.NoneShown, Low: rollup.NoneShown, High: rollup.NoneShown,
			Admitted: at.Add(time.Minute)}, rollup.OutcomeUnknown, true},
		{"never waited", rollup.Wait{Admitted: at, Low: 0, High: 5}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, ok := c.w.Outcome(); got != c.outcome || ok != c.ok {
				t.Errorf("Outcome = %q, %v; want %q, %v", got, ok, c.outcome, c.ok)
			}
		})
	}
}

// TestBuildScoresTheEstimates: each admitted user's estimate, as two
// instances add it to the minute's row, is counted by how it fared (every
// user timed in exactly one outcome), the scored ones' ratios apart from
// the apart ones', and those shown no range in no ratio; a minute that
// admitted nobody has no coverage, and its JSON says none.
func TestBuildScoresTheEstimates(t *testing.T) {
	m0 := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	wait := func(seconds, shown, low, high int64, apart bool) rollup.Wait {
		return rollup.Wait{Entered: m0, Shown: shown, Low: low, High: high, Apart: apart, Admitted: m0.Add(time.Duration(seconds) * time.Second)}
	}
	var a, b rollup.Pending
	for range 3 {
		a.Admitted("q", wait(60, 60, 45, 80, false)) // in, ratio 1
	}
	a.Admitted("q", wait(120, 60, 45, 80, false)) // out, ratio 2
	b.Admitted("q", wait(70, 60, 45, 80, true))   // apart, in
	b.Admitted("q", wait(240, 60, 45, 80, true))  // apart, out, ratio 4
	b.Admitted("q", wait(240, 30, rollup.NoneShown, rollup.NoneShown, false))
	b.Admitted("q", rollup.Wait{Admitted: m0}) // never waited: not timed, not scored
	rows := []rollup.Row{
		{Minute: m0, Fields: applied(rollup.Reading{Admitted: 8}.Write(a.Take("q"), time.Hour), rollup.Reading{Admitted: 8}.Write(b.Take("q"), time.Hour))},
		{Minute: m0.Add(time.Minute), Fields: applied(rollup.Reading{Admitted: 8}.Write(nil, time.Hour))},
	}
	minutes, _ := rollup.Build(rows)
	if len(minutes) != 2 {
		t.Fatalf("%d minutes", len(minutes))
	}
	m := minutes[0]
	if d := cmp.Diff(rollup.Coverage{In: 3, Out: 1, ApartIn: 1, ApartOut: 1, Unknown: 1}, m.EstimateCoverage); d != "" {
		t.Errorf("coverage (-want +got):\n%s", d)
	}
	c := m.EstimateCoverage
	if sum := c.In + c.Out + c.ApartIn + c.ApartOut + c.Unknown; sum != m.TimeInLine.Count() {
		t.Errorf("%d outcomes for %d timed", sum, m.TimeInLine.Count())
	}
	if m.EstimateRatio.Count() != 4 || m.EstimateRatio.Quantile(1) != rollup.Upper(rollup.Bucket(2000)) {
		t.Errorf("the scored ones' ratios: %v", m.EstimateRatio)
	}
	if m.ApartRatio.Count() != 2 || m.ApartRatio.Quantile(1) != rollup.Upper(rollup.Bucket(4000)) {
		t.Errorf("the apart ones' ratios: %v", m.ApartRatio)
	}
	if d := cmp.Diff(rollup.Coverage{In: 3, Out: 2, ApartIn: 2, ApartOut: 2, Unknown: 1}, c.Plus(rollup.Coverage{Out: 1, ApartIn: 1, ApartOut: 1})); d != "" {
		t.Errorf("Plus (-want +got):\n%s", d)
	}
	raw, err := json.Marshal(minutes)
	if err != nil {
		t.Fatal(err)
	}
	var back []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := string(back[0]["estimateCoverage"]), `{"in":3,"out":1,"apartIn":1,"apartOut":1,"unknown":1}`; got != want {
		t.Errorf("estimateCoverage %s, want %s", got, want)
	}
	if _, ok := back[0]["apartEstimateRatio"]; !ok {
		t.Error("no apartEstimateRatio in a minute with people scored apart")
	}
	for _, field := range []string{"estimateCoverage", "apartEstimateRatio"} {
		if v, ok := back[1][field]; ok {
			t.Errorf("a minute that admitted nobody has %s %s", field, v)
		}
	}
}
