package storetest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// The estimate a user is told (issue 49): 0 only within what the next
// tick surely lets in, by the same rule in every language that computes
// it. The cases are testdata, so the page's JavaScript is tested on them
// too (internal/web).

func init() {
	register(suiteTest{"EstimateIsZeroOnlyWithinWhatTheNextTickLetsIn", testEstimates},
		suiteTest{"EstimateFollowsThePhasesRate", testEstimateFollowsThePhase})
}

//go:embed testdata/estimates.json
var estimatesJSON []byte

// EstimateCase is one queue's estimates as testdata/estimates.json holds
// them: its settings, how many are let in before the newcomers come (their
// tokens alive, under the live-token cap: LetInFirst), and the wait, in
// seconds, a newcomer at each position (the line as long as their
// position) is told.
type EstimateCase struct {
	Name            string               `json:"name"`
	RatePerSecond   float64              `json:"ratePerSecond"`
	IntervalMs      int64                `json:"intervalMs"`
	BatchSize       int64                `json:"batchSize"`
	Method          queue.QueueingMethod `json:"queueingMethod"`
	MaxActiveTokens int64                `json:"maxActiveTokens"`
	LetInFirst      int                  `json:"letInFirst"`
	Told            map[int64]int64      `json:"told"`
	// Range is, for some of the positions told, the range (low, high) the
	// newcomer is told beside it (issue 54): the line unmeasured, so its
	// spread is the prior's (estimate.Prior).
	Range map[int64][2]int64 `json:"range"`
}

// rangeAt is the range the case gives pos, nil when none.
func (ec EstimateCase) rangeAt(pos int64) []int64 {
	r, ok := ec.Range[pos]
	if !ok {
		return nil
	}
	return r[:]
}

// rangeIs says whether e is known with the range the case gives pos (true
// when it gives none).
func (ec EstimateCase) rangeIs(pos int64, e estimate.Estimate) bool {
	r, ok := ec.Range[pos]
	return !ok || e.Known && e.Low == r[0] && e.High == r[1]
}

// EstimateCases are the cases of testdata/estimates.json.
func EstimateCases() []EstimateCase {
	var f struct{ Cases []EstimateCase }
	if err := json.Unmarshal(estimatesJSON, &f); err != nil {
		panic("storetest: testdata/estimates.json: " + err.Error())
	}
	return f.Cases
}

// Settings are the case's settings as the admin API takes them.
func (ec EstimateCase) Settings() map[string]any {
	s := map[string]any{"ratePerSecond": ec.RatePerSecond, "intervalMs": ec.IntervalMs, "batchSize": ec.BatchSize}
	if ec.Method != "" {
		s["queueingMethod"] = string(ec.Method)
	}
	if ec.MaxActiveTokens > 0 {
		s["maxActiveTokens"] = ec.MaxActiveTokens
	}
	return s
}

// Positions are the positions the case tells, in order.
func (ec EstimateCase) Positions() []int64 { return slices.Sorted(maps.Keys(ec.Told)) }

// testEstimates: on each case's queue, the newcomers are told the case's
// estimates (Go: Pace.Estimate on the store's pace, with the range where
// the case gives one), and so are they when they ask (first come only: a
// draw's estimate is the line's, not the place's), and each place keeps
// the wait and range told (the Redis store's
// prelude.lua shown, the embedded store's Go), as admission, sped up,
// reports when it lets them in.
//
// No tick runs while they come and ask, so the line is stalled
// estimate.StallAfter (2 s with ticks of 100 ms) after the first
// newcomer came, and then rightly says it does not know the wait.
// On the wall clock a loaded machine can make the default case's 25
// enters and 4 status reads take longer than that (~100 ms a call): an
// answer that says stalled is checked to come after StallAfter, and the
// case is had again on a fresh queue, three times at most.
func testEstimates(t *testing.T, s queue.Store, clock Clock) {
	for _, ec := range EstimateCases() {
		t.Run(ec.Name, func(t *testing.T) {
			c, err := queue.Apply(queue.DefaultConfig(), ec.Settings())
			if err != nil {
				t.Fatal(err)
			}
			const tries = 3
			for try := 1; ; try++ {
				q, stalled := tellEstimates(t, s, clock, c, ec)
				if stalled == "" {
					checkWaitsKept(t, s, clock, q, c, len(ec.Told), func(u string) (keptWait, bool) {
						var pos int64
						_, err := fmt.Sscanf(u, "u%03d", &pos)
						want, ok := ec.Told[pos]
						return keptWait{Shown: want, Range: ec.rangeAt(pos)}, err == nil && ok
					})
					return
				}
				if try == tries {
					t.Fatalf("the line stalled before the newcomers were all told, on each of %d fresh queues (the last: %s)", tries, stalled)
				}
				t.Logf("try %d: %s; again on a fresh queue", try, stalled)
			}
		})
	}
}

