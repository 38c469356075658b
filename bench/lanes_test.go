package bench

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLanesShares: the shares are read only over the ticks (known by
// their admissions' common instant) at which both lanes had someone
// waiting, and each lane's ratio is its part of those ticks' admissions
// over its share.
func TestLanesShares(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	tick := func(k int) time.Time { return t0.Add(time.Duration(k) * 100 * time.Millisecond) }
	crowd := func(membersPerTick int) []lanesPerson {
		var people []lanesPerson
		// Everyone sent their enter before the first tick. Members are let
		// in at ticks 0–29; the public at 0–39, the rest of 10 while
		// members wait, then 10 a tick.
		for k := range 40 {
			m := 0
			if k < 30 {
				m = membersPerTick
			}
			for range m {
				people = append(people, lanesPerson{lane: "members", userOutcome: userOutcome{asked: t0.Add(-time.Second)}, admittedAt: tick(k)})
			}
			for range 10 - m {
				people = append(people, lanesPerson{lane: "public", userOutcome: userOutcome{asked: t0.Add(-time.Second)}, admittedAt: tick(k)})
			}
		}
		// A member who sent their enter at tick 45's instant, let in then:
		// not waiting at that tick, which counts for nothing.
		people = append(people, lanesPerson{lane: "members", userOutcome: userOutcome{asked: tick(45)}, admittedAt: tick(45)})
		// A member who never got in (an error) counts nowhere.
		return append(people, lanesPerson{lane: "members", userOutcome: userOutcome{asked: t0}})
	}
	lanes := func() []LaneFigures {
		return []LaneFigures{{Name: "members", Share: 0.3}, {Name: "public", Share: 0.7}}
	}

	rep := &LanesReport{SharesWithin: 0.05, Lanes: lanes()}
	lanesShares(crowd(3), rep)
	m, p := rep.Lanes[0], rep.Lanes[1]
	if rep.Ticks != 30 || m.Admitted != 91 || p.Admitted != 310 || m.InTicks != 90 || p.InTicks != 210 {
		t.Errorf("%d ticks; admitted %d and %d, at the ticks %d and %d", rep.Ticks, m.Admitted, p.Admitted, m.InTicks, p.InTicks)
	}
	if math.Abs(m.Ratio-1) > 1e-9 || math.Abs(p.Ratio-1) > 1e-9 {
		t.Errorf("ratios %v and %v, want 1", m.Ratio, p.Ratio)
	}
	// Members given 2 of 10 fall outside the bar.
	rep = &LanesReport{SharesWithin: 0.05, Lanes: lanes()}
	lanesCount(crowd(2), rep)
	if rep.Pass || math.Abs(rep.Lanes[0].Ratio-2.0/3) > 1e-9 {
		t.Errorf("members at 2 of 10: ratio %v, pass %v", rep.Lanes[0].Ratio, rep.Pass)
	}
}

// TestLanesWaitChecksEveryAnswer: a person's every WAITING answer is
// checked against their previous one, a rise and an answer in another
// lane are counted, a READY answer's lane when it names one, and READY's
// admission time is the store's.
func TestLanesWaitChecksEveryAnswer(t *testing.T) {
	admitted := time.Now().Add(-time.Second).UTC()
	ready := func(lane ...string) map[string]any {
		a := map[string]any{"status": "READY", "token": "t", "expiresAt": admitted.Add(herdTokenTTL).Format(time.RFC3339Nano)}
		for _, l := range lane {
			a["lane"] = l
		}
		return a
	}
	waiting := []map[string]any{
		{"status": "WAITING", "lane": "members", "position": 5, "estimatedWaitSeconds": 2, "pollAfterSeconds": 0},
		{"status": "WAITING", "lane": "members", "position": 4, "pollAfterSeconds": 0},
		{"status": "WAITING", "lane": "members", "position": 6, "pollAfterSeconds": 0},
		{"status": "WAITING", "lane": "public", "position": 1, "pollAfterSeconds": 0},
	}
	for _, tc := range []struct {
		name      string
		ready     map[string]any
		wrongLane bool
	}{
		{"READY without a lane", ready(), false},
		{"READY in the person's lane", ready("members"), false},
		{"READY in another lane", ready("public"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := lanesAnswered(t, append(slices.Clone(waiting), tc.ready))
			if p.answers != 4 || p.rises != 1 || p.wrongLane != 1 || p.readyWrongLane != tc.wrongLane || p.shown != 2 || !p.admittedAt.Equal(admitted) {
				t.Errorf("answers %d, rises %d (%s), wrong lane %d, READY's wrong %v (%s), shown %v, admitted %v (want %v)",
					p.answers, p.rises, p.riseSample, p.wrongLane, p.readyWrongLane, p.wrongLaneSample, p.shown, p.admittedAt, admitted)
			}
		})
	}
}

// lanesAnswered is a members person waiting on a server that gives these
// answers in turn.
func lanesAnswered(t *testing.T, answers []map[string]any) lanesPerson {
	t.Helper()
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasPrefix(r.URL.Path, "/api/v1/queues/q/entries") || r.URL.Query().Get("waitSeconds") == "" || len(answers) == 0 {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(answers[0])
		answers = answers[1:]
	}))
	defer srv.Close()
	c := &client{base: srv.URL, poll: srv.Client()}
	p := lanesPerson{lane: "members"}
	lanesWait(context.Background(), c, "q", "Bearer x", &p)
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p
}
