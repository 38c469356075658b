package storetest

// The suite's part for hidden pages (issue 55): a seen mark says whether
// the page said it was hidden, and a hidden place is judged a no-show
// only at abandonAfterSecondsHidden, in fifo order and in a random draw
// alike (admission.Absence).

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

func init() {
	register(suiteTest{"HiddenPageSkippedOnlyAtItsLongerTime", testHiddenPage},
		suiteTest{"RandomSkipsHiddenPagesAtTheirTime", testRandomHidden},
		suiteTest{"LaneMarksAsTheLine", testLaneMarks})
}

// testHiddenPage: with abandonAfter a and abandonAfterHidden
// HiddenHolds + 2a + 1 s, HiddenHolds + a + 1 s after the marks a place
// last marked visible is skipped, also one marked hidden and then,
// HiddenHolds later, visible (the later mark wins), while one marked
// hidden is let in, also after a status read refreshed its mark (the
// store's own mark keeps what the page said) and after a visible mark
// within HiddenHolds of the hidden one (perhaps a poll's made before the
// beacon); 1 s after abandonAfterHidden a hidden place is skipped, and so
// is one whose hidden mark came while it held no place (nothing was
// written, so its later place was visible). a is abandonFor's: 1 s on a
// fake clock (abandonAfterHidden 6 s, the ticks at 5 s and 7 s), 5 s on
// the wall clock (14 s, the ticks at 9 s and 15 s), where the marks
// judged at the first tick have a to spare: a visible mark made just
// before it, hidden ones made before the sleeps (abandonAfter 1 s and
// abandonAfterHidden 8 s left the visible mark 1 s, which a loaded
// machine's stall between two calls can use up). The marks that must be
// old enough only grow older. (Times of the store's own rule, not the
// admin range of at least 15 s.)
func testHiddenPage(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	abandon := abandonFor(clock)
	hides := admission.HiddenHolds + 2*abandon + time.Second
	c := fastConfig()
	c.AbandonAfter, c.AbandonAfterHidden = abandon, hides
	q := newQueue(t, s, c)
	seen := func(hidden bool, users ...string) {
		t.Helper()
		if err := s.Seen(ctx, q, users, hidden); err != nil {
			t.Fatalf("Seen(%v, hidden %v): %v", users, hidden, err)
		}
	}
	seen(true, "stranger") // holds no place yet
	for _, u := range []string{"first", "visible", "flipped", "present", "kept", "quick", "hidden", "stranger"} {
		mustEnter(t, s, q, u)
	}
	// The first tick lets "first" in and sets the store's checkpoint at the
	// end of the line: the rest are judged from abandonAfter on.
	if got := admitDue(t, s, clock, q, 1); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("the first tick admitted %v, want [first]", got)
	}
	seen(true, "flipped", "kept", "quick", "hidden")
	seen(false, "quick")
	mustStatus(t, s, q, "kept")
	clock.Sleep(admission.HiddenHolds + time.Second/2)
	seen(false, "flipped")
	clock.Sleep(abandon + time.Second/2)
	seen(false, "present")
	judged := admission.HiddenHolds + abandon + time.Second
	a := tickDue(t, s, clock, q, 3)
	if !slices.Equal(a.Admitted, []string{"present", "kept", "quick"}) || a.Skipped != 2 {
		t.Fatalf("at %v: admitted %v and skipped %d; want [present kept quick], visible and flipped skipped", judged, a.Admitted, a.Skipped)
	}
	clock.Sleep(hides - judged + time.Second)
	if a := tickDue(t, s, clock, q, 2); len(a.Admitted) != 0 || a.Skipped != 2 {
		t.Fatalf("at %v: admitted %v and skipped %d; want nobody, hidden and stranger skipped", hides+time.Second, a.Admitted, a.Skipped)
	}
	for _, u := range []string{"visible", "flipped", "hidden", "stranger"} {
		if e := mustStatus(t, s, q, u); e.State != queue.NotInQueue {
			t.Errorf("%s: %+v, want skipped (NOT_IN_QUEUE)", u, e)
		}
	}
}

