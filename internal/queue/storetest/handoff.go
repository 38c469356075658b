package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/handoff"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// The suite's part for handoffs (issue 55): a place carried to another
// session in one atomic step, with its ticket, its token and its marks.
func init() {
	register(
		suiteTest{"HandoffMovesTheTicket", testHandoffMovesTheTicket},
		suiteTest{"HandoffOfReadyKeepsTheToken", testHandoffReady},
		suiteTest{"HandoffIntoAPlaceChangesNothing", testHandoffIntoAPlace},
		suiteTest{"HandoffCodesAreSingleUseAndLapse", testHandoffCodes},
		suiteTest{"HandoffCarriesTheMarks", testHandoffMarks},
		suiteTest{"HandoffCarriesTheSeenMark", testHandoffSeen},
		suiteTest{"HandoffNoTwoSessionsHoldThePlace", testHandoffConcurrent},
		suiteTest{"HandoffRacingAdmissionLeavesOneReady", testHandoffRacesAdmission},
	)
}

// putHandoff keeps a fresh code for user's place and answers its hash.
func putHandoff(t *testing.T, s queue.Store, q, user string) string {
	t.Helper()
	h, err := handoff.Hash(handoff.New())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutHandoff(context.Background(), q, user, h, handoff.TTL); err != nil {
		t.Fatalf("PutHandoff(%s): %v", user, err)
	}
	return h
}

// claim is ClaimHandoff, failing the test unless it moved a place from.
func claim(t *testing.T, s queue.Store, q, code, user, from string) queue.Standing {
	t.Helper()
	got, e, err := s.ClaimHandoff(context.Background(), q, code, user)
	if err != nil || got != from {
		t.Fatalf("ClaimHandoff by %s: from %q, %v; want %s's place", user, got, err, from)
	}
	return e
}

// moved fails unless user is told MOVED.
func moved(t *testing.T, s queue.Store, q, user string) {
	t.Helper()
	if e := mustStatus(t, s, q, user); e.State != queue.Moved || e.Position != 0 || e.Token != "" || e.Ticket != 0 {
		t.Fatalf("%s after their place moved: %+v, want MOVED with no place", user, e)
	}
}

// testHandoffMovesTheTicket: the claimer stands where the place stood,
// with its ticket; the old session is told MOVED; the line, its snapshot
// and its totals are as if nothing happened; admission lets the claimer
// in at the place's turn; entering again after MOVED takes a fresh place.
func testHandoffMovesTheTicket(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	for _, u := range []string{"a", "b", "c"} {
		mustEnter(t, s, q, u)
	}
	before := mustStatus(t, s, q, "b")
	snap, err := s.Snapshot(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	stats := mustStats(t, s, q)
	e := claim(t, s, q, putHandoff(t, s, q, "b"), "x", "b")
	if e.State != queue.Waiting || e.Position != 2 || e.Length != 3 || e.Ticket != before.Ticket || e.Epoch != before.Epoch {
		t.Fatalf("x after claiming b's place: %+v, want b's %+v", e, before)
	}
	if e := mustStatus(t, s, q, "x"); e.Position != 2 || e.Ticket != before.Ticket {
		t.Fatalf("x asking: %+v, want b's place", e)
	}
	moved(t, s, q, "b")
	if after, err := s.Snapshot(ctx, q); err != nil || after.Head != snap.Head || after.Last != snap.Last || after.Length != snap.Length || len(after.Left) != 0 {
		t.Fatalf("snapshot after the move: %+v, %v; want the line as before, %+v", after, err, snap)
	}
	after := mustStats(t, s, q)
	if after.EnteredTotal != stats.EnteredTotal || after.Length != stats.Length || after.LeftTotal != 0 {
		t.Fatalf("stats after the move: %+v, want as before %+v", after, stats)
	}
	if got := admitDue(t, s, clock, q, 10); fmt.Sprint(got) != "[a x c]" {
		t.Fatalf("admitted %v, want [a x c]: x at b's turn", got)
	}
	moved(t, s, q, "b")
	if e := mustEnter(t, s, q, "b"); e.State != queue.Waiting || e.Position != 1 || e.Ticket != 4 {
		t.Fatalf("b entering again after MOVED: %+v, want a fresh place (ticket 4)", e)
	}
	if _, err := s.PutHandoff(ctx, q, "nobody", "h", handoff.TTL); !errors.Is(err, handoff.ErrNoPlace) {
		t.Errorf("PutHandoff for a user with no place: %v, want ErrNoPlace", err)
	}
	if _, err := s.PutHandoff(ctx, "no-such-queue", "b", "h", handoff.TTL); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("PutHandoff in an unknown queue: %v, want ErrQueueNotFound", err)
	}
}