// tellEstimates has ec's newcomers come to a fresh queue of c and ask,
// and checks what they are told (testEstimates). It returns the queue,
// and, if an answer said the line was stalled (StallAfter after the first
// newcomer came, not before), which, and after how long.
func tellEstimates(t *testing.T, s queue.Store, clock Clock, c queue.Config, ec EstimateCase) (q, stalled string) {
	t.Helper()
	q = newQueue(t, s, c)
	letInFirst(t, s, clock, q, c, ec.LetInFirst)
	positions := ec.Positions()
	user := func(pos int64) string { return fmt.Sprintf("u%03d", pos) }
	// The first newcomer's enter starts the line's wait (the front has not
	// stood still before it): a stall is said StallAfter after it at the
	// soonest.
	first := clock.Now()
	isStalled := func(what string, e queue.Standing) bool {
		t.Helper()
		if !e.Pace.Stalled {
			return false
		}
		after := clock.Now().Sub(first)
		stalled = fmt.Sprintf("%s said stalled %v after the first newcomer came", what, after.Round(time.Millisecond))
		if limit := estimate.StallAfter(c.Interval, e.Pace.Rate); after <= limit {
			t.Fatalf("%s, before StallAfter (%v): %+v", stalled, limit, e.Pace)
		}
		return true
	}
	for pos := int64(1); pos <= positions[len(positions)-1]; pos++ {
		e := mustEnter(t, s, q, user(pos))
		if isStalled(fmt.Sprintf("newcomer %d", pos), e) {
			return q, stalled
		}
		want, told := ec.Told[pos]
		if got := e.Pace.Estimate(e.Position, e.Length); told && (e.Position != pos || got.Seconds != want || !ec.rangeIs(pos, got)) {
			t.Errorf("newcomer %d: at %d told %+v, want %d s in %v", pos, e.Position, got, want, ec.rangeAt(pos))
		}
	}
	if ec.Method == queue.MethodRandom {
		return q, ""
	}
	for _, pos := range positions {
		e := mustStatus(t, s, q, user(pos))
		if isStalled(fmt.Sprintf("the status at %d", pos), e) {
			return q, stalled
		}
		if got := e.Pace.Estimate(e.Position, e.Length); got.Seconds != ec.Told[pos] || !ec.rangeIs(pos, got) {
			t.Errorf("status at %d: told %+v, want %d s in %v", e.Position, got, ec.Told[pos], ec.rangeAt(pos))
		}
	}
	return q, ""
}

// letInFirst lets n users in by admission's ticks before anyone else
// comes: their tokens stay alive, so the room the last tick left under the
// queue's live-token cap is the cap less n.
func letInFirst(t *testing.T, s queue.Store, clock Clock, q string, c queue.Config, n int) {
	t.Helper()
	for i := range n {
		mustEnter(t, s, q, fmt.Sprintf("first%03d", i))
	}
	for admitted := 0; admitted < n; {
		if a := tickDue(t, s, clock, q, c.BatchSize); len(a.Admitted) == 0 {
			t.Fatalf("a tick let in none of the %d waiting under a cap of %d", n-admitted, c.MaxActiveTokens)
		} else {
			admitted += len(a.Admitted)
		}
	}
}

// keptWait is the wait a place should keep: Shown, and Range (low, high)
// when given.
type keptWait struct {
	Shown int64
	Range []int64
}

// checkWaitsKept lets everyone in line in at fastConfig's pace (the
// queue's method kept; its live-token cap, no-shows and phases lifted)
// and checks the wait each place kept against want's, n of them.
func checkWaitsKept(t *testing.T, s queue.Store, clock Clock, q string, c queue.Config, n int, want func(user string) (keptWait, bool)) {
	t.Helper()
	fast := fastConfig()
	c.RatePerSecond, c.BatchSize, c.Interval, c.MaxActiveTokens = fast.RatePerSecond, fast.BatchSize, fast.Interval, 0
	c.AbandonAfter, c.Phases = 0, nil
	if err := s.PutConfig(context.Background(), q, c); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for range 100 {
		a := tickDue(t, s, clock, q, c.BatchSize)
		for i, u := range a.Admitted {
			w, ok := want(u)
			if !ok || i >= len(a.Waited) {
				continue
			}
			checked++
			got := a.Waited[i]
			if got.Shown != w.Shown || w.Range != nil && (got.Low != w.Range[0] || got.High != w.Range[1]) {
				t.Errorf("%s: the place kept %d s shown in %d–%d s, want %d s in %v", u, got.Shown, got.Low, got.High, w.Shown, w.Range)
			}
		}
		if checked == n {
			return
		}
	}
	t.Errorf("admission reported the wait kept of %d of the %d told", checked, n)
}

// testEstimateFollowsThePhase: a phase's rate is the one the estimate
// divides by, and so the one that says what the next tick lets in: a
// queue of the default 100/s under a phase of 2/s tells nobody 0. (Redis's
// scripts see a phase once a tick has brought it in: the tick comes first.)
func testEstimateFollowsThePhase(t *testing.T, s queue.Store, clock Clock) {
	now := clock.Now()
	c, err := queue.Apply(queue.DefaultConfig(), map[string]any{"phases": json.RawMessage(`[
	  {"name": "slow", "startsAt": "` + now.Add(-time.Second).UTC().Format(time.RFC3339Nano) + `", "ratePerSecond": 2}]`)})
	if err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, s, c)
	for pos := 1; pos <= 11; pos++ {
		mustEnter(t, s, q, fmt.Sprintf("u%02d", pos))
	}
	if a := tickDue(t, s, clock, q, c.BatchSize); len(a.Admitted) != 0 {
		t.Fatalf("a tick at 2/s (0.2 a tick) admitted %v", a.Admitted)
	}
	for pos, want := range map[int]int64{1: 1, 10: 5, 11: 6} {
		e := mustStatus(t, s, q, fmt.Sprintf("u%02d", pos))
		if got := e.Pace.Estimate(e.Position, e.Length).Seconds; e.Pace.Rate != 2 || got != want {
			t.Errorf("position %d under the 2/s phase: rate %v, told %d s; want 2/s, %d s", e.Position, e.Pace.Rate, got, want)
		}
	}
}
