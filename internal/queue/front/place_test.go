package front_test

import (
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/front"
	"github.com/waitroom/waitroom/internal/queue/storetest"
)

// TestPlacesAreTheCases: the cases every language that computes a place is
// held to (storetest's testdata/places.json), in Go: queue.Position on the
// line's values, the front document's Place on the snapshot of the case's
// listed leavers and cleared places (its Unlisted counted from the
// snapshot, as New does: the cleared wait without a ticket), and the wait
// told at the place (queue.Pace.Estimate).
func TestPlacesAreTheCases(t *testing.T) {
	for _, pc := range storetest.PlaceCases() {
		t.Run(pc.Name, func(t *testing.T) {
			sn := pc.Snapshot(7)
			d := front.New(sn, queue.InForce{Config: pc.Config()})
			if d.Unlisted != int64(len(pc.Unlisted)) {
				t.Fatalf("the document counts %d unlisted, want %d", d.Unlisted, len(pc.Unlisted))
			}
			for _, ticket := range pc.Ordered() {
				want := pc.Tickets[ticket]
				pos, lowest, ok := queue.Position(ticket, pc.Head, pc.Last, pc.Left, pc.Cleared, int64(len(pc.Unlisted)))
				dpos, dlowest, dok := d.Place(7, ticket)
				if dpos != pos || dlowest != lowest || dok != ok {
					t.Errorf("ticket %d: the document places it at %d (lowest %d, %v), queue.Position at %d (lowest %d, %v)", ticket, dpos, dlowest, dok, pos, lowest, ok)
				}
				if _, _, other := d.Place(8, ticket); other {
					t.Errorf("ticket %d of another epoch is placed", ticket)
				}
				if want == nil {
					if ok {
						t.Errorf("ticket %d: placed at %d, want by no one", ticket, pos)
					}
					continue
				}
				if !ok || pos != want.Position || lowest != want.Lowest {
					t.Errorf("ticket %d: placed at %d, lowest %d (%v); want %d, lowest %d", ticket, pos, lowest, ok, want.Position, want.Lowest)
				}
				if got := sn.Pace.Estimate(pos, sn.Length).Seconds; got != want.Estimate {
					t.Errorf("ticket %d at %d: told %d s, want %d s", ticket, pos, got, want.Estimate)
				}
			}
		})
	}
}
