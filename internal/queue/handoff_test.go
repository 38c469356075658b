package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/handoff"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/memstore"
)

// TestClaimForgetsTheOldSessionsTicket: an instance that answers a place
// far back from its snapshot (the ticket it learned from the store) tells
// the session the place moved from MOVED at once after a claim made
// through it, never WAITING by arithmetic on a ticket now another's; the
// claimer stands where the place stood.
func TestClaimForgetsTheOldSessionsTicket(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(nil)
	svc := queue.NewService(store, time.Hour, nil)
	c := fastQueue(t, svc, "q")
	c.Paused = true
	if err := svc.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := svc.Enter(ctx, "q", fmt.Sprint("ahead-", i)); err != nil {
			t.Fatal(err)
		}
	}
	laptop, err := svc.Enter(ctx, "q", "laptop")
	if err != nil || laptop.Position != 51 {
		t.Fatalf("the laptop: %+v, %v", laptop, err)
	}
	svc.Status(ctx, "q", "laptop") // the snapshot's answer from here on
	hits, _ := svc.SnapshotAnswers()
	if v, _ := svc.Status(ctx, "q", "laptop"); v.Position != 51 {
		t.Fatalf("the laptop asking: %+v", v)
	}
	if now, _ := svc.SnapshotAnswers(); now == hits {
		t.Fatal("the snapshot answered no poll: the test proves nothing")
	}
	h, _ := handoff.Hash(handoff.New())
	if _, err := store.PutHandoff(ctx, "q", "laptop", h, handoff.TTL); err != nil {
		t.Fatal(err)
	}
	phone, err := svc.Enter(ctx, "q", "phone", lane.Join{Handoff: h})
	if err != nil || phone.State != queue.Waiting || phone.Position != 51 || phone.Ticket != laptop.Ticket {
		t.Fatalf("the phone's claim: %+v, %v; want the laptop's place %+v", phone, err, laptop)
	}
	if v, err := svc.Status(ctx, "q", "laptop"); err != nil || v.State != queue.Moved || v.Position != 0 || v.PollAfterSeconds != nil {
		t.Fatalf("the laptop after the claim: %+v, %v; want MOVED", v, err)
	}
	if _, err := svc.Enter(ctx, "q", "tablet", lane.Join{Handoff: h}); err != handoff.ErrGone {
		t.Fatalf("the code claimed again: %v, want ErrGone", err)
	}
}
