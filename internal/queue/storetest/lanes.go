package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// Lanes (issue 53): each lane a line of its own, served by shares.

func init() {
	register(
		suiteTest{"LanesPlaceByRankWithinTheLane", testLanePositions},
		suiteTest{"LanesShareTicksWithinOnePerson", testLaneShares},
		suiteTest{"LanesEmptyLaneGivesItsShare", testLaneEmptyShare},
		suiteTest{"LanesPositionNeverRises", testLanePositionNeverRises},
		suiteTest{"LanesCodeRules", testLaneCodeRules},
		suiteTest{"LanesSingleUseCodeRedeemedOnce", testLaneCodeOnce},
		suiteTest{"LanesDrawWithinTheLane", testLaneDraw},
		suiteTest{"LanesOpeningPlacesInTheLane", testLaneOpening},
		suiteTest{"LanesStatsAndLeave", testLaneStats},
		suiteTest{"LanesWaitsSayTheLane", testLaneWaits},
		suiteTest{"LanesCodeWhilePlacingKeepsThePreQueue", testLaneCodeWhilePlacing},
		suiteTest{"LanesCodeOfALaneNotInForceIsInvalid", testLaneCodeNotInForce},
		suiteTest{"LanesCodeUsesAreChecked", testLaneCodeUses},
		suiteTest{"LanesStalledIsTheWholeLine", testLaneStalled},
	)
}

// membersConfig is fastConfig with a members lane (by the claim
// tier=gold, and codes) of the given share, the public the rest.
func membersConfig(share float64) queue.Config {
	c := fastConfig()
	c.Lanes = lane.List{{Name: "members", Claim: "tier=gold", Codes: true, Share: share}, {Name: lane.Public, Share: 1 - share}}
	return c
}

func mustJoin(t *testing.T, s queue.Store, q, user string, j lane.Join) queue.Standing {
	t.Helper()
	e, err := s.Join(context.Background(), q, user, j)
	if err != nil {
		t.Fatalf("Join(%s, %+v): %v", user, j, err)
	}
	return e
}

// code makes a code of lane with uses, kept by the store: its text.
func code(t *testing.T, s queue.Store, q, ln string, uses int64, expires time.Time) string {
	t.Helper()
	text := accesscode.New()
	h, err := accesscode.Hash(text)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := s.AddCodes(context.Background(), q, []accesscode.Code{{Hash: h, Lane: ln, Uses: uses, ExpiresAt: expires}}); err != nil || a.Added != 1 {
		t.Fatalf("AddCodes: %+v, %v", a, err)
	}
	return text
}

func hashOf(t *testing.T, text string) string {
	t.Helper()
	h, err := accesscode.Hash(text)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// testLanePositions: a place's position and length are within its lane,
// its lane named; joining one lane moves nobody in another; entering
// again keeps the place and its lane, whatever lane is asked.
func testLanePositions(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, membersConfig(0.3))
	for i := range 3 {
		if e := mustJoin(t, s, q, fmt.Sprint("p", i), lane.Join{}); e.State != queue.Waiting || e.Position != int64(i+1) || e.Length != int64(i+1) || e.Lane != "" {
			t.Fatalf("public p%d: %+v, want position %d of %d, no lane", i, e, i+1, i+1)
		}
	}
	for i := range 2 {
		e := mustJoin(t, s, q, fmt.Sprint("m", i), lane.Join{Lane: "members"})
		if e.State != queue.Waiting || e.Position != int64(i+1) || e.Length != int64(i+1) || e.Lane != "members" {
			t.Fatalf("member m%d: %+v, want position %d of %d in members", i, e, i+1, i+1)
		}
	}
	if e := mustEnter(t, s, q, "p3"); e.Position != 4 || e.Length != 4 || e.Lane != "" {
		t.Fatalf("public p3 after two members: %+v, want 4 of 4: members are no one's ahead in public", e)
	}
	if e := mustStatus(t, s, q, "p2"); e.Position != 3 || e.Length != 4 {
		t.Fatalf("p2's status: %+v, want 3 of 4", e)
	}
	if e := mustStatus(t, s, q, "m1"); e.Position != 2 || e.Length != 2 || e.Lane != "members" {
		t.Fatalf("m1's status: %+v, want 2 of 2 in members", e)
	}
	if e := mustJoin(t, s, q, "p0", lane.Join{Lane: "members"}); e.Position != 1 || e.Lane != "" {
		t.Fatalf("p0 entering again asking for members: %+v, want their public place 1 kept", e)
	}
	if e := mustJoin(t, s, q, "m0", lane.Join{}); e.Position != 1 || e.Lane != "members" {
		t.Fatalf("m0 entering again: %+v, want members 1 kept", e)
	}
	if e := mustJoin(t, s, q, "x", lane.Join{Lane: "no-such-lane"}); e.Lane != "" || e.Position != 5 {
		t.Fatalf("a lane not in force: %+v, want the public's 5th", e)
	}
	// The snapshot is the public lane's: members' tickets are gaps in it.
	snap, err := s.Snapshot(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"p0", "p1", "p2", "p3", "x"} {
		e := mustStatus(t, s, q, u)
		if pos, _, ok := queue.Position(e.Ticket, snap.Head, snap.Last, snap.Left, snap.Cleared, 0); !ok || pos != e.Position {
			t.Errorf("%s: the snapshot places ticket %d at %d (%v), the store at %d", u, e.Ticket, pos, ok, e.Position)
		}
	}
}

