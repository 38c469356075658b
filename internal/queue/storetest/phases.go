package storetest

import (
	"context"
	"encoding/json"
	"fmt"
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
//
// The members' checks, some 14 calls, must all come before the public
// phase starts, 3 s ahead: on the wall clock a loaded machine can stretch
// them past that, and the public phase's settings then answer them. A
// members' check that fails, or a last one that ends, after the start is
// no finding: the test is had again on a fresh queue with the public
// phase 10 s ahead (before the start, a failed check fails the test).
func testPhases(t *testing.T, s queue.Store, clock Clock) {
	var late string
	for _, publicAfter := range []time.Duration{3 * time.Second, 10 * time.Second} {
		var ph phased
		if ph, late = phaseMembers(t, s, clock, publicAfter); late == "" {
			phasePublic(t, s, clock, ph)
			return
		}
		t.Logf("with the public phase %v ahead: %s; again on a fresh queue", publicAfter, late)
	}
	t.Fatalf("the members' checks ran past the public phase's start every time (the last: %s)", late)
}

// phased is a queue of testPhases's after its members' checks: when it
// began, when its public phase starts, those drawn and those waiting.
type phased struct {
	q                string
	now, publicStart time.Time
	drawn, waiting   []string
}

// phaseMembers makes testPhases's queue, its public phase publicAfter
// ahead, and checks the members' phase: late says which check was made
// (or the last ended) after the public phase's start, "" when none was.
func phaseMembers(t *testing.T, s queue.Store, clock Clock, publicAfter time.Duration) (ph phased, late string) {
	ctx := context.Background()
	ph.now = clock.Now()
	ph.publicStart = ph.now.Add(publicAfter)
	at := func(d time.Duration) string { return ph.now.Add(d).UTC().Format(time.RFC3339Nano) }
	c, err := queue.Apply(fastConfig(), map[string]any{"phases": json.RawMessage(`[
	  {"name": "members", "startsAt": "` + at(-time.Second) + `", "ratePerSecond": 5000, "queueingMethod": "random",
	   "maxActiveTokens": 2, "sessionMaxSeconds": 3600},
	  {"name": "public", "startsAt": "` + at(publicAfter) + `"}]`)})
	if err != nil {
		t.Fatal(err)
	}
	c.TokenTTL = time.Minute
	ph.q = newQueue(t, s, c)
	q := ph.q
	// failed reports a members' check that failed: late if made after the
	// public phase's start, else the test's failure.
	failed := func(format string, args ...any) string {
		t.Helper()
		if after := clock.Now().Sub(ph.now); after >= publicAfter {
			return fmt.Sprintf("%v after the start, "+format, append([]any{after.Round(time.Millisecond)}, args...)...)
		}
		t.Fatalf(format, args...)
		return ""
	}
	users := []string{"a", "b", "c", "d", "e", "f"}
	for _, u := range users {
		mustEnter(t, s, q, u)
	}
	if ph.drawn = admitDue(t, s, clock, q, 10); len(ph.drawn) != 2 {
		return ph, failed("the members' first tick admitted %v, want 2: the phase's live-token cap", ph.drawn)
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 0 {
		return ph, failed("a tick at the members' cap admitted %v", got)
	}
	for _, u := range users {
		if !slices.Contains(ph.drawn, u) {
			ph.waiting = append(ph.waiting, u)
		}
	}
	if p := mustStatus(t, s, q, ph.waiting[0]).Pace; p.Rate != 5000 || !p.Drawn {
		return ph, failed("pace in the members' phase: rate %v, drawn %v; want the phase's 5000/s and a draw", p.Rate, p.Drawn)
	}
	clock.Sleep(50 * time.Millisecond)
	held := mustStatus(t, s, q, ph.drawn[0])
	if exp, err := s.Extend(ctx, q, ph.drawn[0], held.Token); err != nil || !exp.After(held.ExpiresAt) {
		return ph, failed("Extend in the members' phase: %v, %v; want the expiry moved on from %v (the phase's session)", exp, err, held.ExpiresAt)
	}
	if after := clock.Now().Sub(ph.now); after >= publicAfter {
		return ph, fmt.Sprintf("the members' checks took %v", after.Round(time.Millisecond))
	}
	return ph, ""
}

// phasePublic checks ph's queue from its public phase's start on.
func phasePublic(t *testing.T, s queue.Store, clock Clock, ph phased) {
	q, waiting := ph.q, ph.waiting
	clock.Sleep(ph.publicStart.Sub(clock.Now()) + 50*time.Millisecond)
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
	held := mustStatus(t, s, q, ph.drawn[1])
	if exp, err := s.Extend(context.Background(), q, ph.drawn[1], held.Token); err != nil || !exp.Equal(held.ExpiresAt) {
		t.Fatalf("Extend in the public phase: %v, %v; want the expiry kept at %v (no session)", exp, err, held.ExpiresAt)
	}
}
