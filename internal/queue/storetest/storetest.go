// Package storetest is the conformance suite every queue.Store passes: the
// Redis store on a real server and the in-process store run the same tests,
// so the embedded default behaves like production.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/suspect"
)

// Clock is the time a store under test keeps, as the suite sees it.
type Clock interface {
	// Now is the store's time.
	Now() time.Time
	// Sleep lets d pass for the store.
	Sleep(d time.Duration)
	// Step makes the store's clock jump by d for queue (back when d < 0),
	// as an NTP correction or a restored VM does to a Redis host, or as if d
	// passed with nobody calling.
	Step(t *testing.T, queue string, d time.Duration)
}

// FakeClock is a store clock that moves only when told: Sleep advances it at
// once, so the suite runs without waiting and no test depends on how busy
// the machine is. Stores that take a clock (memstore) run on it.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock at a fixed instant.
func NewFakeClock() *FakeClock {
	return &FakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
}

// Now implements Clock.
func (c *FakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Sleep implements Clock: the time passes at once.
func (c *FakeClock) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
}

// Step implements Clock: the clock itself jumps.
func (c *FakeClock) Step(_ *testing.T, _ string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// WallClock is the machine's clock, for a store that reads its own (Redis
// TIME, on this machine). That clock cannot be stepped from a test, so
// ShiftStored moves every time the store keeps for a queue (tick due times,
// token expiries, lock expiries) by d instead: to every script, times kept
// d later are the same as TIME going back by d.
type WallClock struct {
	ShiftStored func(t *testing.T, queue string, d time.Duration)
}

// Now implements Clock.
func (WallClock) Now() time.Time { return time.Now() }

// Sleep implements Clock.
func (WallClock) Sleep(d time.Duration) { time.Sleep(d) }

// Step implements Clock.
func (c WallClock) Step(t *testing.T, queue string, d time.Duration) { c.ShiftStored(t, queue, -d) }

// Run runs the suite. open returns an empty store for one test (for Redis,
// one with a key prefix no other test uses) and the clock it keeps.
func Run(t *testing.T, open func(t *testing.T) (queue.Store, Clock)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s queue.Store, clock Clock)
	}{
		{"ConcurrentEntersGetPositions1ToN", testConcurrentEnters},
		{"ReEntryKeepsPosition", testReEntry},
		{"CapacityRefusesNewcomersNotMembers", testCapacity},
		{"UnknownQueue", testUnknownQueue},
		{"LeavingClosesTheGap", testLeaveClosesGap},
		{"AdmissionFollowsEntryOrder", testAdmissionOrderProperty},
		{"SnapshotAgreesWithStatus", testSnapshotProperty},
		{"SnapshotTooManyLeaversAnswersNoOne", testSnapshotIncomplete},
		{"AdmissionNeverExceedsBudget", testAdmissionBudget},
		{"AdmissionCarriesFractions", testAdmissionCarry},
		{"LiveTokenCapHoldsAdmissionBack", testLiveTokenCap},
		{"PausedAdmitsNobody", testPaused},
		{"ShorterIntervalAppliesAtOnce", testShorterInterval},
		{"ClockSteppedBackDelaysOneIntervalAtMost", testClockStepBack},
		{"ReadyUserEnteringStaysReady", testReadyStaysReady},
		{"TokensExpireAtTTL", testTokenExpiry},
		{"TokenUseRules", testTokenUse},
		{"ConcurrentUseOfOneToken", testConcurrentUse},
		{"LeaveGivesBackToken", testLeaveGivesBackToken},
		{"Stats", testStats},
		{"StatsAddUp", testStatsAddUp},
		{"StatsReadExpiryWithoutSweeping", testStatsReadExpiry},
		{"ConfigRoundTrip", testConfigRoundTrip},
		{"EpochNamesTheLine", testEpoch},
		{"QuietLineLetsStraightIn", testAdmitNowQuiet},
		{"AdmitNowSpendsTheNextTicksBudget", testAdmitNowBudget},
		{"AdmitCalledAgainWithItsTokensAdmitsNobody", testAdmitRetried},
		{"FirstUseIsOnce", testFirstUse},
	}
	tests = append(append(tests, followingTests...), registered...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, clock := open(t)
			tt.fn(t, s, clock)
		})
	}
}

// RunDistributions runs the suite's statistical and large part: that the
// random draw is uniform over the line, that an opening's draw places
// everyone in the order drawn, evenly over the orders, and that an opening
// of 10,000 people stands as its record says. Thousands of calls each, it is
// asked once per implementation of the draw (memstore's Go, redisstore's
// Lua), not again of its variants (durable, restarting, Cluster, auto-
// pipelined), whose draws are the same code: those Run checks with a
// smaller sample that each draw admits everyone once and places every
// order.
func RunDistributions(t *testing.T, open func(t *testing.T) (queue.Store, Clock)) {
	for _, tt := range []suiteTest{
		{"RandomDrawIsUniform", testRandomUniform},
		{"OpeningOrderIsUniform", testOpeningUniform},
		{"OpeningOfTenThousandMatchesItsRecord", testOpeningMatchesItsRecord},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, clock := open(t)
			tt.fn(t, s, clock)
		})
	}
}

// inBatches runs the runs numbered from to from+runs-1 in parallel subtests
// of batch runs each (run gets the first number and how many), for tests of
// many runs, each on a queue of its own: on Redis a run is dozens of round
// trips, which a loaded machine makes slow rather than costly. It returns
// once every batch has, and stops the test if one failed.
func inBatches(t *testing.T, from, runs, batch int, run func(t *testing.T, first, n int)) {
	t.Helper()
	ok := t.Run("runs", func(t *testing.T) {
		for first := from; first < from+runs; first += batch {
			n := min(batch, from+runs-first)
			t.Run(fmt.Sprintf("%d-%d", first, first+n-1), func(t *testing.T) {
				t.Parallel()
				run(t, first, n)
			})
		}
	})
	if !ok {
		t.FailNow()
	}
}

// suiteTest is one test of the suite.
type suiteTest = struct {
	name string
	fn   func(t *testing.T, s queue.Store, clock Clock)
}

// registered are the tests of the suite's parts in files of their own,
// each of which registers its tests (register, from init): a new part of
// the suite is a new file.
var registered []suiteTest

func register(ts ...suiteTest) { registered = append(registered, ts...) }

