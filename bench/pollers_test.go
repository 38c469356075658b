package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestParseAnswer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body           string
		want           answer
		near, nextNear bool
	}{
		{`{"status":"WAITING","position":342,"queueLength":5120,"estimatedWaitSeconds":4,"pollAfterSeconds":2}`,
			answer{state: "WAITING", etaSeconds: 4, pollAfter: 2}, false, true},
		{`{"status":"WAITING","position":342,"queueLength":5120,"estimatedWaitSeconds":13,"pollAfterSeconds":5}`,
			answer{state: "WAITING", etaSeconds: 13, pollAfter: 5}, false, true},
		{`{"status":"WAITING","position":342,"queueLength":5120,"estimatedWaitSeconds":14,"pollAfterSeconds":5}`,
			answer{state: "WAITING", etaSeconds: 14, pollAfter: 5}, false, false},
		{`{"status":"WAITING","position":3,"queueLength":5120,"estimatedWaitSeconds":0,"pollAfterSeconds":2}` + "\n",
			answer{state: "WAITING", etaSeconds: 0, pollAfter: 2}, true, true},
		{`{"status":"WAITING","position":3,"queueLength":9,"estimatedWaitSeconds":1,"pollAfterSeconds":2,"paused":true}`,
			answer{state: "WAITING", etaSeconds: 1, pollAfter: 2, paused: true}, false, false},
		{`{"status":"READY","token":"abc","expiresAt":"2026-11-27T00:05:00Z","pollAfterSeconds":null}`,
			answer{state: "READY", etaSeconds: -1, pollAfter: -1}, true, false},
		{`{"status":"NOT_IN_QUEUE","pollAfterSeconds":null}`, answer{state: "NOT_IN_QUEUE", etaSeconds: -1, pollAfter: -1}, false, false},
		{`{"error":{"code":"unavailable","message":"x"}}`, answer{etaSeconds: -1, pollAfter: -1}, false, false},
		{``, answer{etaSeconds: -1, pollAfter: -1}, false, false},
	} {
		got := parseAnswer([]byte(c.body))
		if got != c.want || got.near() != c.near || got.nextNear() != c.nextNear {
			t.Errorf("%s: %+v near %v next %v, want %+v near %v next %v", c.body, got, got.near(), got.nextNear(), c.want, c.near, c.nextNear)
		}
	}
}

func TestScheduleHandsOutPollsInOrder(t *testing.T) {
	t.Parallel()
	s := &schedule{}
	for _, at := range []time.Duration{5, 1, 4, 2, 3, 9} {
		s.push(pollDue{at: at * time.Second, user: int32(at)})
	}
	got := s.due(4*time.Second, nil)
	if len(got) != 4 || got[0].user != 1 || got[1].user != 2 || got[2].user != 3 || got[3].user != 4 {
		t.Errorf("due by 4 s: %+v", got)
	}
	if got := s.due(4*time.Second, nil); len(got) != 0 {
		t.Errorf("handed out twice: %+v", got)
	}
	if got := s.due(time.Hour, nil); len(got) != 2 || got[0].user != 5 || got[1].user != 9 {
		t.Errorf("the rest: %+v", got)
	}
}

// TestPollersFollowTheirAnswers: against a server that answers each user
// WAITING far back (poll again in 1 s) and then READY, every user polls
// twice, follows pollAfterSeconds, and stops once READY. No timing asserted:
// the run lasts 10 s, for second polls due about 1.2 s in (a first answer
// may take 8 s on a loaded machine and its second poll still fall within).
func TestPollersFollowTheirAnswers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	polls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/queues/q/entries/me" || r.URL.Query().Get("waitSeconds") != "20" {
			http.Error(w, "wrong request", 400)
			return
		}
		mu.Lock()
		polls[r.Header.Get("Authorization")]++
		n := polls[r.Header.Get("Authorization")]
		mu.Unlock()
		if n == 1 {
			fmt.Fprint(w, `{"status":"WAITING","position":9000,"queueLength":9999,"estimatedWaitSeconds":90,"pollAfterSeconds":1}`)
			return
		}
		fmt.Fprint(w, `{"status":"READY","token":"t","expiresAt":"2026-11-27T00:05:00Z","pollAfterSeconds":null}`)
	}))
	defer srv.Close()
	users := make([]string, 20)
	for i := range users {
		users[i] = fmt.Sprintf("Bearer u%d", i)
	}
	res, err := Pollers{Base: srv.URL, Queue: "q", Users: users, Conns: 4, NearConns: 2, Duration: 10 * time.Second,
		FirstWithin: 200 * time.Millisecond, WaitSeconds: 20}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 40 polls due and answered over the window: Offered and Answered are
	// those counts per second of it.
	due, answered := res.Offered*res.Window.Seconds(), res.Answered*res.Window.Seconds()
	if res.Ready != 20 || res.Gone != 0 || res.Far.Answered != 20 || res.Far.OK != 20 || res.Near != 20 || due != 40 || answered != 40 {
		t.Errorf("%d ready, %d gone, %d far answered (%d 2xx), %d near, %v due, %v answered: %+v",
			res.Ready, res.Gone, res.Far.Answered, res.Far.OK, res.Near, due, answered, res)
	}
	for u, n := range polls {
		if n != 2 {
			t.Errorf("%s polled %d times, want 2", u, n)
		}
	}
}
