package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// The suite's part for queueingMethod random: each tick draws whom it lets
// in among everyone in line.
func init() {
	register(suiteTest{"RandomDrawAdmitsEachOnce", testRandomAdmitsEachOnce})
	register(suiteTest{"RandomSkipsNoShows", testRandomNoShows})
	register(suiteTest{"SwitchingBetweenFIFOAndRandom", testRandomSwitch})
}

// randomConfig is a queue of method random whose ticks admit as many as
// the call brings tokens for (at most 50).
func randomConfig() queue.Config {
	c := fastConfig()
	c.RatePerSecond, c.BatchSize, c.Method = 50_000, 50, queue.MethodRandom
	return c
}

// chiSquare49At01 is the critical value of the chi-square distribution
// with 49 degrees of freedom (50 arrival positions) at p = 0.01: a statistic
// above it says the positions are not uniform with p < 0.01.
const chiSquare49At01 = 74.92

// testRandomAdmitsEachOnce: in 20 runs of 50 users in a seeded order, the
// first tick draws one of them and the line then drains in ticks of 7
// drawn users, each of the 50 admitted exactly once. Whether the draw is
// uniform is RunDistributions' question (testRandomUniform), asked once
// per implementation of the draw.
func testRandomAdmitsEachOnce(t *testing.T, s queue.Store, clock Clock) {
	drawRuns(t, s, clock, 0, 20)
}

// testRandomUniform: over 500 seeded runs of 50 users (the seed orders who
// enters; the draw itself is crypto/rand), the first user admitted is at
// each arrival position equally often: chi-square over the 50 positions
// below the critical value at p = 0.01 (fifo, always the first, scores
// 24,500; a draw skewed to the front half of the line, 544). A correct store
// exceeds it in 1 sample of 100 by chance: so a sample above it is followed
// by a second, independent one (other seeds, other draws), and the test
// fails when both are — 1 in 10,000 for a correct store, every time for
// those two. Each run drains the line as testRandomAdmitsEachOnce does.
func testRandomUniform(t *testing.T, s queue.Store, clock Clock) {
	chi, counts := chiSquare(drawRuns(t, s, clock, 0, 500))
	t.Logf("chi-square of the first admitted's arrival position over 500 runs: %.1f (critical %.2f)", chi, chiSquare49At01)
	if chi <= chiSquare49At01 {
		return
	}
	again, countsAgain := chiSquare(drawRuns(t, s, clock, 500, 500))
	t.Logf("above it by chance or not: a second sample of 500 runs: %.1f", again)
	if again > chiSquare49At01 {
		t.Fatalf("the first admitted is not uniform over arrival positions: chi-square %.1f and %.1f > %.2f (49 df, p = 0.01); counts %v and %v",
			chi, again, chiSquare49At01, counts, countsAgain)
	}
}

// drawRuns runs runs seeded runs of 50 users from seed from on, in
// parallel batches, each drained to the last and checked to admit each
// user once, and counts how often the first admitted was at each arrival
// position.
func drawRuns(t *testing.T, s queue.Store, clock Clock, from, runs int) []int {
	t.Helper()
	const users = 50
	counts := make([]int, users)
	var mu sync.Mutex
	inBatches(t, from, runs, 50, func(t *testing.T, first, n int) {
		for seed := uint64(first); seed < uint64(first+n); seed++ {
			q := newQueue(t, s, randomConfig())
			arrival := make([]string, users)
			for i, p := range rand.New(rand.NewPCG(seed, 23)).Perm(users) {
				arrival[i] = fmt.Sprintf("u%d", p)
				mustEnter(t, s, q, arrival[i])
			}
			first := admitDue(t, s, clock, q, 1)
			if len(first) != 1 {
				t.Fatalf("run %d: the first tick of one admitted %v", seed, first)
			}
			mu.Lock()
			counts[slices.Index(arrival, first[0])]++
			mu.Unlock()
			admitted := first
			for tick := 0; len(admitted) < users; tick++ {
				if tick > users {
					t.Fatalf("run %d: the line never drained: %d of %d admitted", seed, len(admitted), users)
				}
				admitted = append(admitted, admitDue(t, s, clock, q, 7)...)
			}
			if got, want := sorted(admitted), sorted(arrival); !slices.Equal(got, want) {
				t.Fatalf("run %d: admitted %v, want each of %v once", seed, got, want)
			}
		}
	})
	return counts
}

// chiSquare is the chi-square statistic of counts against the uniform
// distribution over them, and the counts.
func chiSquare(counts []int) (float64, []int) {
	total := 0
	for _, n := range counts {
		total += n
	}
	expected := float64(total) / float64(len(counts))
	chi := 0.0
	for _, n := range counts {
		chi += (float64(n) - expected) * (float64(n) - expected) / expected
	}
	return chi, counts
}

// sorted is a sorted copy of users.
func sorted(users []string) []string {
	out := slices.Clone(users)
	slices.Sort(out)
	return out
}