// testHandoffReady: a READY entry's token moves, the same value and
// expiry, usable by the claimer and no longer by the old session; a
// token an order is using (BeginUse's lock) does not move until the
// order ends.
func testHandoffReady(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	tok := ready(t, s, clock, q, "a")["a"]
	was := mustStatus(t, s, q, "a")
	code := putHandoff(t, s, q, "a")
	if err := s.BeginUse(ctx, q, "a", tok, "order-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ClaimHandoff(ctx, q, code, "x"); !errors.Is(err, queue.ErrTokenInUse) {
		t.Fatalf("claim while an order uses the token: %v, want ErrTokenInUse", err)
	}
	if e := mustStatus(t, s, q, "x"); e.State != queue.NotInQueue {
		t.Fatalf("x after a refused claim: %+v, want nothing", e)
	}
	if err := s.EndUse(ctx, q, "a", tok, "order-1", false); err != nil {
		t.Fatal(err)
	}
	e := claim(t, s, q, code, "x", "a")
	if e.State != queue.Ready || e.Token != tok || !e.ExpiresAt.Equal(was.ExpiresAt) {
		t.Fatalf("x after claiming a's READY entry: %+v, want token %s until %v", e, tok, was.ExpiresAt)
	}
	moved(t, s, q, "a")
	if err := s.BeginUse(ctx, q, "a", tok, "order-2", time.Second); !errors.Is(err, queue.ErrTokenInvalid) {
		t.Errorf("a using the token after it moved: %v, want ErrTokenInvalid", err)
	}
	if err := s.BeginUse(ctx, q, "x", tok, "order-2", time.Second); err != nil {
		t.Fatalf("x using the token it claimed: %v", err)
	}
	if err := s.EndUse(ctx, q, "x", tok, "order-2", true); err != nil {
		t.Fatal(err)
	}
	if st := mustStats(t, s, q); st.ConsumedTotal != 1 || st.ActiveTokens != 0 {
		t.Fatalf("stats after x spent the token: %+v, want one consumed, none active", st)
	}
}

// testHandoffIntoAPlace: a session holding a place (or a token) claims
// nothing: already in line, nothing moved, the code still good; claiming
// one's own code is the same.
func testHandoffIntoAPlace(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	for _, u := range []string{"a", "b"} {
		mustEnter(t, s, q, u)
	}
	code := putHandoff(t, s, q, "a")
	for _, u := range []string{"b", "a"} {
		if _, _, err := s.ClaimHandoff(ctx, q, code, u); !errors.Is(err, handoff.ErrAlreadyInLine) {
			t.Fatalf("claim by %s, in line: %v, want ErrAlreadyInLine", u, err)
		}
	}
	if a, b := mustStatus(t, s, q, "a"), mustStatus(t, s, q, "b"); a.Position != 1 || b.Position != 2 {
		t.Fatalf("after refused claims: a %+v, b %+v; want 1 and 2 as before", a, b)
	}
	if e := claim(t, s, q, code, "x", "a"); e.Position != 1 {
		t.Fatalf("x claiming the code kept: %+v, want a's place 1", e)
	}
}

