package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
)

// TestEntersTogether: enters of one queue that arrive at once share
// enter.lua calls (enterbatch.go), and each is answered as if it had come
// alone: one ticket and one place each, the places 1..capacity with none
// twice, a user already in line keeps their place, the rest refused as
// the line is full.
func TestEntersTogether(t *testing.T) {
	rdb := redisOfItsOwn(t)
	ctx := context.Background()
	st := redisstore.New(rdb, "")
	c := queue.DefaultConfig()
	c.Paused, c.Capacity = true, 150
	if err := st.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Enter(ctx, "q", "early"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const n = 200
	users := []string{"early"}
	for i := range n {
		users = append(users, fmt.Sprintf("u%03d", i))
	}
	entries, errs := make([]queue.Standing, len(users)), make([]error, len(users))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			<-start
			entries[i], errs[i] = st.Enter(ctx, "q", u)
		})
	}
	close(start)
	wg.Wait()

	if e := entries[0]; errs[0] != nil || e.State != queue.Waiting || e.Position != 1 || e.Ticket != 1 {
		t.Fatalf("early entered again: %+v, %v; want still first, ticket 1", e, errs[0])
	}
	var positions, tickets []int64
	full := 0
	for i := 1; i < len(users); i++ {
		switch {
		case errors.Is(errs[i], queue.ErrQueueFull):
			full++
		case errs[i] != nil:
			t.Fatalf("%s: %v", users[i], errs[i])
		default:
			positions, tickets = append(positions, entries[i].Position), append(tickets, entries[i].Ticket)
			if entries[i].Ticket != entries[i].Position { // nobody left: ticket k is place k
				t.Errorf("%s: place %d, ticket %d", users[i], entries[i].Position, entries[i].Ticket)
			}
		}
	}
	if int64(len(positions)) != c.Capacity-1 || int64(full) != n-(c.Capacity-1) {
		t.Fatalf("%d joined and %d refused, want %d and %d", len(positions), full, c.Capacity-1, n-(c.Capacity-1))
	}
	sort.Slice(positions, func(i, j int) bool { return positions[i] < positions[j] })
	for k, p := range positions {
		if p != int64(k+2) {
			t.Fatalf("places %v, want 2..%d each once", positions, c.Capacity)
		}
	}
	if got := commandStats(t, rdb)["fcall"].calls; got >= int64(len(users)) {
		t.Errorf("%d enter.lua calls for %d enters at once: none went together", got, len(users))
	} else {
		t.Logf("%d enters at once in %d enter.lua calls", len(users), got)
	}
}

// TestEnterGivenUpNeverJoins: an enter whose caller gave up before its
// call went is not put in line.
func TestEnterGivenUpNeverJoins(t *testing.T) {
	rdb := redisOfItsOwn(t)
	st := redisstore.New(rdb, "")
	if err := st.PutConfig(context.Background(), "q", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Enter(ctx, "q", "gone"); !errors.Is(err, context.Canceled) {
		t.Fatalf("enter after its caller gave up: %v, want context.Canceled", err)
	}
	e, err := st.Status(context.Background(), "q", "gone")
	if err != nil || e.State != queue.NotInQueue {
		t.Fatalf("status: %+v, %v; want not in line", e, err)
	}
}

// TestEntersTogetherReadOnePace: the enters of one call share one pace
// block, as the line stands after the last of them (enter.lua). The one
// pace field an enter writes is moved, when someone joins an empty line;
// those before the join found the line empty, whose pace does not read
// moved, and the rest see it as the join left it. So a line whose front
// last moved an hour ago is stalled for every newcomer who finds people
// in it, and for none of those whose first joined it empty.
func TestEntersTogetherReadOnePace(t *testing.T) {
	rdb := redisOfItsOwn(t)
	ctx := context.Background()
	st := redisstore.New(rdb, "")
	if err := st.PutConfig(ctx, "q", queue.DefaultConfig()); err != nil { // admitting, though nothing admits here
		t.Fatal(err)
	}
	standStill := func() {
		t.Helper()
		if err := rdb.HSet(ctx, redisstore.KeysOf(redisstore.DefaultPrefix, "q").Cfg, "moved", time.Now().Add(-time.Hour).UnixMilli()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	enterAtOnce := func(prefix string) []queue.Standing {
		t.Helper()
		entries, errs := make([]queue.Standing, 50), make([]error, 50)
		var wg sync.WaitGroup
		for i := range entries {
			wg.Go(func() { entries[i], errs[i] = st.Enter(ctx, "q", fmt.Sprintf("%s%02d", prefix, i)) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		return entries
	}

	standStill()
	for _, e := range enterAtOnce("first") {
		if e.Pace.Stalled {
			t.Fatalf("stalled though the first of them joined an empty line just now: %+v", e)
		}
	}
	standStill()
	for _, e := range enterAtOnce("then") {
		if !e.Pace.Stalled {
			t.Fatalf("not stalled though the front last moved an hour ago: %+v", e)
		}
	}
}
