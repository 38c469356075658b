package app_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestStatusWaitsNearTheFront: GET …/entries/me?waitSeconds=N holds a user
// near the front (estimated wait ≤ 2 s) until they are READY, so they learn
// it within about a tick instead of at their next poll; it answers anyone
// further back, or in a paused queue, at once; a draining server lets a
// held request go at once; a bad N is a 400.
func TestStatusWaitsNearTheFront(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := boot(t, b, nil)
			const q = "lp"
			if r := in.do("PUT", "/admin/v1/queues/"+q, in.adminAuth(),
				`{"ratePerSecond":2,"batchSize":2,"intervalMs":1000,"paused":true}`); r.status != 200 {
				t.Fatalf("queue: %d %s", r.status, r.raw)
			}
			for i := range 10 {
				in.do("POST", "/api/v1/queues/"+q+"/entries", in.as(fmt.Sprintf("lp%d", i)), nil)
			}
			// held asks with waitSeconds; safe from any goroutine (an error
			// comes back in the answer, for the test's goroutine to report).
			type answer struct {
				r    response
				err  error
				took time.Duration
			}
			held := func(user string, wait int) answer {
				began := time.Now()
				r, err := in.send(http.DefaultClient, apiCall{method: "GET",
					path: fmt.Sprintf("/api/v1/queues/%s/entries/me?waitSeconds=%d", q, wait), auth: in.as(user)})
				return answer{r, err, time.Since(began)}
			}

			for _, bad := range []string{"abc", "-1", "26", "1.5"} {
				r := in.do("GET", "/api/v1/queues/"+q+"/entries/me?waitSeconds="+bad, in.as("lp0"), nil)
				if r.status != 400 || r.errorCode() != "invalid_request" {
					t.Errorf("waitSeconds=%s: %d %s, want 400 invalid_request", bad, r.status, r.raw)
				}
			}
			// notHeld asks as held does and says whether the server held
			// the request: whether waitroom_status_held counted it while it
			// was in flight (a hold lasts the 20 s asked for, so it is seen
			// however slow the machine; no time is measured).
			notHeld := func(user string) (answer, bool) {
				done := make(chan answer, 1)
				go func() { done <- held(user, 20) }()
				for {
					select {
					case a := <-done:
						return a, true
					case <-time.After(20 * time.Millisecond):
					}
					if scrape(t, in)["waitroom_status_held"] != 0 {
						return <-done, false
					}
				}
			}
			// Position 10 at 2/s, an estimated 5 s: answered at once.
			if a, ok := notHeld("lp9"); !ok || a.err != nil || a.r.str("status") != "WAITING" {
				t.Errorf("far back: %s (%v), held %v; want WAITING at once", a.r.raw, a.err, !ok)
			}
			// Paused: nobody is let in, so nobody is held.
			if a, ok := notHeld("lp0"); !ok || a.err != nil || a.r.str("status") != "WAITING" || a.r.body["paused"] != true {
				t.Errorf("paused, near the front: %s (%v), held %v; want WAITING at once", a.r.raw, a.err, !ok)
			}

			// Unpaused, one user per 2 s tick: lp0 goes in at once; lp1,
			// next in line, is held and told READY at the next tick.
			in.do("PATCH", "/admin/v1/queues/"+q, in.adminAuth(), `{"paused":false,"ratePerSecond":0.5,"intervalMs":2000}`)
			in.waitReady(q, "lp0")
			// lp1 is next; asked just now it is still waiting, so a READY
			// from the held request is news it waited for. (How long it
			// waited is up to the schedule and the machine: not checked.)
			if r := in.do("GET", "/api/v1/queues/"+q+"/entries/me", in.as("lp1"), nil); r.str("status") != "WAITING" {
				t.Fatalf("lp1 before the hold: %s, want WAITING", r.raw)
			}
			done := make(chan answer, 1)
			go func() { done <- held("lp1", 20) }()
			a := <-done
			if a.err != nil || a.r.str("status") != "READY" || a.r.str("token") == "" {
				t.Errorf("held until admitted: %s (%v) after %v, want READY with a token", a.r.raw, a.err, a.took)
			}
			t.Logf("lp1 held %v until admitted", a.took.Round(time.Millisecond))

			// Entering with waitSeconds where a poll would be held: held
			// the same way, so a newcomer at the front of a moving line
			// gets READY from the enter itself.
			if r := in.do("PUT", "/admin/v1/queues/lp-enter", in.adminAuth(),
				`{"ratePerSecond":1,"batchSize":1,"intervalMs":1000}`); r.status != 200 {
				t.Fatalf("queue: %d %s", r.status, r.raw)
			}
			if r := in.do("POST", "/api/v1/queues/lp-enter/entries?waitSeconds=20", in.as("newcomer"), nil); r.str("status") != "READY" {
				t.Errorf("entering with waitSeconds at the front: %s, want READY", r.raw)
			}
			if r := in.do("POST", "/api/v1/queues/lp-enter/entries?waitSeconds=x", in.as("newcomer2"), nil); r.status != 400 {
				t.Errorf("entering with waitSeconds=x: %d %s, want 400", r.status, r.raw)
			}

			// Draining: a held request is answered at once and the
			// instance closes without waiting out the hold. (A rate that
			// admits nobody for minutes; lp9 moves to the front.)
			in.do("PATCH", "/admin/v1/queues/"+q, in.adminAuth(), `{"ratePerSecond":0.01}`)
			for i := 2; i < 9; i++ {
				in.do("DELETE", "/api/v1/queues/"+q+"/entries/me", in.as(fmt.Sprintf("lp%d", i)), nil)
			}
			go func() { done <- held("lp9", 20) }()
			// The request reaches the server when the machine lets it.
			for deadline := time.Now().Add(time.Minute); scrape(t, in)["waitroom_status_held"] != 1; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("waitroom_status_held = %v a minute after one request went to be held", scrape(t, in)["waitroom_status_held"])
				}
			}
			began := time.Now()
			if err := in.m.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			closed := time.Since(began)
			a = <-done
			// Let go rather than held its 20 s out: a request waited out
			// is answered 20 s or more after it was sent, one let go at
			// the drain sooner, unless the machine took all that to bring
			// it to the server (the hold is the bound, not a speed).
			if a.err != nil || a.r.status != 200 || a.r.str("status") != "WAITING" || a.took >= 20*time.Second {
				t.Errorf("on drain: %d %s (%v) %v after it was sent, Close took %v; want WAITING before the hold's 20 s ran out",
					a.r.status, a.r.raw, a.err, a.took, closed)
			}
		})
	}
}