// laneOf is the lane a test user's name says: m… members, else public.
func laneOf(user string) string {
	if strings.HasPrefix(user, "m") {
		return "members"
	}
	return lane.Public
}

// testLaneShares: while both lanes have people waiting, ticks of one or
// two people let each lane in its share to within one person, counted
// after every tick.
func testLaneShares(t *testing.T, s queue.Store, clock Clock) {
	c := membersConfig(0.3)
	c.RatePerSecond = 1500 // 1.5 a 1 ms tick: ticks of one and of two
	q := newQueue(t, s, c)
	for i := range 150 {
		mustJoin(t, s, q, fmt.Sprint("m", i), lane.Join{Lane: "members"})
		mustJoin(t, s, q, fmt.Sprint("p", 2*i), lane.Join{})
		mustJoin(t, s, q, fmt.Sprint("p", 2*i+1), lane.Join{})
	}
	got := map[string]int{}
	total, small := 0, 0
	for tick := 1; total < 300; tick++ {
		a := tickDue(t, s, clock, q, c.BatchSize)
		if len(a.Admitted) <= 2 {
			small++
		}
		for _, u := range a.Admitted {
			got[laneOf(u)]++
		}
		total += len(a.Admitted)
		if d := float64(got["members"]) - 0.3*float64(total); math.Abs(d) > 1 {
			t.Fatalf("after tick %d: members let in %d of %d, their share is %.1f", tick, got["members"], total, 0.3*float64(total))
		}
	}
	if small == 0 {
		t.Fatalf("no tick let in one or two: the test did not test what it says")
	}
}

// testLaneEmptyShare: a lane with nobody waiting gets nothing, and its
// share goes to the others, in proportion to theirs.
func testLaneEmptyShare(t *testing.T, s queue.Store, clock Clock) {
	c := fastConfig()
	c.RatePerSecond = 10_000 // 10 a tick
	c.Lanes = lane.List{{Name: "gold", Claim: "tier=gold", Share: 0.5}, {Name: "silver", Claim: "tier=silver", Share: 0.25}, {Name: lane.Public, Share: 0.25}}
	q := newQueue(t, s, c)
	for i := range 100 {
		mustJoin(t, s, q, fmt.Sprint("s", i), lane.Join{Lane: "silver"})
		mustJoin(t, s, q, fmt.Sprint("p", i), lane.Join{})
	}
	got := map[byte]int{}
	for total := 0; total < 100; {
		a := tickDue(t, s, clock, q, c.BatchSize)
		for _, u := range a.Admitted {
			got[u[0]]++
		}
		total += len(a.Admitted)
		if d := got['s'] - got['p']; d < -1 || d > 1 {
			t.Fatalf("silver %d, public %d let in: gold's share is not split evenly between them", got['s'], got['p'])
		}
	}
	if e := mustStatus(t, s, q, "s99"); e.Pace.LaneShare != 0.5 {
		t.Errorf("silver's share told with gold empty: %v, want 0.5", e.Pace.LaneShare)
	}
}

// testLanePositionNeverRises: under random joins in either lane (first
// into an opening's pre-queue, then while it is placed a few at a time,
// then in the open line), leaves, codes redeemed (moving a person to the
// back of the code's lane; while the opening is placed, a pre-queue's
// redemption changes nothing), ticks, share changes and the members lane
// taken away and brought back (its code invalid meanwhile), no waiting
// person's position ever rises, and each lane's positions are 1 to its
// length. The seed is logged: a failure replays with it.
func testLanePositionNeverRises(t *testing.T, s queue.Store, clock Clock) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	c := membersConfig(0.3)
	c.RatePerSecond = 2000
	c.OpensAt = clock.Now().Add(-time.Hour) // a pre-queue until the test closes it
	run := &lanesRun{t: t, s: s, clock: clock, c: c, r: rand.New(rand.NewPCG(53, seed)), members: true}
	run.q = newQueue(t, s, c)
	run.vip = hashOf(t, code(t, s, run.q, "members", 1000, time.Time{}))
	last := map[string]lanePlace{}
	for step := range 200 {
		op := run.step(step)
		checkLanePositions(t, s, run.q, step, op, last, run.next, run.open != nil)
	}
	if !run.opened {
		t.Fatalf("the opening was never placed: the test did not test what it says")
	}
}

