package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
)

// The suite's part for a draw anyone can check (issue 57): the ledger of
// commitments (CommitDraw, Draws), the record kept once (SaveDraw,
// DrawRecord), the reserved tickets an opening is placed at (OpenDue's
// First and Next, Place from first), and a takeover placing the order
// already drawn. The large opening through admission.OpenLine is
// RunDistributions' (testOpeningMatchesItsRecord): thousands of calls.
func init() {
	register(
		suiteTest{"CommitDrawKeepsOneCommitmentPerOpening", testCommitDraw},
		suiteTest{"SaveDrawKeepsTheFirstRecordUnderTheLease", testSaveDraw},
		suiteTest{"OpeningPlacesUsersAtTheirReservedTickets", testPlaceAtTickets},
		suiteTest{"OpeningTakenOverPlacesTheOrderDrawn", testTakeoverSameOrder},
		suiteTest{"OpeningDrawsThePreQueueAsItClosed", testClosedAtClose},
		suiteTest{"SaveDrawTakesOnlyTheOpeningsCommitment", testSaveDrawOfThisOpening},
	)
}

// seedOf is a seed for tests: n in every byte.
func seedOf(n byte) draw.Seed {
	var s draw.Seed
	for i := range s {
		s[i] = n
	}
	return s
}

// ignoreMadeAt leaves out the store's times, which checkStoreTime checks.
var ignoreMadeAt = cmpopts.IgnoreFields(draw.Committed{}, "MadeAt", "WithdrawnAt")

// checkStoreTime fails unless got is an instant of the store's clock
// between before and after (a store keeps milliseconds).
func checkStoreTime(t *testing.T, what string, got, before, after time.Time) {
	t.Helper()
	if got.Before(before.Add(-time.Millisecond)) || got.After(after.Add(time.Millisecond)) {
		t.Errorf("%s = %v, want the store's clock, between %v and %v", what, got, before, after)
	}
}

// mustCommit calls CommitDraw and wants it kept.
func mustCommit(t *testing.T, s queue.Store, q string, c draw.Committed) draw.Committed {
	t.Helper()
	got, ok, err := s.CommitDraw(context.Background(), q, c)
	if err != nil || !ok {
		t.Fatalf("CommitDraw(%s): %+v, %v, %v; want it kept", c.Hash, got, ok, err)
	}
	return got
}

func mustDraws(t *testing.T, s queue.Store, q string) []draw.Committed {
	t.Helper()
	all, err := s.Draws(context.Background(), q)
	if err != nil {
		t.Fatalf("Draws: %v", err)
	}
	return all
}

func mustEpoch(t *testing.T, s queue.Store, q string) int64 {
	t.Helper()
	sn, err := s.Snapshot(context.Background(), q)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return sn.Epoch
}

// states lists the ledger's commitments as "hash state", oldest first.
func states(all []draw.Committed) []string {
	out := make([]string, len(all))
	for i, c := range all {
		out[i] = c.Hash[:8] + " " + string(c.State)
	}
	return out
}