// testHandoffCodes: a code moves a place once; a code never kept, or
// whose time is up, moves nothing; a place gone (left) leaves its code
// gone; of two codes of one place the first claimed carries it.
func testHandoffCodes(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	for _, u := range []string{"a", "b", "c"} {
		mustEnter(t, s, q, u)
	}
	first, second := putHandoff(t, s, q, "a"), putHandoff(t, s, q, "a")
	claim(t, s, q, second, "x", "a")
	for _, c := range []struct{ what, code, user string }{
		{"the code used", second, "y"}, {"the place's other code", first, "y"}, {"a code never kept", "0123", "y"},
	} {
		if _, _, err := s.ClaimHandoff(ctx, q, c.code, c.user); !errors.Is(err, handoff.ErrGone) {
			t.Errorf("%s: %v, want ErrGone", c.what, err)
		}
	}
	h, _ := handoff.Hash(handoff.New())
	exp, err := s.PutHandoff(ctx, q, "b", h, 100*time.Millisecond)
	if d := exp.Sub(clock.Now()); err != nil || d < 0 || d > time.Second {
		t.Fatalf("PutHandoff: expires %v (now %v), %v", exp, clock.Now(), err)
	}
	clock.Sleep(150 * time.Millisecond)
	if _, _, err := s.ClaimHandoff(ctx, q, h, "y"); !errors.Is(err, handoff.ErrGone) {
		t.Errorf("a code whose time is up: %v, want ErrGone", err)
	}
	left := putHandoff(t, s, q, "c")
	mustLeave(t, s, q, "c")
	if _, _, err := s.ClaimHandoff(ctx, q, left, "y"); !errors.Is(err, handoff.ErrGone) {
		t.Errorf("the code of a place that left: %v, want ErrGone", err)
	}
	if e := mustStatus(t, s, q, "y"); e.State != queue.NotInQueue {
		t.Fatalf("y after claims that were refused: %+v", e)
	}
	if e := mustStatus(t, s, q, "b"); e.Position != 2 {
		t.Fatalf("b, whose code lapsed: %+v, want its place (2, behind x) kept", e)
	}
}

// testHandoffMarks: a lane's place, a suspect's shadow place with its
// mark, a place cleared from the shadow line, and a place in an opening's
// pre-queue move as they are.
func testHandoffMarks(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, membersConfig(0.5))
	mustEnter(t, s, q, "p")
	mustJoin(t, s, q, "m0", lane.Join{Lane: "members"})
	m1 := mustJoin(t, s, q, "m1", lane.Join{Lane: "members"})
	if e := claim(t, s, q, putHandoff(t, s, q, "m1"), "x", "m1"); e.Lane != "members" || e.Position != 2 || e.Ticket != m1.Ticket {
		t.Fatalf("x after claiming a member's place: %+v, want %+v", e, m1)
	}
	moved(t, s, q, "m1")
	sus := mustEnterShadow(t, s, q, "s")
	if e := claim(t, s, q, putHandoff(t, s, q, "s"), "y", "s"); !e.Shadow || e.Ticket != sus.Ticket || e.Position != sus.Position || e.Behind != sus.Behind {
		t.Fatalf("y after claiming a suspect's place: %+v, want %+v", e, sus)
	}
	places, err := s.Suspects(ctx, q, 10)
	if err != nil || len(places) != 1 {
		t.Fatalf("Suspects: %+v, %v; want the one place", places, err)
	}
	if diff := cmp.Diff(testMark, places[0].Mark); diff != "" {
		t.Errorf("the mark after the move (-want +got):\n%s", diff)
	}
	// A place cleared from the shadow line into the line (no ticket of
	// its own: it stands just behind one) moves where it stands.
	cleared := mustEnterShadow(t, s, q, "s2")
	if ok, err := s.ClearSuspect(ctx, q, cleared.Ticket); err != nil || !ok {
		t.Fatalf("ClearSuspect: %v, %v", ok, err)
	}
	was := mustStatus(t, s, q, "s2")
	snap, err := s.Snapshot(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if e := claim(t, s, q, putHandoff(t, s, q, "s2"), "w", "s2"); e.Shadow || e.Position != was.Position || e.Ticket != 0 {
		t.Fatalf("w after claiming a cleared place: %+v, want %+v", e, was)
	}
	if after, err := s.Snapshot(ctx, q); err != nil || fmt.Sprint(after.Cleared) != fmt.Sprint(snap.Cleared) || after.Length != snap.Length {
		t.Fatalf("the snapshot after a cleared place moved: %+v, %v; want its cleared places as before, %v", after, err, snap.Cleared)
	}
	c := fastConfig()
	c.OpensAt = clock.Now().Add(time.Hour)
	o := newQueue(t, s, c)
	if e := mustEnter(t, s, o, "early"); !e.PreQueue {
		t.Fatalf("before the opening: %+v, want the pre-queue", e)
	}
	if e := claim(t, s, o, putHandoff(t, s, o, "early"), "z", "early"); e.State != queue.Waiting || !e.PreQueue {
		t.Fatalf("z after claiming a place in the pre-queue: %+v", e)
	}
	if st := mustStats(t, s, o); st.PreQueued != 1 {
		t.Fatalf("stats after the pre-queue's move: %+v, want one pre-queued", st)
	}
}

