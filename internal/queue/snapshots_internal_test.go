package queue

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lineStore is a Store whose line is 1000 users with tickets 1..1000, and
// which counts its snapshot reads; the other methods are not called here.
type lineStore struct {
	Store
	snapshots atomic.Int64
	release   chan struct{} // when set, Snapshot waits for it
}

func (l *lineStore) Snapshot(_ context.Context, q string) (Snapshot, error) {
	if q != "q" {
		return Snapshot{}, ErrQueueNotFound
	}
	l.snapshots.Add(1)
	if l.release != nil {
		<-l.release
	}
	return Snapshot{Head: 1, Last: 1000, Length: 1000, Complete: true, Pace: Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond}}, nil
}

func (l *lineStore) Status(_ context.Context, q, user string) (Standing, error) {
	if q != "q" {
		return Standing{}, ErrQueueNotFound
	}
	var n int64
	fmt.Sscanf(user, "u%d", &n)
	return Standing{State: Waiting, Position: n, Length: 1000, Ticket: n, Pace: Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond}}, nil
}

// TestOneSnapshotFetchForACrowd: polls arriving while a snapshot is being
// read wait for that one read instead of each starting their own.
func TestOneSnapshotFetchForACrowd(t *testing.T) {
	store := &lineStore{release: make(chan struct{})}
	s := newSnapshots(store, time.Hour)
	for i := 100; i < 200; i++ {
		s.remember("q", fmt.Sprintf("u%d", i), Standing{State: Waiting, Ticket: int64(i)})
	}
	var wg sync.WaitGroup
	positions := make([]int64, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, ok := s.status(context.Background(), "q", fmt.Sprintf("u%d", 100+i))
			if ok {
				positions[i] = e.Position
			}
		}()
	}
	// Every poll inside fresh: the first reading the snapshot (held by
	// release), the others waiting for that read, however slowly the
	// machine brings them there.
	for deadline := time.Now().Add(time.Minute); inFresh() < 100; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 100 polls reached the snapshot's read after a minute", inFresh())
		}
	}
	close(store.release)
	wg.Wait()
	if n := store.snapshots.Load(); n != 1 {
		t.Errorf("%d snapshot reads for 100 concurrent polls, want 1", n)
	}
	for i, p := range positions {
		if p != int64(100+i) {
			t.Fatalf("u%d placed at %d", 100+i, p)
		}
	}
}

// inFresh counts the goroutines inside snapshots.fresh: reading a snapshot
// or waiting for another's read.
func inFresh() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "queue.(*snapshots).fresh(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestMadeUpQueuesLeaveNoTrace: polls (held or not) and leaves naming
// queues that do not exist cost no memory.
func TestMadeUpQueuesLeaveNoTrace(t *testing.T) {
	store := &lineStore{}
	svc := NewService(store, time.Second, nil)
	for i := range 1000 {
		q := fmt.Sprintf("nosuch%d", i)
		v, _ := svc.Status(context.Background(), q, "u1")
		svc.HoldFrom(context.Background(), q, "u1", time.Second, v)
		svc.snaps.remember(q, "u1", Standing{State: NotInQueue}) // as Leave does
		svc.Changed(q)
	}
	if n := len(svc.snaps.queues); n != 0 {
		t.Errorf("%d made-up queues kept by the snapshots", n)
	}
	if n := len(svc.changes); n != 0 {
		t.Errorf("%d made-up queues kept by the held-request signals", n)
	}
}

// TestSnapshotAnswerAllocatesNothing: a poll answered from a fresh snapshot
// costs no allocation (it runs for nearly every poll on sale night).
func TestSnapshotAnswerAllocatesNothing(t *testing.T) {
	s := newSnapshots(&lineStore{}, time.Hour)
	s.remember("q", "u500", Standing{State: Waiting, Ticket: 500})
	if _, ok := s.status(context.Background(), "q", "u500"); !ok {
		t.Fatal("not answered from the snapshot")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if e, ok := s.status(context.Background(), "q", "u500"); !ok || e.Position != 500 {
			t.Fatalf("answer %+v %v", e, ok)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per answer, want 0", allocs)
	}
}

// TestAnotherLanesPlaceIsTheStores: the snapshot is the public lane's
// (issue 53). A place in another lane, told by the store, is not
// remembered, and one shown to the service is answered by the store with
// its lane and no ticket for the front document; the same ticket in the
// public lane is placed by the snapshot, and ticketed.
func TestAnotherLanesPlaceIsTheStores(t *testing.T) {
	s := newSnapshots(&lineStore{}, time.Hour)
	s.remember("q", "u500", Standing{State: Waiting, Ticket: 500})
	s.remember("q", "u600", Standing{State: Waiting, Ticket: 600, Lane: "gold"})
	if _, ok := s.status(context.Background(), "q", "u500"); !ok {
		t.Error("a public place: not answered from the snapshot")
	}
	if e, ok := s.status(context.Background(), "q", "u600"); ok {
		t.Errorf("gold's place answered from the public lane's snapshot: %+v", e)
	}

	svc := NewService(&laneStore{}, time.Hour, nil)
	v, err := svc.Status(context.Background(), "q", "m1")
	if err != nil || v.Lane != "gold" || v.Ticket != 0 || v.Position != 2 {
		t.Errorf("a gold place: %+v %v, want gold, position 2, no ticket", v, err)
	}
}

// TestReadyNamesNoLane: a READY answer names no lane, whatever the store
// says (a token does not keep the lane it was let in from).
func TestReadyNamesNoLane(t *testing.T) {
	v := NewService(&lineStore{}, time.Hour, nil).view(context.Background(), "q", Standing{State: Ready, Token: "tok", Lane: "gold"}, false)
	if v.State != Ready || v.Lane != "" {
		t.Errorf("a READY standing in gold: %+v, want READY without a lane", v)
	}
}

// laneStore answers every user as second in the gold lane, ticket 700.
type laneStore struct{ lineStore }

func (l *laneStore) Status(_ context.Context, q, user string) (Standing, error) {
	return Standing{State: Waiting, Position: 2, Length: 3, Ticket: 700, Epoch: 1, Lane: "gold", Pace: Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond}}, nil
}
