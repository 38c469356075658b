package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// The range a newcomer is told (issue 54): each place keeps the wait and
// the range its newcomer's answer carried (queue.Pace.Estimate at that
// instant: on Redis, prelude.lua's twin of the Go model), none when the
// line could not say, and admission reports whether something no estimate
// could foresee (TickState.Surprise) came after they took their place.

func init() {
	register(suiteTest{"RangeKeptAtJoinIsTheOneShown", testRangeKept},
		suiteTest{"RangeKeptInALaneIsTheLanes", testRangeKeptInALane},
		suiteTest{"UnknownAtJoinKeepsNoRange", testUnknownKeepsNoRange},
		suiteTest{"PlacedByTheOpeningKeepsNoRange", testOpeningKeepsNoRange},
		suiteTest{"ApartAfterASurprise", testApart})
}

// abandonFor is the abandon time the suite's no-show tests use: the
// store's own rule, a second on a fake clock; on the wall clock (Redis's
// TIME) a present user's mark and the tick that judges it are calls apart,
// which a loaded machine stretches (testNoShowProperty).
func abandonFor(clock Clock) time.Duration {
	if _, fake := clock.(*FakeClock); fake {
		return time.Second
	}
	return 5 * time.Second
}

// withPhase is c with one phase from at on, at rate.
func withPhase(t *testing.T, c queue.Config, at time.Time, rate float64) queue.Config {
	t.Helper()
	c, err := queue.Apply(c, map[string]any{"phases": json.RawMessage(fmt.Sprintf(
		`[{"name": "slower", "startsAt": %q, "ratePerSecond": %v}]`, at.UTC().Format(time.RFC3339Nano), rate))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testRangeKept: on a line whose pace is measured, a third of whose people
// do not come back (so fewer than all who leave the front take their
// turn) and whose rate halves at a phase ahead, newcomers come at three
// moments; each place keeps the median and the range the newcomer's
// answer carried, and admission answers them as kept.
func testRangeKept(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	abandon := abandonFor(clock)
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval, c.AbandonAfter = 2, 10, 100*time.Millisecond, abandon
	// The phase comes after the pace is measured (10 s of busy line) and
	// before the newcomers' turns: their waits cross it.
	c = withPhase(t, c, clock.Now().Add(abandon+20*time.Second), 1)
	q := newQueue(t, s, c)
	var present []string
	for i := range 80 {
		u := fmt.Sprintf("first%02d", i)
		mustEnter(t, s, q, u)
		if i%3 != 2 { // every third never asks again: a no-show
			present = append(present, u)
		}
	}
	// The front moves, no-shows skipped, until the pace is measured and
	// the first no-shows are judged; newcomers come at three moments
	// after, a second apart.
	told := map[string]estimate.Estimate{}
	var p queue.Pace
	for moment, ticks := 0, 0; moment < 3; {
		if err := s.Seen(ctx, q, present, false); err != nil {
			t.Fatal(err)
		}
		tickDue(t, s, clock, q, c.BatchSize)
		if p = mustStatus(t, s, q, present[len(present)-1]).Pace; p.Measured == 0 || p.Claim > 0.9 {
			if clock.Now().Sub(c.Phases[0].StartsAt) > -5*time.Second {
				t.Fatalf("the pace is not measured with its no-shows in time: %+v", p)
			}
			continue
		}
		if ticks++; ticks%10 != 1 {
			continue
		}
		stalled := false
		for i := range 4 {
			u := fmt.Sprintf("new%d-%d", moment, len(told))
			e := mustEnter(t, s, q, u)
			told[u], present = e.Pace.Estimate(e.Position, e.Length), append(present, u)
			if e.Pace.Stalled {
				// On a loaded machine this loop can fall behind the ticks
				// for two seconds, and the line then says, rightly, that
				// it does not know the wait: the place keeps no range
				// (checked below, as UnknownAtJoinKeepsNoRange's), and the
				// moment comes again.
				stalled = true
				continue
			}
			if est := told[u]; !est.Known || len(e.Pace.Ahead) == 0 || est.Low > est.Seconds || est.Seconds > est.High {
				t.Fatalf("%s at %d (newcomer %d) told %+v under %+v: want a range known, around its median, with the phase ahead", u, e.Position, i, est, e.Pace)
			}
		}
		if !stalled {
			moment++
		} else if clock.Now().Sub(c.Phases[0].StartsAt) > -5*time.Second {
			t.Fatalf("the line stalled at every moment until the phase was near: %+v", p)
		}
	}
	t.Logf("the last newcomer told %v under claim %.3f, spread %.3f, steps %v", told[present[len(present)-1]], p.Claim, p.Spread, p.Ahead)
	checkRangesKept(t, s, clock, q, c, told)
}

// checkRangesKept lets everyone in line in (checkWaitsKept) and checks
// the wait and range each of told's places kept against the estimate
// told: its median, and its range if known, else none.
func checkRangesKept(t *testing.T, s queue.Store, clock Clock, q string, c queue.Config, told map[string]estimate.Estimate) {
	t.Helper()
	checkWaitsKept(t, s, clock, q, c, len(told), func(u string) (keptWait, bool) {
		est, ok := told[u]
		w := keptWait{Shown: est.Seconds, Range: []int64{rollup.NoneShown, rollup.NoneShown}}
		if est.Known {
			w.Range = []int64{est.Low, est.High}
		}
		return w, ok
	})
}

// testRangeKeptInALane: a newcomer who joins a lane is told the range of
// their lane's share of the rate, and the place keeps it, as in the public
// lane (Join as Enter).
func testRangeKeptInALane(t *testing.T, s queue.Store, clock Clock) {
	c := membersConfig(0.3)
	c.RatePerSecond, c.BatchSize, c.Interval = 10, 10, 100*time.Millisecond
	q := newQueue(t, s, c)
	join := func(u string, j lane.Join) queue.Standing { return mustJoin(t, s, q, u, j) }
	for i := range 10 {
		join(fmt.Sprint("m", i), lane.Join{Lane: "members"})
		join(fmt.Sprint("p", i), lane.Join{})
	}
	// The lanes' shares, as the answers read them, come with a tick; the
	// front it moves is not stalled for StallAfter (2 s) from then on.
	moved := moveFront(t, s, clock, q, c.BatchSize)
	told := map[string]estimate.Estimate{}
	stalls := 0
	for i := 10; i < 20; i++ {
		for u, j := range map[string]lane.Join{fmt.Sprint("m", i): {Lane: "members"}, fmt.Sprint("p", i): {}} {
			e := join(u, j)
			told[u] = e.Pace.Estimate(e.Position, e.Length)
			if e.Pace.Stalled {
				// A loaded machine can make these 20 joins take longer than
				// the 2 s: the line then says, rightly, that it does not know
				// the wait, and the place keeps no range (checked below,
				// as UnknownAtJoinKeepsNoRange's); a tick moves the front
				// and the joins go on.
				if after, limit := clock.Now().Sub(moved), estimate.StallAfter(c.Interval, e.Pace.Rate); after <= limit {
					t.Fatalf("%s joining %q: said stalled %v after the front moved, before StallAfter (%v)", u, e.Lane, after, limit)
				}
				stalls++
				moved = moveFront(t, s, clock, q, c.BatchSize)
				continue
			}
			if e.Pace.LaneShare == 0 || !told[u].Known {
				t.Fatalf("%s joining %q at %d: told %+v under a lane's share of %v; want a range known, a share", u, e.Lane, e.Position, told[u], e.Pace.LaneShare)
			}
		}
	}
	if stalls > len(told)/2 {
		t.Fatalf("the line was stalled at %d of the %d joins: too few told a range", stalls, len(told))
	}
	if m, p := told["m19"], told["p19"]; m.Seconds <= p.Seconds {
		t.Errorf("the 20th of members (0.3 of the rate) told %+v, of the public (0.7) %+v: want the members' longer", m, p)
	}
	checkRangesKept(t, s, clock, q, c, told)
}

// moveFront ticks until one lets someone in, and returns an instant
// before that tick: the front moved after it.
func moveFront(t *testing.T, s queue.Store, clock Clock, q string, batch int) time.Time {
	t.Helper()
	for range 10 {
		before := clock.Now()
		if a := tickDue(t, s, clock, q, batch); len(a.Admitted) > 0 {
			return before
		}
	}
	t.Fatal("ten ticks in a row let nobody in")
	return time.Time{}
}

// testUnknownKeepsNoRange: a newcomer to a paused line is told a median
// but no range (waitTimeKnown false), and their place keeps none.
func testUnknownKeepsNoRange(t *testing.T, s queue.Store, clock Clock) {
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval, c.Paused = 2, 10, 100*time.Millisecond, true
	q := newQueue(t, s, c)
	told := map[string]estimate.Estimate{}
	for i := range 5 {
		u := fmt.Sprintf("u%d", i)
		e := mustEnter(t, s, q, u)
		if told[u] = e.Pace.Estimate(e.Position, e.Length); told[u].Known || told[u].Reason != estimate.UnknownPaused {
			t.Fatalf("%s entering a paused line: told %+v, want not known (paused)", u, told[u])
		}
	}
	c.Paused = false
	checkRangesKept(t, s, clock, q, c, told)
}

// testOpeningKeepsNoRange: those the opening placed were shown its time,
// not a wait, and their places keep none (rollup.NoneShown); a newcomer
// after it keeps the range told.
func testOpeningKeepsNoRange(t *testing.T, s queue.Store, clock Clock) {
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval, c.OpensAt = 2, 10, 100*time.Millisecond, clock.Now().Add(-time.Hour)
	q := newQueue(t, s, c)
	for _, u := range []string{"p1", "p2", "p3"} {
		if e := mustEnter(t, s, q, u); !e.PreQueue {
			t.Fatalf("%s before the opening: %+v, want the pre-queue", u, e)
		}
	}
	if o, placed, err := admission.OpenLine(context.Background(), s, q, "owner", testDrawer); err != nil || !o.Due || placed != 3 {
		t.Fatalf("OpenLine: %+v, %d, %v", o, placed, err)
	}
	e := mustEnter(t, s, q, "late")
	late := e.Pace.Estimate(e.Position, e.Length)
	if !late.Known {
		t.Fatalf("late, after the opening: told %+v, want a range known", late)
	}
	none := keptWait{Shown: rollup.NoneShown, Range: []int64{rollup.NoneShown, rollup.NoneShown}}
	checkWaitsKept(t, s, clock, q, c, 4, func(u string) (keptWait, bool) {
		if u == "late" {
			return keptWait{Shown: late.Seconds, Range: []int64{late.Low, late.High}}, true
		}
		return none, true
	})
}

// testApart: people who took their place before admission was paused, or
// before the rate was cut deeply for long enough to count (a surprise:
// admission's fitEstimate, here 2/s cut to 0.1/s for two seconds), are
// admitted apart (rollup.Wait.Apart); those who came after are never
// scored apart (rollup.Wait.Outcome).
func testApart(t *testing.T, s queue.Store, clock Clock) {
	for _, surprise := range []string{"paused", "rate cut"} {
		t.Run(surprise, func(t *testing.T) {
			c := queue.DefaultConfig()
			c.RatePerSecond, c.BatchSize, c.Interval = 2, 10, 100*time.Millisecond
			q := newQueue(t, s, c)
			for i := range 3 {
				mustEnter(t, s, q, fmt.Sprintf("before%d", i))
			}
			tickDue(t, s, clock, q, c.BatchSize) // 0.2 a tick: nobody in yet
			cut := c
			if surprise == "paused" {
				cut.Paused = true
			} else {
				cut.RatePerSecond = 0.1 // nobody let in while it lasts: 0.01 a tick
			}
			if err := s.PutConfig(context.Background(), q, cut); err != nil {
				t.Fatal(err)
			}
			for until := clock.Now().Add(2 * time.Second); clock.Now().Before(until); {
				tickDue(t, s, clock, q, c.BatchSize) // the ticks that find it
			}
			if err := s.PutConfig(context.Background(), q, c); err != nil {
				t.Fatal(err)
			}
			tickDue(t, s, clock, q, c.BatchSize)
			clock.Sleep(time.Millisecond) // after the tick's instant, on a fake clock too
			for i := range 3 {
				mustEnter(t, s, q, fmt.Sprintf("after%d", i))
			}
			checkApart(t, s, clock, q, c, 6)
		})
	}
}

// checkApart lets n in line in at fastConfig's pace and checks that those
// who came before the surprise (before…) are apart, the others not.
func checkApart(t *testing.T, s queue.Store, clock Clock, q string, c queue.Config, n int) {
	t.Helper()
	fast := fastConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = fast.RatePerSecond, fast.BatchSize, fast.Interval
	if err := s.PutConfig(context.Background(), q, c); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for range 100 {
		a := tickDue(t, s, clock, q, c.BatchSize)
		if len(a.Waited) != len(a.Admitted) {
			t.Fatalf("%d admitted, %d waits", len(a.Admitted), len(a.Waited))
		}
		for i, u := range a.Admitted {
			seen++
			w := a.Waited[i]
			// Those who came after are never scored apart. They may be
			// marked Apart all the same: a line no one was let into for two
			// seconds is stalled when they join, so they are told so (no
			// range: outcome unknown), and the tick that ends the stall
			// records it as a surprise.
			o, _ := w.Outcome()
			if before := u[:6] == "before"; before && !w.Apart || !before && (o == rollup.OutcomeApartIn || o == rollup.OutcomeApartOut) {
				t.Errorf("%s: admitted apart %v (outcome %q), want apart %v", u, w.Apart, o, before)
			}
		}
		if seen == n {
			return
		}
	}
	t.Errorf("admitted %d of the %d in line", seen, n)
}
