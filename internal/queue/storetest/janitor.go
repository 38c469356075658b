package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/queue"
)

// The suite's part for the janitor (Store.Sweep), which runs outside
// admission's tick.
func init() {
	register(suiteTest{"SweepForgetsWhatLapsedAndChangesNoAnswer", testSweep})
}

// testSweep: the janitor forgets tokens whose time is up, lapsed in-flight
// locks and leavers below the head, and nobody can tell it ran: the stats,
// the snapshot and every user's standing read the same before and after,
// an expired token counts as expired once whether the janitor or the user's
// entering again forgot it, and a live token and its lock stay.
func testSweep(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.TokenTTL = time.Minute
	q := newQueue(t, s, c)
	tok := ready(t, s, clock, q, "a", "b")
	if err := s.BeginUse(ctx, q, "a", tok["a"], "req-a", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Step(t, q, c.TokenTTL+time.Second) // a's and b's tokens and a's lock lapse
	fresh := ready(t, s, clock, q, "c")
	if err := s.BeginUse(ctx, q, "c", fresh["c"], "req-c", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"d", "e", "f"} {
		mustEnter(t, s, q, u)
	}
	mustLeave(t, s, q, "d") // the head's ticket, below the new head
	mustLeave(t, s, q, "f") // a gap above it
	mustEnter(t, s, q, "a") // a's expired token forgotten on entering again

	read := func() (queue.Stats, queue.Snapshot, []queue.Standing) {
		t.Helper()
		st, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		sn, err := s.Snapshot(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var es []queue.Standing
		for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
			es = append(es, mustStatus(t, s, q, u))
		}
		return st, sn, es
	}
	st, sn, es := read()
	for range 3 {
		more, err := s.Sweep(ctx, q)
		if err != nil || more {
			t.Fatalf("Sweep: more %v, %v; want all swept at once", more, err)
		}
	}
	st2, sn2, es2 := read()
	if d := cmp.Diff(st, st2); d != "" {
		t.Errorf("stats changed by the janitor (-before +after):\n%s", d)
	}
	if d := cmp.Diff(sn.Left, sn2.Left); d != "" || sn.Head != sn2.Head || sn.Length != sn2.Length {
		t.Errorf("snapshot changed by the janitor: %+v, then %+v", sn, sn2)
	}
	for i := range es {
		if es[i].State != es2[i].State || es[i].Position != es2[i].Position || es[i].Token != es2[i].Token {
			t.Errorf("a standing changed by the janitor: %+v, then %+v", es[i], es2[i])
		}
	}
	if st2.ExpiredTotal != 2 || st2.ActiveTokens != 1 {
		t.Errorf("expired %d, active %d; want a's and b's tokens expired once, c's active", st2.ExpiredTotal, st2.ActiveTokens)
	}
	if err := s.BeginUse(ctx, q, "c", fresh["c"], "req-other", time.Minute); !errors.Is(err, queue.ErrTokenInUse) {
		t.Errorf("c's live lock after the sweep: %v, want ErrTokenInUse", err)
	}
	if more, err := s.Sweep(ctx, "nope-unknown"); err != nil || more {
		t.Errorf("sweeping an unknown queue: %v, %v; want nothing to do", more, err)
	}
}