// fastConfig admits 10 users per 1 ms tick, so tests wait milliseconds.
func fastConfig() queue.Config {
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 10_000, 10, time.Millisecond
	return c
}

func newQueue(t *testing.T, s queue.Store, c queue.Config) string {
	t.Helper()
	name := fmt.Sprintf("q%d", rand.Int64())
	if err := s.PutConfig(context.Background(), name, c); err != nil {
		t.Fatalf("PutConfig: %v", err)
	}
	return name
}

func mustEnter(t *testing.T, s queue.Store, q, user string) queue.Standing {
	t.Helper()
	e, err := s.Enter(context.Background(), q, user)
	if err != nil {
		t.Fatalf("Enter(%s): %v", user, err)
	}
	return e
}

func mustStatus(t *testing.T, s queue.Store, q, user string) queue.Standing {
	t.Helper()
	e, err := s.Status(context.Background(), q, user)
	if err != nil {
		t.Fatalf("Status(%s): %v", user, err)
	}
	return e
}

// admitDue calls Admit until a tick is due (waiting as told), and returns
// that tick's admitted users.
func admitDue(t *testing.T, s queue.Store, clock Clock, q string, batch int) []string {
	t.Helper()
	return tickDue(t, s, clock, q, batch).Admitted
}

// tickDue is admitDue's whole answer.
func tickDue(t *testing.T, s queue.Store, clock Clock, q string, batch int) queue.Admission {
	t.Helper()
	for range 1000 {
		a, err := s.Admit(context.Background(), q, queue.NewTokens(batch))
		if err != nil {
			t.Fatalf("Admit: %v", err)
		}
		if a.Ticked {
			return a
		}
		clock.Sleep(a.NextIn)
	}
	t.Fatal("admission never became due")
	return queue.Admission{}
}

func testConcurrentEnters(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, queue.DefaultConfig())
	const n = 1000
	positions := make([]int64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := s.Enter(context.Background(), q, fmt.Sprintf("user-%d", i))
			if err != nil {
				errs <- err
				return
			}
			positions[i] = e.Position
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Enter: %v", err)
	}
	sort.Slice(positions, func(i, j int) bool { return positions[i] < positions[j] })
	for i, p := range positions {
		if p != int64(i+1) {
			t.Fatalf("sorted positions[%d] = %d, want %d (positions must be exactly 1..%d)", i, p, i+1, n)
		}
	}
	if e := mustStatus(t, s, q, "user-0"); e.Length != n {
		t.Fatalf("length = %d, want %d", e.Length, n)
	}
}

func testReEntry(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, queue.DefaultConfig())
	for _, u := range []string{"a", "b", "c"} {
		mustEnter(t, s, q, u)
	}
	for range 3 {
		e := mustEnter(t, s, q, "b")
		want := queue.Standing{State: queue.Waiting, Position: 2, Length: 3, Ticket: 2}
		if diff := cmp.Diff(want, e, ignorePaceAndEpoch); diff != "" {
			t.Fatalf("re-entry (-want +got):\n%s", diff)
		}
	}
}

// ignorePaceAndEpoch leaves out what other tests check (ConfigRoundTrip,
// the pace tests, EpochNamesTheLine).
var ignorePaceAndEpoch = cmp.FilterPath(func(p cmp.Path) bool {
	return p.Last().String() == ".Pace" || p.Last().String() == ".Epoch"
}, cmp.Ignore())

func testCapacity(t *testing.T, s queue.Store, clock Clock) {
	c := queue.DefaultConfig()
	c.Capacity = 3
	q := newQueue(t, s, c)
	for _, u := range []string{"a", "b", "c"} {
		mustEnter(t, s, q, u)
	}
	if _, err := s.Enter(context.Background(), q, "d"); !errors.Is(err, queue.ErrQueueFull) {
		t.Fatalf("4th user: err = %v, want ErrQueueFull", err)
	}
	if e := mustEnter(t, s, q, "c"); e.Position != 3 {
		t.Fatalf("member re-entering a full line: position %d, want 3", e.Position)
	}
	if st := mustStatus(t, s, q, "d"); st.State != queue.NotInQueue {
		t.Fatalf("refused user's state = %s, want NOT_IN_QUEUE (nothing written)", st.State)
	}
	mustLeave(t, s, q, "a")
	if e := mustEnter(t, s, q, "d"); e.Position != 3 {
		t.Fatalf("after a leave, newcomer position %d, want 3", e.Position)
	}
}

func mustLeave(t *testing.T, s queue.Store, q, user string) {
	t.Helper()
	if _, err := s.Leave(context.Background(), q, user); err != nil {
		t.Fatalf("Leave(%s): %v", user, err)
	}
}

func testUnknownQueue(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	if _, err := s.Enter(ctx, "nope-unknown", "a"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Enter: %v, want ErrQueueNotFound", err)
	}
	if _, err := s.Status(ctx, "nope-unknown", "a"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Status: %v, want ErrQueueNotFound", err)
	}
	if _, err := s.Admit(ctx, "nope-unknown", queue.NewTokens(1)); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Admit: %v, want ErrQueueNotFound", err)
	}
	if _, err := s.Config(ctx, "nope-unknown"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Config: %v, want ErrQueueNotFound", err)
	}
	if _, err := s.Stats(ctx, "nope-unknown"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Stats: %v, want ErrQueueNotFound", err)
	}
}

func testLeaveClosesGap(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, queue.DefaultConfig())
	for _, u := range []string{"a", "b", "c", "d"} {
		mustEnter(t, s, q, u)
	}
	mustLeave(t, s, q, "b")
	got := map[string]int64{}
	for _, u := range []string{"a", "c", "d"} {
		got[u] = mustStatus(t, s, q, u).Position
	}
	if diff := cmp.Diff(map[string]int64{"a": 1, "c": 2, "d": 3}, got); diff != "" {
		t.Fatalf("positions after b left (-want +got):\n%s", diff)
	}
	if st := mustStatus(t, s, q, "b"); st.State != queue.NotInQueue {
		t.Fatalf("b after leaving: %s", st.State)
	}
	// Coming back after leaving means the end of the line.
	if e := mustEnter(t, s, q, "b"); e.Position != 4 {
		t.Fatalf("b re-entering after leaving: position %d, want 4", e.Position)
	}
}