// lanesRun is testLanePositionNeverRises's queue as the test drives it.
type lanesRun struct {
	t       *testing.T
	s       queue.Store
	clock   Clock
	q       string
	c       queue.Config
	r       *rand.Rand
	vip     string         // a members code's hash
	next    int            // users u0 to u(next-1) were made
	open    *queue.Opening // the opening being placed; nil before and after
	placed  int            // of open.Pending, how many were placed
	opened  bool           // the opening was placed
	members bool           // the members lane is in force
}

// step does one random thing to the queue and says what.
func (run *lanesRun) step(step int) string {
	ctx := context.Background()
	k := run.r.IntN(12)
	switch {
	case !run.opened && run.open == nil && run.next > 0 && (step >= 40 || k == 11):
		return run.close()
	case run.open != nil && k < 3:
		return run.place()
	case k < 3 || run.next == 0:
		user := fmt.Sprint("u", run.next)
		run.next++
		j := lane.Join{}
		if run.r.IntN(3) == 0 {
			j.Lane = "members"
		}
		mustJoin(run.t, run.s, run.q, user, j)
		return fmt.Sprintf("%s joins %+v", user, j)
	case k < 5:
		return run.redeem()
	case k < 6:
		user := fmt.Sprint("u", run.r.IntN(run.next))
		if _, err := run.s.Leave(ctx, run.q, user); err != nil {
			run.t.Fatal(err)
		}
		return user + " leaves"
	case k < 9:
		if !run.opened {
			return "no tick: the opening is ahead"
		}
		tickDue(run.t, run.s, run.clock, run.q, run.c.BatchSize)
		return "a tick"
	}
	c := membersConfig(float64(1+run.r.IntN(9)) / 10)
	op := fmt.Sprintf("members' share %.1f", c.Lanes.Share("members"))
	if run.members && run.r.IntN(2) == 0 {
		c.Lanes, op = nil, "the members lane taken away"
	}
	c.RatePerSecond, c.OpensAt = run.c.RatePerSecond, run.c.OpensAt
	if err := run.s.PutConfig(ctx, run.q, c); err != nil {
		run.t.Fatal(err)
	}
	run.members = len(c.Lanes) > 0
	return op
}

// close closes the pre-queue: the opening is due.
func (run *lanesRun) close() string {
	o, err := run.s.OpenDue(context.Background(), run.q, "owner", time.Hour)
	if err != nil {
		run.t.Fatalf("OpenDue: %v", err)
	}
	if !o.Due { // nobody in the pre-queue: open at once
		run.opened = true
		return "the opening, nobody to place"
	}
	run.open, run.placed = &o, 0
	return fmt.Sprintf("the pre-queue of %d closes", len(o.Pending))
}

// place places the next few of the opening, in arrival order.
func (run *lanesRun) place() string {
	o := run.open
	users := o.Pending[run.placed:min(run.placed+1+run.r.IntN(3), len(o.Pending))]
	done, err := run.s.Place(context.Background(), run.q, "owner", o.Next+int64(run.placed), users, time.Hour)
	if err != nil {
		run.t.Fatalf("Place: %v", err)
	}
	run.placed += len(users)
	if done {
		run.open, run.opened = nil, true
	}
	return fmt.Sprintf("%v placed (done: %v)", users, done)
}

// redeem has someone redeem the members code: invalid while the lane is
// not in force (but to one READY, answered as such); while the opening is
// placed, someone in its pre-queue keeps their standing.
func (run *lanesRun) redeem() string {
	user := fmt.Sprint("u", run.r.IntN(run.next))
	if o := run.open; o != nil && run.placed < len(o.Pending) && run.r.IntN(2) == 0 {
		user = o.Pending[run.placed+run.r.IntN(len(o.Pending)-run.placed)] // one still to be placed, as often as not
	}
	op := user + " redeems a members code"
	before := mustStatus(run.t, run.s, run.q, user)
	e, err := run.s.Join(context.Background(), run.q, user, lane.Join{Code: run.vip})
	switch {
	case before.State == queue.Ready: // answered READY, the code not looked at
	case !run.members && !errors.Is(err, accesscode.ErrInvalid):
		run.t.Fatalf("%s, members taken away: %+v, %v; want ErrInvalid", op, e, err)
	case run.members && err != nil:
		run.t.Fatalf("%s: %v", op, err)
	case err == nil && run.open != nil && before.PreQueue && (!e.PreQueue || e.Lane != before.Lane):
		run.t.Fatalf("%s in the pre-queue while placing: %+v, was %+v; want it kept", op, e, before)
	}
	return op
}

