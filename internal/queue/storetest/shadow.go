package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/suspect"
)

// The suite's part for the shadow line (issue 51): a suspect's place
// (EnterShadow) is kept apart from people's, answered as a person's is,
// cleared into the real line by an operator, and let in only as the
// queue's shadowAdmits says.
func init() {
	register(
		suiteTest{"ShadowPlaceIsAnsweredAsItsOwn", testShadowAnswered},
		suiteTest{"ClearedSuspectStandsWhereItArrived", testShadowCleared},
		suiteTest{"ClearedSuspectBehindTheAdmittedGoesFirst", testShadowClearedFirst},
		suiteTest{"ClearedSuspectWaitsForTheOpeningAsPeople", testShadowClearedOpening},
		suiteTest{"ClearedSuspectIsNoNoShow", testShadowClearedSeen},
		suiteTest{"ShadowLineNeverTakesPeoplesCapacity", testShadowCapacity},
		suiteTest{"SuspectsSoldOutPausedAndOpeningAsPeople", testShadowAsPeople},
		suiteTest{"ShadowAdmitsLastOnlyOnceTheLineIsEmpty", testShadowAdmitsLast},
		suiteTest{"ShadowPlaceIsInNoDraw", testShadowNotDrawn},
		suiteTest{"DeletedQueueForgetsItsSuspects", testShadowDeleted},
		suiteTest{"ShadowAndLineAddUpAndSnapshotPlacesEveryone", testShadowProperty},
	)
}

var testMark = suspect.Mark{Signals: []string{"edge_score", "poll_rate"}, Address: "h-1"}

func mustEnterShadow(t *testing.T, s queue.Store, q, user string) queue.Standing {
	t.Helper()
	e, err := s.EnterShadow(context.Background(), q, user, testMark)
	if err != nil {
		t.Fatalf("EnterShadow(%s): %v", user, err)
	}
	return e
}