// testAdmissionOrderProperty runs random enter/leave/admit sequences against
// a model (a plain slice) and checks the store admits exactly the model's
// front users, in order, and reports the model's positions.
func testAdmissionOrderProperty(t *testing.T, s queue.Store, clock Clock) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 42))
			q := newQueue(t, s, fastConfig())
			var model []string
			admitted := map[string]bool{}
			next := 0
			for step := range 150 {
				switch op := rnd.IntN(10); {
				case op < 6: // enter: a new user, or someone already in line again
					u := fmt.Sprintf("u%d", next)
					if len(model) > 0 && rnd.IntN(4) == 0 {
						u = model[rnd.IntN(len(model))]
					} else {
						next++
						model = append(model, u)
					}
					e := mustEnter(t, s, q, u)
					if want := int64(indexOf(model, u) + 1); e.Position != want || e.Length != int64(len(model)) {
						t.Fatalf("step %d: enter %s = %d/%d, want %d/%d", step, u, e.Position, e.Length, want, len(model))
					}
				case op < 8:
					model = leaveRandom(t, s, q, model, rnd)
				default: // admit one tick
					want := model[:min(10, len(model))]
					got := admitDue(t, s, clock, q, 10)
					if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("step %d: admitted (-want +got):\n%s", step, diff)
					}
					for _, u := range got {
						if admitted[u] {
							t.Fatalf("step %d: %s admitted twice", step, u)
						}
						admitted[u] = true
					}
					model = model[len(got):]
				}
			}
			for i, u := range model {
				if e := mustStatus(t, s, q, u); e.Position != int64(i+1) {
					t.Fatalf("final position of %s = %d, want %d", u, e.Position, i+1)
				}
			}
		})
	}
}

// testSnapshotProperty runs random enter/leave/admit sequences against a
// model and checks after every step that a Snapshot places every ticket ever
// issued exactly where Status would: waiting users at their model position,
// everyone else (admitted, left) nowhere.
func testSnapshotProperty(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			q := newQueue(t, s, fastConfig())
			var model []string
			tickets := map[string]int64{} // every user's latest ticket
			var last int64
			next := 0
			for step := range 120 {
				switch op := rnd.IntN(10); {
				case op < 6: // enter: a new user, someone in line again, or one who left or was admitted
					u := fmt.Sprintf("u%d", next)
					if len(tickets) > 0 && rnd.IntN(4) == 0 {
						u = fmt.Sprintf("u%d", rnd.IntN(next))
					} else {
						next++
					}
					e := mustEnter(t, s, q, u)
					if e.State != queue.Waiting {
						continue // admitted and still holding a token
					}
					if indexOf(model, u) < 0 {
						model = append(model, u)
						if e.Ticket <= last {
							t.Fatalf("step %d: %s got ticket %d after %d", step, u, e.Ticket, last)
						}
						last = e.Ticket
					} else if e.Ticket != tickets[u] {
						t.Fatalf("step %d: %s re-entered with ticket %d, had %d", step, u, e.Ticket, tickets[u])
					}
					tickets[u] = e.Ticket
				case op < 8:
					model = leaveRandom(t, s, q, model, rnd)
				default:
					got := admitDue(t, s, clock, q, 10)
					model = model[len(got):]
				}

				sn, err := s.Snapshot(ctx, q)
				if err != nil {
					t.Fatalf("step %d: Snapshot: %v", step, err)
				}
				if !sn.Complete || sn.Length != int64(len(model)) || sn.Last != last || sn.Pace.Batch != 10 {
					t.Fatalf("step %d: snapshot %+v, want length %d, last %d", step, sn, len(model), last)
				}
				for u, ticket := range tickets {
					pos, ok := placeIn(sn, ticket)
					want := int64(indexOf(model, u) + 1)
					if want > 0 && tickets[u] != mustStatus(t, s, q, u).Ticket {
						t.Fatalf("step %d: status of %s has another ticket than enter gave", step, u)
					}
					if want == 0 && ok || want > 0 && (!ok || pos != want) {
						t.Fatalf("step %d: snapshot places %s (ticket %d) at %d/%v, want %d (head %d, left %v)",
							step, u, ticket, pos, ok, want, sn.Head, sn.Left)
					}
				}
			}
		})
	}
}

// testSnapshotIncomplete: with more leavers above the head than a snapshot
// carries, it says it is incomplete and places no one, rather than guess.
func testSnapshotIncomplete(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, queue.DefaultConfig())
	n := queue.SnapshotMaxLeft + 3
	var tickets []int64
	for i := range n {
		tickets = append(tickets, mustEnter(t, s, q, fmt.Sprintf("u%d", i)).Ticket)
	}
	for i := 1; i < n-1; i++ { // all but the first and the last leave
		mustLeave(t, s, q, fmt.Sprintf("u%d", i))
	}
	sn, err := s.Snapshot(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Complete || len(sn.Left) > queue.SnapshotMaxLeft || sn.Length != 2 {
		t.Fatalf("snapshot: complete %v, %d leavers, length %d", sn.Complete, len(sn.Left), sn.Length)
	}
	if pos, ok := placeIn(sn, tickets[n-1]); ok {
		t.Fatalf("an incomplete snapshot placed the last user at %d", pos)
	}
	mustLeave(t, s, q, "u0") // the head leaves: the last user is alone, no leaver above him
	if sn, err = s.Snapshot(ctx, q); err != nil {
		t.Fatal(err)
	}
	if pos, ok := placeIn(sn, tickets[n-1]); !ok || pos != 1 || !sn.Complete {
		t.Fatalf("after the head left: %d/%v, complete %v", pos, ok, sn.Complete)
	}
}

// leaveRandom makes a random user of the model leave the line, in the store
// and in the model.
func leaveRandom(t *testing.T, s queue.Store, q string, model []string, rnd *rand.Rand) []string {
	t.Helper()
	if len(model) == 0 {
		return model
	}
	i := rnd.IntN(len(model))
	mustLeave(t, s, q, model[i])
	return append(model[:i:i], model[i+1:]...)
}

