package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
)

// The suite's part for the queueing methods (queueingMethod), through the
// service, on each store.
func init() {
	register(suiteTest{"RejectRefusesNewcomersAndLetsItsLineIn", testReject})
	register(suiteTest{"UnknownQueueingMethodChangesNothing", testUnknownMethod})
}

// testReject: a fifo line switched to reject at run time keeps the rule of
// a line past its closesAt (closedLineDrains): nobody new, the line drains.
func testReject(t *testing.T, s queue.Store, clock Clock) {
	c := fastConfig()
	c.RatePerSecond, c.BatchSize = 1000, 1 // one a tick
	q := newQueue(t, s, c)
	svc := queue.NewService(s, 0)
	svc.Clock = clock.Now
	closedLineDrains(t, s, clock, svc, q, func() {
		c.Method = queue.MethodReject
		if err := svc.PutConfig(context.Background(), q, c); err != nil {
			t.Fatalf("switching to reject: %v", err)
		}
	})
}

// testUnknownMethod: a method that is none of them is ErrInvalidConfig
// naming the setting, and the queue keeps its config.
func testUnknownMethod(t *testing.T, s queue.Store, _ Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.Method = queue.MethodReject
	q := newQueue(t, s, c)
	svc := queue.NewService(s, 0)
	c.Method = "lottery"
	if err := svc.PutConfig(ctx, q, c); !errors.Is(err, queue.ErrInvalidConfig) || !strings.Contains(err.Error(), "queueingMethod") {
		t.Fatalf("queueingMethod lottery: %v, want ErrInvalidConfig naming queueingMethod", err)
	}
	if got, err := s.Config(ctx, q); err != nil || got.Method != queue.MethodReject {
		t.Fatalf("after a refused method the queue's method is %q (%v), want reject", got.Method, err)
	}
}
