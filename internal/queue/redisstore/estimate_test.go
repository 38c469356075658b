package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestTickStateKeepsTheEstimatesFit: the estimate's model admission fits
// (issue 54) reads back from the queue's hash as it was written, to the
// bit, as the embedded store keeps it in memory.
func TestTickStateKeepsTheEstimatesFit(t *testing.T) {
	at := time.UnixMilli(1_800_000_123_456).UTC()
	for _, st := range []admission.TickState{
		{},
		{PaceClaimed: 0.123456, PaceDeparted: 0.2, RateMean: 37.5, RateVar: 1.0 / 3, RateRecent: 12.000001, Phase: "second wave",
			Changes:  []estimate.Change{{At: at, Rate: 0.1}, {At: at.Add(90 * time.Second), Rate: 0}, {At: at.Add(time.Hour), Rate: 1e6}},
			Surprise: at.Add(-time.Second)},
	} {
		got, err := decodeTick(encodeTick(st))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Errorf("the tick state read back as\n%+v\nwrote\n%+v", got, st)
		}
	}
	if _, err := decodeTick(map[string]string{"changes": "123:x"}); err == nil {
		t.Errorf("a damaged rate change read without an error")
	}
}

// TestPlaceKeepsTheEstimateTold: the wait and range a place keeps
// (K.joined, the prelude's shown in Lua) are exactly the Estimate Go makes
// of the enter's or join's answer (queue.Pace.Estimate on the pace block
// read in the same step): the two twins agree to the bit, over lines of
// every kind the model reads. The admission state is written as a tick
// would leave it: a claim below one, a spread fitted, phases ahead (one
// pausing), a cap, a stock, a lane's share, a front standing still.
func TestPlaceKeepsTheEstimateTold(t *testing.T) {
	rdb := testenv.RedisClient(t)
	st := New(rdb, fmt.Sprintf("wrshown%d:", rand.Int64()))
	r := rand.New(rand.NewPCG(54, 1))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	told, known, held := map[string]int{}, 0, 0
	for i := range 400 {
		c := queue.DefaultConfig()
		c.RatePerSecond = []float64{0.5, 2, 15, 37.3, 100, 1000}[r.IntN(6)]
		c.Interval = time.Duration([]int{100, 250, 1000, 3000}[r.IntN(4)]) * time.Millisecond
		c.BatchSize = []int{1, 10, 500}[r.IntN(3)]
		c.Adaptive, c.MinRate, c.MaxRate = r.IntN(2) == 0, 1, 500
		if r.IntN(2) == 0 {
			c.AbandonAfter = time.Minute
		}
		if r.IntN(4) == 0 {
			c.Method = queue.MethodRandom
		}
		if r.IntN(4) == 0 {
			c.Lanes = lane.List{{Name: "members", Claim: "tier=gold", Share: 0.3}, {Name: lane.Public, Share: 0.7}}
		}
		ahead := []int{0, 3, 40, 2500}[r.IntN(4)]
		state := func(ms func(time.Duration) string) map[string]any {
			// The rate's mean often near the rate in force (the adaptive
			// one, the queue's, a phase's), where a measure below it holds
			// the rate.
			eff := pick("3", "40", "250.5")
			adm := map[string]any{"eff_rate": eff, "pace_rate": pick("0", "1.5", "12.25", "90"),
				"pace_busy": pick("3", "9.999999", "10", "45", "600"), "pace_claimed": pick("0", "0.7", "9", "60"), "pace_departed": pick("0", "1.5", "12.25", "90"),
				"rate_mean": pick("0", "2", eff, fmt.Sprint(c.RatePerSecond*1.05), "7.5"), "rate_var": pick("0", "0.5", "30"),
				"changes": pick("", ms(40*time.Second)+":5", ms(-time.Second)+":50 "+ms(20*time.Second)+":0 "+ms(80*time.Second)+":300", ms(90*time.Second)+":0"),
				"moved":   ms(-time.Duration(r.IntN(2_000)) * time.Millisecond)}
			for _, f := range [][2]string{{"phase", "rush"}, {"phase_rate", "7.5"}, {"cap_room", fmt.Sprint(r.IntN(20))}, {"units_left", fmt.Sprint(ahead + 1 + r.IntN(3))},
				{"paused", "1"}, {"lane_shares", "members=0.25 public=0.75"}, {"open_state", "placing"}, {"moved", ms(-time.Minute)}} {
				if r.IntN(8) == 0 { // in a fixed order: the same cases every run
					adm[f[0]] = f[1]
				}
			}
			return adm
		}
		for _, e := range tellAndKeep(t, rdb, st, fmt.Sprintf("q%d", i), c, ahead, state) {
			told[e.want.Reason]++
			if e.want.Known && e.want.High > e.want.Low+1 {
				known++
			}
			if e.Pace.Held > 0 && e.Pace.Claim < 1 {
				held++
			}
		}
	}
	t.Logf("told: %v, %d with a range, %d held below the rate", told, known, held)
	if known < 200 || len(told) < 5 || held < 20 {
		t.Errorf("the cases told %v, %d with a range, %d held below the rate: too few of each kind to hold the twins equal", told, known, held)
	}
	// A draw whose median the front reaches before a pause that never
	// ends, and whose 95th percentile it does not.
	c := queue.DefaultConfig()
	c.RatePerSecond, c.Method = 15, queue.MethodRandom
	tellAndKeep(t, rdb, st, "pausing", c, 2500, func(ms func(time.Duration) string) map[string]any {
		return map[string]any{"changes": ms(100*time.Second) + ":0", "moved": ms(0)}
	})
}

