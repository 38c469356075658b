package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/testenv"
)

// lanesQueue stores a queue with a members lane (claim and codes, 0.3)
// and the public (0.7), paused so nothing is admitted unless asked.
func lanesQueue(t *testing.T) (*Store, string, queue.Config) {
	t.Helper()
	rdb := testenv.RedisClient(t)
	st := New(rdb, fmt.Sprintf("wrlanes%d:", rand.Int64()))
	c := queue.DefaultConfig()
	c.Lanes = lane.List{{Name: "members", Claim: "tier=gold", Codes: true, Share: 0.3}, {Name: lane.Public, Share: 0.7}}
	if err := st.PutConfig(context.Background(), "q", c); err != nil {
		t.Fatal(err)
	}
	return st, "q", c
}

// TestLanePlacesAreBandsOfOneSet: a place in a lane but the public is
// laneId × 2^40 + its ticket in K.lanes (keys.go), its ticket a gap of the
// public line (K.left), so the public line, its snapshot and its
// positions are as if the lane's people had left.
func TestLanePlacesAreBandsOfOneSet(t *testing.T) {
	st, q, _ := lanesQueue(t)
	ctx := context.Background()
	join := func(user, ln string) queue.Standing {
		t.Helper()
		s, err := st.Join(ctx, q, user, lane.Join{Lane: ln})
		if err != nil {
			t.Fatalf("%s joining %q: %v", user, ln, err)
		}
		return s
	}
	join("p1", "")
	m1 := join("m1", "members")
	p2 := join("p2", "")
	m2 := join("m2", "members")
	if m1.Lane != "members" || m1.Position != 1 || m2.Position != 2 || m2.Length != 2 || m2.Ticket != 4 {
		t.Errorf("members: %+v, %+v; want positions 1 and 2 of 2 in lane members, the second ticket 4", m1, m2)
	}
	if p2.Lane != "" || p2.Position != 2 || p2.Length != 2 {
		t.Errorf("p2: %+v; want the public's second of two", p2)
	}
	k := keysFor(st.prefix, q)
	got, err := testenv.RedisClient(t).ZScore(ctx, k[kLanes], "m2").Result()
	if want := float64(1<<40 + 4); err != nil || got != want {
		t.Errorf("m2's score in K.lanes: %v, %v; want %v (laneId 1, ticket 4)", got, err, want)
	}
	sn, err := st.Snapshot(ctx, q)
	if err != nil || sn.Head != 1 || sn.Last != 4 || sn.Length != 2 || fmt.Sprint(sn.Left) != "[2 4]" {
		t.Errorf("snapshot: %+v, %v; want head 1, last 4, the public's 2, members' tickets 2 and 4 as gaps", sn, err)
	}
	if pos, _, ok := queue.Position(p2.Ticket, sn.Head, sn.Last, sn.Left, sn.Cleared, 0); !ok || pos != 2 {
		t.Errorf("p2's place from the snapshot: %d, %v; want 2", pos, ok)
	}
	s, err := st.Status(ctx, q, "m2")
	if err != nil || s.Lane != "members" || s.Position != 2 || s.Length != 2 {
		t.Errorf("m2's status: %+v, %v", s, err)
	}
	if left, err := st.Leave(ctx, q, "m1"); err != nil || !left {
		t.Fatalf("m1 leaving: %v, %v", left, err)
	}
	if s, _ := st.Status(ctx, q, "m2"); s.Position != 1 || s.Length != 1 {
		t.Errorf("m2 after m1 left: %+v; want 1 of 1", s)
	}
	stats, err := st.Stats(ctx, q)
	if err != nil || stats.Length != 3 || len(stats.Lanes) != 2 || stats.Lanes[0].Name != "members" || stats.Lanes[0].Length != 1 || stats.Lanes[1].Length != 2 {
		t.Errorf("stats: length %d, lanes %+v, %v; want 3: members 1, public 2", stats.Length, stats.Lanes, err)
	}
	if stats.EnteredTotal != stats.Length+stats.AdmittedTotal+stats.LeftTotal+stats.AbandonedTotal {
		t.Errorf("stats do not add up: %+v", stats)
	}
	// DeleteQueue takes the lanes with the queue.
	if _, err := st.AddCodes(ctx, q, []accesscode.Code{{Hash: "h", Lane: "members", Uses: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	rdb := testenv.RedisClient(t)
	for _, i := range []int{kLanes, kLaneIDs, kLaneStats, kCodes} {
		if n, err := rdb.Exists(ctx, k[i]).Result(); err != nil || n != 0 {
			t.Errorf("%s after DeleteQueue: %d, %v", k[i], n, err)
		}
	}
}

// TestCodesAreKeptAsHashesAndRedeemedOnce: AddCodes keeps a code's hash
// only, a duplicate left as it was; a single-use code places one person,
// and answers code_used to the next; a wrong or expired one is invalid.
func TestCodesAreKeptAsHashesAndRedeemedOnce(t *testing.T) {
	st, q, _ := lanesQueue(t)
	ctx := context.Background()
	code, expired := accesscode.New(), accesscode.New()
	h, _ := accesscode.Hash(code)
	he, _ := accesscode.Hash(expired)
	add := []accesscode.Code{{Hash: h, Lane: "members", Uses: 1}, {Hash: he, Lane: "members", Uses: 5, ExpiresAt: time.Now().Add(-time.Minute)}}
	if a, err := st.AddCodes(ctx, q, add); err != nil || a.Added != 2 || a.Duplicates != 0 {
		t.Fatalf("AddCodes: %+v, %v", a, err)
	}
	if a, err := st.AddCodes(ctx, q, add[:1]); err != nil || a.Added != 0 || a.Duplicates != 1 {
		t.Fatalf("AddCodes again: %+v, %v; want one duplicate", a, err)
	}
	if _, err := st.AddCodes(ctx, "nope", add); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("AddCodes to no queue: %v", err)
	}
	if _, err := st.Join(ctx, q, "a", lane.Join{Code: he}); !errors.Is(err, accesscode.ErrInvalid) {
		t.Errorf("an expired code: %v; want invalid", err)
	}
	if _, err := st.Join(ctx, q, "a", lane.Join{Code: "00"}); !errors.Is(err, accesscode.ErrInvalid) {
		t.Errorf("a wrong code: %v; want invalid", err)
	}
	if _, err := st.Join(ctx, q, "p", lane.Join{}); err != nil {
		t.Fatal(err)
	}
	s, err := st.Join(ctx, q, "p", lane.Join{Code: h}) // from the public to the members' lane
	if err != nil || s.Lane != "members" || s.Position != 1 || s.Ticket != 2 {
		t.Fatalf("p redeeming: %+v, %v; want first in members with ticket 2", s, err)
	}
	if again, err := st.Join(ctx, q, "p", lane.Join{Code: h}); err != nil || again.Lane != "members" || again.Ticket != 2 {
		t.Errorf("p redeeming again where it placed them: %+v, %v; want their place", again, err)
	}
	if _, err := st.Join(ctx, q, "b", lane.Join{Code: h}); !errors.Is(err, accesscode.ErrUsed) {
		t.Errorf("a second redemption: %v; want used", err)
	}
	stats, err := st.Stats(ctx, q)
	if err != nil || stats.Lanes[0].Redeemed != 1 || stats.Lanes[0].CodesLeft != 5 || stats.Length != 1 {
		t.Errorf("stats: %+v, %v; want members redeemed 1, 5 left (the expired code's), length 1", stats.Lanes, err)
	}
	if stats.EnteredTotal != stats.Length+stats.AdmittedTotal+stats.LeftTotal+stats.AbandonedTotal {
		t.Errorf("stats do not add up after a move: %+v", stats)
	}
	vals, err := testenv.RedisClient(t).HGetAll(ctx, keysFor(st.prefix, q)[kCodes]).Result()
	if err != nil || len(vals) != 2 || vals[codeKey(h)] != "members 0 0" {
		t.Errorf("K.codes: %q, %v; want two hashes (their 32 bytes), the redeemed one with no use left", vals, err)
	}
}

// TestAdmissionSplitsByShares: a tick of 10 with both lanes full lets in
// 3 members and 7 of the public, in each lane's order, counts them on
// their lanes, and keeps the lanes' credit and shares for the next.
func TestAdmissionSplitsByShares(t *testing.T) {
	st, q, c := lanesQueue(t)
	ctx := context.Background()
	c.Paused, c.RatePerSecond, c.BatchSize, c.Interval = false, 10, 10, time.Second
	for i := range 20 {
		if _, err := st.Join(ctx, q, fmt.Sprintf("m%02d", i), lane.Join{Lane: "members"}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Join(ctx, q, fmt.Sprintf("p%02d", i), lane.Join{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	a, err := st.Admit(ctx, q, queue.NewTokens(c.BatchSize)) // the first tick is due at once
	if err != nil || !a.Ticked {
		t.Fatalf("the first tick: %+v, %v", a, err)
	}
	want := "[m00 m01 m02 p00 p01 p02 p03 p04 p05 p06]"
	got := fmt.Sprint(slices.Sorted(slices.Values(a.Admitted)))
	if got != want {
		t.Errorf("admitted %v, want %v", got, want)
	}
	stats, err := st.Stats(ctx, q)
	if err != nil || stats.Lanes[0].Admitted != 3 || stats.Lanes[1].Admitted != 7 {
		t.Errorf("lanes' admitted: %+v, %v", stats.Lanes, err)
	}
	s, err := st.Status(ctx, q, "m05")
	if err != nil || s.Position != 3 || s.Pace.LaneShare != 0.3 {
		t.Errorf("m05 after the tick: %+v, %v; want 3rd, at share 0.3", s, err)
	}
}

// TestCodesMemory uploads 100,000 single-use codes (AddCodes, as one
// POST /admin/v1/queues/{q}/codes brings them) and logs the upload's time
// and what Redis says K.codes holds (MEMORY USAGE, every field sampled):
// the figures docs/operations.md states. A code costs at most 120 bytes.
func TestCodesMemory(t *testing.T) {
	st, q, _ := lanesQueue(t)
	ctx := context.Background()
	const n = 100_000
	codes := make([]accesscode.Code, n)
	for i := range codes {
		h, err := accesscode.Hash(accesscode.New())
		if err != nil {
			t.Fatal(err)
		}
		codes[i] = accesscode.Code{Hash: h, Lane: "members", Uses: 1}
	}
	start := time.Now()
	a, err := st.AddCodes(ctx, q, codes)
	took := time.Since(start)
	if err != nil || a.Added != n {
		t.Fatalf("AddCodes: %+v, %v", a, err)
	}
	rdb := testenv.RedisClient(t)
	bytes, err := rdb.MemoryUsage(ctx, keysFor(st.prefix, q)[kCodes], 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("100,000 codes: uploaded in %v (%d calls of add_codes.lua), %d bytes in Redis (%.0f a code, %.1f MB)",
		took.Round(time.Millisecond), n/codesChunk, bytes, float64(bytes)/n, float64(bytes)/1e6)
	if per := float64(bytes) / n; per > 120 {
		t.Errorf("%.0f bytes a code, more than 120", per)
	}
}

// TestLanesTakenAwayKeepTheirPeople: once a queue has had lanes,
// adm.lane_shares stays set (standing looks in K.lanes only then), so
// people left in a lane the operator took away are still answered where
// they stand, and admission lets them in with the seats the public leaves.
func TestLanesTakenAwayKeepTheirPeople(t *testing.T) {
	st, q, c := lanesQueue(t)
	ctx := context.Background()
	rdb := testenv.RedisClient(t)
	cfgKey := keysFor(st.prefix, q)[kCfg]
	for _, u := range []string{"m1", "m2", "m3"} {
		if _, err := st.Join(ctx, q, u, lane.Join{Lane: "members"}); err != nil {
			t.Fatal(err)
		}
	}
	tick := func(want string) {
		t.Helper()
		if err := rdb.HSet(ctx, cfgKey, "next", 1).Err(); err != nil { // due now
			t.Fatal(err)
		}
		a, err := st.Admit(ctx, q, queue.NewTokens(c.BatchSize))
		if err != nil || !a.Ticked || fmt.Sprint(a.Admitted) != want {
			t.Fatalf("a tick: %+v, %v; want %s let in", a, err, want)
		}
	}
	c.Paused, c.BatchSize = false, 1
	if err := st.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	tick("[m1]")
	c.Lanes = nil
	if err := st.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	tick("[m2]")
	// members, no longer in force, still has m3: it is told its share as a
	// lane of share 0 is (all of it, nobody else waiting), not the whole rate by default.
	if v, err := rdb.HGet(ctx, cfgKey, "lane_shares").Result(); err != nil || v != "members=1 public=1" {
		t.Errorf("lane_shares after a tick without lanes: %q, %v; want members's share kept beside the public's", v, err)
	}
	if s, err := st.Status(ctx, q, "m3"); err != nil || s.Lane != "members" || s.Position != 1 || s.Length != 1 {
		t.Errorf("m3 in the lane taken away: %+v, %v; want members, 1 of 1", s, err)
	}
	stats, err := st.Stats(ctx, q)
	if err != nil || len(stats.Lanes) != 2 || stats.Lanes[0].Name != lane.Public || stats.Lanes[1].Length != 1 || stats.Lanes[1].Admitted != 2 {
		t.Errorf("stats: %+v, %v; want the public, then members with 1 waiting and 2 let in", stats.Lanes, err)
	}
	tick("[m3]")
}