// testLiveTokenCap: with MaxActiveTokens 3 and 10 waiting, admission lets
// in 3 and then nobody until a token goes (used, given back or expired),
// and then only as many as the room; the cap and the totals survive a
// config round trip. The TTL is long, and the clock is stepped past it,
// so no token can run out early on a busy machine.
func testLiveTokenCap(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.MaxActiveTokens = 3
	c.TokenTTL = time.Minute
	q := newQueue(t, s, c)
	if got, err := s.Config(ctx, q); err != nil || got.MaxActiveTokens != 3 {
		t.Fatalf("config round trip: %+v, %v", got, err)
	}
	for i := range 10 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	var admitted []string
	for range 5 { // five ticks, room for three
		admitted = append(admitted, admitDue(t, s, clock, q, 10)...)
	}
	if len(admitted) != 3 {
		t.Fatalf("admitted %v under a cap of 3", admitted)
	}
	tokens := map[string]string{}
	for _, u := range admitted {
		tokens[u] = mustStatus(t, s, q, u).Token
	}
	// One spends its token, one gives it back: room for two more.
	if err := s.BeginUse(ctx, q, admitted[0], tokens[admitted[0]], "o", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.EndUse(ctx, q, admitted[0], tokens[admitted[0]], "o", true); err != nil {
		t.Fatal(err)
	}
	mustLeave(t, s, q, admitted[1])
	var more []string
	for range 5 {
		more = append(more, admitDue(t, s, clock, q, 10)...)
	}
	if len(more) != 2 || more[0] != "u3" || more[1] != "u4" {
		t.Fatalf("after two tokens went, admitted %v, want [u3 u4]", more)
	}
	// The TTL runs out for all three held: room for three more.
	clock.Step(t, q, c.TokenTTL+time.Second)
	var last []string
	for range 5 {
		last = append(last, admitDue(t, s, clock, q, 10)...)
	}
	if len(last) != 3 {
		t.Fatalf("after the tokens expired, admitted %v, want three", last)
	}
	if st, err := s.Stats(ctx, q); err != nil || st.ActiveTokens != 3 || st.Length != 2 {
		t.Fatalf("stats: %+v, %v", st, err)
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// testAdmissionBudget calls Admit from several goroutines (as several
// instances would, each at its own random moments) for a second of the
// store's time, and checks the total never exceeds rate×elapsed plus the
// one tick of backlog a store may make up plus the tick in progress, and no
// tick exceeds the batch. A busy machine can only lower the total.
func testAdmissionBudget(t *testing.T, s queue.Store, clock Clock) {
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 100, 5, 50*time.Millisecond
	q := newQueue(t, s, c)
	for i := range 500 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	var total atomic.Int64
	seen := sync.Map{}
	start := clock.Now()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for clock.Now().Sub(start) < time.Second {
				a, err := s.Admit(context.Background(), q, queue.NewTokens(c.BatchSize))
				if err != nil {
					t.Errorf("Admit: %v", err)
					return
				}
				if len(a.Admitted) > c.BatchSize {
					t.Errorf("one tick admitted %d > batch %d", len(a.Admitted), c.BatchSize)
				}
				for _, u := range a.Admitted {
					if _, dup := seen.LoadOrStore(u, true); dup {
						t.Errorf("%s admitted twice", u)
					}
				}
				total.Add(int64(len(a.Admitted)))
				clock.Sleep(time.Duration(rnd.Int64N(int64(c.Interval / 5))))
			}
		})
	}
	wg.Wait()
	elapsed := clock.Now().Sub(start)
	budget := int64(c.RatePerSecond*elapsed.Seconds()) + 2*int64(c.BatchSize)
	if got := total.Load(); got > budget || got == 0 {
		t.Fatalf("admitted %d in %v; budget is %d (rate×elapsed + two batches), and more than 0", got, elapsed, budget)
	}
}

func testAdmissionCarry(t *testing.T, s queue.Store, clock Clock) {
	c := fastConfig()
	c.RatePerSecond = 1500 // 1.5 per 1 ms tick
	q := newQueue(t, s, c)
	for i := range 20 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	total := 0
	for range 4 {
		n := len(admitDue(t, s, clock, q, c.BatchSize))
		if n < 1 || n > 2 {
			t.Fatalf("a 1.5-per-tick queue admitted %d in one tick", n)
		}
		total += n
	}
	if total < 5 || total > 7 { // 4 ticks × 1.5, give or take the first fraction
		t.Fatalf("4 ticks at 1.5/tick admitted %d, want about 6", total)
	}
}

// testAdmitRetried: a call made again with the same tokens — as a Redis
// client re-sends a script whose reply was slow, though it ran — admits
// nobody, even once the next tick is due: its tokens went to the users it
// admitted the first time, and one token must never reach two people. A
// call with fresh tokens then admits the next users.
func testAdmitRetried(t *testing.T, s queue.Store, clock Clock) {
	c := fastConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 20, 2, 100*time.Millisecond // 2 a tick
	q := newQueue(t, s, c)
	for _, u := range []string{"a", "b", "c", "d"} {
		mustEnter(t, s, q, u)
	}
	tokens := queue.NewTokens(c.BatchSize)
	var first queue.Admission
	for range 1000 {
		var err error
		if first, err = s.Admit(context.Background(), q, tokens); err != nil {
			t.Fatal(err)
		}
		if first.Ticked {
			break
		}
		clock.Sleep(first.NextIn)
	}
	if !slices.Equal(first.Admitted, []string{"a", "b"}) {
		t.Fatalf("first call admitted %v, want [a b]", first.Admitted)
	}
	clock.Sleep(2 * c.Interval) // the next tick is due
	again, err := s.Admit(context.Background(), q, tokens)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Admitted) != 0 {
		t.Fatalf("the same call again admitted %v with the tokens a and b hold", again.Admitted)
	}
	for _, u := range []string{"c", "d"} {
		if e := mustStatus(t, s, q, u); e.State != queue.Waiting {
			t.Fatalf("%s after the repeated call: %+v, want WAITING", u, e)
		}
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); !slices.Equal(got, []string{"c", "d"}) {
		t.Fatalf("a fresh call admitted %v, want [c d]", got)
	}
	held := map[string]string{}
	for _, u := range []string{"a", "b", "c", "d"} {
		e := mustStatus(t, s, q, u)
		if other, dup := held[e.Token]; e.State != queue.Ready || dup {
			t.Fatalf("%s: %+v (token shared with %q)", u, e, other)
		}
		held[e.Token] = u
	}
}

