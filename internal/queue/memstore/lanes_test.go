package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/storetest"
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
// after a restart as they were, whether the log replays them or a
// snapshot holds them; a single-use code redeemed before the restart is
// still used after it, and a capped one keeps the uses it had left.
func TestDurableLanes(t *testing.T) {
	for _, compact := range []string{"none", "after the codes", "at the end"} {
		t.Run("compaction "+compact, func(t *testing.T) {
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
			step("config", s.PutConfig(ctx, "q", lanesConfig()))
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
