package queue

import (
	"context"
	"testing"
	"time"
)

// TestShownBehind: a shadow place is shown one more than the people
// waiting up to the ticket it arrived behind, cleared places at or below
// it counted, so it falls as the real line moves and stays 1 at the front.
func TestShownBehind(t *testing.T) {
	for _, c := range []struct {
		name   string
		behind int64
		sn     Snapshot
		want   int64
	}{
		{"arrived behind ten, none let in", 10, Snapshot{Head: 1, Last: 20}, 11},
		{"the person after it left", 10, Snapshot{Head: 4, Last: 20, Left: []int64{11}}, 8},
		{"three of them let in", 10, Snapshot{Head: 4, Last: 20}, 8},
		{"two of them left", 10, Snapshot{Head: 4, Last: 20, Left: []int64{5, 9, 15}}, 6},
		{"it arrived behind one who left", 9, Snapshot{Head: 4, Last: 20, Left: []int64{5, 9, 15}}, 5},
		{"all let in", 10, Snapshot{Head: 11, Last: 20}, 1},
		{"nobody waits", 10, Snapshot{Head: 0, Last: 20}, 1},
		{"arrived before anyone", 0, Snapshot{Head: 1, Last: 20}, 1},
		{"cleared places at or below it count", 10, Snapshot{Head: 4, Last: 20, Cleared: []int64{2, 6, 10, 12}}, 11},
		{"cleared places ahead, nobody else", 10, Snapshot{Head: 0, Last: 20, Cleared: []int64{3, 12}}, 2},
		{"a store behind its own ticket", 30, Snapshot{Head: 11, Last: 20}, 11},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := shownBehind(c.behind, c.sn); got != c.want {
				t.Errorf("shownBehind(%d, %+v) = %d, want %d", c.behind, c.sn, got, c.want)
			}
			// Its page is given ticket behind+1 (View.Shadow): wherever the
			// document places that ticket (Position, the page's arithmetic
			// by TestThePagePlacesAsTheServerDoes), it is the place shown.
			if pos, _, ok := Position(c.behind+1, c.sn.Head, c.sn.Last, c.sn.Left, c.sn.Cleared, 0); ok && pos != c.want {
				t.Errorf("ticket %d placed at %d by the page's arithmetic, shown %d", c.behind+1, pos, c.want)
			}
		})
	}
}

// shadowLine is a line store whose users u1..u1000 hold tickets 1..1000
// and whose user "bot" holds shadow ticket 7, arrived behind ticket 500;
// it counts the status reads. While opening is set, an opening is ahead
// and "bot" waits for it in the pre-queue.
type shadowLine struct {
	lineStore
	statuses int
	opening  time.Time
}

// lineEpoch is the line's epoch here.
const lineEpoch = 42

func (l *shadowLine) Snapshot(ctx context.Context, q string) (Snapshot, error) {
	sn, err := l.lineStore.Snapshot(ctx, q)
	sn.Epoch, sn.Pace.OpensAt = lineEpoch, l.opening
	return sn, err
}

func (l *shadowLine) Status(ctx context.Context, q, user string) (Standing, error) {
	l.statuses++
	if user == "bot" && !l.opening.IsZero() {
		return Standing{State: Waiting, Shadow: true, PreQueue: true, Ticket: 7, Epoch: lineEpoch,
			Pace: Pace{OpensAt: l.opening}}, nil
	}
	if user == "bot" {
		return Standing{State: Waiting, Shadow: true, Ticket: 7, Behind: 500, Position: 501, Length: 1000, Epoch: lineEpoch,
			Pace: Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond}}, nil
	}
	e, err := l.lineStore.Status(ctx, q, user)
	e.Epoch = lineEpoch
	return e, err
}