func testPaused(t *testing.T, s queue.Store, clock Clock) {
	c := fastConfig()
	c.Paused = true
	q := newQueue(t, s, c)
	mustEnter(t, s, q, "a")
	for range 3 {
		a, err := s.Admit(context.Background(), q, queue.NewTokens(10))
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Admitted) != 0 {
			t.Fatalf("paused queue admitted %v", a.Admitted)
		}
		clock.Sleep(2 * time.Millisecond)
	}
	c.Paused = false
	if err := s.PutConfig(context.Background(), q, c); err != nil {
		t.Fatal(err)
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 1 || got[0] != "a" {
		t.Fatalf("after resume admitted %v, want [a]", got)
	}
}

func testReadyStaysReady(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, fastConfig())
	mustEnter(t, s, q, "a")
	admitDue(t, s, clock, q, 10)
	st := mustStatus(t, s, q, "a")
	if st.State != queue.Ready || st.Token == "" || !st.ExpiresAt.After(clock.Now()) {
		t.Fatalf("after admission: %+v, want READY with a token expiring later", st)
	}
	again := mustEnter(t, s, q, "a")
	if again.State != queue.Ready || again.Token != st.Token {
		t.Fatalf("entering again while READY: %+v, want the same READY token", again)
	}
	if e := mustStatus(t, s, q, "a"); e.Length != 0 && e.State != queue.Ready {
		t.Fatalf("READY user was put back in line: %+v", e)
	}
}

// testTokenExpiry: a token lives its TTL, then is gone. The TTL is long and
// the clock is stepped past it, so a busy machine cannot expire the token
// before the test has seen it READY.
func testTokenExpiry(t *testing.T, s queue.Store, clock Clock) {
	c := fastConfig()
	c.TokenTTL = time.Minute
	q := newQueue(t, s, c)
	mustEnter(t, s, q, "a")
	admitDue(t, s, clock, q, 10)
	st := mustStatus(t, s, q, "a")
	if st.State != queue.Ready {
		t.Fatalf("not READY after admission: %s", st.State)
	}
	if ttl := st.ExpiresAt.Sub(clock.Now()); ttl > c.TokenTTL+50*time.Millisecond {
		t.Fatalf("token expires in %v, longer than its TTL %v", ttl, c.TokenTTL)
	}
	clock.Step(t, q, st.ExpiresAt.Sub(clock.Now())+50*time.Millisecond)
	if st := mustStatus(t, s, q, "a"); st.State != queue.NotInQueue {
		t.Fatalf("after TTL: %s, want NOT_IN_QUEUE", st.State)
	}
	if err := s.BeginUse(context.Background(), q, "a", st.Token, "req-1", time.Second); !errors.Is(err, queue.ErrTokenInvalid) {
		t.Fatalf("using an expired token: %v, want ErrTokenInvalid", err)
	}
	// An expired user entering again lines up anew.
	if e := mustEnter(t, s, q, "a"); e.State != queue.Waiting || e.Position != 1 {
		t.Fatalf("re-entering after expiry: %+v", e)
	}
}

func ready(t *testing.T, s queue.Store, clock Clock, q string, users ...string) map[string]string {
	t.Helper()
	for _, u := range users {
		mustEnter(t, s, q, u)
	}
	tokens := map[string]string{}
	for len(tokens) < len(users) {
		admitDue(t, s, clock, q, 10)
		for _, u := range users {
			if st := mustStatus(t, s, q, u); st.State == queue.Ready {
				tokens[u] = st.Token
			}
		}
	}
	return tokens
}

func testTokenUse(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	tok := ready(t, s, clock, q, "a", "b")
	cases := []struct {
		name, user, token string
		want              error
	}{
		{"wrong token", "a", "not-the-token", queue.ErrTokenInvalid},
		{"empty token", "a", "", queue.ErrTokenInvalid},
		{"another user's token", "b", tok["a"], queue.ErrTokenInvalid},
		{"no token at all", "c", tok["a"], queue.ErrTokenInvalid},
	}
	for _, tc := range cases {
		if err := s.BeginUse(ctx, q, tc.user, tc.token, "req-1", time.Second); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A failed order keeps the token.
	if err := s.BeginUse(ctx, q, "a", tok["a"], "req-1", time.Second); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := s.EndUse(ctx, q, "a", tok["a"], "req-1", false); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginUse(ctx, q, "a", tok["a"], "req-1", time.Second); err != nil {
		t.Fatalf("use after a failed order: %v, want the token kept", err)
	}
	// Compare-and-delete: a stale token never deletes the current one.
	if err := s.EndUse(ctx, q, "a", "stale", "req-1", true); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, s, q, "a"); st.State != queue.Ready {
		t.Fatalf("a stale consume deleted the token: %s", st.State)
	}
	// Success consumes it.
	if err := s.BeginUse(ctx, q, "a", tok["a"], "req-1", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.EndUse(ctx, q, "a", tok["a"], "req-1", true); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginUse(ctx, q, "a", tok["a"], "req-1", time.Second); !errors.Is(err, queue.ErrTokenInvalid) {
		t.Fatalf("use after success: %v, want ErrTokenInvalid", err)
	}
	if st := mustStatus(t, s, q, "a"); st.State != queue.NotInQueue {
		t.Fatalf("after consume: %s, want NOT_IN_QUEUE", st.State)
	}
}

func testConcurrentUse(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	tok := ready(t, s, clock, q, "a")["a"]
	var inUse atomic.Int64
	var mu sync.Mutex
	var winners []string
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("req-%d", i)
			switch err := s.BeginUse(ctx, q, "a", tok, owner, 10*time.Second); {
			case err == nil:
				mu.Lock()
				winners = append(winners, owner)
				mu.Unlock()
			case errors.Is(err, queue.ErrTokenInUse):
				inUse.Add(1)
			default:
				t.Errorf("BeginUse: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 || inUse.Load() != 49 {
		t.Fatalf("50 concurrent uses: %d locked, %d in use; want 1 and 49", len(winners), inUse.Load())
	}
	// A retry by the holder (its first reply lost) gets its own lock back.
	if err := s.BeginUse(ctx, q, "a", tok, winners[0], 10*time.Second); err != nil {
		t.Fatalf("the holder asking again: %v, want the lock it holds", err)
	}
	// Only the holder releases it.
	if err := s.EndUse(ctx, q, "a", tok, "someone-else", false); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginUse(ctx, q, "a", tok, "late", time.Second); !errors.Is(err, queue.ErrTokenInUse) {
		t.Fatalf("after a non-holder's release: %v, want still in use", err)
	}
	if err := s.EndUse(ctx, q, "a", tok, winners[0], false); err != nil {
		t.Fatal(err)
	}
	// The lock is short-lived: it lapses by itself if its holder dies.
	if err := s.BeginUse(ctx, q, "a", tok, "dies", 100*time.Millisecond); err != nil {
		t.Fatalf("after release: %v", err)
	}
	clock.Sleep(150 * time.Millisecond)
	if err := s.BeginUse(ctx, q, "a", tok, "next", time.Second); err != nil {
		t.Fatalf("after the lock lapsed: %v", err)
	}
}

func testLeaveGivesBackToken(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, fastConfig())
	ready(t, s, clock, q, "a")
	left, err := s.Leave(context.Background(), q, "a")
	if err != nil || !left {
		t.Fatalf("Leave with a token: %v, %v", left, err)
	}
	if st := mustStatus(t, s, q, "a"); st.State != queue.NotInQueue {
		t.Fatalf("after giving back the token: %s", st.State)
	}
	left, err = s.Leave(context.Background(), q, "a")
	if err != nil || left {
		t.Fatalf("Leave with nothing: %v, %v; want false, nil", left, err)
	}
}

func testStats(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, fastConfig())
	for i := range 15 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	admitDue(t, s, clock, q, 10)
	st, err := s.Stats(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	want := queue.Stats{Length: 5, EnteredTotal: 15, AdmittedTotal: 10, ActiveTokens: 10, Config: fastConfig(), EffectiveRate: fastConfig().RatePerSecond}
	if diff := cmp.Diff(want, st, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".MeasuredRate" }, cmp.Ignore())); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
}