// testHandoffSeen: a handoff moves the place's seen mark (the no-show
// rule's), a hidden one staying hidden. With abandonAfter 2 s and
// abandonAfterHidden 8 s: "hid" is marked hidden at 0 s and "stale"
// visible, "fresh" visible at 2 s; each place is claimed by another
// session; at 2.2 s the place marked hidden is let in (a mark left behind
// would leave it never seen, one turned visible would be 2.2 s old: both
// skipped), and so is the freshly seen one (its mark moved), while the
// stale one is skipped (its visible mark did not turn hidden). On a store
// on the wall clock, the claims and the tick's wait come on top of the
// last 0.2 s: fresh's mark has 1.8 s to spare (with abandonAfter 1 s and
// 0.5 s, a loaded CI machine used it up), stale's and hid's grow older.
func testHandoffSeen(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	const abandon = 2 * time.Second
	c := fastConfig()
	c.AbandonAfter, c.AbandonAfterHidden = abandon, 8*time.Second
	q := newQueue(t, s, c)
	for _, u := range []string{"first", "hid", "stale", "fresh"} {
		mustEnter(t, s, q, u)
	}
	// The first tick lets "first" in and sets the store's checkpoint at the
	// end of the line: the rest are judged from abandonAfter on.
	if got := admitDue(t, s, clock, q, 1); len(got) != 1 || got[0] != "first" {
		t.Fatalf("the first tick admitted %v, want [first]", got)
	}
	if err := s.Seen(ctx, q, []string{"hid"}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Seen(ctx, q, []string{"stale"}, false); err != nil {
		t.Fatal(err)
	}
	clock.Sleep(abandon)
	if err := s.Seen(ctx, q, []string{"fresh"}, false); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"hid", "stale", "fresh"} {
		claim(t, s, q, putHandoff(t, s, q, u), u+"-there", u)
	}
	clock.Sleep(abandon / 10)
	a := tickDue(t, s, clock, q, 3)
	if fmt.Sprint(a.Admitted) != "[hid-there fresh-there]" || a.Skipped != 1 {
		t.Fatalf("at 2.2 s: admitted %v and skipped %d; want [hid-there fresh-there], stale-there skipped", a.Admitted, a.Skipped)
	}
	if e := mustStatus(t, s, q, "stale-there"); e.State != queue.NotInQueue {
		t.Fatalf("stale-there: %+v, want skipped (NOT_IN_QUEUE)", e)
	}
}