// TestShadowStatusFromTheSnapshot: a shadow place's polls are answered
// from the instance's snapshot of the real line, as a person's are, with
// the store asked again only after shadowRecheck; its ticket is never
// taken for one of the real line, shown back or remembered.
func TestShadowStatusFromTheSnapshot(t *testing.T) {
	store := &shadowLine{}
	svc := NewService(store, time.Hour, nil)
	ctx := context.Background()
	first, err := svc.Status(ctx, "q", "bot")
	// Its ticket is the one a person arriving with it would hold (Behind+1),
	// never its shadow line's number.
	if err != nil || first.State != Waiting || !first.Shadow || first.Position != 501 || first.Ticket != 501 || first.Epoch != lineEpoch {
		t.Fatalf("first poll: %+v %v", first, err)
	}
	for range 10 {
		v, err := svc.Status(ctx, "q", "bot")
		if err != nil || !v.Shadow || v.Position != 501 || v.Ticket != 501 || v.EstimatedWaitSeconds == 0 || v.PollAfterSeconds == nil {
			t.Fatalf("a later poll: %+v %v", v, err)
		}
	}
	if store.statuses != 1 {
		t.Errorf("%d status reads of the store for 11 shadow polls, want 1", store.statuses)
	}
	// Shown back, even signed with the real line's epoch, the shadow
	// ticket is no place in the real line: 7 would be the seventh person.
	svc.TicketShown("q", "bot", lineEpoch, 7)
	if v, _ := svc.Status(ctx, "q", "bot"); !v.Shadow || v.Position != 501 {
		t.Errorf("after the shadow ticket was shown as a real one: %+v", v)
	}
	// The store's word is taken for shadowRecheck only.
	lv := svc.snaps.view("q", false)
	lv.mu.Lock()
	k := svc.snaps.key("bot")
	sp := lv.shadows[k]
	sp.at = time.Now().Add(-shadowRecheck - time.Second)
	lv.shadows[k] = sp
	lv.mu.Unlock()
	if v, _ := svc.Status(ctx, "q", "bot"); !v.Shadow || store.statuses != 2 {
		t.Errorf("after %v: %+v, %d status reads, want the store asked again", shadowRecheck, v, store.statuses)
	}
	// Leaving forgets it.
	svc.snaps.remember("q", "bot", Standing{State: NotInQueue})
	lv.mu.Lock()
	_, kept := lv.shadows[k]
	lv.mu.Unlock()
	if kept {
		t.Error("a shadow place left is still remembered")
	}
}

// TestShadowAnswerCostsAsAPersons: a shadow place's poll answered from a
// fresh snapshot costs no allocation, as a person's does
// (TestSnapshotAnswerAllocatesNothing): a farm's polls are no dearer to
// the instance than people's.
func TestShadowAnswerCostsAsAPersons(t *testing.T) {
	s := newSnapshots(&shadowLine{}, time.Hour)
	s.remember("q", "bot", Standing{State: Waiting, Shadow: true, Ticket: 7, Behind: 500, Epoch: lineEpoch})
	if _, ok := s.status(context.Background(), "q", "bot"); !ok {
		t.Fatal("not answered from the snapshot")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if e, ok := s.status(context.Background(), "q", "bot"); !ok || !e.Shadow || e.Position != 501 {
			t.Fatalf("answer %+v %v", e, ok)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per answer, want 0", allocs)
	}
}

// TestShadowPlaceIsNeverHeld: a shadow place at the front with no wait
// shown (shadowAdmits never keeps it there) is not AdmissionNear, so no
// poll of it is held for news that never comes, as a person's there is.
func TestShadowPlaceIsNeverHeld(t *testing.T) {
	svc := NewService(&shadowLine{}, time.Hour, nil)
	front := Standing{State: Waiting, Ticket: 7, Position: 1, Length: 1, Epoch: lineEpoch,
		Pace: Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond}}
	if v := svc.view(context.Background(), "q", front, false); !v.AdmissionNear {
		t.Fatalf("a person at the front: %+v, want AdmissionNear", v)
	}
	front.Shadow, front.Behind = true, 0
	if v := svc.view(context.Background(), "q", front, false); v.AdmissionNear {
		t.Errorf("a shadow place at the front: %+v, want never AdmissionNear", v)
	}
}

// TestShadowPlaceWaitsForTheOpening: while an opening is ahead a shadow
// place is answered "waiting for the opening" as a person is, by the
// store, never from the snapshot with a position: neither when the store
// said so, nor when the opening was set after its place was remembered.
func TestShadowPlaceWaitsForTheOpening(t *testing.T) {
	opening := time.Now().Add(time.Hour).Truncate(time.Second)
	for _, c := range []struct {
		name        string
		rememberNow bool
	}{{"in the pre-queue", false}, {"remembered before the opening was set", true}} {
		t.Run(c.name, func(t *testing.T) {
			store := &shadowLine{}
			svc := NewService(store, time.Hour, nil)
			ctx := context.Background()
			if c.rememberNow {
				if v, err := svc.Status(ctx, "q", "bot"); err != nil || v.Position != 501 {
					t.Fatalf("before the opening: %+v %v", v, err)
				}
				svc.snaps.changed("q")
			}
			store.opening = opening
			for range 3 {
				v, err := svc.Status(ctx, "q", "bot")
				if err != nil || v.State != Waiting || !v.OpensAt.Equal(opening) || v.Position != 0 || v.Ticket != 0 {
					t.Fatalf("a poll: %+v %v, want waiting for the opening at %v", v, err, opening)
				}
			}
		})
	}
}