func testConfigRoundTrip(t *testing.T, s queue.Store, clock Clock) {
	c := queue.Config{RatePerSecond: 33.5, BatchSize: 7, Interval: 250 * time.Millisecond, Capacity: 1234,
		TokenTTL: 90 * time.Second, MaxActiveTokens: 40, Paused: true, Adaptive: true, MinRate: 3, MaxRate: 28,
		TargetLatency: 300 * time.Millisecond, AbandonAfter: 45 * time.Second,
		OpensAt:        time.Date(2031, 12, 24, 11, 0, 0, 0, time.UTC),
		RateDerivation: "20 conns × 0.5 × 1000/300 ms = 33.5/s",
		Method:         queue.MethodReject,
		Join:           queue.JoinSigned, ChallengeCost: 1234,
		Suspects:     suspect.Challenge,
		ShadowAdmits: suspect.AdmitLast,
		// and the other suspect settings (issue 51)
		SuspectChallengeCost: 23456, ShadowCapacity: 77, HumanCheckSigned: true}
	q := newQueue(t, s, c)
	got, err := s.Config(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Fatalf("config (-want +got):\n%s", diff)
	}
	names, err := s.Queues(context.Background())
	if err != nil || indexOf(names, q) < 0 {
		t.Fatalf("Queues() = %v, %v; want it to include %s", names, err, q)
	}
}