// told is a newcomer's standing and the estimate Go makes of it.
type told struct {
	queue.Standing
	want estimate.Estimate
}

// tellAndKeep makes queue q of c, with ahead people in line and the
// admission state state gives (its times from Redis's clock), enters
// three newcomers (the second in a lane, if c has lanes), and checks that
// each place kept the estimate the answer tells.
func tellAndKeep(t *testing.T, rdb *redis.Client, st *Store, q string, c queue.Config, ahead int, state func(ms func(time.Duration) string) map[string]any) []told {
	t.Helper()
	ctx := context.Background()
	if err := st.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	adm := state(func(d time.Duration) string { return fmt.Sprint(now.Add(d).UnixMilli()) })
	k := keysFor(st.prefix, q)
	if err := rdb.HSet(ctx, k[kCfg], adm).Err(); err != nil {
		t.Fatal(err)
	}
	// People ahead, without the cost of entering each.
	for j := 0; j < ahead; j += 1000 {
		var zs []redis.Z
		for n := j; n < min(ahead, j+1000); n++ {
			zs = append(zs, redis.Z{Score: float64(n + 1), Member: fmt.Sprintf("ahead%d", n)})
		}
		if err := rdb.ZAdd(ctx, k[kLine], zs...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Set(ctx, k[kSeq], ahead, 0).Err(); err != nil {
		t.Fatal(err)
	}
	var out []told
	for j := range 3 {
		user := fmt.Sprintf("u%d", j)
		var e queue.Standing
		if len(c.Lanes) > 0 && j == 1 {
			e, err = st.Join(ctx, q, user, lane.Join{Lane: "members"})
		} else {
			e, err = st.Enter(ctx, q, user)
		}
		if err != nil {
			t.Fatalf("%s: %v (state %v)", q, err, adm)
		}
		want := e.Pace.Estimate(e.Position, e.Length)
		low, high := want.Low, want.High
		if !want.Known {
			low, high = -1, -1
		}
		kept, err := rdb.HGet(ctx, k[kJoined], user).Result()
		if err != nil {
			t.Fatal(err)
		}
		if _, got, _ := strings.Cut(kept, " "); got != fmt.Sprintf("%d %d %d", want.Seconds, low, high) {
			t.Errorf("%s, %s at %d of %d (%s): kept %q, told %+v\nstate %v\npace %+v", q, user, e.Position, e.Length, e.Lane, got, want, adm, e.Pace)
		}
		out = append(out, told{e, want})
	}
	return out
}

// TestAdmissionReadsTheRangeKept: admission's waits carry the wait and
// range each newcomer was told at enter (queue.Pace.Estimate of the
// answer), none for a place kept by an earlier version ("ms shown"); and
// those who took their place before a pause are scored apart
// (rollup.Wait.Apart), one who came after it not.
func TestAdmissionReadsTheRangeKept(t *testing.T) {
	rdb := testenv.RedisClient(t)
	ctx := context.Background()
	st := New(rdb, fmt.Sprintf("wrkept%d:", rand.Int64()))
	c := queue.DefaultConfig()
	c.RatePerSecond, c.AbandonAfter, c.Adaptive, c.MinRate, c.MaxRate = 2, time.Minute, true, 1, 50 // 0.2 a tick: nobody told 0
	if err := st.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	k := keysFor(st.prefix, "q")
	told := map[string]estimate.Estimate{}
	for i := range 5 {
		user := fmt.Sprintf("u%d", i)
		e, err := st.Enter(ctx, "q", user)
		if err != nil {
			t.Fatal(err)
		}
		told[user] = e.Pace.Estimate(e.Position, e.Length)
	}
	if err := rdb.HSet(ctx, k[kJoined], "u4", "1800000000000 7").Err(); err != nil { // as an earlier version kept it
		t.Fatal(err)
	}
	waits, calls := map[string]rollup.Wait{}, 0
	admit := func() {
		t.Helper()
		if err := rdb.HDel(ctx, k[kCfg], "next").Err(); err != nil { // the tick due now
			t.Fatal(err)
		}
		calls++ // each call its own tokens: one re-sent admits nobody
		a, err := st.Admit(ctx, "q", []string{fmt.Sprint(calls, "a"), fmt.Sprint(calls, "b"), fmt.Sprint(calls, "c"), fmt.Sprint(calls, "d"), fmt.Sprint(calls, "e")})
		if err != nil || len(a.Waited) != len(a.Admitted) {
			t.Fatalf("Admit: %+v, %v", a, err)
		}
		for i, u := range a.Admitted {
			waits[u] = a.Waited[i]
		}
	}
	c.RatePerSecond, c.Adaptive = 1000, false // all in at the next tick
	if err := st.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	admit()
	for user, e := range told {
		w, ok := waits[user]
		low, high := e.Low, e.High
		if !e.Known || user == "u4" {
			low, high = rollup.NoneShown, rollup.NoneShown
		}
		if user == "u4" {
			e.Seconds = 7
		}
		if !ok || w.Shown != e.Seconds || w.Low != low || w.High != high || w.Apart {
			t.Errorf("%s admitted with %+v (admitted: %v), told %+v", user, w, ok, e)
		}
	}
	for _, user := range []string{"p1", "p2"} {
		if _, err := st.Enter(ctx, "q", user); err != nil {
			t.Fatal(err)
		}
		// A second before the pause (Redis's clock is in ms: the pause's
		// tick may fall in the same one).
		kept, err := rdb.HGet(ctx, k[kJoined], user).Result()
		at, rest, _ := strings.Cut(kept, " ")
		ms, err2 := strconv.ParseInt(at, 10, 64)
		if err != nil || err2 != nil {
			t.Fatalf("%s kept %q: %v, %v", user, kept, err, err2)
		}
		if err := rdb.HSet(ctx, k[kJoined], user, fmt.Sprint(ms-1000, " ", rest)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.Paused = true
	if err := st.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	admit() // paused: the tick's surprise
	if _, err := st.Enter(ctx, "q", "after"); err != nil {
		t.Fatal(err)
	}
	c.Paused = false
	if err := st.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	admit()
	for user, apart := range map[string]bool{"p1": true, "p2": true, "after": false} {
		if w, ok := waits[user]; !ok || w.Apart != apart {
			t.Errorf("%s admitted with %+v (admitted: %v), want apart %v", user, w, ok, apart)
		}
	}
}
