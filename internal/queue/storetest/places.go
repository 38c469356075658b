package storetest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/suspect"
)

// Where a ticket's holder stands (queue.Position), by the same rule in
// every language that computes it and in the stores' own ranks. The cases
// are testdata, so Go (queue/front), the page's JavaScript (internal/httpapi,
// through node) and every store (here) are tested on the same lines.

func init() {
	register(suiteTest{"PlaceIsTheCasesRank", testPlaces})
}

//go:embed testdata/places.json
var placesJSON []byte

// PlaceCase is one line as testdata/places.json holds it: its head, last
// ticket and those who left above the head (Left, as a list holds them;
// Unlisted, more that the list leaves out), the places cleared from the
// shadow line that wait in it (Cleared: ascending, the ticket each stands
// just behind, as queue.Snapshot.Cleared), the queue's pace settings, and
// where each ticket's holder stands (nil: placed by no one).
type PlaceCase struct {
	Name          string            `json:"name"`
	RatePerSecond float64           `json:"ratePerSecond"`
	IntervalMs    int64             `json:"intervalMs"`
	BatchSize     int64             `json:"batchSize"`
	Head          int64             `json:"head"`
	Last          int64             `json:"last"`
	Left          []int64           `json:"left"`
	Unlisted      []int64           `json:"unlisted"`
	Cleared       []int64           `json:"cleared"`
	Tickets       map[int64]*Placed `json:"tickets"`
}

// Placed is where a ticket's holder stands: Position by the listed
// leavers, Lowest the lowest place it may really have, Rank the exact
// one (both Position unless the file gives them), and Estimate the wait
// told at Position.
type Placed struct {
	Position int64 `json:"position"`
	Lowest   int64 `json:"lowest"`
	Rank     int64 `json:"rank"`
	Estimate int64 `json:"estimate"`
}

// PlaceCases are the cases of testdata/places.json.
func PlaceCases() []PlaceCase {
	var f struct{ Cases []PlaceCase }
	if err := json.Unmarshal(placesJSON, &f); err != nil {
		panic("storetest: testdata/places.json: " + err.Error())
	}
	for _, pc := range f.Cases {
		for _, p := range pc.Tickets {
			if p != nil && p.Lowest == 0 {
				p.Lowest = p.Position
			}
			if p != nil && p.Rank == 0 {
				p.Rank = p.Position
			}
		}
	}
	return f.Cases
}

// Config is the case's queue: its pace settings over the defaults.
func (pc PlaceCase) Config() queue.Config {
	s := map[string]any{}
	if pc.RatePerSecond > 0 {
		s["ratePerSecond"], s["intervalMs"], s["batchSize"] = pc.RatePerSecond, pc.IntervalMs, pc.BatchSize
	}
	c, err := queue.Apply(queue.DefaultConfig(), s)
	if err != nil {
		panic("storetest: testdata/places.json: " + pc.Name + ": " + err.Error())
	}
	return c
}

// Waiting says whether the holder of ticket waits in the case's line.
func (pc PlaceCase) Waiting(ticket int64) bool {
	return pc.Head > 0 && ticket >= pc.Head && ticket <= pc.Last &&
		!slices.Contains(pc.Left, ticket) && !slices.Contains(pc.Unlisted, ticket)
}

// Snapshot is the line as an instance's snapshot of epoch holds it, its
// list of leavers Left alone (incomplete when the case has Unlisted); its
// Length counts the cleared places too, as a store's does.
func (pc PlaceCase) Snapshot(epoch int64) queue.Snapshot {
	c := pc.Config()
	sn := queue.Snapshot{Head: pc.Head, Last: pc.Last, Left: pc.Left, Cleared: pc.Cleared, Complete: len(pc.Unlisted) == 0, Epoch: epoch,
		Pace: queue.Pace{Rate: c.RatePerSecond, Batch: c.BatchSize, Interval: c.Interval}, Length: int64(len(pc.Cleared))}
	for t := int64(1); t <= pc.Last; t++ {
		if pc.Waiting(t) {
			sn.Length++
		}
	}
	return sn
}