// testRandomHidden: under random, a drawn place whose hidden mark is
// younger than abandonAfterHidden is let in though older than
// abandonAfter; one whose hidden mark is older, or with no mark since
// entering, is skipped as drawn. With abandonAfter 1 s and
// abandonAfterHidden 6 s, the fresh hidden marks are 1.5 s old at the
// tick: 4.5 s to spare for a store on the wall clock (with 3 s, 1.5 s,
// which a loaded machine's stall can use up); the marks that must be old
// enough only grow older.
func testRandomHidden(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	const abandon, hides = time.Second, 6 * time.Second
	c := randomConfig()
	c.AbandonAfter, c.AbandonAfterHidden = abandon, hides
	q := newQueue(t, s, c)
	var fresh, stale, gone []string
	for i := range 10 {
		fresh, stale, gone = append(fresh, fmt.Sprintf("fresh%d", i)), append(stale, fmt.Sprintf("stale%d", i)), append(gone, fmt.Sprintf("gone%d", i))
	}
	everyone := slices.Concat(fresh, stale, gone)
	for _, u := range everyone {
		mustEnter(t, s, q, u)
	}
	// The first tick, every mark fresh, draws one and sets the checkpoint.
	first := admitDue(t, s, clock, q, 1)
	if len(first) != 1 {
		t.Fatalf("the first tick admitted %v, want one", first)
	}
	if err := s.Seen(ctx, q, stale, true); err != nil {
		t.Fatal(err)
	}
	clock.Sleep(hides - abandon)
	if err := s.Seen(ctx, q, fresh, true); err != nil {
		t.Fatal(err)
	}
	clock.Sleep(abandon + abandon/2)
	a := tickDue(t, s, clock, q, len(everyone))
	var want []string
	for _, u := range fresh {
		if u != first[0] {
			want = append(want, u)
		}
	}
	if got := sorted(a.Admitted); !slices.Equal(got, want) || a.Skipped != len(everyone)-1-len(want) {
		t.Fatalf("admitted %v and skipped %d; want %v, the other %d skipped", got, a.Skipped, want, len(everyone)-1-len(want))
	}
}

// testLaneMarks: a place in a lane other than the public is marked by
// Store.Seen as one in the line (hidden or not), and judged alike: with
// abandonAfter a (abandonFor's) and abandonAfterHidden 3a, at a + 0.5 s
// the member marked visible then and the one marked hidden at the start
// are let in, the one not marked since joining skipped. On a fake clock
// that is 1 s, 3 s and 1.5 s; on the wall clock 5 s, 15 s and 5.5 s, so
// the visible mark has 5 s to spare before the tick, not the 1 s a loaded
// machine's stall between two calls can use up, and the hidden one 9.5 s.
func testLaneMarks(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	abandon := abandonFor(clock)
	c := membersConfig(0.5)
	c.AbandonAfter, c.AbandonAfterHidden = abandon, 3*abandon
	q := newQueue(t, s, c)
	for _, u := range []string{"m-first", "m-gone", "m-hidden", "m-present"} {
		mustJoin(t, s, q, u, lane.Join{Lane: "members"})
	}
	if got := admitDue(t, s, clock, q, 1); !slices.Equal(got, []string{"m-first"}) {
		t.Fatalf("the first tick admitted %v, want [m-first]", got)
	}
	if err := s.Seen(ctx, q, []string{"m-hidden"}, true); err != nil {
		t.Fatal(err)
	}
	clock.Sleep(abandon + time.Second/2)
	if err := s.Seen(ctx, q, []string{"m-present"}, false); err != nil {
		t.Fatal(err)
	}
	if a := tickDue(t, s, clock, q, 2); !slices.Equal(a.Admitted, []string{"m-hidden", "m-present"}) || a.Skipped != 1 {
		t.Fatalf("at %v: admitted %v and skipped %d; want [m-hidden m-present], m-gone skipped", abandon+time.Second/2, a.Admitted, a.Skipped)
	}
}