// testCommitDraw: a commitment is kept, with the store's time, pending and
// in the queue's life; the same one asked again is answered the one kept;
// an opening moved, a beacon named or the queue made again gets a new one,
// the old withdrawn at the store's time; no opening, or one already opened,
// gets none and writes nothing; the ledger outlives the queue.
func testCommitDraw(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.OpensAt = clock.Now().Add(time.Hour).Truncate(time.Millisecond)
	q := newQueue(t, s, c)
	epoch := mustEpoch(t, s, q)
	if all := mustDraws(t, s, q); len(all) != 0 {
		t.Fatalf("Draws before any commitment: %v", states(all))
	}

	before := clock.Now()
	first := draw.NewCommittedWith(seedOf(1), q, c.OpensAt, nil)
	kept := mustCommit(t, s, q, first)
	want := first
	want.Epoch = epoch
	if diff := cmp.Diff(want, kept, ignoreMadeAt); diff != "" {
		t.Errorf("the first commitment kept (-want +got):\n%s", diff)
	}
	checkStoreTime(t, "MadeAt", kept.MadeAt, before, clock.Now())

	again := mustCommit(t, s, q, draw.NewCommittedWith(seedOf(2), q, c.OpensAt, nil))
	if diff := cmp.Diff(kept, again); diff != "" {
		t.Errorf("the same opening again: answered (-kept +got):\n%s", diff)
	}
	if all := mustDraws(t, s, q); len(all) != 1 || all[0].Hash != first.Hash {
		t.Fatalf("Draws after the same opening twice: %v, want only the first", states(all))
	}

	beacon := &draw.Beacon{URL: "https://beacon.example", Round: 7}
	named := mustCommit(t, s, q, draw.NewCommittedWith(seedOf(3), q, c.OpensAt, beacon))
	if named.Hash == first.Hash || named.Beacon == nil || *named.Beacon != *beacon {
		t.Errorf("a beacon named: kept %+v, want a new commitment naming it", named)
	}

	c.OpensAt = c.OpensAt.Add(time.Hour)
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	before = clock.Now()
	moved := mustCommit(t, s, q, draw.NewCommittedWith(seedOf(4), q, c.OpensAt, nil))
	after := clock.Now()
	if moved.Hash == named.Hash || !moved.OpensAt.Equal(c.OpensAt) || moved.State != draw.Pending {
		t.Errorf("the opening moved: kept %+v, want a new pending commitment", moved)
	}
	all := mustDraws(t, s, q)
	if diff := cmp.Diff([]string{first.Hash[:8] + " withdrawn", named.Hash[:8] + " withdrawn", moved.Hash[:8] + " pending"}, states(all)); diff != "" {
		t.Fatalf("Draws after the opening moved (-want +got):\n%s", diff)
	}
	checkStoreTime(t, "the replaced commitment's WithdrawnAt", all[1].WithdrawnAt, before, after)
	if all[0].WithdrawnAt.IsZero() || all[0].WithdrawnAt.Before(all[0].MadeAt) {
		t.Errorf("the first commitment withdrawn at %v, made at %v", all[0].WithdrawnAt, all[0].MadeAt)
	}
	if !all[2].WithdrawnAt.IsZero() {
		t.Errorf("the pending commitment has WithdrawnAt %v", all[2].WithdrawnAt)
	}
	if got, ok, err := s.CommitDraw(ctx, q, draw.NewCommittedWith(seedOf(5), q, c.OpensAt.Add(-time.Hour), nil)); err != nil || ok {
		t.Errorf("a commitment to the opening that moved away: %+v, %v, %v; want false", got, ok, err)
	}
	checkLedger(t, s, q, all, "after a commitment to an opening that moved away")

	commitNothing(t, s, clock)

	if err := s.DeleteQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, s, q, all, "after DeleteQueue")
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	before = clock.Now()
	remade := mustCommit(t, s, q, draw.NewCommittedWith(seedOf(8), q, c.OpensAt, nil))
	if remade.Epoch != mustEpoch(t, s, q) || remade.Epoch == moved.Epoch {
		t.Errorf("the queue made again: commitment in epoch %d, want %d (not %d)", remade.Epoch, mustEpoch(t, s, q), moved.Epoch)
	}
	all = mustDraws(t, s, q)
	if n := len(all); n != 4 || all[2].State != draw.Withdrawn || all[3].State != draw.Pending || all[3].Epoch != remade.Epoch {
		t.Fatalf("Draws after the queue was made again: %v, want the old one withdrawn and a new one pending", states(all))
	}
	checkStoreTime(t, "the old life's WithdrawnAt", all[2].WithdrawnAt, before, clock.Now())
}

// checkLedger fails unless q's ledger is still want.
func checkLedger(t *testing.T, s queue.Store, q string, want []draw.Committed, when string) {
	t.Helper()
	if diff := cmp.Diff(want, mustDraws(t, s, q)); diff != "" {
		t.Errorf("Draws %s (-want +got):\n%s", when, diff)
	}
}

