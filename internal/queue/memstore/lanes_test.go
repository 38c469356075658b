package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/storetest"
	"github.com/waitroom/waitroom/internal/suspect"
)

// lanesConfig is a queue with a members lane (a claim or codes, 0.3) and
// the public (0.7), admitting 4 a tick.
func lanesConfig() queue.Config {
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 4, 4, time.Second
	c.Lanes = lane.List{{Name: lane.Public, Share: 0.7}, {Name: "members", Claim: "tier=gold", Codes: true, Share: 0.3}}
	return c
}

func mustHash(t *testing.T, code string) string {
	t.Helper()
	h, err := accesscode.Hash(code)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// laneView is everything a restart must keep of a queue with lanes: each
// user's standing, the stats and the snapshot.
type laneView struct {
	Standings map[string]queue.Standing
	Stats     queue.Stats
	Snapshot  queue.Snapshot
}

func viewLanes(t *testing.T, s *memstore.Store, users []string) laneView {
	t.Helper()
	ctx := context.Background()
	v := laneView{Standings: map[string]queue.Standing{}}
	for _, u := range users {
		e, err := s.Status(ctx, "q", u)
		if err != nil {
			t.Fatal(err)
		}
		v.Standings[u] = e
	}
	var err error
	if v.Stats, err = s.Stats(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if v.Snapshot, err = s.Snapshot(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDurableLanes: a queue's lanes, the people in each, its codes and
// their uses left, the lanes' totals and the tick's lane credit come back
// after a restart as they were, whether the log replays them (each lane's
// draw too, from the values journaled) or a snapshot holds them; a
// single-use code redeemed before the restart is still used after it, and
// a capped one keeps the uses it had left.
func TestDurableLanes(t *testing.T) {
	for _, tc := range []struct {
		method  queue.QueueingMethod
		compact string
	}{
		{queue.MethodFIFO, "none"}, {queue.MethodFIFO, "after the codes"}, {queue.MethodFIFO, "at the end"},
		{queue.MethodRandom, "none"}, {queue.MethodRandom, "at the end"},
	} {
		compact := tc.compact
		t.Run(string(tc.method)+", compaction "+compact, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewFakeClock()
			dir := t.TempDir()
			s := mustOpen(t, dir, journal.Always, clock.Now)
			step := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			c := lanesConfig()
			c.Method = tc.method
			step("config", s.PutConfig(ctx, "q", c))
			single, capped, spare := accesscode.New(), accesscode.New(), accesscode.New()
			in := clock.Now().Add(time.Hour)
			added, err := s.AddCodes(ctx, "q", []accesscode.Code{
				{Hash: mustHash(t, single), Lane: "members", Uses: 1},
				{Hash: mustHash(t, capped), Lane: "members", Uses: 3, ExpiresAt: in},
				{Hash: mustHash(t, spare), Lane: "members", Uses: 1},
				{Hash: mustHash(t, single), Lane: "members", Uses: 5},
			})
			if err != nil || added != (accesscode.Added{Added: 3, Duplicates: 1}) {
				t.Fatalf("AddCodes: %+v, %v; want 3 added, 1 duplicate", added, err)
			}
			if compact == "after the codes" {
				step("compact", s.Compact())
			}
			var users []string
			for i := range 12 {
				u := fmt.Sprintf("p%02d", i)
				users = append(users, u)
				_, err := s.Join(ctx, "q", u, lane.Join{})
				step("join "+u, err)
				if i%3 == 0 {
					m := fmt.Sprintf("m%02d", i)
					users = append(users, m)
					_, err := s.Join(ctx, "q", m, lane.Join{Lane: "members"})
					step("join "+m, err)
				}
			}
			e, err := s.Join(ctx, "q", "c1", lane.Join{Code: mustHash(t, single)})
			step("redeem the single-use code", err)
			if e.Lane != "members" || e.Position != 5 {
				t.Fatalf("c1 with the code: %+v; want 5th in members", e)
			}
			for _, u := range []string{"c2", "p03"} { // p03 moves from the public lane
				_, err := s.Join(ctx, "q", u, lane.Join{Code: mustHash(t, capped)})
				step("redeem the capped code as "+u, err)
			}
			users = append(users, "c1", "c2")
			for i := range 3 {
				clock.Sleep(time.Second)
				_, err := s.Admit(ctx, "q", tokens(fmt.Sprint("t", i), 4))
				step("admit", err)
			}
			if compact == "at the end" {
				step("compact", s.Compact())
			}
			before := viewLanes(t, s, users)
			step("close", s.Close())

			s = mustOpen(t, dir, journal.Always, clock.Now)
			after := viewLanes(t, s, users)
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("the queue after a restart (-before +after):\n%s", diff)
			}
			if _, err := s.Join(ctx, "q", "late", lane.Join{Code: mustHash(t, single)}); !errors.Is(err, accesscode.ErrUsed) {
				t.Errorf("the single-use code after a restart: %v; want ErrUsed", err)
			}
			e, err = s.Join(ctx, "q", "c3", lane.Join{Code: mustHash(t, capped)})
			if err != nil || e.Lane != "members" {
				t.Errorf("the capped code's last use after a restart: %+v, %v", e, err)
			}
			if _, err := s.Join(ctx, "q", "c4", lane.Join{Code: mustHash(t, capped)}); !errors.Is(err, accesscode.ErrUsed) {
				t.Errorf("the capped code past its cap: %v; want ErrUsed", err)
			}
			st, err := s.Stats(ctx, "q")
			step("stats", err)
			if got := st.Lanes[1]; got.Name != "members" || got.Redeemed != 4 || got.CodesLeft != 1 {
				t.Errorf("the members lane's figures: %+v; want 4 redeemed, 1 left (the spare)", got)
			}
			if st.EnteredTotal != st.Length+st.AdmittedTotal+st.LeftTotal+st.AbandonedTotal {
				t.Errorf("entered %d ≠ waiting %d + admitted %d + left %d + abandoned %d",
					st.EnteredTotal, st.Length, st.AdmittedTotal, st.LeftTotal, st.AbandonedTotal)
			}
		})
	}
}

// TestDurableLanesJournal: a journal written with lanes replays to the
// state it left, now and in every later waitroom. testdata/journal-lanes
// is the log of this store as issue 53 first wrote it (fsync always,
// storetest's fake clock): queue "sale" with members (0.3) and the public
// (0.7), 4 a tick; codes S (single-use) and D (2 uses, an hour); p1, p2
// join, m1 in members, c1 with S, p3, p4, p5; p2 with D (to the back of
// members); p4 leaves; a tick lets in p1, p3, p5 and m1; m2 in members.
func TestDurableLanesJournal(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewFakeClock()
	clock.Sleep(2 * time.Second)
	dir := t.TempDir()
	log, err := os.ReadFile(filepath.Join("testdata", "journal-lanes", "log-00000001"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log-00000001"), log, 0o600); err != nil {
		t.Fatal(err)
	}
	s, rec, err := memstore.Open(dir, memstore.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("opening the journal: %v", err)
	}
	defer s.Close()
	if rec.Places != 3 || rec.Tokens != 4 {
		t.Errorf("recovery %+v: want 3 places (c1, p2, m2), 4 tokens", rec)
	}
	for u, want := range map[string][2]int64{"c1": {4, 1}, "p2": {8, 2}, "m2": {9, 3}} {
		if e, err := s.Status(ctx, "sale", u); err != nil || e.State != queue.Waiting || e.Lane != "members" || e.Ticket != want[0] || e.Position != want[1] || e.Length != 3 {
			t.Errorf("%s: %+v, %v; want members' %d of 3 at ticket %d", u, e, err, want[1], want[0])
		}
	}
	st, err := s.Stats(ctx, "sale")
	if err != nil {
		t.Fatal(err)
	}
	want := []lane.Stats{{Name: lane.Public, Share: 0.7, Admitted: 3}, {Name: "members", Share: 0.3, Length: 3, Admitted: 1, Redeemed: 2, CodesLeft: 1}}
	if diff := cmp.Diff(want, st.Lanes); diff != "" || st.EnteredTotal != 9 || st.LeftTotal != 2 {
		t.Errorf("stats: entered %d, left %d (want 9, 2); lanes (-want +got):\n%s", st.EnteredTotal, st.LeftTotal, diff)
	}
	if sn, err := s.Snapshot(ctx, "sale"); err != nil || sn.Length != 0 || sn.Last != 9 {
		t.Errorf("snapshot %+v, %v; want the public lane's: empty, last ticket 9", sn, err)
	}
	if _, err := s.Join(ctx, "sale", "x", lane.Join{Code: mustHash(t, "0123-4567-89AB-CDEF")}); !errors.Is(err, accesscode.ErrUsed) {
		t.Errorf("S, redeemed before the restart: %v; want ErrUsed", err)
	}
	if e, err := s.Join(ctx, "sale", "y", lane.Join{Code: mustHash(t, "FEDC-BA98-7654-3210")}); err != nil || e.Position != 4 || e.Lane != "members" {
		t.Errorf("D's second use: %+v, %v; want members' 4th", e, err)
	}
	if _, err := s.Join(ctx, "sale", "z", lane.Join{Code: mustHash(t, "FEDC-BA98-7654-3210")}); !errors.Is(err, accesscode.ErrUsed) {
		t.Errorf("D's third use: %v; want ErrUsed", err)
	}
}

// TestLanesAcrossTheLine: what lanes change in the rest of the line.
// Capacity counts every lane; the quiet line's walk-in waits while anyone
// waits in any lane; a cleared suspect joins the public lane; one in the
// pre-queue who redeems a code keeps their arrival and takes the code's
// lane (a use), and leaving the pre-queue forgets it; a queue deleted and
// made again holds none of the old codes.
func TestLanesAcrossTheLine(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewFakeClock()
	s := memstore.New(clock.Now)
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	c := lanesConfig()
	c.Capacity = 2
	step("config", s.PutConfig(ctx, "q", c))
	_, err := s.Join(ctx, "q", "m1", lane.Join{Lane: "members"})
	step("m1", err)
	_, err = s.Join(ctx, "q", "p1", lane.Join{})
	step("p1", err)
	if _, err := s.Join(ctx, "q", "m2", lane.Join{Lane: "members"}); !errors.Is(err, queue.ErrQueueFull) {
		t.Errorf("a third place in a line of 2 (one a member's): %v; want ErrQueueFull", err)
	}
	h := mustHash(t, accesscode.New())
	_, err = s.AddCodes(ctx, "q", []accesscode.Code{{Hash: h, Lane: "members", Uses: 2}})
	step("codes", err)
	if _, err := s.Join(ctx, "q", "m2", lane.Join{Code: h}); !errors.Is(err, queue.ErrQueueFull) {
		t.Errorf("a code into a full line: %v; want ErrQueueFull", err)
	}
	_, err = s.Leave(ctx, "q", "p1")
	step("p1 leaves", err)
	if e, err := s.AdmitNow(ctx, "q", "walk-in", "tok"); err != nil || e.State == queue.Ready {
		t.Errorf("a walk-in while a member waits: %+v, %v; want no token", e, err)
	}
	if st, err := s.Stats(ctx, "q"); err != nil || st.Length != 1 || st.Lanes[1].Redeemed != 0 || st.Lanes[1].CodesLeft != 2 {
		t.Errorf("stats: %+v, %v; want one waiting, the code's 2 uses left (a full line used none)", st.Lanes, err)
	}

	c = lanesConfig()
	c.OpensAt = clock.Now().Add(time.Hour)
	step("config 2", s.PutConfig(ctx, "r", c))
	_, err = s.AddCodes(ctx, "r", []accesscode.Code{{Hash: h, Lane: "members", Uses: 1}})
	step("codes of r", err)
	for _, u := range []string{"a", "b"} {
		_, err := s.Join(ctx, "r", u, lane.Join{})
		step(u, err)
	}
	if e, err := s.Join(ctx, "r", "a", lane.Join{Code: h}); err != nil || !e.PreQueue || e.Lane != "members" {
		t.Errorf("a, in the pre-queue, with a code: %+v, %v; want the pre-queue in members", e, err)
	}
	if _, err := s.Join(ctx, "r", "b", lane.Join{Code: h}); !errors.Is(err, accesscode.ErrUsed) {
		t.Errorf("b with the code a used: %v; want ErrUsed", err)
	}
	_, err = s.Leave(ctx, "r", "a")
	step("a leaves", err)
	if e, err := s.Join(ctx, "r", "a", lane.Join{}); err != nil || !e.PreQueue || e.Lane != "" {
		t.Errorf("a back in the pre-queue: %+v, %v; want the public lane", e, err)
	}

	c = lanesConfig()
	c.ShadowAdmits = suspect.AdmitLast
	step("config 3", s.PutConfig(ctx, "s", c))
	_, err = s.Join(ctx, "s", "m", lane.Join{Lane: "members"})
	step("m", err)
	_, err = s.EnterShadow(ctx, "s", "x", suspect.Mark{Signals: []string{"address_range"}})
	step("x in the shadow line", err)
	sus, err := s.Suspects(ctx, "s", 1)
	step("suspects", err)
	_, err = s.ClearSuspect(ctx, "s", sus[0].Ticket)
	step("clear x", err)
	if e, err := s.Status(ctx, "s", "x"); err != nil || e.Lane != "" || e.Position != 1 || e.Length != 1 {
		t.Errorf("x, cleared: %+v, %v; want the public lane's 1 of 1", e, err)
	}

	step("delete r", s.DeleteQueue(ctx, "r"))
	step("r again", s.PutConfig(ctx, "r", lanesConfig()))
	if _, err := s.Join(ctx, "r", "c", lane.Join{Code: h}); !errors.Is(err, accesscode.ErrInvalid) {
		t.Errorf("the deleted queue's code: %v; want ErrInvalid", err)
	}
}
