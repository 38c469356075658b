package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

const snapshotHits = `waitroom_status_answers_total{source="snapshot"}`

// TestStatusPollsFromSnapshot: far from the front, status polls are answered
// from the instance's snapshot of the line (no store round trip, counted in
// waitroom_status_answers_total) and say exactly what the store would: the
// same positions, a leaver ahead closes the gap at once, and near the front
// the store answers.
func TestStatusPollsFromSnapshot(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			const q = "snap"
			if r := in.Do("PUT", "/admin/v1/queues/"+q, in.AdminAuth(),
				`{"ratePerSecond":1,"batchSize":2,"intervalMs":1000,"paused":true}`); r.Status != 200 {
				t.Fatalf("queue: %d %s", r.Status, r.Raw)
			}
			for i := range 40 {
				if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(fmt.Sprintf("s%d", i)), nil); r.Status != 200 {
					t.Fatalf("enter: %d %s", r.Status, r.Raw)
				}
			}
			status := func(user string) apptest.Response {
				t.Helper()
				r := in.Do("GET", "/api/v1/queues/"+q+"/entries/me", in.As(user), nil)
				if r.Status != 200 {
					t.Fatalf("status of %s: %d %s", user, r.Status, r.Raw)
				}
				return r
			}
			before := apptest.Metrics(t, in.Base)[snapshotHits]
			for i := 5; i < 40; i++ {
				r := status(fmt.Sprintf("s%d", i))
				if r.Str("status") != "WAITING" || r.Num("position") != float64(i+1) || r.Num("queueLength") != 40 ||
					r.Num("estimatedWaitSeconds") != float64(i+1) {
					t.Fatalf("s%d: %s", i, r.Raw)
				}
			}
			if hits := apptest.Metrics(t, in.Base)[snapshotHits] - before; hits != 35 {
				t.Errorf("%v of 35 polls far from the front answered from the snapshot", hits)
			}

			if r := in.Do("DELETE", "/api/v1/queues/"+q+"/entries/me", in.As("s10"), nil); r.Status != 204 {
				t.Fatalf("leave: %d", r.Status)
			}
			if r := status("s20"); r.Num("position") != 20 || r.Num("queueLength") != 39 {
				t.Errorf("s20 behind the leaver: %s, want 20 of 39", r.Raw)
			}
			if r := status("s10"); r.Str("status") != "NOT_IN_QUEUE" {
				t.Errorf("the leaver: %s", r.Raw)
			}
			// Unpaused, the first two are admitted within a tick; the
			// store answers near the front, so they see READY at once.
			in.Do("PATCH", "/admin/v1/queues/"+q, in.AdminAuth(), `{"paused":false}`)
			if tok := in.WaitReady(q, "s0"); tok == "" {
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
	redis := apptest.Backends[1]
	a := apptest.Boot(t, redis, nil)
	b := apptest.Boot(t, redis, func(c *app.Config) {
		c.KeyPrefix, c.AuthSecret, c.AdminToken = a.KeyPrefix, a.AuthSecret, a.AdminToken
	})
	const q = "snap2"
	if r := a.Do("PUT", "/admin/v1/queues/"+q, a.AdminAuth(),
		`{"ratePerSecond":1,"batchSize":1,"intervalMs":1000,"paused":true}`); r.Status != 200 {
		t.Fatalf("queue: %d %s", r.Status, r.Raw)
	}
	for i := range 30 {
		a.Do("POST", "/api/v1/queues/"+q+"/entries", a.As(fmt.Sprintf("x%d", i)), nil)
	}
	position := func(in *apptest.Instance, user string) float64 {
		t.Helper()
		r := in.Do("GET", "/api/v1/queues/"+q+"/entries/me", in.As(user), nil)
		if r.Status != 200 {
			t.Fatalf("status: %d %s", r.Status, r.Raw)
		}
		return r.Num("position")
	}
	if p := position(b, "x20"); p != 21 { // b learns x20's ticket from Redis
		t.Fatalf("x20 on b: %v", p)
	}
	if p := position(b, "x20"); p != 21 { // and answers from its snapshot
		t.Fatalf("x20 on b again: %v", p)
	}
	a.Do("DELETE", "/api/v1/queues/"+q+"/entries/me", a.As("x5"), nil)
	if p := position(a, "x20"); p != 20 {
		t.Errorf("on the instance the user left through: x20 at %v, want 20", p)
	}
	// The snapshot age is 100 ms; allow a loaded machine far more, but the
	// answer must come right without any further change.
	waitPosition := func(user string, want float64) {
		t.Helper()
		deadline := time.Now().Add(apptest.Patience)
		for p := position(b, user); p != want; p = position(b, user) {
			if p < want || time.Now().After(deadline) { // stale is behind, never ahead
				t.Fatalf("%s on the other instance: %v, want %v", user, p, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPosition("x20", 20)

	// a's (and b's) admitters let one in per second once unpaused.
	a.Do("PATCH", "/admin/v1/queues/"+q, a.AdminAuth(), `{"paused":false}`)
	a.WaitReady(q, "x0")
	a.Do("PATCH", "/admin/v1/queues/"+q, a.AdminAuth(), `{"paused":true}`)
	r := a.Do("GET", "/admin/v1/queues/"+q, a.AdminAuth(), nil)
	waiting := r.Num("length")
	if waiting == 0 {
		t.Fatalf("stats: %s", r.Raw)
	}
	// 29 waited after x5 left; x20 was 20th; everyone admitted was ahead.
	waitPosition("x20", 20-(29-waiting))
	if hits := apptest.Metrics(t, b.Base)[snapshotHits]; hits < 2 {
		t.Errorf("b answered %v polls from its snapshot", hits)
	}
}