// testRandomNoShows: under random a drawn user who stopped asking for
// their status longer than abandonAfter is skipped as under fifo (out of
// line, no token), and everyone who asks is admitted, once. The abandon
// time is abandonFor's: each pass marks those who ask and then ticks, and
// the marks must still be fresh at the tick, calls apart on the wall
// clock, which a loaded machine can stretch past the second abandonAfter
// was (those asking then skipped).
func testRandomNoShows(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	abandon := abandonFor(clock) // the store's own rule, not the admin range (≥ 15 s)
	c := randomConfig()
	c.AbandonAfter = abandon
	q := newQueue(t, s, c)
	var line []string
	present := map[string]bool{}
	for i := range 30 {
		u := fmt.Sprintf("u%d", i)
		mustEnter(t, s, q, u)
		line = append(line, u)
		present[u] = i%2 == 0
	}
	// The first tick, while every enter's mark is fresh, draws five and sets
	// the checkpoint at the end of the line (anyone may be drawn): the rest
	// are judged once their marks are older than abandon.
	admitted := admitDue(t, s, clock, q, 5)
	clock.Sleep(abandon + abandon/10)
	var wantAdmitted []string
	for _, u := range line {
		if present[u] || slices.Contains(admitted, u) {
			wantAdmitted = append(wantAdmitted, u)
		}
	}
	skipped := 0
	for tick := 0; ; tick++ {
		if tick > 100 {
			t.Fatal("the line never emptied")
		}
		var marks []string
		for _, u := range line {
			if present[u] && !slices.Contains(admitted, u) {
				marks = append(marks, u)
			}
		}
		if len(marks) > 0 {
			if err := s.Seen(ctx, q, marks, false); err != nil {
				t.Fatal(err)
			}
		}
		a := tickDue(t, s, clock, q, 5)
		for _, u := range a.Admitted {
			if !present[u] {
				t.Fatalf("tick %d admitted %s, away for longer than abandonAfter", tick, u)
			}
		}
		admitted, skipped = append(admitted, a.Admitted...), skipped+a.Skipped
		if st, err := s.Stats(ctx, q); err != nil || st.Length == 0 {
			break
		}
	}
	if got, want := sorted(admitted), sorted(wantAdmitted); !slices.Equal(got, want) {
		t.Fatalf("admitted %v, want each of %v once", got, want)
	}
	if skipped != len(line)-len(wantAdmitted) {
		t.Fatalf("skipped %d no-shows, want %d", skipped, len(line)-len(wantAdmitted))
	}
}

// testRandomSwitch: the switch rules of docs/operations.md. fifo → random
// puts everyone already in line in the draw (no position told; the line
// drains, each once, not in arrival order; entering again keeps one's
// ticket); random → fifo orders whoever is left by ticket, their arrival.
func testRandomSwitch(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	svcLine := signals.New()
	svc := queue.NewService(s, 0, svcLine)
	op := operate.New(s, svcLine)
	svc.Clock = clock.Now
	c := randomConfig()
	c.Method = queue.MethodFIFO
	q := newQueue(t, s, c)
	const users = 20
	var arrival []string
	for i := range users {
		u := fmt.Sprintf("u%d", i)
		if v, err := svc.Enter(ctx, q, u); err != nil || v.Drawn || v.Position != int64(i+1) {
			t.Fatalf("%s entering a fifo line: %+v, %v; want position %d", u, v, err, i+1)
		}
		arrival = append(arrival, u)
	}
	c.Method = queue.MethodRandom
	if err := op.PutConfig(ctx, q, c); err != nil {
		t.Fatalf("switching to random: %v", err)
	}
	before := mustStatus(t, s, q, "u19")
	if v, err := svc.Enter(ctx, q, "u19"); err != nil || !v.Drawn || v.Position != 0 || v.Length != users {
		t.Fatalf("u19 entering again under random: %+v, %v; want in the draw, no position, %d in line", v, err, users)
	}
	if after := mustStatus(t, s, q, "u19"); after.Ticket != before.Ticket {
		t.Fatalf("entering again under random changed u19's ticket %d to %d", before.Ticket, after.Ticket)
	}
	var admitted []string
	for tick := 0; len(admitted) < users && tick <= users; tick++ {
		admitted = append(admitted, admitDue(t, s, clock, q, 4)...)
	}
	if got := sorted(admitted); !slices.Equal(got, sorted(arrival)) {
		t.Fatalf("after fifo → random admitted %v, want each of %v once", admitted, arrival)
	}
	// In arrival order by chance: 1 in 20!/(4!)^5, about 3e-10.
	if slices.Equal(admitted, arrival) {
		t.Fatalf("after fifo → random the line went in in arrival order: %v", admitted)
	}

	// random → fifo: a random line, one draw, then fifo for those left.
	c.Method = queue.MethodRandom
	q = newQueue(t, s, c)
	arrival = nil
	for i := range users {
		u := fmt.Sprintf("u%d", i)
		if v, err := svc.Enter(ctx, q, u); err != nil || !v.Drawn || v.Length != int64(i+1) {
			t.Fatalf("%s entering a random line: %+v, %v; want in the draw, %d in line", u, v, err, i+1)
		}
		arrival = append(arrival, u)
	}
	drawn := admitDue(t, s, clock, q, 5)
	c.Method = queue.MethodFIFO
	if err := op.PutConfig(ctx, q, c); err != nil {
		t.Fatalf("switching to fifo: %v", err)
	}
	var left []string
	for _, u := range arrival {
		if !slices.Contains(drawn, u) {
			left = append(left, u)
		}
	}
	for i, u := range left {
		if v, err := svc.Status(ctx, q, u); err != nil || v.Drawn || v.Position != int64(i+1) {
			t.Fatalf("%s after random → fifo: %+v, %v; want position %d", u, v, err, i+1)
		}
	}
	var order []string
	for len(order) < len(left) {
		got := admitDue(t, s, clock, q, 1)
		if len(got) == 0 {
			t.Fatalf("after random → fifo admission stopped at %v of %v", order, left)
		}
		order = append(order, got...)
	}
	if !slices.Equal(order, left) {
		t.Fatalf("after random → fifo admitted %v, want by ticket %v", order, left)
	}
}
