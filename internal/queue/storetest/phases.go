package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// The suite's part for a sale's phases (queue.Phase): the store's own
// steps follow the phase in force by the store's clock.
func init() {
	register(suiteTest{"PhaseInForceSetsWhatTheStoreReads", testPhases})
}

// testPhases: while a phase is in force, the store's own steps use its
// settings — the live-token cap a tick holds to, the rate and the method
// in the pace an answer carries, the session an extension reaches — and
// at the next phase's start, by the store's clock, that phase's take over
// (here the queue's own: first come at 10,000/s, no cap, no session), with
// everyone left in line admitted in the order they came. On Redis the
// scripts see a phase once a tick has brought it in (redisstore's
// phaseFields), so each check here follows a tick.
func testPhases(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	now := clock.Now()
	at := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339Nano) }
	const publicAfter = 3 * time.Second // the members' checks take milliseconds
	c, err := queue.Apply(fastConfig(), map[string]any{"phases": json.RawMessage(`[
	  {"name": "members", "startsAt": "` + at(-time.Second) + `", "ratePerSecond": 5000, "queueingMethod": "random",
	   "maxActiveTokens": 2, "sessionMaxSeconds": 3600},
	  {"name": "public", "startsAt": "` + at(publicAfter) + `"}]`)})
	if err != nil {
		t.Fatal(err)
	}
	c.TokenTTL = time.Minute
	q := newQueue(t, s, c)
	users := []string{"a", "b", "c", "d", "e", "f"}
	for _, u := range users {
		mustEnter(t, s, q, u)
	}

	drawn := admitDue(t, s, clock, q, 10)
	if len(drawn) != 2 {
		t.Fatalf("the members' first tick admitted %v, want 2: the phase's live-token cap", drawn)
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 0 {
		t.Fatalf("a tick at the members' cap admitted %v", got)
	}
	var waiting []string
	for _, u := range users {
		if !slices.Contains(drawn, u) {
			waiting = append(waiting, u)
		}
	}
	if p := mustStatus(t, s, q, waiting[0]).Pace; p.Rate != 5000 || !p.Drawn {
		t.Fatalf("pace in the members' phase: rate %v, drawn %v; want the phase's 5000/s and a draw", p.Rate, p.Drawn)
	}
	clock.Sleep(50 * time.Millisecond)
	held := mustStatus(t, s, q, drawn[0])
	if exp, err := s.Extend(ctx, q, drawn[0], held.Token); err != nil || !exp.After(held.ExpiresAt) {
		t.Fatalf("Extend in the members' phase: %v, %v; want the expiry moved on from %v (the phase's session)", exp, err, held.ExpiresAt)
	}
	if late := clock.Now().Sub(now); late >= publicAfter {
		t.Fatalf("the members' checks took %v, past the public phase's start", late)
	}

	clock.Sleep(publicAfter - clock.Now().Sub(now) + 50*time.Millisecond)
	first := admitDue(t, s, clock, q, 1)
	if len(first) != 1 || first[0] != waiting[0] {
		t.Fatalf("the public phase's first tick admitted %v, want [%s]: first come", first, waiting[0])
	}
	e := mustStatus(t, s, q, waiting[2])
	if e.Pace.Rate != 10_000 || e.Pace.Drawn || e.Position != 2 {
		t.Fatalf("%s in the public phase: rate %v, drawn %v, position %d; want the queue's 10000/s, no draw, 2nd",
			waiting[2], e.Pace.Rate, e.Pace.Drawn, e.Position)
	}
	if got := admitDue(t, s, clock, q, 10); !slices.Equal(got, waiting[1:]) {
		t.Fatalf("the public phase admitted %v, want %v: everyone left, in the order they came, no cap", got, waiting[1:])
	}
	held = mustStatus(t, s, q, drawn[1])
	if exp, err := s.Extend(ctx, q, drawn[1], held.Token); err != nil || !exp.Equal(held.ExpiresAt) {
		t.Fatalf("Extend in the public phase: %v, %v; want the expiry kept at %v (no session)", exp, err, held.ExpiresAt)
	}
}