// testStatsAddUp runs a random mix of every way in and out of the line and
// checks the totals balance exactly:
// entered = waiting + admitted + left; admitted = consumed + active + expired + returned.
func testStatsAddUp(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.RatePerSecond, c.BatchSize = 3000, 3 // 3 per 1 ms tick
	c.TokenTTL = 300 * time.Millisecond
	q := newQueue(t, s, c)
	rnd := rand.New(rand.NewPCG(7, 7))
	check := func(when string) {
		t.Helper()
		st, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if st.EnteredTotal != st.Length+st.AdmittedTotal+st.LeftTotal {
			t.Fatalf("%s: entered %d ≠ waiting %d + admitted %d + left %d", when,
				st.EnteredTotal, st.Length, st.AdmittedTotal, st.LeftTotal)
		}
		if st.AdmittedTotal != st.ConsumedTotal+st.ActiveTokens+st.ExpiredTotal+st.ReturnedTotal {
			t.Fatalf("%s: admitted %d ≠ consumed %d + active %d + expired %d + returned %d", when,
				st.AdmittedTotal, st.ConsumedTotal, st.ActiveTokens, st.ExpiredTotal, st.ReturnedTotal)
		}
	}
	for step := range 300 {
		u := fmt.Sprintf("u%d", rnd.IntN(60))
		switch rnd.IntN(7) {
		case 0, 1:
			if _, err := s.Enter(ctx, q, u); err != nil {
				t.Fatal(err)
			}
		case 6:
			if _, err := s.AdmitNow(ctx, q, u, queue.NewTokens(1)[0]); err != nil {
				t.Fatal(err)
			}
		case 2:
			mustLeave(t, s, q, u)
		case 3:
			admitDue(t, s, clock, q, c.BatchSize)
		case 4:
			if e := mustStatus(t, s, q, u); e.State == queue.Ready {
				if err := s.BeginUse(ctx, q, u, e.Token, "req-1", time.Second); err == nil {
					s.EndUse(ctx, q, u, e.Token, "req-1", rnd.IntN(2) == 0)
				}
			}
		case 5:
			clock.Sleep(time.Duration(rnd.IntN(40)) * time.Millisecond)
		}
		if step%25 == 0 {
			check(fmt.Sprintf("step %d", step))
		}
	}
	clock.Sleep(c.TokenTTL + 50*time.Millisecond)
	check("after every token expired")

	// Which paths the random run took depends on timing on a wall clock;
	// each way out is now taken once more, deterministically, and must
	// move its own total by one and keep the balance.
	mustStats := func() queue.Stats {
		t.Helper()
		st, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for mustStats().Length > 0 { // the random run's users out of the way
		admitDue(t, s, clock, q, c.BatchSize)
	}
	clock.Sleep(c.TokenTTL + 50*time.Millisecond)
	// Tokens from now on live long (and are expired by stepping the clock),
	// so none runs out before the test has seen it READY.
	c.TokenTTL = time.Minute
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"x-left", "x-consumed", "x-returned", "x-expired"} {
		mustEnter(t, s, q, u)
	}
	before := mustStats()
	mustLeave(t, s, q, "x-left")
	tokens := map[string]string{}
	for len(tokens) < 3 {
		admitDue(t, s, clock, q, c.BatchSize)
		for _, u := range []string{"x-consumed", "x-returned", "x-expired"} {
			if e := mustStatus(t, s, q, u); e.State == queue.Ready {
				tokens[u] = e.Token
			}
		}
	}
	if err := s.BeginUse(ctx, q, "x-consumed", tokens["x-consumed"], "req-x", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.EndUse(ctx, q, "x-consumed", tokens["x-consumed"], "req-x", true); err != nil {
		t.Fatal(err)
	}
	mustLeave(t, s, q, "x-returned")
	clock.Step(t, q, c.TokenTTL+time.Second)
	check("after one of each")
	after := mustStats()
	moved := [5]int64{after.EnteredTotal - before.EnteredTotal, after.LeftTotal - before.LeftTotal,
		after.ConsumedTotal - before.ConsumedTotal, after.ReturnedTotal - before.ReturnedTotal, after.ExpiredTotal - before.ExpiredTotal}
	if moved != [5]int64{0, 1, 1, 1, 1} {
		t.Fatalf("one leave, consume, give-back and expiry moved entered, left, consumed, returned, expired by %v, want [0 1 1 1 1]", moved)
	}
}

// testClockStepBack: right after a tick the store's clock jumps back an
// hour (an NTP step, a restored VM). The next tick is then due within one
// interval by the new clock, not an hour later, and ticks follow one
// interval apart as before.
func testClockStepBack(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := queue.DefaultConfig() // 10 per 100 ms
	q := newQueue(t, s, c)
	for i := range 30 {
		mustEnter(t, s, q, fmt.Sprintf("u%d", i))
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); len(got) != c.BatchSize {
		t.Fatalf("first tick admitted %v", got)
	}
	clock.Step(t, q, -time.Hour)
	a, err := s.Admit(ctx, q, queue.NewTokens(c.BatchSize))
	if err != nil {
		t.Fatal(err)
	}
	if a.Ticked || a.NextIn <= 0 || a.NextIn > c.Interval {
		t.Fatalf("after the clock went back an hour: %+v, want not due, next within %v", a, c.Interval)
	}
	clock.Sleep(a.NextIn)
	a, err = s.Admit(ctx, q, queue.NewTokens(c.BatchSize))
	if err != nil {
		t.Fatal(err)
	}
	if !a.Ticked || len(a.Admitted) != c.BatchSize || a.Admitted[0] != "u10" || a.NextIn > c.Interval {
		t.Fatalf("one interval after the step: %+v, want u10.. admitted and the next tick within %v", a, c.Interval)
	}
}

func testShorterInterval(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.RatePerSecond, c.Interval = 0.1, time.Minute // 6 per one-minute tick
	q := newQueue(t, s, c)
	mustEnter(t, s, q, "a")
	if got := admitDue(t, s, clock, q, c.BatchSize); len(got) != 1 {
		t.Fatalf("first tick admitted %v", got)
	}
	mustEnter(t, s, q, "b")
	c.RatePerSecond, c.Interval = 1000, 10*time.Millisecond
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	a, err := s.Admit(ctx, q, queue.NewTokens(c.BatchSize))
	if err != nil {
		t.Fatal(err)
	}
	if !a.Ticked || len(a.Admitted) != 1 || a.Admitted[0] != "b" {
		t.Fatalf("after shortening the interval from 1 min to 10 ms: %+v, want b admitted at once", a)
	}
}

// testEpoch: every queue gets an epoch when it is created, other than any
// queue created before it; every answer about the line carries it, and no
// config change alters it (only losing the queue and creating it again
// does; redisstore tests that on a real Redis).
func testEpoch(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	clock.Sleep(time.Millisecond)
	other := newQueue(t, s, fastConfig())
	e := mustEnter(t, s, q, "a")
	mustEnter(t, s, q, "b")
	epoch := e.Epoch
	if epoch == 0 {
		t.Fatalf("enter: %+v, want an epoch", e)
	}
	if o := mustEnter(t, s, other, "a"); o.Epoch == epoch || o.Epoch == 0 {
		t.Fatalf("two queues share epoch %d (or have none: %d)", epoch, o.Epoch)
	}
	c := fastConfig()
	c.Paused, c.Capacity = true, 77
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	admitDue(t, s, clock, q, 10) // paused: nobody; b stays in line
	sn, err := s.Snapshot(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	got := []int64{mustStatus(t, s, q, "a").Epoch, mustStatus(t, s, q, "b").Epoch, mustStatus(t, s, q, "nobody").Epoch,
		mustEnter(t, s, q, "b").Epoch, sn.Epoch}
	for i, g := range got {
		if g != epoch {
			t.Errorf("answer %d after a config change carries epoch %d, want %d: %v", i, g, epoch, got)
		}
	}
}

// testStatsReadExpiry: Stats changes nothing (a metrics scrape must not
// write), so tokens whose time is up but that no tick has swept count as
// expired when read; sweeping them later, giving one back, or finishing an
// order that was in flight when it ran out moves no total back. (A long TTL
// and a clock stepped past it: nothing expires early on a busy machine.)
func testStatsReadExpiry(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.TokenTTL = time.Minute
	q := newQueue(t, s, c)
	tok := ready(t, s, clock, q, "a", "b", "c", "d")
	if err := s.BeginUse(ctx, q, "c", tok["c"], "req-c", time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Step(t, q, c.TokenTTL+time.Second)
	want := [3]int64{0, 4, 0} // active, expired, consumed+returned
	read := func(when string) {
		t.Helper()
		for range 2 { // and reading again changes nothing
			st, err := s.Stats(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if got := [3]int64{st.ActiveTokens, st.ExpiredTotal, st.ConsumedTotal + st.ReturnedTotal}; got != want {
				t.Fatalf("%s: active, expired, consumed+returned = %v, want %v", when, got, want)
			}
		}
	}
	read("expired, not swept")
	mustLeave(t, s, q, "a") // gives back a token whose time is up
	if err := s.EndUse(ctx, q, "c", tok["c"], "req-c", true); err != nil {
		t.Fatal(err) // c's order, begun in time, ends after the expiry
	}
	read("after a give-back and an order ending past the expiry")
	mustEnter(t, s, q, "z")
	admitDue(t, s, clock, q, 10) // sweeps b and d, admits z
	want = [3]int64{1, 4, 0}
	read("after a tick swept them")
}

// testAdmitNowQuiet: with nobody waiting a user is let straight in with the
// token given; in a busy or paused line, or under a full live-token cap,
// nobody is; who is in line keeps their place and who holds a token keeps it.
func testAdmitNowQuiet(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.MaxActiveTokens = 2
	q := newQueue(t, s, c)
	admitNow := func(user, token string) queue.Standing {
		t.Helper()
		e, err := s.AdmitNow(ctx, q, user, token)
		if err != nil {
			t.Fatalf("AdmitNow(%s): %v", user, err)
		}
		return e
	}
	if e := admitNow("alice", "tok-alice"); e.State != queue.Ready || e.Token != "tok-alice" || !e.ExpiresAt.After(clock.Now()) {
		t.Fatalf("quiet line: %+v, want READY with tok-alice", e)
	}
	if e := mustStatus(t, s, q, "alice"); e.State != queue.Ready || e.Token != "tok-alice" {
		t.Fatalf("status after AdmitNow: %+v", e)
	}
	if e := admitNow("alice", "another"); e.State != queue.Ready || e.Token != "tok-alice" {
		t.Fatalf("asking again: %+v, want the token she holds", e)
	}
	mustEnter(t, s, q, "bob")
	if e := admitNow("carol", "tok-carol"); e.State != queue.NotInQueue {
		t.Fatalf("with bob waiting: %+v, want NOT_IN_QUEUE", e)
	}
	if e := admitNow("bob", "tok-bob"); e.State != queue.Waiting || e.Position != 1 {
		t.Fatalf("bob asking: %+v, want his place", e)
	}
	mustLeave(t, s, q, "bob")
	c.Paused = true
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if e := admitNow("carol", "tok-carol"); e.State != queue.NotInQueue {
		t.Fatalf("paused: %+v, want NOT_IN_QUEUE", e)
	}
	c.Paused = false
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if e := admitNow("carol", "tok-carol"); e.State != queue.Ready {
		t.Fatalf("resumed: %+v, want READY", e)
	}
	if e := admitNow("dave", "tok-dave"); e.State != queue.NotInQueue {
		t.Fatalf("cap of 2 reached: %+v, want NOT_IN_QUEUE", e)
	}
	if e := mustStatus(t, s, q, "dave"); e.State != queue.NotInQueue {
		t.Fatalf("dave after a refused AdmitNow: %+v", e)
	}
	st, err := s.Stats(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want := queue.Stats{EnteredTotal: 3, AdmittedTotal: 2, InlineTotal: 2, LeftTotal: 1, ActiveTokens: 2}
	got := queue.Stats{EnteredTotal: st.EnteredTotal, AdmittedTotal: st.AdmittedTotal, InlineTotal: st.InlineTotal,
		LeftTotal: st.LeftTotal, ActiveTokens: st.ActiveTokens, Length: st.Length}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	if _, err := s.AdmitNow(ctx, "nope-unknown", "a", "t"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("unknown queue: %v, want ErrQueueNotFound", err)
	}
}

// testAdmitNowBudget: what is let straight in between two ticks comes out
// of the next tick's quota, so the rate holds however users arrive.
func testAdmitNowBudget(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 0.3, 10, 10*time.Second // 3 per 10 s tick
	q := newQueue(t, s, c)
	if got := admitDue(t, s, clock, q, c.BatchSize); len(got) != 0 {
		t.Fatalf("first tick on an empty line admitted %v", got)
	}
	// The next tick is 10 s away: its budget is 3.
	var straightIn int
	for i := range 5 {
		if e, err := s.AdmitNow(ctx, q, fmt.Sprintf("quiet%d", i), queue.NewTokens(1)[0]); err != nil {
			t.Fatal(err)
		} else if e.State == queue.Ready {
			straightIn++
		}
	}
	if straightIn != 3 {
		t.Fatalf("let straight in %d between two ticks, want the tick's budget of 3", straightIn)
	}
	// Shorten the interval so the next tick is due now, with the same
	// per-tick budget: it has been spent already.
	c.RatePerSecond, c.Interval = 3000, time.Millisecond
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustEnter(t, s, q, fmt.Sprintf("w%d", i))
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); len(got) != 0 {
		t.Fatalf("the tick after 3 were let straight in admitted %v, want nobody", got)
	}
	if got := admitDue(t, s, clock, q, c.BatchSize); len(got) != 3 || got[0] != "w0" {
		t.Fatalf("the tick after that admitted %v, want w0 w1 w2", got)
	}
}

// testFirstUse: a one-time key is first exactly once however many ask at
// the same moment, per queue, until its TTL passes.
func testFirstUse(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := fmt.Sprintf("q%d", rand.Int64()) // FirstUse needs no queue config
	var firsts atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, err := s.FirstUse(ctx, q, "nonce-a", time.Minute)
			if err != nil {
				t.Error(err)
			}
			if first {
				firsts.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := firsts.Load(); n != 1 {
		t.Fatalf("20 concurrent first uses of one key: %d firsts, want 1", n)
	}
	for _, c := range []struct{ queue, key string }{{q, "nonce-b"}, {q + "x", "nonce-a"}} {
		if first, err := s.FirstUse(ctx, c.queue, c.key, time.Minute); err != nil || !first {
			t.Fatalf("FirstUse(%s, %s) = %v, %v; want a first use (another key or queue)", c.queue, c.key, first, err)
		}
	}
	// A short-lived key is first again once its TTL has passed on the
	// store's clock.
	const ttl = 200 * time.Millisecond
	start := clock.Now()
	if first, err := s.FirstUse(ctx, q, "nonce-c", ttl); err != nil || !first {
		t.Fatalf("FirstUse = %v, %v", first, err)
	}
	// (On a wall clock a busy machine may let the TTL pass in between;
	// then this second use may rightly be a first.)
	if first, _ := s.FirstUse(ctx, q, "nonce-c", ttl); first && clock.Now().Sub(start) < ttl {
		t.Fatal("second use within the TTL was a first use")
	}
	clock.Sleep(2 * ttl)
	if first, err := s.FirstUse(ctx, q, "nonce-c", ttl); err != nil || !first {
		t.Fatalf("FirstUse %v after a %v TTL = %v, %v; want a first use again", 2*ttl, ttl, first, err)
	}
}
