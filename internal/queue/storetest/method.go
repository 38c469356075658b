package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
)

// The suite's part for the queueing methods (queueingMethod), through the
// service, on each store.
func init() {
	register(suiteTest{"RejectRefusesNewcomersAndLetsItsLineIn", testReject})
	register(suiteTest{"PassthroughReadyAtOnceWithinMaxActiveTokens", testPassthrough})
	register(suiteTest{"UnknownQueueingMethodChangesNothing", testUnknownMethod})
}

// testReject: a fifo line switched to reject at run time keeps the rule of
// a line past its closesAt (closedLineDrains): nobody new, the line drains.
func testReject(t *testing.T, s queue.Store, clock Clock) {
	closedLineDrains(t, s, clock, func(c *queue.Config) { c.Method = queue.MethodReject })
}

// testPassthrough: under passthrough whoever enters is READY at once with
// a token, more than the rate would let in a tick, until maxActiveTokens
// are alive; beyond it they wait in line, entering again keeps their
// place, and admission lets them in as tokens are spent, in order. A token
// is still good for one use.
func testPassthrough(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 10, 1, 100*time.Millisecond // one a tick
	c.MaxActiveTokens, c.Method = 3, queue.MethodPassthrough
	q := newQueue(t, s, c)
	svc := queue.NewService(s, 0, nil)
	svc.Clock = clock.Now
	tokens := map[string]string{}
	for i := range 5 {
		u := fmt.Sprintf("u%d", i)
		v, err := svc.Enter(ctx, q, u)
		switch {
		case err != nil:
			t.Fatalf("%s entering: %v", u, err)
		case i < 3 && v.State != queue.Ready:
			t.Fatalf("%s entering with room under maxActiveTokens: %+v, want READY at once", u, v)
		case i >= 3 && (v.State != queue.Waiting || v.Position != int64(i-2)):
			t.Fatalf("%s entering over maxActiveTokens: %+v, want waiting at %d", u, v, i-2)
		}
		tokens[u] = v.Token
	}
	if v, err := svc.Enter(ctx, q, "u0"); err != nil || v.State != queue.Ready || v.Token != tokens["u0"] {
		t.Fatalf("u0 entering again: %+v, %v; want READY with the same token", v, err)
	}
	if v, err := svc.Enter(ctx, q, "u3"); err != nil || v.State != queue.Waiting || v.Position != 1 {
		t.Fatalf("u3 entering again: %+v, %v; want still waiting at 1", v, err)
	}
	if got := admitDue(t, s, clock, q, 1); len(got) != 0 {
		t.Fatalf("a tick with maxActiveTokens alive admitted %v", got)
	}
	if err := s.BeginUse(ctx, q, "u0", tokens["u0"], "o", time.Minute); err != nil {
		t.Fatalf("u0's token: %v", err)
	}
	if err := s.EndUse(ctx, q, "u0", tokens["u0"], "o", true); err != nil {
		t.Fatalf("spending u0's token: %v", err)
	}
	if err := s.BeginUse(ctx, q, "u0", tokens["u0"], "o2", time.Minute); !errors.Is(err, queue.ErrTokenInvalid) {
		t.Fatalf("u0's token used again: %v, want ErrTokenInvalid", err)
	}
	var admitted []string
	for range 5 {
		admitted = append(admitted, admitDue(t, s, clock, q, 1)...)
	}
	if fmt.Sprint(admitted) != "[u3]" {
		t.Fatalf("with one token spent admission let in %v, want [u3]", admitted)
	}
	if v, err := svc.Enter(ctx, q, "u5"); err != nil || v.State != queue.Waiting || v.Position != 2 {
		t.Fatalf("u5 entering behind u4 at the cap: %+v, %v; want waiting at 2", v, err)
	}
}

// testUnknownMethod: a method that is none of them is ErrInvalidConfig
// naming the setting, and the queue keeps its config.
func testUnknownMethod(t *testing.T, s queue.Store, _ Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.Method = queue.MethodReject
	q := newQueue(t, s, c)
	op := operate.New(s, nil)
	c.Method = "lottery"
	if err := op.PutConfig(ctx, q, c); !errors.Is(err, queue.ErrInvalidConfig) || !strings.Contains(err.Error(), "queueingMethod") {
		t.Fatalf("queueingMethod lottery: %v, want ErrInvalidConfig naming queueingMethod", err)
	}
	if got, err := s.Config(ctx, q); err != nil || got.Method != queue.MethodReject {
		t.Fatalf("after a refused method the queue's method is %q (%v), want reject", got.Method, err)
	}
}
