package queue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// movingLine is a Store whose line is users u1..u1000 (ticket n for un),
// admitted up to head: it counts the status and snapshot reads the held
// requests make.
type movingLine struct {
	Store
	head                atomic.Int64 // the first ticket still waiting
	statuses, snapshots atomic.Int64
}

var movingPace = Pace{Rate: 100, Batch: 10}

func (l *movingLine) Snapshot(_ context.Context, q string) (Snapshot, error) {
	l.snapshots.Add(1)
	return Snapshot{Head: l.head.Load(), Last: 1000, Length: 1001 - l.head.Load(), Complete: true, Pace: movingPace}, nil
}

func (l *movingLine) Status(_ context.Context, q, user string) (Standing, error) {
	l.statuses.Add(1)
	var n int64
	fmt.Sscanf(user, "u%d", &n)
	if h := l.head.Load(); n < h {
		return Standing{State: Ready, Token: "token-" + user, ExpiresAt: time.Now().Add(time.Minute)}, nil
	} else {
		return Standing{State: Waiting, Position: n - h + 1, Length: 1001 - h, Ticket: n, Pace: movingPace}, nil
	}
}

// TestHeldRequestsShareOneRead: requests held near the front recheck from
// the instance's one snapshot of the line, not each from the store, and
// read it at most once per recheck interval between them.
func TestHeldRequestsShareOneRead(t *testing.T) {
	store := &movingLine{}
	store.head.Store(1)
	svc := NewService(store, time.Second)
	const users = 20
	views := make([]View, users)
	for i := range users {
		v, err := svc.Status(context.Background(), "q", fmt.Sprintf("u%d", i+1))
		if err != nil || !v.AdmissionNear() {
			t.Fatalf("u%d: %+v %v, want waiting near the front", i+1, v, err)
		}
		views[i] = v
	}
	statuses, snapshots := store.statuses.Load(), store.snapshots.Load()
	const hold = 350 * time.Millisecond
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := svc.HoldFrom(context.Background(), "q", fmt.Sprintf("u%d", i+1), hold, views[i])
			if err != nil || v.State != Waiting || v.Position != int64(i+1) {
				t.Errorf("u%d after the hold: %+v %v, want waiting at %d", i+1, v, err, i+1)
			}
		}()
	}
	wg.Wait()
	if n := store.statuses.Load() - statuses; n != 0 {
		t.Errorf("%d status reads from the store by %d held requests whom the snapshot placed, want 0", n, users)
	}
	// One read per recheck interval at most (the snapshot is good that
	// long): however the held requests' timers fall, hold/holdRecheck+1.
	if n, most := store.snapshots.Load()-snapshots, int64(hold/holdRecheck)+1; n < 1 || n > most {
		t.Errorf("%d snapshot reads for %d requests held %v, want 1..%d", n, users, hold, most)
	}
}

// TestHeldRequestSeesReady: a held request whose user is let in (here
// through another instance: nothing on this one says the line moved) is
// answered READY, with the store's token, before its hold ends.
func TestHeldRequestSeesReady(t *testing.T) {
	store := &movingLine{}
	store.head.Store(1)
	svc := NewService(store, time.Second)
	v, err := svc.Status(context.Background(), "q", "u5")
	if err != nil || !v.AdmissionNear() {
		t.Fatalf("u5: %+v %v, want waiting near the front", v, err)
	}
	done := make(chan View, 1)
	go func() {
		v, err := svc.HoldFrom(context.Background(), "q", "u5", time.Hour, v)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	// Held, rechecking from the snapshot (at least one read after the
	// hold began), then let in.
	deadline := time.Now().Add(time.Minute) // a bound on a hung test, not a figure
	for n := store.snapshots.Load(); store.snapshots.Load() < n+2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held request read no snapshot of the line in a minute")
		}
	}
	store.head.Store(11)
	select {
	case v := <-done:
		if v.State != Ready || v.Token != "token-u5" {
			t.Errorf("held request answered %+v, want READY with the store's token", v)
		}
	case <-time.After(time.Minute): // a bound on a hung test, not a figure
		t.Fatal("held request not answered a minute after its user was let in")
	}
}