// Ordered are the case's tickets, in order.
func (pc PlaceCase) Ordered() []int64 { return slices.Sorted(maps.Keys(pc.Tickets)) }

// testPlaces builds each case's line in the store, ticket by ticket (those
// below the head and those who left leave at once, so each newcomer takes
// their place at the case's rank; each cleared place enters the shadow
// line and is cleared as soon as the ticket it stands behind is issued),
// and holds the store to the case: its snapshot lists the head, the last
// ticket, every leaver and every cleared place (Redis: snapshot.lua), each
// holder's status says they wait at the case's rank (Redis: status.lua's
// ZRANK), with the case's estimate where the rank is the listed place, or
// that they do not; each cleared place waits in the real line where the
// cases' rule puts it; and admission reports the same estimate kept with
// each such place (Redis: the prelude's shown, at enter).
func testPlaces(t *testing.T, s queue.Store, clock Clock) {
	for _, pc := range PlaceCases() {
		t.Run(pc.Name, func(t *testing.T) {
			q := newQueue(t, s, pc.Config())
			kept, cleared := buildPlaces(t, s, q, pc)
			sn, err := s.Snapshot(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if want := slices.Sorted(slices.Values(append(slices.Clone(pc.Left), pc.Unlisted...))); sn.Head != pc.Head || sn.Last != pc.Last || !slices.Equal(sn.Left, want) || !sn.Complete {
				t.Errorf("snapshot: head %d, last %d, left %v (complete %v); want %d, %d, %v", sn.Head, sn.Last, sn.Left, sn.Complete, pc.Head, pc.Last, want)
			}
			if !slices.Equal(sn.Cleared, pc.Cleared) {
				t.Errorf("snapshot: cleared %v, want %v", sn.Cleared, pc.Cleared)
			}
			for _, ticket := range pc.Ordered() {
				checkPlaced(t, pc, sn, ticket, mustStatus(t, s, q, placeUser(ticket)))
			}
			checkClearedPlaced(t, s, q, pc, cleared)
			checkWaitsKept(t, s, clock, q, pc.Config(), len(kept), func(u string) (keptWait, bool) {
				w, ok := kept[u]
				return keptWait{Shown: w}, ok
			})
		})
	}
}

// placeUser is the user who holds ticket in a case's line.
func placeUser(ticket int64) string { return fmt.Sprintf("t%03d", ticket) }

// buildPlaces builds pc's line in q (testPlaces) and answers the wait kept
// with each place the case gives a rank equal to its place, by user, and
// the ticket each cleared place stands behind, by user. A place cleared
// behind c is cleared while c is the last ticket, before anyone is behind
// it: it then stands at c + 0.5 (clearing places it behind Behind, the
// last ticket when it arrived, or first if that has been let in) and
// everyone after enters behind it, their waits kept as they are told.
func buildPlaces(t *testing.T, s queue.Store, q string, pc PlaceCase) (kept, cleared map[string]int64) {
	t.Helper()
	ctx := context.Background()
	kept, cleared = map[string]int64{}, map[string]int64{}
	clearBehind := func(c int64) {
		for i, behind := range pc.Cleared {
			if behind != c {
				continue
			}
			u := fmt.Sprintf("s%03d", i)
			e, err := s.EnterShadow(ctx, q, u, suspect.Mark{Signals: []string{string(suspect.EdgeScore)}})
			if err != nil {
				t.Fatalf("EnterShadow(%s): %v", u, err)
			}
			if e.State != queue.Waiting || !e.Shadow || e.Behind != c {
				t.Fatalf("EnterShadow(%s) with %d the last ticket: %s (shadow %v) behind %d, want waiting in the shadow line behind %d", u, c, e.State, e.Shadow, e.Behind, c)
			}
			if found, err := s.ClearSuspect(ctx, q, e.Ticket); err != nil || !found {
				t.Fatalf("ClearSuspect(%d): found %v, %v", e.Ticket, found, err)
			}
			cleared[u] = c
		}
	}
	clearBehind(0)
	for ticket := int64(1); ticket <= pc.Last; ticket++ {
		if e := mustEnter(t, s, q, placeUser(ticket)); e.Ticket != ticket {
			t.Fatalf("entering %d-th: ticket %d", ticket, e.Ticket)
		}
		if !pc.Waiting(ticket) {
			mustLeave(t, s, q, placeUser(ticket))
		} else if p := pc.Tickets[ticket]; p != nil && p.Rank == p.Position {
			kept[placeUser(ticket)] = p.Estimate
		}
		clearBehind(ticket)
	}
	return kept, cleared
}

// checkClearedPlaced holds the store's standing of each cleared place to
// the cases' rule: waiting in the real line (no longer shadowed), behind
// every ticket up to the one it stands behind and every place cleared
// behind a lower one, ahead of every higher ticket; places cleared behind
// one ticket share those ranks in some order, each its own.
func checkClearedPlaced(t *testing.T, s queue.Store, q string, pc PlaceCase, cleared map[string]int64) {
	t.Helper()
	seen := map[int64]string{}
	for u, c := range cleared {
		ahead := int64(0)
		for ticket := pc.Head; ticket > 0 && ticket <= c; ticket++ {
			if pc.Waiting(ticket) {
				ahead++
			}
		}
		lower, _ := slices.BinarySearch(pc.Cleared, c)
		at, _ := slices.BinarySearch(pc.Cleared, c+1)
		from, to := ahead+int64(lower)+1, ahead+int64(at)
		e := mustStatus(t, s, q, u)
		if e.State != queue.Waiting || e.Shadow || e.Position < from || e.Position > to || seen[e.Position] != "" {
			t.Errorf("%s, cleared behind %d: %s (shadow %v) at %d (also %q's); want waiting at one of %d to %d", u, c, e.State, e.Shadow, e.Position, seen[e.Position], from, to)
		}
		seen[e.Position] = u
	}
}

// checkPlaced holds the store's standing of ticket's holder, and its
// snapshot's place for it, to the case.
func checkPlaced(t *testing.T, pc PlaceCase, sn queue.Snapshot, ticket int64, e queue.Standing) {
	t.Helper()
	p := pc.Tickets[ticket]
	pos, placed := placeIn(sn, ticket)
	if !pc.Waiting(ticket) {
		if e.State == queue.Waiting || placed {
			t.Errorf("ticket %d: waiting at %d (snapshot: %d, %v), want not in line", ticket, e.Position, pos, placed)
		}
		return
	}
	if p == nil {
		t.Fatalf("ticket %d waits in the case's line, yet the case places it nowhere", ticket)
	}
	if e.State != queue.Waiting || e.Position != p.Rank || !placed || pos != p.Rank {
		t.Errorf("ticket %d: %s at %d (snapshot: %d, %v), want waiting at %d", ticket, e.State, e.Position, pos, placed, p.Rank)
	}
	if got := e.Pace.Estimate(e.Position, e.Length).Seconds; p.Rank == p.Position && got != p.Estimate {
		t.Errorf("ticket %d at %d: told %d s, want %d s", ticket, e.Position, got, p.Estimate)
	}
}

// placeIn is where sn places the holder of ticket, by the line's one rule
// (queue.Position), and false when it cannot tell: an incomplete snapshot
// answers no one.
func placeIn(sn queue.Snapshot, ticket int64) (int64, bool) {
	if !sn.Complete {
		return 0, false
	}
	pos, _, ok := queue.Position(ticket, sn.Head, sn.Last, sn.Left, sn.Cleared, 0)
	return pos, ok
}
