package httpapi

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/front"
)

// pageRanges runs waiting.js's model through node: of() on each case's
// params, and range() on each front document's pace at each position.
const pageRanges = `
const fs = require('fs'), vm = require('vm');
const page = vm.runInNewContext(fs.readFileSync(process.argv[1], 'utf8') + '\n;waitroomArithmetic', {});
const { cases, docs } = JSON.parse(fs.readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify({
  cases: cases.map((c) => page.of(c.position, c.length, c.params)),
  docs: docs.map(({ pace, positions }) => positions.map((n) => page.range(n, pace))),
}));
`

// rangeCase is one case of estimate/testdata/ranges.json: the wait
// estimate.Of gives at position in a line of length under params.
type rangeCase struct {
	Name     string          `json:"name"`
	Params   estimate.Params `json:"params"`
	Position int64           `json:"position"`
	Length   int64           `json:"length"`
	Want     pageRange       `json:"want"`
}

// pageRange is what the page's of() and range() answer; low and high are
// null (0 here) only from a document without the model.
type pageRange struct {
	Seconds int64 `json:"seconds"`
	Low     int64 `json:"low"`
	High    int64 `json:"high"`
	Known   bool  `json:"known"`
}

func rangeOf(e estimate.Estimate) pageRange {
	return pageRange{Seconds: e.Seconds, Low: e.Low, High: e.High, Known: e.Known}
}

// rangesFile holds the model's shared cases (written with package
// estimate, whose own tests run them in Go).
const rangesFile = "../queue/estimate/testdata/ranges.json"

// sharedRangeCases are ranges.json's cases.
func sharedRangeCases(t *testing.T) []rangeCase {
	t.Helper()
	b, err := os.ReadFile(rangesFile)
	var file struct{ Cases []rangeCase }
	if err == nil {
		err = json.Unmarshal(b, &file)
	}
	if err == nil && len(file.Cases) == 0 {
		err = errors.New("no cases")
	}
	if err != nil {
		t.Fatalf("%s: %v", rangesFile, err)
	}
	return file.Cases
}

// madeUpRangeCases are params of every kind, with numbers no one rounded
// (the fitted claim and spread, rates a lane's share of), and what Go's
// estimate.Of answers on them: the page must answer the same to the last
// bit of every double it rounds.
func madeUpRangeCases(r *rand.Rand, n int) []rangeCase {
	var cases []rangeCase
	for range n {
		p := estimate.Params{Rate: r.Float64() * 300, Claim: 0.05 + 0.95*r.Float64(), Spread: 0.05 + r.Float64()/2,
			Tick: r.Int64N(12), Interval: []float64{0.1, 0.25, 1, 3}[r.IntN(4)]}
		if r.IntN(4) == 0 {
			p.Claim = 1
		}
		p.Drawn = r.IntN(4) == 0
		for after := 0.0; r.IntN(2) == 0; {
			after += r.Float64() * 900
			p.Steps = append(p.Steps, estimate.Step{After: after, Rate: []float64{0, r.Float64() * 50, r.Float64() * 500}[r.IntN(3)]})
		}
		c := rangeCase{Name: "made up", Params: p, Position: 1 + r.Int64N(100_000)}
		c.Length = c.Position + r.Int64N(100_000)
		c.Want = rangeOf(estimate.Of(c.Position, c.Length, p))
		cases = append(cases, c)
	}
	return cases
}

// rangeDoc is a front document's pace as served, with the positions the
// page works out the range at and the server's answers there.
type rangeDoc struct {
	Pace      frontPaceJSON `json:"pace"`
	Positions []int64       `json:"positions"`
	want      []pageRange
}

// madeUpRangeDocs are front documents of made-up public lanes, and what
// estimate.Of answers on the model each carries (front.Document.Model):
// the page reads the same numbers through the JSON it is served.
func madeUpRangeDocs(r *rand.Rand, n int) []rangeDoc {
	var docs []rangeDoc
	for range n {
		p := queue.Pace{Rate: r.Float64() * 300, Batch: 1 + r.IntN(100), Interval: time.Duration(1+r.IntN(1000)) * time.Millisecond,
			Claim: 0.05 + 0.95*r.Float64(), Spread: 0.05 + r.Float64()/2}
		if r.IntN(3) == 0 {
			p.LaneShare = r.Float64()
		}
		if r.IntN(3) == 0 {
			p.Held = p.Rate * r.Float64()
		}
		for after := 0.0; r.IntN(2) == 0; {
			after += r.Float64() * 900
			p.Ahead = append(p.Ahead, estimate.Step{After: after, Rate: r.Float64() * 400})
		}
		d := front.New(queue.Snapshot{Pace: p}, queue.InForce{Config: queue.DefaultConfig()})
		doc := rangeDoc{Pace: toFrontJSON("ranges", d).Pace, Positions: []int64{1, 2, 10, 11, 1 + r.Int64N(1000), 1 + r.Int64N(1_000_000)}}
		for _, pos := range doc.Positions {
			doc.want = append(doc.want, rangeOf(estimate.Of(pos, pos, d.Model)))
		}
		docs = append(docs, doc)
	}
	return docs
}

// TestThePageRangesAsTheServerDoes: the page's model of the wait
// (waiting.js's of and range, run through node) is estimate.Of to the
// last second, on the shared cases (estimate/testdata/ranges.json), on
// made-up params of every kind, and from front documents as this package
// serves them (toFrontJSON), where the page reads the model.
func TestThePageRangesAsTheServerDoes(t *testing.T) {
	r := rand.New(rand.NewPCG(54, 2))
	shared := sharedRangeCases(t)
	cases := append(shared, madeUpRangeCases(r, 2000)...)
	docs := madeUpRangeDocs(r, 300)
	out := runPageArithmetic(t, pageRanges, map[string]any{"cases": cases, "docs": docs})
	var got struct {
		Cases []pageRange
		Docs  [][]pageRange
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Cases) != len(cases) || len(got.Docs) != len(docs) {
		t.Fatalf("node answered %d cases and %d documents for %d and %d (%v): %.500s", len(got.Cases), len(got.Docs), len(cases), len(docs), err, out)
	}
	for i, c := range cases {
		if got.Cases[i] != c.Want {
			t.Errorf("%s (case %d), position %d of %d under %+v: the page says %+v, want %+v", c.Name, i, c.Position, c.Length, c.Params, got.Cases[i], c.Want)
		}
	}
	for i, d := range docs {
		for j, pos := range d.Positions {
			if got.Docs[i][j] != d.want[j] {
				t.Errorf("document %d, position %d, pace %+v: the page says %+v, the server %+v", i, pos, d.Pace, got.Docs[i][j], d.want[j])
			}
		}
	}
	t.Logf("%d shared cases, %d made up, %d documents", len(shared), len(cases)-len(shared), len(docs))
}
