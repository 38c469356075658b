package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// The suite's part for a line that closes (closesAt), through the service,
// which judges the instant, on each store.
func init() {
	register(suiteTest{"ClosedLineRefusesNewcomersAndLetsItsLineIn", testClosing})
}

// testClosing: before closesAt entering is as ever; from then on nobody new
// takes a place (closedLineDrains). A closesAt not after opensAt is refused.
func testClosing(t *testing.T, s queue.Store, clock Clock) {
	// The line closes now: set when the line is as wanted, not at an
	// instant a slow machine could reach first.
	_, q, c := closedLineDrains(t, s, clock, func(c *queue.Config) { c.ClosesAt = clock.Now().Truncate(time.Millisecond) })

	c.OpensAt = c.ClosesAt
	if err := operate.New(s, nil).PutConfig(context.Background(), q, c); !errors.Is(err, queue.ErrInvalidConfig) {
		t.Errorf("closesAt not after opensAt: %v, want ErrInvalidConfig", err)
	}
}

// closedLineDrains holds the one rule of a line closed to newcomers, by
// closesAt or by the reject method: a, b and c enter and a is admitted;
// once closeIt has closed q, nobody new takes a place — entering is
// ErrQueueClosed, and a quiet line lets nobody straight in — while whoever
// waits keeps their place and is admitted in order, whoever is READY stays
// READY, and entering again tells each where they stand. The queue admits
// one a tick, and is closed by closeIt's change to its config, put through
// the service; its service, name and config are returned.
func closedLineDrains(t *testing.T, s queue.Store, clock Clock, closeIt func(*queue.Config)) (*queue.Service, string, queue.Config) {
	t.Helper()
	ctx := context.Background()
	c := fastConfig()
	c.RatePerSecond, c.BatchSize = 1000, 1 // one a tick
	q := newQueue(t, s, c)
	svcLine := signals.New()
	svc := queue.NewService(s, 0, svcLine)
	op := operate.New(s, svcLine)
	svc.Clock = clock.Now
	for _, u := range []string{"a", "b", "c"} {
		if v, err := svc.Enter(ctx, q, u); err != nil || v.State != queue.Waiting {
			t.Fatalf("before closing, %s entering: %+v, %v", u, v, err)
		}
	}
	if got := admitDue(t, s, clock, q, 1); len(got) != 1 || got[0] != "a" {
		t.Fatalf("the first tick admitted %v, want [a]", got)
	}
	closeIt(&c)
	if err := op.PutConfig(ctx, q, c); err != nil {
		t.Fatalf("closing the line: %v", err)
	}
	clock.Sleep(10 * time.Millisecond)

	if _, err := svc.Enter(ctx, q, "late"); !errors.Is(err, queue.ErrQueueClosed) {
		t.Fatalf("a newcomer after closing: %v, want ErrQueueClosed", err)
	}
	if v, err := svc.AdmitNow(ctx, q, "late"); err != nil || v.State != queue.NotInQueue {
		t.Fatalf("a newcomer let in at once after closing: %+v, %v; want NOT_IN_QUEUE", v, err)
	}
	if v, err := svc.Enter(ctx, q, "a"); err != nil || v.State != queue.Ready {
		t.Fatalf("a, READY, entering again after closing: %+v, %v", v, err)
	}
	for i, u := range []string{"b", "c"} {
		if v, err := svc.Enter(ctx, q, u); err != nil || v.State != queue.Waiting || v.Position != int64(i+1) {
			t.Fatalf("%s, in line, entering again after closing: %+v, %v; want waiting at %d", u, v, err, i+1)
		}
	}
	var admitted []string
	for len(admitted) < 2 {
		admitted = append(admitted, admitDue(t, s, clock, q, 1)...)
	}
	if fmt.Sprint(admitted) != "[b c]" {
		t.Fatalf("after closing the line was admitted as %v, want [b c]", admitted)
	}
	if v, err := svc.Status(ctx, q, "late"); err != nil || v.State != queue.NotInQueue {
		t.Fatalf("the refused newcomer: %+v, %v", v, err)
	}
	return svc, q, c
}