func mustStats(t *testing.T, s queue.Store, q string) queue.Stats {
	t.Helper()
	st, err := s.Stats(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if st.ShadowEnteredTotal != st.ShadowLength+st.ShadowAdmittedTotal+st.ShadowLeftTotal+st.ClearedTotal {
		t.Fatalf("shadow entered %d ≠ waiting %d + admitted %d + left %d + cleared %d", st.ShadowEnteredTotal,
			st.ShadowLength, st.ShadowAdmittedTotal, st.ShadowLeftTotal, st.ClearedTotal)
	}
	if st.EnteredTotal != st.Length+st.AdmittedTotal+st.LeftTotal+st.AbandonedTotal {
		t.Fatalf("entered %d ≠ waiting %d + admitted %d + left %d + abandoned %d", st.EnteredTotal,
			st.Length, st.AdmittedTotal, st.LeftTotal, st.AbandonedTotal)
	}
	tokens := st.AdmittedTotal + st.ShadowAdmittedTotal
	if tokens != st.ConsumedTotal+st.ActiveTokens+st.ExpiredTotal+st.ReturnedTotal {
		t.Fatalf("admitted %d + shadow admitted %d ≠ consumed %d + active %d + expired %d + returned %d",
			st.AdmittedTotal, st.ShadowAdmittedTotal, st.ConsumedTotal, st.ActiveTokens, st.ExpiredTotal, st.ReturnedTotal)
	}
	return st
}

// shadowAt checks a shadow standing: waiting in the shadow line as number
// ticket, behind the real line's ticket behind, shown at position.
func shadowAt(t *testing.T, what string, e queue.Standing, ticket, behind, position int64) {
	t.Helper()
	if e.State != queue.Waiting || !e.Shadow || e.PreQueue || e.Ticket != ticket || e.Behind != behind || e.Position != position || e.Token != "" {
		t.Fatalf("%s: %+v; want a shadow place, ticket %d behind %d, shown at %d", what, e, ticket, behind, position)
	}
	if e.Length < e.Position || e.Epoch == 0 || e.Pace.Rate <= 0 {
		t.Fatalf("%s: %+v; want a length of at least its position, the line's epoch and pace", what, e)
	}
}

// testShadowAnswered: a suspect's place has its own ticket and stands, as
// shown, behind everyone waiting in the real line when it came, moving up
// as they are let in; entering again, as a person or a suspect, and
// asking answer that place, never a real one; people's tickets and places
// are as if it were not there; it leaves as a person does.
func testShadowAnswered(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	for _, u := range []string{"a", "b", "c"} {
		mustEnter(t, s, q, u)
	}
	joined := clock.Now()
	shadowAt(t, "x entering the shadow line", mustEnterShadow(t, s, q, "x"), 1, 3, 4)
	shadowAt(t, "x entering again as a person", mustEnter(t, s, q, "x"), 1, 3, 4)
	shadowAt(t, "x entering again as a suspect", mustEnterShadow(t, s, q, "x"), 1, 3, 4)
	shadowAt(t, "x asking", mustStatus(t, s, q, "x"), 1, 3, 4)
	if e := mustEnterShadow(t, s, q, "a"); e.State != queue.Waiting || e.Shadow || e.Ticket != 1 || e.Position != 1 {
		t.Fatalf("a, a person in line, marked a suspect: %+v; want a's own place", e)
	}
	if e := mustEnter(t, s, q, "d"); e.Shadow || e.Ticket != 4 || e.Position != 4 || e.Length != 4 {
		t.Fatalf("d entering after x: %+v; want ticket 4 at 4 of 4", e)
	}
	shadowAt(t, "y entering the shadow line", mustEnterShadow(t, s, q, "y"), 2, 4, 5)
	sus, err := s.Suspects(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(sus) != 2 || sus[0].Ticket != 1 || sus[0].Behind != 3 || sus[1].Ticket != 2 || sus[1].Behind != 4 {
		t.Fatalf("Suspects: %+v; want x (1, behind 3) then y (2, behind 4)", sus)
	}
	if diff := cmp.Diff(testMark, sus[0].Mark); diff != "" {
		t.Errorf("x's mark (-want +got):\n%s", diff)
	}
	if d := sus[0].Joined.Sub(joined); d < -time.Millisecond || d > time.Second {
		t.Errorf("x joined at %v, want about %v", sus[0].Joined, joined)
	}
	if one, err := s.Suspects(ctx, q, 1); err != nil || len(one) != 1 || one[0].Ticket != 1 {
		t.Errorf("Suspects(1): %+v, %v; want x alone", one, err)
	}
	if sn, err := s.Snapshot(ctx, q); err != nil || sn.Head != 1 || sn.Last != 4 || sn.Length != 4 || len(sn.Left) != 0 {
		t.Fatalf("snapshot: %+v, %v; want the four people only", sn, err)
	}
	if st := mustStats(t, s, q); st.Length != 4 || st.ShadowLength != 2 || st.ShadowEnteredTotal != 2 || st.EnteredTotal != 4 {
		t.Fatalf("stats: %+v; want 4 waiting and 2 in the shadow line", st)
	}
	// The shown place falls as the people ahead of it are let in, to 1.
	if got := admitDue(t, s, clock, q, 2); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("admitted %v, want [a b]", got)
	}
	shadowAt(t, "x after a and b were let in", mustStatus(t, s, q, "x"), 1, 3, 2)
	for len(admitDue(t, s, clock, q, 10)) > 0 {
	}
	shadowAt(t, "x with nobody waiting", mustStatus(t, s, q, "x"), 1, 3, 1)
	shadowAt(t, "y with nobody waiting", mustStatus(t, s, q, "y"), 2, 4, 1)
	if e, err := s.AdmitNow(ctx, q, "y", queue.NewTokens(1)[0]); err != nil {
		t.Fatal(err)
	} else {
		shadowAt(t, "y asking to be let straight in", e, 2, 4, 1)
	}
	if left, err := s.Leave(ctx, q, "x"); err != nil || !left {
		t.Fatalf("x leaving: %v, %v", left, err)
	}
	if e := mustStatus(t, s, q, "x"); e.State != queue.NotInQueue {
		t.Fatalf("x after leaving: %+v", e)
	}
	if st := mustStats(t, s, q); st.ShadowLength != 1 || st.ShadowLeftTotal != 1 || st.ShadowAdmittedTotal != 0 || st.LeftTotal != 0 {
		t.Fatalf("stats after x left: %+v", st)
	}
}

// testShadowCleared: a cleared place joins the real line just behind the
// ticket that was last when it came, keeps its time in line, and only
// those behind it move back, by one; the snapshot places everyone as the
// store does, and the totals move by one join.
func testShadowCleared(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	q := newQueue(t, s, c)
	for _, u := range []string{"a", "b", "c", "d"} {
		mustEnter(t, s, q, u)
	}
	mustLeave(t, s, q, "b")
	mustEnterShadow(t, s, q, "x") // behind 4
	clock.Sleep(5 * time.Millisecond)
	for _, u := range []string{"e", "f"} {
		mustEnter(t, s, q, u)
	}
	shadowAt(t, "y", mustEnterShadow(t, s, q, "y"), 2, 6, 6)
	people := []string{"a", "c", "d", "e", "f"}
	before := map[string]int64{}
	for _, u := range people {
		before[u] = mustStatus(t, s, q, u).Position
	}
	sus, err := s.Suspects(ctx, q, 10)
	if err != nil || len(sus) != 2 {
		t.Fatalf("Suspects: %+v, %v", sus, err)
	}
	if ok, err := s.ClearSuspect(ctx, q, 1); err != nil || !ok {
		t.Fatalf("clearing x: %v, %v", ok, err)
	}
	if ok, err := s.ClearSuspect(ctx, q, 1); err != nil || ok {
		t.Errorf("clearing x again: %v, %v; want not found", ok, err)
	}
	if ok, err := s.ClearSuspect(ctx, q, 99); err != nil || ok {
		t.Errorf("clearing a ticket never given: %v, %v; want not found", ok, err)
	}
	x := mustStatus(t, s, q, "x")
	if x.State != queue.Waiting || x.Shadow || x.Position != 4 || x.Length != 6 || x.Ticket != 0 {
		t.Fatalf("x cleared: %+v; want waiting at 4 of 6 in the real line, with no ticket (the snapshot cannot place it)", x)
	}
	if e := mustEnterShadow(t, s, q, "x"); e.Shadow || e.Position != 4 {
		t.Fatalf("x cleared, marked again: %+v; want its place at 4", e)
	}
	for _, u := range people {
		want := before[u]
		if u == "e" || u == "f" {
			want++
		}
		if got := mustStatus(t, s, q, u).Position; got != want {
			t.Errorf("%s after clearing x: at %d, want %d (was %d)", u, got, want, before[u])
		}
	}
	shadowAt(t, "y after x was cleared", mustStatus(t, s, q, "y"), 2, 6, 7)
	sn, err := s.Snapshot(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Head != 1 || sn.Last != 6 || sn.Length != 6 || !slices.Equal(sn.Cleared, []int64{4}) || !slices.Equal(sn.Left, []int64{2}) {
		t.Fatalf("snapshot after clearing: %+v; want head 1, last 6, cleared [4], left [2]", sn)
	}
	checkClearedArithmetic(t, s, q, sn, people)
	if st := mustStats(t, s, q); st.ClearedTotal != 1 || st.EnteredTotal != 7 || st.Length != 6 || st.ShadowLength != 1 {
		t.Fatalf("stats after clearing: %+v; want one cleared and one more join", st)
	}
	// Let in in line order; x's wait counts from when it took its place.
	var waits []queue.Admission
	for {
		a := tickDue(t, s, clock, q, 2)
		if len(a.Admitted) == 0 {
			break
		}
		waits = append(waits, a)
	}
	var order []string
	for _, a := range waits {
		for i, u := range a.Admitted {
			order = append(order, u)
			if u == "x" && !a.Waited[i].Entered.Equal(sus[0].Joined) {
				t.Errorf("x let in having entered at %v, want %v (when it took its shadow place)", a.Waited[i].Entered, sus[0].Joined)
			}
		}
	}
	if fmt.Sprint(order) != "[a c d x e f]" {
		t.Fatalf("let in %v, want [a c d x e f]", order)
	}
	if st := mustStats(t, s, q); st.AdmittedTotal != 6 || st.ShadowLength != 1 || st.ShadowAdmittedTotal != 0 {
		t.Fatalf("stats after the line was let in: %+v", st)
	}
}

// checkClearedArithmetic: for each person, the snapshot's arithmetic
// (ticket − head + 1 − left below + cleared below) is the store's place.
func checkClearedArithmetic(t *testing.T, s queue.Store, q string, sn queue.Snapshot, users []string) {
	t.Helper()
	for _, u := range users {
		e := mustStatus(t, s, q, u)
		if e.State != queue.Waiting {
			continue
		}
		left, _ := slices.BinarySearch(sn.Left, e.Ticket)
		cleared, _ := slices.BinarySearch(sn.Cleared, e.Ticket)
		if got := e.Ticket - sn.Head + 1 - int64(left) + int64(cleared); got != e.Position {
			t.Errorf("%s (ticket %d): the snapshot places it at %d, the store at %d", u, e.Ticket, got, e.Position)
		}
	}
}

// testShadowClearedFirst: a suspect whose arrival ticket was let in is
// cleared to the front; with nobody waiting, to the end; a cleared place
// that leaves leaves no gap in the snapshot's Left.
func testShadowClearedFirst(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	mustEnter(t, s, q, "a")
	mustEnter(t, s, q, "b")
	mustEnterShadow(t, s, q, "x") // behind 2
	mustEnterShadow(t, s, q, "y") // behind 2
	if got := admitDue(t, s, clock, q, 10); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("admitted %v, want [a b]", got)
	}
	// Nobody waits: y goes behind the last ticket.
	if ok, err := s.ClearSuspect(ctx, q, 2); err != nil || !ok {
		t.Fatalf("clearing y: %v, %v", ok, err)
	}
	if e := mustStatus(t, s, q, "y"); e.Shadow || e.Position != 1 || e.Length != 1 {
		t.Fatalf("y cleared into an empty line: %+v; want first", e)
	}
	if sn, err := s.Snapshot(ctx, q); err != nil || sn.Head != 0 || sn.Length != 1 || !slices.Equal(sn.Cleared, []int64{2}) {
		t.Fatalf("snapshot with only y: %+v, %v; want head 0, cleared [2]", sn, err)
	}
	if e := mustEnter(t, s, q, "c"); e.Ticket != 3 || e.Position != 2 {
		t.Fatalf("c entering behind y: %+v; want ticket 3 at 2", e)
	}
	mustEnter(t, s, q, "d")
	// x came behind 2, long let in: it goes first, level with y, and two
	// places level stand in the order of their users' ids (as Redis
	// orders equal scores).
	if ok, err := s.ClearSuspect(ctx, q, 1); err != nil || !ok {
		t.Fatalf("clearing x: %v, %v", ok, err)
	}
	for u, p := range map[string]int64{"x": 1, "y": 2, "c": 3, "d": 4} {
		if e := mustStatus(t, s, q, u); e.Position != p || e.Shadow {
			t.Errorf("%s: %+v, want at %d in the real line", u, e, p)
		}
	}
	sn, err := s.Snapshot(ctx, q)
	if err != nil || sn.Head != 3 || !slices.Equal(sn.Cleared, []int64{2, 2}) {
		t.Fatalf("snapshot: %+v, %v; want head 3, cleared [2 2]", sn, err)
	}
	checkClearedArithmetic(t, s, q, sn, []string{"c", "d"})
	mustLeave(t, s, q, "x")
	sn, err = s.Snapshot(ctx, q)
	if err != nil || sn.Head != 3 || len(sn.Left) != 0 || !slices.Equal(sn.Cleared, []int64{2}) || sn.Length != 3 {
		t.Fatalf("snapshot after x left: %+v, %v; want cleared [2], no gap", sn, err)
	}
	if e := mustStatus(t, s, q, "c"); e.Position != 2 {
		t.Fatalf("c after x left: %+v; want at 2", e)
	}
	if st := mustStats(t, s, q); st.ClearedTotal != 2 || st.LeftTotal != 1 || st.Length != 3 {
		t.Fatalf("stats: %+v", st)
	}
}

// testShadowClearedOpening: a place cleared while an opening is ahead
// waits in its pre-queue as a person arriving then would: nobody lets it
// in before the opening, whose list names it to draw or order with the
// others. One cleared while the opening is placed stands behind its last
// reserved ticket (where the draw may put anyone who was in the
// pre-queue), ahead of those who entered after the close if it came
// before them. Each join counts once in the totals.
func testShadowClearedOpening(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.OpensAt = clock.Now().Add(time.Hour)
	q := newQueue(t, s, c)
	mustEnter(t, s, q, "a")
	mustEnter(t, s, q, "b")
	mustEnterShadow(t, s, q, "x") // behind 2: the pre-queue's tickets to be
	mustEnterShadow(t, s, q, "y")
	if ok, err := s.ClearSuspect(ctx, q, 1); err != nil || !ok {
		t.Fatalf("clearing x: %v, %v", ok, err)
	}
	for _, e := range []queue.Standing{mustStatus(t, s, q, "x"), mustEnter(t, s, q, "x"), mustEnterShadow(t, s, q, "x")} {
		if e.State != queue.Waiting || !e.PreQueue || e.Shadow || e.Position != 0 {
			t.Fatalf("x cleared before the opening: %+v; want in its pre-queue, as a person", e)
		}
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 0 {
		t.Fatalf("let in %v an hour before the opening", got)
	}
	if st := mustStats(t, s, q); st.PreQueued != 3 || st.Length != 0 || st.EnteredTotal != 0 || st.ClearedTotal != 1 || st.ShadowLength != 1 {
		t.Fatalf("stats with x cleared into the pre-queue: %+v; want 3 pre-queued, nobody in line yet", st)
	}
	c.OpensAt = clock.Now()
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	op, err := s.OpenDue(ctx, q, "me", time.Minute)
	if err != nil || !op.Due || fmt.Sprint(sorted(op.Pending)) != "[a b x]" {
		t.Fatalf("the opening: %+v, %v; want a, b and x to place", op, err)
	}
	if done, err := s.Place(ctx, q, "me", op.Next, []string{"x"}, time.Minute); err != nil || done {
		t.Fatalf("placing x first: %v, %v; want more to place", done, err)
	}
	mustEnter(t, s, q, "c") // after the close: behind the reserved tickets
	// y came behind 2, a reserved ticket not yet placed: it goes behind
	// the last reserved one, still ahead of c, who came after it.
	if ok, err := s.ClearSuspect(ctx, q, 2); err != nil || !ok {
		t.Fatalf("clearing y: %v, %v", ok, err)
	}
	for u, p := range map[string]int64{"x": 1, "y": 4, "c": 5} {
		if e := mustStatus(t, s, q, u); e.State != queue.Waiting || e.Shadow || e.Position != p || e.Length != 5 {
			t.Errorf("%s while the opening is placed: %+v; want at %d of 5", u, e, p)
		}
	}
	if done, err := s.Place(ctx, q, "me", op.Next+1, []string{"b", "a"}, time.Minute); err != nil || !done {
		t.Fatalf("placing the rest: %v, %v", done, err)
	}
	if got := admitDue(t, s, clock, q, 10); fmt.Sprint(got) != "[x b a y c]" {
		t.Fatalf("let in %v, want [x b a y c]: the opening's order, then y, then c", got)
	}
	if st := mustStats(t, s, q); st.EnteredTotal != 5 || st.AdmittedTotal != 5 || st.ClearedTotal != 2 || st.PreQueued != 0 {
		t.Fatalf("stats after the opening: %+v; want 5 joins, each counted once, let in", st)
	}
}

// testShadowClearedSeen: under abandonAfter, a place cleared into the
// line is seen when cleared, as a person is when entering: its client,
// answered as a shadow place until then, had no seen mark, and the next
// tick would skip it as a no-show the moment the operator let it in.
func testShadowClearedSeen(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	// The store's own rule, not the admin range (≥ 15 s); on the wall
	// clock (Redis's TIME) the clearing and the tick that judges it are
	// two calls apart, which a loaded machine may stretch past a second.
	abandon := time.Second
	if _, fake := clock.(*FakeClock); !fake {
		abandon = 5 * time.Second
	}
	c := fastConfig()
	c.AbandonAfter = abandon
	q := newQueue(t, s, c)
	for i := range c.BatchSize + 1 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	mustEnterShadow(t, s, q, "x") // behind the last of them
	// The first tick lets in a batch and sets the store's checkpoint: the
	// one left, and x behind them, are judged once older than abandon.
	admitDue(t, s, clock, q, c.BatchSize)
	clock.Sleep(abandon + abandon/2)
	last := fmt.Sprintf("u%d", c.BatchSize)
	mustStatus(t, s, q, last) // asking: seen
	if ok, err := s.ClearSuspect(ctx, q, 1); err != nil || !ok {
		t.Fatalf("clearing x: %v, %v", ok, err)
	}
	a := tickDue(t, s, clock, q, c.BatchSize)
	if fmt.Sprint(a.Admitted) != fmt.Sprintf("[%s x]", last) || a.Skipped != 0 {
		t.Fatalf("the tick after x was cleared: admitted %v, skipped %d; want [%s x], nobody skipped", a.Admitted, a.Skipped, last)
	}
}

// testShadowCapacity: the shadow line has a capacity of its own, and
// neither line fills the other.
func testShadowCapacity(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.Capacity, c.ShadowCapacity = 2, 2
	q := newQueue(t, s, c)
	mustEnter(t, s, q, "a")
	mustEnter(t, s, q, "b")
	if _, err := s.Enter(ctx, q, "c"); !errors.Is(err, queue.ErrQueueFull) {
		t.Fatalf("c into a full line: %v, want ErrQueueFull", err)
	}
	mustEnterShadow(t, s, q, "x")
	mustEnterShadow(t, s, q, "y")
	if _, err := s.EnterShadow(ctx, q, "z", testMark); !errors.Is(err, queue.ErrQueueFull) {
		t.Fatalf("z into a full shadow line: %v, want ErrQueueFull", err)
	}
	shadowAt(t, "y, in a full shadow line, entering again", mustEnterShadow(t, s, q, "y"), 2, 2, 3)
	mustLeave(t, s, q, "a")
	if e := mustEnter(t, s, q, "c"); e.Shadow || e.Position != 2 {
		t.Fatalf("c once a left: %+v; want a real place at 2", e)
	}
	mustLeave(t, s, q, "x")
	mustEnterShadow(t, s, q, "z")
	if st := mustStats(t, s, q); st.Length != 2 || st.ShadowLength != 2 {
		t.Fatalf("stats: %+v", st)
	}
}

// testShadowAsPeople: sold out refuses a suspect as a person, keeping
// the places held; a pause lets nobody in from either line; an opening
// ahead answers a suspect as a person (the pre-queue), yet it is not in
// the opening's list, and its place is behind everyone who was.
func testShadowAsPeople(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.ShadowAdmits, c.Paused = suspect.AdmitLast, true
	q := newQueue(t, s, c)
	mustEnterShadow(t, s, q, "x")
	if got := admitDue(t, s, clock, q, 10); len(got) != 0 {
		t.Fatalf("paused, admitted %v", got)
	}
	if _, err := s.SetStock(ctx, q, units(0), false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnterShadow(ctx, q, "y", testMark); !errors.Is(err, queue.ErrSoldOut) {
		t.Fatalf("y when sold out: %v, want ErrSoldOut", err)
	}
	shadowAt(t, "x when sold out", mustStatus(t, s, q, "x"), 1, 0, 1)
	c.Paused = false
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 0 {
		t.Fatalf("sold out, admitted %v", got)
	}

	c = fastConfig()
	c.OpensAt, c.ShadowAdmits = clock.Now().Add(time.Hour), suspect.AdmitLast
	o := newQueue(t, s, c)
	mustEnter(t, s, o, "a")
	mustEnter(t, s, o, "b")
	for _, e := range []queue.Standing{mustEnterShadow(t, s, o, "x"), mustStatus(t, s, o, "x")} {
		if e.State != queue.Waiting || !e.PreQueue || !e.Shadow || e.Behind != 2 {
			t.Fatalf("x before the opening: %+v; want a shadow place in the pre-queue, behind 2", e)
		}
	}
	if got := admitDue(t, s, clock, o, 10); len(got) != 0 {
		t.Fatalf("before the opening, let in %v; want nobody (the shadow line waits for the pre-queue)", got)
	}
	c.OpensAt = clock.Now()
	if err := s.PutConfig(ctx, o, c); err != nil {
		t.Fatal(err)
	}
	op, err := s.OpenDue(ctx, o, "me", time.Minute)
	if err != nil || !op.Due || fmt.Sprint(sorted(op.Pending)) != "[a b]" {
		t.Fatalf("the opening: %+v, %v; want a and b pending, not x", op, err)
	}
	mustEnter(t, s, o, "c")
	shadowAt(t, "x while the opening is placed", mustStatus(t, s, o, "x"), 1, 2, 3)
	if done, err := s.Place(ctx, o, "me", op.Next, []string{"b", "a"}, time.Minute); err != nil || !done {
		t.Fatalf("placing: %v, %v", done, err)
	}
	shadowAt(t, "x once placed", mustStatus(t, s, o, "x"), 1, 2, 3)
	var got []string
	for len(got) < 4 {
		got = append(got, admitDue(t, s, clock, o, 10)...)
	}
	if fmt.Sprint(got) != "[b a c x]" {
		t.Fatalf("let in %v, want [b a c x]: the opening's order, c, then the shadow line", got)
	}
}

// testShadowAdmitsLast: under shadowAdmits last, the shadow line is let
// in, in its order and within a tick's budget, only at a tick that finds
// nobody waiting in the real line; under never, nobody from it ever.
func testShadowAdmitsLast(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.RatePerSecond, c.BatchSize = 2000, 2 // two a tick
	q := newQueue(t, s, c)
	mustEnter(t, s, q, "a")
	for _, u := range []string{"x", "y", "z"} {
		mustEnterShadow(t, s, q, u)
	}
	mustEnter(t, s, q, "b")
	mustEnter(t, s, q, "c")
	for range 3 {
		admitDue(t, s, clock, q, 2)
	}
	shadowAt(t, "x under never", mustStatus(t, s, q, "x"), 1, 1, 1)

	c.ShadowAdmits = suspect.AdmitLast
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	mustEnter(t, s, q, "d")
	var got []string
	for i := range 4 {
		a := tickDue(t, s, clock, q, 2)
		if a.Shadow != (i == 1 || i == 2) {
			t.Errorf("tick %d (%v) says Shadow %v", i, a.Admitted, a.Shadow)
		}
		got = append(got, a.Admitted...)
	}
	if fmt.Sprint(got) != "[d x y z]" {
		t.Fatalf("let in %v, want [d x y z]", got)
	}
	x := mustStatus(t, s, q, "x")
	if x.State != queue.Ready || x.Token == "" {
		t.Fatalf("x let in: %+v; want READY with a token", x)
	}
	if err := s.BeginUse(ctx, q, "x", x.Token, "r", time.Second); err != nil {
		t.Fatalf("x's token: %v", err)
	}
	if st := mustStats(t, s, q); st.ShadowAdmittedTotal != 3 || st.ShadowLength != 0 || st.AdmittedTotal != 4 || st.ActiveTokens != 7 {
		t.Fatalf("stats: %+v; want 3 let in from the shadow line, 4 people", st)
	}
}

// testShadowNotDrawn: under the random draw, a shadow place is never
// drawn while under never, nor before the real line is empty under last.
func testShadowNotDrawn(t *testing.T, s queue.Store, clock Clock) {
	c := randomConfig()
	c.BatchSize, c.RatePerSecond, c.ShadowAdmits = 3, 3000, suspect.AdmitLast
	q := newQueue(t, s, c)
	for i := range 6 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
		mustEnterShadow(t, s, q, fmt.Sprintf("x%d", i))
	}
	var got []string
	for range 4 {
		got = append(got, admitDue(t, s, clock, q, 3)...)
	}
	if len(got) != 12 || fmt.Sprint(sorted(got[:6])) != "[u0 u1 u2 u3 u4 u5]" || fmt.Sprint(got[6:]) != "[x0 x1 x2 x3 x4 x5]" {
		t.Fatalf("let in %v; want the six people drawn, then x0..x5 in order", got)
	}
}

// testShadowDeleted: a queue removed forgets its shadow line.
func testShadowDeleted(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	mustEnterShadow(t, s, q, "x")
	if err := s.DeleteQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Suspects(ctx, q, 10); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Suspects of a removed queue: %v, want ErrQueueNotFound", err)
	}
	if err := s.PutConfig(ctx, q, fastConfig()); err != nil {
		t.Fatal(err)
	}
	if e := mustStatus(t, s, q, "x"); e.State != queue.NotInQueue {
		t.Errorf("x in the queue made again: %+v", e)
	}
	if sus, err := s.Suspects(ctx, q, 10); err != nil || len(sus) != 0 {
		t.Errorf("Suspects of the queue made again: %+v, %v", sus, err)
	}
	if st := mustStats(t, s, q); st.ShadowEnteredTotal != 0 || st.ShadowLength != 0 {
		t.Errorf("stats of the queue made again: %+v", st)
	}
	shadowAt(t, "x entering again", mustEnterShadow(t, s, q, "x"), 1, 0, 1)
}

// testShadowProperty runs a random mix of people and suspects entering,
// leaving, being cleared and let in (shadowAdmits last), then lets both
// lines in, and checks after every step that both lines' totals balance, that the places of everyone
// waiting in the line are exactly 1 to its length, and that the snapshot's
// arithmetic places each ticket where the store does.
func testShadowProperty(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.RatePerSecond, c.BatchSize, c.ShadowAdmits = 1000, 1, suspect.AdmitLast // one a tick
	q := newQueue(t, s, c)
	rnd := rand.New(rand.NewPCG(51, 51))
	users := make([]string, 24)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	for step := range 240 {
		u := users[rnd.IntN(len(users))]
		switch rnd.IntN(10) {
		case 0, 1:
			mustEnter(t, s, q, u)
		case 2, 3:
			mustEnterShadow(t, s, q, u)
		case 4, 5:
			mustLeave(t, s, q, u)
		case 6:
			if sus, err := s.Suspects(ctx, q, 100); err != nil {
				t.Fatal(err)
			} else if len(sus) > 0 {
				if ok, err := s.ClearSuspect(ctx, q, sus[rnd.IntN(len(sus))].Ticket); err != nil || !ok {
					t.Fatalf("step %d: clearing a listed suspect: %v, %v", step, ok, err)
				}
			}
		case 7:
			admitDue(t, s, clock, q, c.BatchSize)
		default:
			mustStatus(t, s, q, u)
		}
		checkLine(t, s, q, users, fmt.Sprintf("step %d", step))
	}
	for len(admitDue(t, s, clock, q, c.BatchSize)) > 0 { // the line, then the shadow line
		checkLine(t, s, q, users, "draining")
	}
	// The seed takes every way: a mix that did not proves little.
	if st := mustStats(t, s, q); st.ClearedTotal == 0 || st.ShadowAdmittedTotal == 0 || st.ShadowLeftTotal == 0 || st.AdmittedTotal == 0 || st.LeftTotal == 0 {
		t.Fatalf("the mix missed a way in or out: %+v", st)
	}
}

// checkLine: the totals balance (mustStats), everyone waiting in the line
// holds one of the places 1 to its length, and the snapshot places each
// ticket as the store does.
func checkLine(t *testing.T, s queue.Store, q string, users []string, when string) {
	t.Helper()
	st := mustStats(t, s, q)
	sn, err := s.Snapshot(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var places []int64
	var ticketed []string
	for _, u := range users {
		e := mustStatus(t, s, q, u)
		if e.State != queue.Waiting || e.Shadow || e.PreQueue {
			continue
		}
		places = append(places, e.Position)
		if e.Ticket > 0 {
			ticketed = append(ticketed, u)
		}
	}
	slices.Sort(places)
	for i, p := range places {
		if p != int64(i+1) || int64(len(places)) != st.Length || sn.Length != st.Length {
			t.Fatalf("%s: the line's places are %v, its length %d (snapshot %d)", when, places, st.Length, sn.Length)
		}
	}
	checkClearedArithmetic(t, s, q, sn, ticketed)
}