// commitNothing: a queue with no opening, and one whose opening came and
// went with nobody waiting, take no commitment.
func commitNothing(t *testing.T, s queue.Store, clock Clock) {
	t.Helper()
	ctx := context.Background()
	none := newQueue(t, s, fastConfig())
	if got, ok, err := s.CommitDraw(ctx, none, draw.NewCommittedWith(seedOf(6), none, clock.Now().Add(time.Hour), nil)); err != nil || ok {
		t.Errorf("a queue with no opening: %+v, %v, %v; want false", got, ok, err)
	}
	c := fastConfig()
	c.OpensAt = clock.Now().Add(-time.Minute).Truncate(time.Millisecond)
	opened := newQueue(t, s, c)
	if o, err := s.OpenDue(ctx, opened, "me", time.Minute); err != nil || o.Due {
		t.Fatalf("an opening with nobody waiting: %+v, %v; want it opened at once", o, err)
	}
	if got, ok, err := s.CommitDraw(ctx, opened, draw.NewCommittedWith(seedOf(7), opened, c.OpensAt, nil)); err != nil || ok {
		t.Errorf("a queue already opened: %+v, %v, %v; want false", got, ok, err)
	}
	for _, q := range []string{none, opened, "never-made"} {
		if all := mustDraws(t, s, q); len(all) != 0 {
			t.Errorf("Draws of %s: %v, want none", q, states(all))
		}
	}
}

// dueOpening makes a queue whose opening is due with users in its
// pre-queue, and has OpenDue give owner the lease: the queue and the
// opening.
func dueOpening(t *testing.T, s queue.Store, clock Clock, owner string, users ...string) (string, queue.Config, queue.Opening) {
	t.Helper()
	c := fastConfig()
	c.OpensAt = clock.Now().Add(-time.Minute).Truncate(time.Millisecond)
	q := newQueue(t, s, c)
	for _, u := range users {
		if e := mustEnter(t, s, q, u); !e.PreQueue {
			t.Fatalf("%s entering before the opening: %+v", u, e)
		}
	}
	o, err := s.OpenDue(context.Background(), q, owner, time.Minute)
	if err != nil || !o.Due || len(o.Pending) != len(users) {
		t.Fatalf("OpenDue: %+v, %v; want due with %v", o, err, users)
	}
	return q, c, o
}

// idsOf is the participant ids of users in q's draws (testDrawer's).
func idsOf(q string, users []string) []string {
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = testDrawer.Participants.Of(q, u).ID
	}
	return ids
}

