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

var movingPace = Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond}

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

// holding waits until someone is held on the queue (HoldFrom waits on its
// change signal).
func holding(t *testing.T, svc *Service, queue string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a bound on a hung test, not a figure
	for {
		svc.mu.Lock()
		_, held := svc.changes[queue]
		svc.mu.Unlock()
		if held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nobody held on the queue after a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHeldRequestsShareOneRead: requests held near the front recheck when
// the instance's admitter has read the line (LineRead), all from one
// snapshot of it, not each from the store; with nobody held, LineRead
// leaves the snapshot alone.
func TestHeldRequestsShareOneRead(t *testing.T) {
	store := &movingLine{}
	store.head.Store(1)
	svc := NewService(store, time.Second, nil)
	const users = 20
	views := make([]View, users)
	for i := range users {
		v, err := svc.Status(context.Background(), "q", fmt.Sprintf("u%d", i+1))
		if err != nil || !v.AdmissionNear {
			t.Fatalf("u%d: %+v %v, want waiting near the front", i+1, v, err)
		}
		views[i] = v
	}
	statuses, snapshots := store.statuses.Load(), store.snapshots.Load()
	svc.lineRead("q")
	if _, err := svc.Status(context.Background(), "q", "u30"); err != nil {
		t.Fatal(err)
	}
	if n := store.snapshots.Load() - snapshots; n != 0 {
		t.Errorf("%d snapshot reads after LineRead with nobody held, want 0 (the snapshot is still good)", n)
	}
	statuses = store.statuses.Load()

	ctx, cancel := context.WithCancel(context.Background())
	began := time.Now()
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := svc.HoldFrom(ctx, "q", fmt.Sprintf("u%d", i+1), time.Hour, views[i])
			if err != nil || v.State != Waiting || v.Position != int64(i+1) {
				t.Errorf("u%d after the hold: %+v %v, want waiting at %d", i+1, v, err, i+1)
			}
		}()
	}
	holding(t, svc, "q")
	const reads = 3
	for i := range int64(reads) {
		svc.lineRead("q")
		deadline := time.Now().Add(time.Minute) // a bound on a hung test, not a figure
		for store.snapshots.Load() < snapshots+i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("no snapshot read a minute after LineRead %d", i+1)
			}
			time.Sleep(time.Millisecond)
		}
		holding(t, svc, "q")
	}
	cancel()
	wg.Wait()
	if n := store.statuses.Load() - statuses; n != 0 {
		t.Errorf("%d status reads from the store by %d held requests whom the snapshot placed, want 0", n, users)
	}
	// One read per LineRead, and one per fallback beat the test outlived.
	fallbacks := int64(time.Since(began)/holdFallback) + 1
	if n := store.snapshots.Load() - snapshots; n < reads || n > reads+fallbacks {
		t.Errorf("%d snapshot reads for %d requests held through %d LineReads, want %d..%d", n, users, reads, reads, reads+fallbacks)
	}
}

// TestHeldRequestSeesReady: a held request whose user is let in through
// another instance is answered READY, with the store's token, at this
// instance's admitter's next read of the line (LineRead), or, when that
// does not come, at the fallback recheck.
func TestHeldRequestSeesReady(t *testing.T) {
	for _, told := range []bool{true, false} {
		t.Run(map[bool]string{true: "told by the admitter's read", false: "by the fallback"}[told], func(t *testing.T) {
			store := &movingLine{}
			store.head.Store(1)
			svc := NewService(store, time.Second, nil)
			v, err := svc.Status(context.Background(), "q", "u5")
			if err != nil || !v.AdmissionNear {
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
			holding(t, svc, "q")
			store.head.Store(11)
			if told {
				svc.lineRead("q")
			}
			select {
			case v := <-done:
				if v.State != Ready || v.Token != "token-u5" {
					t.Errorf("held request answered %+v, want READY with the store's token", v)
				}
			case <-time.After(time.Minute): // a bound on a hung test, not a figure
				t.Fatal("held request not answered a minute after its user was let in")
			}
		})
	}
}