// lanePlace is a place as a person was last told it.
type lanePlace struct {
	lane   string
	pos    int64
	ticket int64
}

// checkLanePositions reads every user numbered below next: a waiting
// one's position must not rise above what last says for the same place
// (lane and ticket: a code moves a person to a new one), and each lane's
// positions must be 1 to its length (while an opening is placed, those
// still to be placed hold some of them: the positions told must then be
// distinct and within the length). last is updated.
func checkLanePositions(t *testing.T, s queue.Store, q string, step int, op string, last map[string]lanePlace, next int, placing bool) {
	t.Helper()
	positions := map[string][]int64{}
	lengths := map[string]int64{}
	for i := range next {
		user := fmt.Sprint("u", i)
		e := mustStatus(t, s, q, user)
		if e.State != queue.Waiting || e.PreQueue {
			delete(last, user)
			continue
		}
		if was, ok := last[user]; ok && was.lane == e.Lane && was.ticket == e.Ticket && e.Position > was.pos {
			t.Fatalf("step %d (%s): %s's position rose from %d to %d in lane %q", step, op, user, was.pos, e.Position, e.Lane)
		}
		last[user] = lanePlace{e.Lane, e.Position, e.Ticket}
		positions[e.Lane] = append(positions[e.Lane], e.Position)
		lengths[e.Lane] = e.Length
	}
	for ln, ps := range positions {
		n := int64(len(ps))
		if placing {
			n = lengths[ln]
		}
		seen := make([]bool, n+1)
		for _, p := range ps {
			if p < 1 || p > n || seen[p] {
				t.Fatalf("step %d (%s): lane %q's positions %v are not within 1 to %d", step, op, ln, ps, n)
			}
			seen[p] = true
		}
		if !placing && lengths[ln] != n {
			t.Fatalf("step %d (%s): lane %q told length %d, %d wait in it", step, op, ln, lengths[ln], n)
		}
	}
}

// testLaneCodeRules: a wrong or expired code is invalid, a used one used;
// a capped code takes its cap; a duplicate upload changes nothing; one
// READY or already in the code's lane does not use it; one waiting in the
// public moves to the back of the code's lane, and those behind them in
// the public move up.
func testLaneCodeRules(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := membersConfig(0.3)
	c.Paused = true
	q := newQueue(t, s, c)
	if _, err := s.Join(ctx, q, "a", lane.Join{Code: hashOf(t, accesscode.New())}); !errors.Is(err, accesscode.ErrInvalid) {
		t.Errorf("a code never added: %v, want ErrInvalid", err)
	}
	expired := code(t, s, q, "members", 1, clock.Now().Add(-time.Minute))
	if _, err := s.Join(ctx, q, "a", lane.Join{Code: hashOf(t, expired)}); !errors.Is(err, accesscode.ErrInvalid) {
		t.Errorf("an expired code: %v, want ErrInvalid", err)
	}
	if e, err := s.Status(ctx, q, "a"); err != nil || e.State != queue.NotInQueue {
		t.Errorf("after refused codes a is %+v, %v; want not in line", e, err)
	}
	capped := code(t, s, q, "members", 3, clock.Now().Add(time.Hour))
	for i, u := range []string{"a", "b", "c"} {
		if e := mustJoin(t, s, q, u, lane.Join{Code: hashOf(t, capped)}); e.Lane != "members" || e.Position != int64(i+1) {
			t.Fatalf("%s redeeming the capped code: %+v, want members %d", u, e, i+1)
		}
	}
	if _, err := s.Join(ctx, q, "d", lane.Join{Code: hashOf(t, capped)}); !errors.Is(err, accesscode.ErrUsed) {
		t.Errorf("a fourth redemption of a code of 3: %v, want ErrUsed", err)
	}
	if e := mustJoin(t, s, q, "a", lane.Join{Code: hashOf(t, capped)}); e.Position != 1 || e.Lane != "members" {
		t.Errorf("a, in the code's lane, again with the used-up code: %+v, want their place kept", e)
	}
	h := hashOf(t, capped)
	if a, err := s.AddCodes(ctx, q, []accesscode.Code{{Hash: h, Lane: "members", Uses: 5}}); err != nil || a.Added != 0 || a.Duplicates != 1 {
		t.Errorf("uploading a code again: %+v, %v; want one duplicate", a, err)
	}
	if _, err := s.Join(ctx, q, "d", lane.Join{Code: h}); !errors.Is(err, accesscode.ErrUsed) {
		t.Errorf("after a duplicate upload: %v, want the code still used up", err)
	}
	// Moving from the public to the back of the code's lane.
	for _, u := range []string{"p1", "p2", "p3"} {
		mustEnter(t, s, q, u)
	}
	move := code(t, s, q, "members", 1, time.Time{})
	if e := mustJoin(t, s, q, "p1", lane.Join{Code: hashOf(t, move)}); e.Lane != "members" || e.Position != 4 || e.Length != 4 {
		t.Fatalf("p1 redeeming from the public: %+v, want members 4 of 4", e)
	}
	if e := mustStatus(t, s, q, "p3"); e.Position != 2 || e.Length != 2 {
		t.Errorf("p3 after p1 left the public: %+v, want 2 of 2", e)
	}
	// READY keeps READY and does not use the code.
	resume := c
	resume.Paused = false
	if err := s.PutConfig(ctx, q, resume); err != nil {
		t.Fatal(err)
	}
	for mustStatus(t, s, q, "p2").State != queue.Ready {
		tickDue(t, s, clock, q, c.BatchSize)
	}
	once := code(t, s, q, "members", 1, time.Time{})
	if e := mustJoin(t, s, q, "p2", lane.Join{Code: hashOf(t, once)}); e.State != queue.Ready {
		t.Errorf("READY p2 with a code: %+v, want READY", e)
	}
	if e := mustJoin(t, s, q, "z", lane.Join{Code: hashOf(t, once)}); e.Lane != "members" {
		t.Errorf("the code READY p2 showed, redeemed by z: %+v, want it unused then", e)
	}
}

