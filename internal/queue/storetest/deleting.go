package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
)

// The suite's part for a queue removed (DeleteQueue, what a queues file
// with prune: true does to the queues it does not name).
func init() {
	register(suiteTest{"DeletedQueueIsGoneAndStartsEmptyWhenMadeAgain", testDeleteQueue})
}

// testDeleteQueue: a removed queue is gone for every call and from the
// list; its neighbour is untouched; a queue made again under the same name
// starts with an empty line, no tokens and its new config; removing a
// queue that does not exist is not an error.
func testDeleteQueue(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	other := newQueue(t, s, fastConfig())
	for _, u := range []string{"a", "b", "c"} {
		mustEnter(t, s, q, u)
	}
	mustEnter(t, s, other, "a")
	if got := admitDue(t, s, clock, q, 1); len(got) != 1 {
		t.Fatalf("admitted %v, want one", got)
	}
	if err := s.DeleteQueue(ctx, q); err != nil {
		t.Fatalf("DeleteQueue: %v", err)
	}
	if _, err := s.Config(ctx, q); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Config after DeleteQueue: %v, want ErrQueueNotFound", err)
	}
	if _, err := s.Enter(ctx, q, "d"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Enter after DeleteQueue: %v, want ErrQueueNotFound", err)
	}
	if _, err := s.Status(ctx, q, "b"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Status after DeleteQueue: %v, want ErrQueueNotFound", err)
	}
	if _, err := s.Admit(ctx, q, queue.NewTokens(1)); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("Admit after DeleteQueue: %v, want ErrQueueNotFound", err)
	}
	names, err := s.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, q) || !slices.Contains(names, other) {
		t.Errorf("Queues after removing %s: %v, want %s listed and %s not", q, names, other, q)
	}
	if e := mustStatus(t, s, other, "a"); e.State != queue.Waiting || e.Position != 1 {
		t.Errorf("the other queue's user: %+v, want WAITING at 1", e)
	}
	if err := s.DeleteQueue(ctx, q); err != nil {
		t.Errorf("removing it again: %v, want nil", err)
	}
	if err := s.DeleteQueue(ctx, "never-made"); err != nil {
		t.Errorf("removing a queue never made: %v, want nil", err)
	}

	c := fastConfig()
	c.Capacity = 42
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Config(ctx, q); err != nil || got.Capacity != 42 {
		t.Errorf("made again: capacity %d, %v; want 42", got.Capacity, err)
	}
	for _, u := range []string{"a", "b"} {
		if e := mustStatus(t, s, q, u); e.State != queue.NotInQueue {
			t.Errorf("made again: %s is %+v, want NOT_IN_QUEUE", u, e)
		}
	}
	if e := mustEnter(t, s, q, "c"); e.State != queue.Waiting || e.Position != 1 {
		t.Errorf("made again: c entering: %+v, want WAITING at 1", e)
	}
	st, err := s.Stats(ctx, q)
	if err != nil || st.Length != 1 || st.ActiveTokens != 0 {
		t.Errorf("made again: stats %+v, %v; want one waiting, no tokens", st, err)
	}
}
