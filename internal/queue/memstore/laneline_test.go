package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// TestLaneLineMatchesModel checks a lane's rank, front and removal against
// a sorted slice over a long random run: new tickets at the back, an
// opening's below some already there, people leaving from anywhere.
func TestLaneLineMatchesModel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 3))
	l := newLaneLine()
	var model []int64 // tickets, ascending
	ticket := int64(1_000_000)
	user := func(t int64) string { return fmt.Sprintf("u%d", t) }
	for step := range 50_000 {
		switch op := rnd.IntN(10); {
		case op < 5:
			ticket += 1 + rnd.Int64N(1000)
			l.insert(user(ticket), ticket)
			model = append(model, ticket)
		case op < 6: // a reserved ticket below the back
			t := rnd.Int64N(ticket)
			if _, held := slices.BinarySearch(model, t); held {
				continue
			}
			l.insert(user(t), t)
			i, _ := slices.BinarySearch(model, t)
			model = slices.Insert(model, i, t)
		case op < 9 && len(model) > 0:
			i := rnd.IntN(len(model))
			if !l.remove(user(model[i])) {
				t.Fatalf("step %d: remove(%d) = false", step, model[i])
			}
			model = slices.Delete(model, i, i+1)
		case len(model) > 0:
			i := rnd.IntN(len(model))
			if r, ok := l.rank(user(model[i])); !ok || r != int64(i) {
				t.Fatalf("step %d: rank of %d = %d, %v; want %d", step, model[i], r, ok, i)
			}
			n := rnd.Int64N(5)
			ws := l.front(int64(i), n)
			want := model[i:min(i+int(n), len(model))]
			got := make([]int64, len(ws))
			for j, w := range ws {
				got[j] = w.Ticket
				if w.User != user(w.Ticket) {
					t.Fatalf("step %d: front's %d is %s", step, w.Ticket, w.User)
				}
			}
			if !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("step %d: front(%d, %d) = %v, want %v", step, i, n, got, want)
			}
		}
		if l.len() != int64(len(model)) || l.root.count() != l.len() {
			t.Fatalf("step %d: len %d (tree %d), want %d", step, l.len(), l.root.count(), len(model))
		}
	}
	if _, ok := l.rank("nobody"); ok || l.remove("nobody") || l.front(l.len(), 1) != nil {
		t.Error("someone not in the lane was found")
	}
}

// TestSmallLaneInABigLineTakesLittleMemory: a lane of 100 people whose
// tickets are spread over ten million (a big public line between them)
// costs memory for 100 people, not for the tickets between them, as a
// padded line would (some 20 bytes a ticket: 200 MB).
func TestSmallLaneInABigLineTakesLittleMemory(t *testing.T) {
	ctx := context.Background()
	s := New(nil)
	c := queue.DefaultConfig()
	c.Capacity = 1 << 30
	c.Lanes = lane.List{{Name: lane.Public, Share: 0.5}, {Name: "members", Codes: true, Share: 0.5}}
	if err := s.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	q := s.queues["q"]
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 100 {
		q.mu.Lock()
		q.seq += 100_000 // the public line's tickets between, not taken here
		q.mu.Unlock()
		if _, err := s.Join(ctx, "q", fmt.Sprintf("m%d", i), lane.Join{Lane: "members"}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
		t.Errorf("100 people in a lane spread over 10,000,000 tickets allocated %d bytes; want under 1 MiB", grown)
	}
	if e, err := s.Status(ctx, "q", "m99"); err != nil || e.Position != 100 || e.Lane != "members" || e.Ticket != 10_000_100 {
		t.Errorf("the last of them: %+v, %v; want 100th in members at ticket 10,000,100", e, err)
	}
}