// testHandoffConcurrent: many sessions claim one code while everyone
// asks: exactly one claim moves the place, and no two sessions are ever
// answered as holding it (the old one never again once MOVED, a claimer
// refused never).
func testHandoffConcurrent(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	mustEnter(t, s, q, "a")
	code := putHandoff(t, s, q, "a")
	const claimers = 8
	var wg sync.WaitGroup
	won := make(chan string, claimers)
	stop := make(chan struct{})
	holders := make(chan string, 10_000)
	for i := range claimers {
		user := fmt.Sprint("c", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.ClaimHandoff(ctx, q, code, user); err == nil {
				won <- user
			} else if !errors.Is(err, handoff.ErrGone) {
				t.Errorf("claim by %s: %v", user, err)
			}
		}()
	}
	var polls sync.WaitGroup
	for _, u := range []string{"a", "c0", "c3", "c7"} {
		polls.Add(1)
		go func() {
			defer polls.Done()
			movedSeen := false
			for {
				select {
				case <-stop:
					return
				default:
				}
				e, err := s.Status(ctx, q, u)
				if err != nil {
					t.Errorf("Status(%s): %v", u, err)
					return
				}
				if e.State == queue.Waiting {
					holders <- u
					if u == "a" && movedSeen {
						t.Errorf("a told WAITING after MOVED")
					}
				}
				movedSeen = movedSeen || e.State == queue.Moved
			}
		}()
	}
	wg.Wait()
	close(stop)
	polls.Wait()
	close(won)
	close(holders)
	var winners []string
	for u := range won {
		winners = append(winners, u)
	}
	if len(winners) != 1 {
		t.Fatalf("claims that moved the place: %v, want exactly one", winners)
	}
	for u := range holders {
		if u != "a" && u != winners[0] {
			t.Errorf("%s, whose claim was refused, was told it held the place", u)
		}
	}
	moved(t, s, q, "a")
	if e := mustStatus(t, s, q, winners[0]); e.Position != 1 {
		t.Fatalf("%s after winning: %+v", winners[0], e)
	}
}

// testHandoffRacesAdmission: a claim racing the tick that lets the place
// in leaves exactly one READY holder, never both sessions and never
// neither: the claimer, whether the claim came before the tick, after it
// (carrying the token), or between the tick's read and its apply (Redis:
// the tick then finds the planned user gone, as a leaver, and the next
// tick lets the claimer in). The totals add up. Looped, both stores.
func testHandoffRacesAdmission(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	for i := range 30 {
		q := newQueue(t, s, fastConfig())
		mustEnter(t, s, q, "a")
		code := putHandoff(t, s, q, "a")
		var wg sync.WaitGroup
		wg.Add(2)
		var claimErr error
		go func() {
			defer wg.Done()
			_, _, claimErr = s.ClaimHandoff(ctx, q, code, "x")
		}()
		go func() {
			defer wg.Done()
			admitDue(t, s, clock, q, 10)
		}()
		wg.Wait()
		if claimErr != nil {
			t.Fatalf("run %d: claim: %v", i, claimErr)
		}
		for tick := 0; ; tick++ {
			a, x := mustStatus(t, s, q, "a"), mustStatus(t, s, q, "x")
			if a.State != queue.Moved || x.State != queue.Ready && x.State != queue.Waiting {
				t.Fatalf("run %d, tick %d: a %s, x %s; want a MOVED and the place x's", i, tick, a.State, x.State)
			}
			if x.State == queue.Ready {
				break
			}
			if tick == 3 {
				t.Fatalf("run %d: x still %s after %d more ticks", i, x.State, tick)
			}
			admitDue(t, s, clock, q, 10)
		}
		if st := mustStats(t, s, q); st.ActiveTokens != 1 || st.AdmittedTotal != 1 {
			t.Fatalf("run %d: stats %+v, want one admitted, one live token", i, st)
		}
	}
}