// testSaveDraw: a record is kept only under the opening's lease; the first
// kept is the one (a second is answered it); its commitment is then drawn
// and takes no new commitment to the same opening; DrawRecord reads it back
// as it was given.
func testSaveDraw(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q, c, o := dueOpening(t, s, clock, "owner", "a", "b", "c")
	committed := mustCommit(t, s, q, draw.NewCommittedWith(seedOf(1), q, c.OpensAt, nil))
	rec, err := draw.Draw(committed, idsOf(q, o.Pending), nil, o.First, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveDraw(ctx, q, "intruder", rec); !errors.Is(err, queue.ErrNotOwner) {
		t.Errorf("SaveDraw without the lease: %v, want ErrNotOwner", err)
	}
	if got, ok, err := s.DrawRecord(ctx, q, committed.Hash); err != nil || ok {
		t.Errorf("DrawRecord after a refused SaveDraw: %+v, %v, %v; want none", got, ok, err)
	}
	if all := mustDraws(t, s, q); len(all) != 1 || all[0].State != draw.Pending {
		t.Errorf("Draws after a refused SaveDraw: %v, want it pending", states(all))
	}
	got, err := s.SaveDraw(ctx, q, "owner", rec)
	if err != nil {
		t.Fatalf("SaveDraw: %v", err)
	}
	if diff := cmp.Diff(rec, got); diff != "" {
		t.Errorf("SaveDraw answered (-given +got):\n%s", diff)
	}
	other, err := draw.Draw(committed, idsOf(q, o.Pending[:2]), nil, o.First, clock.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.SaveDraw(ctx, q, "owner", other); err != nil || !cmp.Equal(rec, got) {
		t.Errorf("a second SaveDraw: %v, answered (-first +got):\n%s", err, cmp.Diff(rec, got))
	}
	kept, ok, err := s.DrawRecord(ctx, q, committed.Hash)
	if err != nil || !ok {
		t.Fatalf("DrawRecord: %v, %v", ok, err)
	}
	if diff := cmp.Diff(rec, kept); diff != "" {
		t.Errorf("DrawRecord (-saved +read):\n%s", diff)
	}
	if err := draw.Verify(kept); err != nil {
		t.Errorf("the record kept does not verify: %v", err)
	}
	if all := mustDraws(t, s, q); len(all) != 1 || all[0].State != draw.Drawn {
		t.Errorf("Draws after SaveDraw: %v, want it drawn", states(all))
	}
	if got, ok, err := s.DrawRecord(ctx, q, draw.Commitment(seedOf(9), q, c.OpensAt, nil)); err != nil || ok {
		t.Errorf("DrawRecord of an unknown commitment: %+v, %v, %v; want none", got, ok, err)
	}
	if got, ok, err := s.CommitDraw(ctx, q, draw.NewCommittedWith(seedOf(2), q, c.OpensAt, nil)); err != nil || ok {
		t.Errorf("a commitment to an opening drawn: %+v, %v, %v; want false", got, ok, err)
	}
}

// testSaveDrawOfThisOpening: SaveDraw keeps only the draw of a commitment
// to the opening being placed, in this life of the queue. One still
// pending to the instant the opening was moved from, or to the same
// instant in a life of the queue deleted since, is refused, nothing kept.
func testSaveDrawOfThisOpening(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.OpensAt = clock.Now().Add(time.Hour).Truncate(time.Millisecond)
	q := newQueue(t, s, c)
	moved := mustCommit(t, s, q, draw.NewCommittedWith(seedOf(1), q, c.OpensAt, nil))
	c.OpensAt = clock.Now().Add(-time.Minute).Truncate(time.Millisecond)
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	mustEnter(t, s, q, "a")
	gone := newQueue(t, s, c)
	lastLife := mustCommit(t, s, gone, draw.NewCommittedWith(seedOf(2), gone, c.OpensAt, nil))
	if err := s.DeleteQueue(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConfig(ctx, gone, c); err != nil {
		t.Fatal(err)
	}
	mustEnter(t, s, gone, "a")
	for _, tc := range []struct {
		what, q string
		c       draw.Committed
	}{{"to the instant the opening moved from", q, moved}, {"of a life of the queue deleted since", gone, lastLife}} {
		o, err := s.OpenDue(ctx, tc.q, "owner", time.Minute)
		if err != nil || !o.Due {
			t.Fatalf("OpenDue of %s: %+v, %v", tc.q, o, err)
		}
		rec, err := draw.Draw(tc.c, idsOf(tc.q, o.Pending), nil, o.First, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.SaveDraw(ctx, tc.q, "owner", rec); err == nil || errors.Is(err, queue.ErrNotOwner) {
			t.Errorf("SaveDraw of a commitment %s: %+v, %v; want it refused", tc.what, got, err)
		}
		if got, ok, err := s.DrawRecord(ctx, tc.q, tc.c.Hash); err != nil || ok {
			t.Errorf("DrawRecord of a commitment %s: %+v, %v, %v; want none", tc.what, got, ok, err)
		}
		if all := mustDraws(t, s, tc.q); len(all) != 1 || all[0].State != draw.Pending {
			t.Errorf("Draws after a commitment %s was refused: %v, want it pending", tc.what, states(all))
		}
	}
}

// checkTickets fails unless each user stands at their ticket and position,
// by Status and, once the opening is done (the gaps are leavers to the
// snapshot's arithmetic), by Snapshot.
func checkTickets(t *testing.T, s queue.Store, q, when string, done bool, want map[string][2]int64) {
	t.Helper()
	sn, err := s.Snapshot(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for u, tp := range want {
		if e := mustStatus(t, s, q, u); e.State != queue.Waiting || e.PreQueue || e.Ticket != tp[0] || e.Position != tp[1] {
			t.Errorf("%s: %s is %+v, want ticket %d at position %d", when, u, e, tp[0], tp[1])
		}
		if p, ok := placeIn(sn, tp[0]); done && (!ok || p != tp[1]) {
			t.Errorf("%s: the snapshot places %s at %d (%v), want %d", when, u, p, ok, tp[1])
		}
	}
}

// testPlaceAtTickets: while due, OpenDue tells the opening, the queue's
// life and the reserved tickets; Place puts users[i] at first+i, a user
// who left (or "") leaving a gap counted as a leaver; a first other than
// the store's Next is refused with nothing written; a takeover after the
// lease lapsed goes on from where the first stopped; the tickets left over
// when the pre-queue empties are gaps.
func testPlaceAtTickets(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q, c, o := dueOpening(t, s, clock, "A", "p1", "p2", "p3", "p4", "p5")
	if !o.OpensAt.Equal(c.OpensAt) || o.Epoch != mustEpoch(t, s, q) || o.First < 1 || o.Next != o.First {
		t.Fatalf("OpenDue: %+v; want opensAt %v, epoch %d and Next = First", o, c.OpensAt, mustEpoch(t, s, q))
	}
	f := o.First
	mustLeave(t, s, q, "p3")
	mustLeave(t, s, q, "p5")
	if _, err := s.Place(ctx, q, "A", f+1, []string{"p4"}, time.Minute); !errors.Is(err, queue.ErrNotOwner) {
		t.Errorf("Place from a ticket other than Next: %v, want ErrNotOwner", err)
	}
	if e := mustStatus(t, s, q, "p4"); !e.PreQueue {
		t.Errorf("a refused Place placed p4: %+v", e)
	}
	if done, err := s.Place(ctx, q, "A", f, []string{"p4", "p3", "p1"}, time.Minute); err != nil || done {
		t.Fatalf("the first chunk: done %v, %v; want more to place", done, err)
	}
	checkTickets(t, s, q, "the first chunk placed", false, map[string][2]int64{"p4": {f, 1}, "p1": {f + 2, 2}})

	clock.Step(t, q, 2*time.Minute) // A's lease lapses
	b, err := s.OpenDue(ctx, q, "B", time.Minute)
	// Pending is the pre-queue as it closed, whoever was placed or left since.
	if err != nil || !b.Due || b.First != f || b.Next != f+3 || !b.OpensAt.Equal(c.OpensAt) || b.Epoch != o.Epoch || fmt.Sprint(b.Pending) != "[p1 p2 p3 p4 p5]" {
		t.Fatalf("OpenDue by B once A's lease lapsed: %+v, %v; want due, first %d, next %d, the five closed", b, err, f, f+3)
	}
	if _, err := s.Place(ctx, q, "A", f+3, []string{"", "p2"}, time.Minute); !errors.Is(err, queue.ErrNotOwner) {
		t.Errorf("Place by A once B took over: %v, want ErrNotOwner", err)
	}
	if done, err := s.Place(ctx, q, "B", b.Next, []string{"", "p2"}, time.Minute); err != nil || !done {
		t.Fatalf("the last chunk: done %v, %v", done, err)
	}
	checkTickets(t, s, q, "placed", true, map[string][2]int64{"p4": {f, 1}, "p1": {f + 2, 2}, "p2": {f + 4, 3}})
	if e := mustEnter(t, s, q, "late"); e.Ticket != f+5 || e.Position != 4 || e.Length != 4 {
		t.Errorf("entering after the opening: %+v, want ticket %d at 4 of 4", e, f+5)
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); fmt.Sprint(got) != "[p4 p1 p2 late]" {
		t.Errorf("admitted %v, want [p4 p1 p2 late]", got)
	}

	// The reserved tickets left over once the pre-queue empties are gaps.
	q, _, o = dueOpening(t, s, clock, "A", "a", "b", "c")
	f = o.First
	if done, err := s.Place(ctx, q, "A", f, []string{"b"}, time.Minute); err != nil || done {
		t.Fatalf("placing b: done %v, %v; want more to place", done, err)
	}
	mustLeave(t, s, q, "a")
	mustLeave(t, s, q, "c")
	if done, err := s.Place(ctx, q, "A", f+1, []string{""}, time.Minute); err != nil || !done {
		t.Fatalf("placing with the pre-queue empty: done %v, %v; want the opening done", done, err)
	}
	if e := mustEnter(t, s, q, "late"); e.Ticket != f+3 || e.Position != 2 || e.Length != 2 {
		t.Errorf("entering after the tickets left over: %+v, want ticket %d at 2 of 2", e, f+3)
	}
	if st := mustStats(t, s, q); st.PreQueued != 0 || st.EnteredTotal != st.Length+st.AdmittedTotal+st.LeftTotal+st.AbandonedTotal {
		t.Errorf("totals after the opening: %+v", st)
	}
}

// dying is a store whose Place puts in line only the first n users it is
// given and then fails, as an instance that dies after its first chunk.
type dying struct {
	queue.Store
	n int
}

var errDied = errors.New("the instance died")

func (d dying) Place(ctx context.Context, q, owner string, first int64, users []string, lease time.Duration) (bool, error) {
	if _, err := d.Store.Place(ctx, q, owner, first, users[:min(d.n, len(users))], lease); err != nil {
		return false, err
	}
	return false, errDied
}

// testTakeoverSameOrder: an instance that drew an opening and died after
// placing a first chunk is taken over once its lease lapses; the second
// instance places the rest in the order kept (not one drawn again from who
// is left), so the line is the record's order, less one who left between.
func testTakeoverSameOrder(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.OpensAt = clock.Now().Add(-time.Minute).Truncate(time.Millisecond)
	q := newQueue(t, s, c)
	users := make([]string, 30)
	byID := map[string]string{}
	for i := range users {
		users[i] = fmt.Sprintf("u%02d", i)
		mustEnter(t, s, q, users[i])
		byID[testDrawer.Participants.Of(q, users[i]).ID] = users[i]
	}
	const chunk = 7
	if _, _, err := admission.OpenLine(ctx, dying{s, chunk}, q, "A", testDrawer); !errors.Is(err, errDied) {
		t.Fatalf("OpenLine by A: %v, want it to die after its first chunk", err)
	}
	all := mustDraws(t, s, q)
	if len(all) != 1 || all[0].State != draw.Drawn {
		t.Fatalf("Draws after A drew: %v, want one drawn", states(all))
	}
	rec, ok, err := s.DrawRecord(ctx, q, all[0].Hash)
	if err != nil || !ok {
		t.Fatalf("DrawRecord: %v, %v", ok, err)
	}
	gone := byID[rec.Order[chunk+3]]
	mustLeave(t, s, q, gone)
	// An operator moves the opening meanwhile: the one being placed is
	// the one closed, its commitment and its draw still the ones.
	moved := c
	moved.OpensAt = c.OpensAt.Add(time.Hour)
	if err := s.PutConfig(ctx, q, moved); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := admission.Commit(ctx, s, q, moved.OpensAt, testDrawer); err != nil || ok {
		t.Fatalf("a commitment to the moved opening while the first is placed: %v, %v; want none", ok, err)
	}

	clock.Step(t, q, 2*time.Minute) // A's lease lapses
	o, placed, err := admission.OpenLine(ctx, s, q, "B", testDrawer)
	// OpenLine counts whom it names: gone too, who left after the close
	// (a participant still, their ticket a gap).
	if err != nil || !o.Due || !o.OpensAt.Equal(c.OpensAt) || o.Next != rec.FirstTicket+chunk || placed != len(users)-chunk {
		t.Fatalf("OpenLine by B: %+v, placed %d, %v; want it to go on from ticket %d and name %d", o, placed, err, rec.FirstTicket+chunk, len(users)-chunk)
	}
	var want, got []string
	for i, id := range rec.Order {
		u := byID[id]
		if u == gone {
			continue
		}
		want = append(want, u)
		if e := mustStatus(t, s, q, u); e.Ticket != rec.Tickets[i] {
			t.Errorf("%s at ticket %d, the record's %d", u, e.Ticket, rec.Tickets[i])
		}
	}
	got = make([]string, len(want))
	for _, u := range want {
		if e := mustStatus(t, s, q, u); e.Position >= 1 && int(e.Position) <= len(got) {
			got[e.Position-1] = u
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the line's order against the record's (-record +line):\n%s", diff)
	}
	if again := mustDraws(t, s, q); len(again) != 1 {
		t.Errorf("Draws after the takeover: %v, want the one drawn", states(again))
	}
}

// lateBeacon is a beacon whose round is out once *out is set: until then
// an opening waits for it (draw.ErrNotYet).
type lateBeacon struct{ out *bool }

func (b lateBeacon) Name(context.Context, time.Time) (draw.Beacon, error) {
	return draw.Beacon{URL: "https://beacon.test", Round: 57}, nil
}

func (b lateBeacon) Read(_ context.Context, r draw.Beacon) (draw.Beacon, error) {
	if !*b.out {
		return draw.Beacon{}, draw.ErrNotYet
	}
	r.Randomness = strings.Repeat("57", 32)
	return r, nil
}

// testClosedAtClose: the participants are the pre-queue's users when it
// closed, whoever leaves after. While the opening waits for its beacon's
// round (OpenLine asked again on every tick, a takeover among them), each
// leaving meanwhile, OpenDue's Pending is still the list closed, leavers
// included, in arrival order; the draw made once the round is out has all
// of them among its participants and order, and a leaver's ticket unused:
// a shop's puppets leaving once the beacon is public choose nothing.
func testClosedAtClose(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	users := []string{"a", "b", "c", "d", "e"}
	out := false
	d := testDrawer
	d.Beacon = lateBeacon{&out}
	q, c, o := dueOpening(t, s, clock, "A", users...)
	if _, ok, err := admission.Commit(ctx, s, q, c.OpensAt, d); err != nil || !ok {
		t.Fatalf("Commit: %v, %v", ok, err)
	}
	for _, step := range []struct{ owner, leaver string }{{"A", "b"}, {"A", "e"}, {"B", "a"}} {
		if step.owner == "B" {
			clock.Step(t, q, 2*time.Minute) // A's lease lapses: B takes over
		}
		mustLeave(t, s, q, step.leaver)
		got, placed, err := admission.OpenLine(ctx, s, q, step.owner, d)
		if err != nil || got.Due || placed != 0 {
			t.Fatalf("OpenLine by %s before the round is out: %+v, placed %d, %v; want it waiting", step.owner, got, placed, err)
		}
		again, err := s.OpenDue(ctx, q, step.owner, time.Minute)
		if err != nil || !again.Due || again.First != o.First || again.Next != o.First || fmt.Sprint(again.Pending) != fmt.Sprint(users) {
			t.Fatalf("OpenDue by %s after %s left: %+v, %v; want due from %d with %v, as closed", step.owner, step.leaver, again, err, o.First, users)
		}
	}
	out = true
	if got, _, err := admission.OpenLine(ctx, s, q, "B", d); err != nil || !got.Due {
		t.Fatalf("OpenLine once the round is out: %+v, %v", got, err)
	}
	all := mustDraws(t, s, q)
	if len(all) != 1 || all[0].State != draw.Drawn {
		t.Fatalf("Draws: %v, want one drawn", states(all))
	}
	rec, ok, err := s.DrawRecord(ctx, q, all[0].Hash)
	if err != nil || !ok {
		t.Fatalf("DrawRecord: %v, %v", ok, err)
	}
	if err := draw.Verify(rec); err != nil {
		t.Errorf("the record kept: %v", err)
	}
	ids := idsOf(q, users)
	if diff := cmp.Diff(ids, rec.Participants, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("the record's participants (-closed +record):\n%s", diff)
	}
	if diff := cmp.Diff(ids, rec.Order, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("the record's order (-closed +record):\n%s", diff)
	}
	checkGaps(t, s, q, users, rec, map[string]bool{"a": true, "b": true, "e": true})
}

// checkGaps fails unless each of users who left stands nowhere, their
// ticket of rec unused, and the others wait at theirs, in rec's order.
func checkGaps(t *testing.T, s queue.Store, q string, users []string, rec draw.Record, left map[string]bool) {
	t.Helper()
	byID := map[string]string{}
	for _, u := range users {
		byID[testDrawer.Participants.Of(q, u).ID] = u
	}
	var position int64
	for i, id := range rec.Order {
		u := byID[id]
		e := mustStatus(t, s, q, u)
		if left[u] {
			if e.State != queue.NotInQueue {
				t.Errorf("%s, who left after the close, is %+v; want their ticket %d a gap", u, e, rec.Tickets[i])
			}
			continue
		}
		position++
		if e.State != queue.Waiting || e.Ticket != rec.Tickets[i] || e.Position != position {
			t.Errorf("%s is %+v; the record gives ticket %d, position %d", u, e, rec.Tickets[i], position)
		}
	}
}

// testOpeningMatchesItsRecord: 10,000 people in a pre-queue opened through
// admission.OpenLine, as the admitter does: the record kept verifies, and
// each person stands at the ticket it gives their participant id, their
// position its rank in the order. The seeds are seeded, so it repeats.
func testOpeningMatchesItsRecord(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.OpensAt = clock.Now().Add(-time.Minute).Truncate(time.Millisecond)
	q := "opening-of-10000" // named, so that the participant ids (and the order) repeat
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	const n = 10_000
	users := make([]string, n)
	byID := make(map[string]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("person-%05d", i)
		byID[testDrawer.Participants.Of(q, users[i]).ID] = users[i]
	}
	inParallel(t, users, func(u string) error {
		e, err := s.Enter(ctx, q, u)
		if err == nil && !e.PreQueue {
			err = fmt.Errorf("%s entered at %+v, not in the pre-queue", u, e)
		}
		return err
	})
	d := testDrawer
	d.Seeds = rand.NewChaCha8([32]byte{57})
	o, placed, err := admission.OpenLine(ctx, s, q, "owner", d)
	if err != nil || !o.Due || placed != n {
		t.Fatalf("OpenLine: %+v (%d pending), placed %d, %v", o.Due, len(o.Pending), placed, err)
	}
	all := mustDraws(t, s, q)
	if len(all) != 1 || all[0].State != draw.Drawn {
		t.Fatalf("Draws: %v, want one drawn", states(all))
	}
	rec, ok, err := s.DrawRecord(ctx, q, all[0].Hash)
	if err != nil || !ok {
		t.Fatalf("DrawRecord: %v, %v", ok, err)
	}
	if err := draw.Verify(rec); err != nil {
		t.Fatalf("the record kept: %v", err)
	}
	if len(rec.Order) != n || rec.FirstTicket != o.First {
		t.Fatalf("the record: %d in order from ticket %d, want %d from %d", len(rec.Order), rec.FirstTicket, n, o.First)
	}
	rank := make(map[string]int, n)
	for i, id := range rec.Order {
		rank[byID[id]] = i
	}
	inParallel(t, users, func(u string) error {
		i, ok := rank[u]
		if !ok {
			return fmt.Errorf("%s is not in the record's order", u)
		}
		e, err := s.Status(ctx, q, u)
		if err == nil && (e.State != queue.Waiting || e.Ticket != rec.Tickets[i] || e.Position != int64(i+1)) {
			err = fmt.Errorf("%s is %+v; the record gives ticket %d, position %d", u, e, rec.Tickets[i], i+1)
		}
		return err
	})
}

// inParallel calls f for every user, eight at a time, and fails the test
// with the first error (and how many there were).
func inParallel(t *testing.T, users []string, f func(u string) error) {
	t.Helper()
	errs := make(chan error, len(users))
	work := make(chan string)
	for range 8 {
		go func() {
			for u := range work {
				errs <- f(u)
			}
		}()
	}
	for _, u := range users {
		work <- u
	}
	close(work)
	var failed []error
	for range users {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d failed, the first: %v", len(failed), len(users), failed[0])
	}
}