// testLaneCodeOnce: of 50 concurrent redemptions of one single-use code,
// exactly one takes a place; the others are told it is used.
func testLaneCodeOnce(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, membersConfig(0.3))
	h := hashOf(t, code(t, s, q, "members", 1, time.Time{}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, used := 0, 0
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := s.Join(context.Background(), q, fmt.Sprint("racer", i), lane.Join{Code: h})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && e.Lane == "members":
				won++
			case errors.Is(err, accesscode.ErrUsed):
				used++
			default:
				t.Errorf("racer %d: %+v, %v", i, e, err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || used != 49 {
		t.Fatalf("%d took a place, %d were told used; want 1 and 49", won, used)
	}
	st, err := s.Stats(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if l := laneStats(st, "members"); l.Length != 1 || l.Redeemed != 1 || l.CodesLeft != 0 {
		t.Fatalf("members' stats: %+v, want 1 waiting, 1 redeemed, 0 left", l)
	}
}

func laneStats(st queue.Stats, name string) lane.Stats {
	for _, l := range st.Lanes {
		if l.Name == name {
			return l
		}
	}
	return lane.Stats{}
}

// testLaneDraw: under the draw, each lane's seats go to its own people:
// a tick lets members in at their share, whoever is drawn.
func testLaneDraw(t *testing.T, s queue.Store, clock Clock) {
	c := membersConfig(0.3)
	c.Method = queue.MethodRandom
	c.RatePerSecond = 10_000 // 10 a tick
	q := newQueue(t, s, c)
	for i := range 60 {
		mustJoin(t, s, q, fmt.Sprint("m", i), lane.Join{Lane: "members"})
		mustJoin(t, s, q, fmt.Sprint("p", i), lane.Join{})
	}
	got := map[string]int{}
	for range 5 {
		for _, u := range tickDue(t, s, clock, q, c.BatchSize).Admitted {
			got[laneOf(u)]++
		}
	}
	if got["members"] != 15 || got[lane.Public] != 35 {
		t.Fatalf("five draws of 10 let in %v, want members 15, public 35", got)
	}
}

// testLaneOpening: a member entering before the opening waits in the
// pre-queue, and the opening places them in their lane.
func testLaneOpening(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := membersConfig(0.5)
	c.OpensAt = clock.Now().Add(-time.Hour)
	q := newQueue(t, s, c)
	h := hashOf(t, code(t, s, q, "members", 1, time.Time{}))
	for _, j := range []struct {
		user string
		j    lane.Join
	}{{"m1", lane.Join{Lane: "members"}}, {"m2", lane.Join{Code: h}}, {"p1", lane.Join{}}, {"p2", lane.Join{}}} {
		if e := mustJoin(t, s, q, j.user, j.j); !e.PreQueue {
			t.Fatalf("%s before the opening: %+v, want the pre-queue", j.user, e)
		}
	}
	if _, err := s.Join(ctx, q, "m3", lane.Join{Code: h}); !errors.Is(err, accesscode.ErrUsed) {
		t.Errorf("the code redeemed into the pre-queue, again: %v, want ErrUsed", err)
	}
	if o, placed, err := admission.OpenLine(ctx, s, q, "owner", testDrawer); err != nil || !o.Due || placed != 4 {
		t.Fatalf("OpenLine: %+v, %d, %v", o, placed, err)
	}
	for _, u := range []string{"m1", "m2", "p1", "p2"} {
		e := mustStatus(t, s, q, u)
		if e.State != queue.Waiting || e.PreQueue || e.Lane != map[bool]string{true: "members"}[u[0] == 'm'] || e.Length != 2 || e.Position < 1 || e.Position > 2 {
			t.Errorf("%s after the opening: %+v, want one of 2 in its lane", u, e)
		}
	}
	if e := mustJoin(t, s, q, "m4", lane.Join{Lane: "members"}); e.Position != 3 || e.Lane != "members" {
		t.Errorf("a member after the opening: %+v, want members 3", e)
	}
}

// testLaneStats: the stats show each lane in force, in order, with its
// share, length and admitted; the total length is theirs; a leaver leaves
// their lane.
func testLaneStats(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := membersConfig(0.3)
	c.Paused = true
	q := newQueue(t, s, c)
	for _, u := range []string{"m1", "m2", "m3"} {
		mustJoin(t, s, q, u, lane.Join{Lane: "members"})
	}
	for _, u := range []string{"p1", "p2"} {
		mustEnter(t, s, q, u)
	}
	if ok, err := s.Leave(ctx, q, "m2"); err != nil || !ok {
		t.Fatalf("Leave(m2): %v, %v", ok, err)
	}
	if e := mustStatus(t, s, q, "m3"); e.Position != 2 || e.Length != 2 {
		t.Errorf("m3 after m2 left: %+v, want 2 of 2", e)
	}
	st, err := s.Stats(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if st.Length != 4 || len(st.Lanes) != 2 || st.Lanes[0].Name != "members" || st.Lanes[1].Name != lane.Public {
		t.Fatalf("stats: length %d, lanes %+v; want 4, members then public", st.Length, st.Lanes)
	}
	if m, p := st.Lanes[0], st.Lanes[1]; m.Length != 2 || m.Share != 0.3 || p.Length != 2 || p.Share != 0.7 {
		t.Fatalf("lanes' stats %+v; want members 2 at 0.3, public 2 at 0.7", st.Lanes)
	}
	c.Paused = false
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 4; {
		n += len(tickDue(t, s, clock, q, c.BatchSize).Admitted)
	}
	if st, err = s.Stats(ctx, q); err != nil {
		t.Fatal(err)
	}
	if m, p := laneStats(st, "members"), laneStats(st, lane.Public); m.Admitted != 2 || p.Admitted != 2 || st.Length != 0 {
		t.Fatalf("after all were let in: members %+v, public %+v, length %d", m, p, st.Length)
	}
	plain := newQueue(t, s, fastConfig())
	mustEnter(t, s, plain, "x")
	if st, err := s.Stats(ctx, plain); err != nil || len(st.Lanes) != 0 {
		t.Fatalf("a queue without lanes: lanes %+v, %v; want none", st.Lanes, err)
	}
}

// testLaneWaits: each admitted user's wait (queue.Admission.Waited) says
// the lane they waited in, "" for the public, whether the ticks take each
// lane's front or draw among each lane's people, a member let in by a
// code as one by the claim: the sale's report counts each lane's time in
// line by it (rollup.Wait.Lane). A queue without lanes says none.
func testLaneWaits(t *testing.T, s queue.Store, clock Clock) {
	for _, method := range []queue.QueueingMethod{queue.MethodFIFO, queue.MethodRandom} {
		t.Run(string(method), func(t *testing.T) {
			c := membersConfig(0.3)
			c.Method = method
			q := newQueue(t, s, c)
			h := hashOf(t, code(t, s, q, "members", 1, time.Time{}))
			want := map[string]string{"mcode": "members"}
			for i := range 20 {
				mustJoin(t, s, q, fmt.Sprint("m", i), lane.Join{Lane: "members"})
				mustJoin(t, s, q, fmt.Sprint("p", i), lane.Join{})
				want[fmt.Sprint("m", i)], want[fmt.Sprint("p", i)] = "members", ""
			}
			mustJoin(t, s, q, "mcode", lane.Join{Code: h})
			plain := fastConfig()
			plain.Method = method
			p := newQueue(t, s, plain)
			for i := range 15 {
				mustEnter(t, s, p, fmt.Sprint("x", i))
				want[fmt.Sprint("x", i)] = ""
			}
			clock.Sleep(10 * time.Millisecond) // a time in line that shows
			checkWaitLanes(t, s, clock, q, c.BatchSize, 41, want)
			checkWaitLanes(t, s, clock, p, c.BatchSize, 15, want)
		})
	}
}

// checkWaitLanes lets the n waiting in q in and checks the lane each one's
// wait says against want's.
func checkWaitLanes(t *testing.T, s queue.Store, clock Clock, q string, batch, n int, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for range 100 {
		a := tickDue(t, s, clock, q, batch)
		if len(a.Waited) != len(a.Admitted) {
			t.Fatalf("%d admitted, %d waits", len(a.Admitted), len(a.Waited))
		}
		for i, u := range a.Admitted {
			w := a.Waited[i]
			if _, timed := w.TimeInLine(); !timed || w.Lane != want[u] {
				t.Errorf("%s's wait %+v: want lane %q and a time in line", u, w, want[u])
			}
			seen[u] = true
		}
		if len(seen) == n {
			return
		}
	}
	t.Errorf("let in %d of the %d waiting", len(seen), n)
}

// testLaneCodeWhilePlacing: before the pre-queue closes, a code changes
// the lane it waits for; while the opening is placed, a code redeemed in
// the pre-queue is answered with the person's standing and not used (the
// unplaced of a lane count in its positions: nobody's may rise), and once
// placed it moves them to the back of its lane, as anyone waiting.
func testLaneCodeWhilePlacing(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := membersConfig(0.5)
	c.OpensAt = clock.Now().Add(-time.Hour)
	q := newQueue(t, s, c)
	h := hashOf(t, code(t, s, q, "members", 1, time.Time{}))
	for _, u := range []string{"p1", "p2", "p3"} {
		mustEnter(t, s, q, u)
	}
	if e := mustJoin(t, s, q, "p1", lane.Join{Code: hashOf(t, code(t, s, q, "members", 1, time.Time{}))}); !e.PreQueue || e.Lane != "members" {
		t.Fatalf("p1 redeeming before the close: %+v, want the pre-queue for members", e)
	}
	o, err := s.OpenDue(ctx, q, "owner", time.Minute)
	if err != nil || !o.Due {
		t.Fatalf("OpenDue: %+v, %v", o, err)
	}
	if e := mustJoin(t, s, q, "m1", lane.Join{Lane: "members"}); e.Position != 2 || e.Length != 2 {
		t.Fatalf("m1 while placing: %+v, want members 2 of 2 (p1 to be placed ahead)", e)
	}
	if e := mustJoin(t, s, q, "p2", lane.Join{Code: h}); !e.PreQueue || e.Lane != "" {
		t.Fatalf("p2 redeeming while placing: %+v, want their public pre-queue standing", e)
	}
	if e := mustStatus(t, s, q, "m1"); e.Position != 2 || e.Length != 2 {
		t.Fatalf("m1 after p2's redemption while placing: %+v, want members 2 of 2 still", e)
	}
	if done, err := s.Place(ctx, q, "owner", o.Next, o.Pending, time.Minute); err != nil || !done {
		t.Fatalf("Place: %v, %v", done, err)
	}
	if e := mustStatus(t, s, q, "p2"); e.Lane != "" || e.PreQueue || e.Position < 1 {
		t.Fatalf("p2 placed: %+v, want a public place", e)
	}
	if e := mustJoin(t, s, q, "p2", lane.Join{Code: h}); e.Lane != "members" || e.Position != 3 || e.Length != 3 {
		t.Fatalf("p2 redeeming once placed: %+v, want members 3 of 3 (the code unused while placing)", e)
	}
	if e := mustStatus(t, s, q, "m1"); e.Position != 2 || e.Length != 3 {
		t.Fatalf("m1 at the end: %+v, want members 2 of 3", e)
	}
}

// testLaneCodeNotInForce: a code of a lane taken away is invalid and not
// used (it works again once the lane is back); those still waiting in the
// lane taken away are told a thousandth of the rate, not the whole.
func testLaneCodeNotInForce(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := membersConfig(0.5)
	q := newQueue(t, s, c)
	h := hashOf(t, code(t, s, q, "members", 1, time.Time{}))
	mustJoin(t, s, q, "m1", lane.Join{Lane: "members"})
	for i := range 30 {
		mustEnter(t, s, q, fmt.Sprint("p", i))
	}
	without := fastConfig()
	without.Lanes = lane.List{{Name: "gold", Claim: "tier=gold", Codes: true, Share: 0.5}, {Name: lane.Public, Share: 0.5}}
	if err := s.PutConfig(ctx, q, without); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join(ctx, q, "x", lane.Join{Code: h}); !errors.Is(err, accesscode.ErrInvalid) {
		t.Fatalf("a code of a lane taken away: %v, want ErrInvalid", err)
	}
	if e := mustStatus(t, s, q, "x"); e.State != queue.NotInQueue {
		t.Fatalf("x after the refused code: %+v, want not in line", e)
	}
	tickDue(t, s, clock, q, without.BatchSize)
	if e := mustStatus(t, s, q, "m1"); e.Lane != "members" || e.Pace.LaneShare != 1e-3 {
		t.Fatalf("m1 in a lane taken away, after a tick: %+v, want members told a share of 0.001", e)
	}
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if e := mustJoin(t, s, q, "x", lane.Join{Code: h}); e.Lane != "members" {
		t.Fatalf("the code, its lane back: %+v, want a members place (it was not used)", e)
	}
	if st, err := s.Stats(ctx, q); err != nil || laneStats(st, "members").Redeemed != 1 {
		t.Fatalf("members' stats: %+v, %v; want 1 redeemed", laneStats(st, "members"), err)
	}
}

// testLaneCodeUses: a store keeps a code of 1 to accesscode.MaxUses uses
// in a lane, and refuses an upload holding any other (ErrMalformed),
// keeping none of it.
func testLaneCodeUses(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, membersConfig(0.5))
	most := code(t, s, q, "members", accesscode.MaxUses, time.Time{})
	if e := mustJoin(t, s, q, "a", lane.Join{Code: hashOf(t, most)}); e.Lane != "members" {
		t.Fatalf("a code of MaxUses: %+v, want a members place", e)
	}
	if st, err := s.Stats(ctx, q); err != nil || laneStats(st, "members").CodesLeft != accesscode.MaxUses-1 {
		t.Fatalf("members' stats: %+v, %v; want MaxUses-1 codes left", laneStats(st, "members"), err)
	}
	good := accesscode.New()
	for _, bad := range []accesscode.Code{
		{Lane: "members", Uses: 0}, {Lane: "members", Uses: -1}, {Lane: "members", Uses: accesscode.MaxUses + 1},
		{Lane: "members", Uses: 100_000_000_000_000}, {Lane: "", Uses: 1},
	} {
		bad.Hash = hashOf(t, accesscode.New())
		a, err := s.AddCodes(ctx, q, []accesscode.Code{{Hash: hashOf(t, good), Lane: "members", Uses: 1}, bad})
		if !errors.Is(err, accesscode.ErrMalformed) || a.Added != 0 {
			t.Errorf("a code of lane %q with %d uses: %+v, %v; want ErrMalformed, none added", bad.Lane, bad.Uses, a, err)
		}
		if _, err := s.Join(ctx, q, "b", lane.Join{Code: bad.Hash}); !errors.Is(err, accesscode.ErrInvalid) {
			t.Errorf("the refused code redeemed: %v, want ErrInvalid", err)
		}
	}
	if _, err := s.Join(ctx, q, "b", lane.Join{Code: hashOf(t, good)}); !errors.Is(err, accesscode.ErrInvalid) {
		t.Errorf("a good code of a refused upload: %v, want ErrInvalid (nothing kept)", err)
	}
}

// testLaneStalled: stalled is the whole line's: with nobody in the public
// lane and the front standing still, a member is told it too.
func testLaneStalled(t *testing.T, s queue.Store, clock Clock) {
	q := newQueue(t, s, membersConfig(0.5))
	mustJoin(t, s, q, "m1", lane.Join{Lane: "members"})
	if e := mustStatus(t, s, q, "m1"); e.Pace.Stalled {
		t.Fatalf("stalled at once: %+v", e.Pace)
	}
	clock.Step(t, q, 5*time.Second) // no tick runs: stalled after 2 s
	if e := mustStatus(t, s, q, "m1"); !e.Pace.Stalled {
		t.Errorf("a member's status, nobody let in for 5 s: not stalled")
	}
	if e := mustJoin(t, s, q, "m1", lane.Join{Lane: "members"}); !e.Pace.Stalled {
		t.Errorf("a member joining again, nobody let in for 5 s: not stalled")
	}
	if sn, err := s.Snapshot(context.Background(), q); err != nil || !sn.Pace.Stalled {
		t.Errorf("the snapshot, a member waiting: stalled %v, %v", sn.Pace.Stalled, err)
	}
}
