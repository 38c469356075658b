package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLanesShares: the shares are read only over the seconds through which
// both lanes had someone waiting, and each lane's ratio is its part of
// those seconds' admissions over its share.
func TestLanesShares(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	var people []lanesPerson
	// Members wait from 0 to 10 s and get 3 a second; the public waits
	// from 0 to 14 s, 7 a second while members wait, then 10.
	for s := range 10 {
		for i := range 3 {
			people = append(people, lanesPerson{lane: "members", joined: at(0), admittedAt: at(time.Duration(s)*time.Second + time.Duration(i+1)*100*time.Millisecond)})
		}
	}
	for s := range 14 {
		n := 7
		if s >= 10 {
			n = 10
		}
		for i := range n {
			people = append(people, lanesPerson{lane: "public", joined: at(0), admittedAt: at(time.Duration(s)*time.Second + time.Duration(i+1)*50*time.Millisecond)})
		}
	}
	// A member who never got in (an error) counts nowhere.
	people = append(people, lanesPerson{lane: "members", joined: at(0)})
	rep := &LanesReport{SharesWithin: 0.05, Lanes: []LaneFigures{{Name: "members", Share: 0.3}, {Name: "public", Share: 0.7}}}
	lanesShares(people, rep)
	// The last member is let in during second 9: the members waited
	// through seconds 0–8 only.
	if rep.Windows != 9 {
		t.Errorf("windows %d, want 9", rep.Windows)
	}
	m, p := rep.Lanes[0], rep.Lanes[1]
	if m.Admitted != 30 || p.Admitted != 7*10+10*4 || m.InWindows != 27 || p.InWindows != 63 {
		t.Errorf("admitted %d and %d, in the windows %d and %d", m.Admitted, p.Admitted, m.InWindows, p.InWindows)
	}
	if m.Ratio < 0.999 || m.Ratio > 1.001 || p.Ratio < 0.999 || p.Ratio > 1.001 {
		t.Errorf("ratios %v and %v, want 1", m.Ratio, p.Ratio)
	}
	// Members given 2 a second of the 10 fall outside the bar.
	for i := range people {
		if people[i].lane == "members" && people[i].admittedAt.Sub(t0)%time.Second == 300*time.Millisecond {
			people[i].lane = "public"
		}
	}
	rep = &LanesReport{SharesWithin: 0.05, Lanes: []LaneFigures{{Name: "members", Share: 0.3}, {Name: "public", Share: 0.7}}}
	lanesCount(people, rep)
	if rep.Pass || rep.Lanes[0].Ratio > 0.7 {
		t.Errorf("members at 2 of 10: ratio %v, pass %v", rep.Lanes[0].Ratio, rep.Pass)
	}
}

// TestLanesWaitChecksEveryAnswer: a person's every WAITING answer is
// checked against their previous one, a rise and an answer in another
// lane are counted, and READY's admission time is the store's.
func TestLanesWaitChecksEveryAnswer(t *testing.T) {
	admitted := time.Now().Add(-time.Second).UTC()
	var mu sync.Mutex
	answers := []map[string]any{
		{"status": "WAITING", "lane": "members", "position": 5, "estimatedWaitSeconds": 2, "pollAfterSeconds": 0},
		{"status": "WAITING", "lane": "members", "position": 4, "pollAfterSeconds": 0},
		{"status": "WAITING", "lane": "members", "position": 6, "pollAfterSeconds": 0},
		{"status": "WAITING", "lane": "public", "position": 1, "pollAfterSeconds": 0},
		{"status": "READY", "lane": "members", "token": "t", "expiresAt": admitted.Add(herdTokenTTL).Format(time.RFC3339Nano)},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasPrefix(r.URL.Path, "/api/v1/queues/q/entries") || r.URL.Query().Get("waitSeconds") == "" {
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
	if p.answers != 4 || p.rises != 1 || p.wrongLane != 1 || p.shown != 2 || !p.admittedAt.Equal(admitted) {
		t.Errorf("answers %d, rises %d (%s), wrong lane %d (%s), shown %v, admitted %v (want %v)",
			p.answers, p.rises, p.riseSample, p.wrongLane, p.wrongLaneSample, p.shown, p.admittedAt, admitted)
	}
}
