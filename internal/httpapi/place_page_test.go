package httpapi

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/front"
	"github.com/waitroom/waitroom/internal/queue/storetest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// pagePlaces runs waiting.js's arithmetic through node on each document:
// for each of its tickets, the place the page works out (placeFromFront,
// the ticket of the document's epoch), the wait it tells there
// (estimate), and whether a ticket of another epoch is placed.
const pagePlaces = `
const fs = require('fs'), vm = require('vm');
const page = vm.runInNewContext(fs.readFileSync(process.argv[1], 'utf8') + '\n;waitroomArithmetic', {});
const docs = JSON.parse(fs.readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(docs.map(({ doc, tickets }) => tickets.map((n) => {
  const p = page.placeFromFront(doc, { epoch: doc.epoch, n });
  const other = page.placeFromFront(doc, { epoch: doc.epoch + 1, n }) !== null;
  return { placed: p !== null, position: p ? p.position : 0, lowest: p ? p.lowest : 0, estimate: p ? page.estimate(p.position, doc.pace) : 0, other };
}))));
`

// pagePlace is what the page works out for one ticket (pagePlaces).
type pagePlace struct {
	Placed                     bool
	Position, Lowest, Estimate int64
	Other                      bool
}

// TestThePagePlacesAsTheServerDoes: the page's place and wait (waiting.js,
// run through node), from the front document as this package serves it
// (toFrontJSON) of each place case's line, are the cases' (storetest's
// testdata/places.json), to which Go (queue.Position, through queue/front's
// test) and every store are held too.
func TestThePagePlacesAsTheServerDoes(t *testing.T) {
	type doc struct {
		Doc     frontJSON `json:"doc"`
		Tickets []int64   `json:"tickets"`
	}
	cases := storetest.PlaceCases()
	var docs []doc
	for _, pc := range cases {
		docs = append(docs, doc{toFrontJSON("places", front.New(pc.Snapshot(7), queue.InForce{Config: pc.Config()})), pc.Ordered()})
	}
	out := runPageArithmetic(t, pagePlaces, docs)
	var got [][]pagePlace
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("node answered %d lines for %d cases (%v): %s", len(got), len(cases), err, out)
	}
	for i, pc := range cases {
		t.Run(pc.Name, func(t *testing.T) {
			for j, ticket := range pc.Ordered() {
				checkPagePlace(t, ticket, got[i][j], pc.Tickets[ticket])
			}
		})
	}
}

// checkPagePlace holds the page's place of ticket to the case's (nil:
// placed by no one).
func checkPagePlace(t *testing.T, ticket int64, got pagePlace, want *storetest.Placed) {
	t.Helper()
	if got.Other {
		t.Errorf("ticket %d: the page places a ticket of another epoch", ticket)
	}
	if want == nil {
		if got.Placed {
			t.Errorf("ticket %d: the page places it at %d, want by no one", ticket, got.Position)
		}
		return
	}
	if !got.Placed || got.Position != want.Position || got.Lowest != want.Lowest || got.Estimate != want.Estimate {
		t.Errorf("ticket %d: the page places it at %d, lowest %d (placed %v), and tells %d s; want %d, lowest %d, %d s",
			ticket, got.Position, got.Lowest, got.Placed, got.Estimate, want.Position, want.Lowest, want.Estimate)
	}
}

// runPageArithmetic runs script through node on waiting.js (its
// waitroomArithmetic, which the script reads from the file named by its
// first argument), with in as JSON on its standard input, and answers its
// standard output.
func runPageArithmetic(t *testing.T, script string, in any) []byte {
	t.Helper()
	node := testenv.Node(t)
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", script, "../web/static/waiting.js")
	cmd.Stdin = bytes.NewReader(raw)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, stderr.Bytes())
	}
	return out
}
