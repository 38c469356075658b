package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
)

const snapshotHits = `waitroom_status_answers_total{source="snapshot"}`

// TestStatusPollsFromSnapshot: far from the front, status polls are answered
// from the instance's snapshot of the line (no store round trip, counted in
// waitroom_status_answers_total) and say exactly what the store would: the
// same positions, a leaver ahead closes the gap at once, and near the front
// the store answers.
func TestStatusPollsFromSnapshot(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := boot(t, b, nil)
			const q = "snap"
			if r := in.do("PUT", "/admin/v1/queues/"+q, in.adminAuth(),
				`{"ratePerSecond":1,"batchSize":2,"intervalMs":1000,"paused":true}`); r.status != 200 {
				t.Fatalf("queue: %d %s", r.status, r.raw)
			}
			for i := range 40 {
				if r := in.do("POST", "/api/v1/queues/"+q+"/entries", in.as(fmt.Sprintf("s%d", i)), nil); r.status != 200 {
					t.Fatalf("enter: %d %s", r.status, r.raw)
				}
			}
			status := func(user string) response {
				t.Helper()
				r := in.do("GET", "/api/v1/queues/"+q+"/entries/me", in.as(user), nil)
				if r.status != 200 {
					t.Fatalf("status of %s: %d %s", user, r.status, r.raw)
				}
				return r
			}
			before := scrape(t, in)[snapshotHits]
			for i := 5; i < 40; i++ {
				r := status(fmt.Sprintf("s%d", i))
				if r.str("status") != "WAITING" || r.num("position") != float64(i+1) || r.num("queueLength") != 40 ||
					r.num("estimatedWaitSeconds") != float64(i+1) {
					t.Fatalf("s%d: %s", i, r.raw)
				}
			}
			if hits := scrape(t, in)[snapshotHits] - before; hits != 35 {
				t.Errorf("%v of 35 polls far from the front answered from the snapshot", hits)
			}

			if r := in.do("DELETE", "/api/v1/queues/"+q+"/entries/me", in.as("s10"), nil); r.status != 204 {
				t.Fatalf("leave: %d", r.status)
			}
			if r := status("s20"); r.num("position") != 20 || r.num("queueLength") != 39 {
				t.Errorf("s20 behind the leaver: %s, want 20 of 39", r.raw)
			}
			if r := status("s10"); r.str("status") != "NOT_IN_QUEUE" {
				t.Errorf("the leaver: %s", r.raw)
			}
			// Unpaused, the first two are admitted within a tick; the
			// store answers near the front, so they see READY at once.
			in.do("PATCH", "/admin/v1/queues/"+q, in.adminAuth(), `{"paused":false}`)
			if tok := in.waitReady(q, "s0"); tok == "" {
				t.Fatal("s0 never READY")
			}
		})
	}
}

// TestSnapshotAcrossInstances: two instances on one Redis. A change made
// through one shows on the other within the snapshot age: a leaver ahead,
// and the users admitted by the first instance's admitter.
func TestSnapshotAcrossInstances(t *testing.T) {
	t.Parallel()
	redis := backends[1]
	a := boot(t, redis, nil)
	b := boot(t, redis, func(c *app.Config) {
		c.KeyPrefix, c.AuthSecret, c.AdminToken = a.prefix, a.secret, a.admin
	})
	const q = "snap2"
	if r := a.do("PUT", "/admin/v1/queues/"+q, a.adminAuth(),
		`{"ratePerSecond":1,"batchSize":1,"intervalMs":1000,"paused":true}`); r.status != 200 {
		t.Fatalf("queue: %d %s", r.status, r.raw)
	}
	for i := range 30 {
		a.do("POST", "/api/v1/queues/"+q+"/entries", a.as(fmt.Sprintf("x%d", i)), nil)
	}
	position := func(in *instance, user string) float64 {
		t.Helper()
		r := in.do("GET", "/api/v1/queues/"+q+"/entries/me", in.as(user), nil)
		if r.status != 200 {
			t.Fatalf("status: %d %s", r.status, r.raw)
		}
		return r.num("position")
	}
	if p := position(b, "x20"); p != 21 { // b learns x20's ticket from Redis
		t.Fatalf("x20 on b: %v", p)
	}
	if p := position(b, "x20"); p != 21 { // and answers from its snapshot
		t.Fatalf("x20 on b again: %v", p)
	}
	a.do("DELETE", "/api/v1/queues/"+q+"/entries/me", a.as("x5"), nil)
	if p := position(a, "x20"); p != 20 {
		t.Errorf("on the instance the user left through: x20 at %v, want 20", p)
	}
	// The snapshot age is 100 ms; allow a loaded machine far more, but the
	// answer must come right without any further change.
	waitPosition := func(user string, want float64) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for p := position(b, user); p != want; p = position(b, user) {
			if p < want || time.Now().After(deadline) { // stale is behind, never ahead
				t.Fatalf("%s on the other instance: %v, want %v", user, p, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPosition("x20", 20)

	// a's (and b's) admitters let one in per second once unpaused.
	a.do("PATCH", "/admin/v1/queues/"+q, a.adminAuth(), `{"paused":false}`)
	a.waitReady(q, "x0")
	a.do("PATCH", "/admin/v1/queues/"+q, a.adminAuth(), `{"paused":true}`)
	r := a.do("GET", "/admin/v1/queues/"+q, a.adminAuth(), nil)
	waiting := r.num("length")
	if waiting == 0 {
		t.Fatalf("stats: %s", r.raw)
	}
	// 29 waited after x5 left; x20 was 20th; everyone admitted was ahead.
	waitPosition("x20", 20-(29-waiting))
	if hits := scrape(t, b)[snapshotHits]; hits < 2 {
		t.Errorf("b answered %v polls from its snapshot", hits)
	}
}
