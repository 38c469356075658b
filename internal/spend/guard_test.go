package spend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/spend"
)

// admitted returns a store holding one admitted user's token, and that token.
func admitted(t *testing.T) (*memstore.Store, spend.Token) {
	t.Helper()
	ctx := context.Background()
	s := memstore.New(nil)
	c := queue.DefaultConfig()
	if err := s.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enter(ctx, "q", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(ctx, "q", queue.NewTokens(c.BatchSize)); err != nil {
		t.Fatal(err)
	}
	e, err := s.Status(ctx, "q", "alice")
	if err != nil || e.State != queue.Ready {
		t.Fatalf("alice not admitted: %+v %v", e, err)
	}
	return s, spend.Token{Queue: "q", User: "alice", Value: e.Token}
}

func holds(t *testing.T, s *memstore.Store, tok spend.Token) bool {
	t.Helper()
	e, err := s.Status(context.Background(), tok.Queue, tok.User)
	if err != nil {
		t.Fatal(err)
	}
	return e.State == queue.Ready && e.Token == tok.Value
}

func TestOutcomeDecidesTheToken(t *testing.T) {
	for _, tt := range []struct {
		outcome spend.Outcome
		kept    bool
	}{
		{spend.Succeeded, false},
		{spend.Spent, false},
		{spend.Refused, true},
		{spend.Failed, true},
		{spend.TimedOut, true},
	} {
		t.Run(tt.outcome.String(), func(t *testing.T) {
			s, tok := admitted(t)
			var seen []spend.Outcome
			g := spend.NewGuard(s, 0, func(c spend.Call) {
				q, o := c.Queue, c.Outcome
				if q != tok.Queue {
					t.Errorf("observed queue %q, want %q", q, tok.Queue)
				}
				seen = append(seen, o)
			})
			err := g.Use(context.Background(), tok, func(context.Context) spend.Outcome { return tt.outcome })
			if err != nil {
				t.Fatalf("Use: %v", err)
			}
			if got := holds(t, s, tok); got != tt.kept {
				t.Errorf("token kept = %v, want %v", got, tt.kept)
			}
			if len(seen) != 1 || seen[0] != tt.outcome {
				t.Errorf("observed %v, want [%v]", seen, tt.outcome)
			}
			// Kept means usable again at once: the lock was released.
			err = g.Use(context.Background(), tok, func(context.Context) spend.Outcome { return spend.Succeeded })
			if tt.kept && err != nil {
				t.Errorf("second use of a kept token: %v", err)
			}
			if !tt.kept && !errors.Is(err, queue.ErrTokenInvalid) {
				t.Errorf("second use of a consumed token: %v, want ErrTokenInvalid", err)
			}
		})
	}
}

func TestRefusedBeforeTheCall(t *testing.T) {
	s, tok := admitted(t)
	g := spend.NewGuard(s, 0, nil)
	for _, bad := range []spend.Token{
		{Queue: tok.Queue, User: tok.User, Value: "wrong"},
		{Queue: tok.Queue, User: "bob", Value: tok.Value},
		{Queue: "nowhere", User: tok.User, Value: tok.Value},
	} {
		called := false
		err := g.Use(context.Background(), bad, func(context.Context) spend.Outcome { called = true; return spend.Succeeded })
		if !errors.Is(err, queue.ErrTokenInvalid) || called {
			t.Errorf("%+v: err %v, called %v; want ErrTokenInvalid and no call", bad, err, called)
		}
	}
	if !holds(t, s, tok) {
		t.Error("refused uses took the real token")
	}
}

// Twenty concurrent uses of one token: exactly one call runs; the others
// are refused as in use, and the token is then spent.
func TestConcurrentUsesMakeOneCall(t *testing.T) {
	s, tok := admitted(t)
	g := spend.NewGuard(s, 0, nil)
	var calls, inUse atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := g.Use(context.Background(), tok, func(context.Context) spend.Outcome {
				calls.Add(1)
				<-release // hold the lock until every other use has been refused
				return spend.Succeeded
			})
			switch {
			case errors.Is(err, queue.ErrTokenInUse):
				if inUse.Add(1) == 19 {
					close(release)
				}
			case err != nil:
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected: %v", err)
	}
	if calls.Load() != 1 || inUse.Load() != 19 {
		t.Errorf("calls %d, in use %d; want 1 and 19", calls.Load(), inUse.Load())
	}
	if holds(t, s, tok) {
		t.Error("token still held after a successful call")
	}
}

func TestPanicKeepsTokenAndReleasesLock(t *testing.T) {
	s, tok := admitted(t)
	var seen spend.Outcome = -1
	g := spend.NewGuard(s, 0, func(c spend.Call) { seen = c.Outcome })
	func() {
		defer func() { recover() }()
		g.Use(context.Background(), tok, func(context.Context) spend.Outcome { panic("backend bug") })
	}()
	if seen != spend.Failed {
		t.Errorf("observed %v, want failed", seen)
	}
	if !holds(t, s, tok) {
		t.Fatal("a panicking call took the token")
	}
	if err := g.Use(context.Background(), tok, func(context.Context) spend.Outcome { return spend.Succeeded }); err != nil {
		t.Errorf("lock not released after a panic: %v", err)
	}
}

// Check runs the call with a valid token and keeps it whatever happens; it
// takes no lock, so a browser's several requests at once all pass.
func TestCheckKeepsTheToken(t *testing.T) {
	s, tok := admitted(t)
	var observed []spend.Outcome
	g := spend.NewGuard(s, 0, func(c spend.Call) { observed = append(observed, c.Outcome) })
	inner := make(chan error, 1)
	err := g.Check(context.Background(), tok, func(ctx context.Context) spend.Outcome {
		inner <- g.Check(ctx, tok, func(context.Context) spend.Outcome { return spend.Succeeded })
		return spend.Succeeded
	})
	if err != nil || <-inner != nil {
		t.Fatalf("Check: %v; a Check while another runs must pass too", err)
	}
	if !holds(t, s, tok) {
		t.Fatal("Check spent the token")
	}
	if len(observed) != 2 {
		t.Errorf("observed %v, want both calls", observed)
	}
	for _, bad := range []spend.Token{
		{Queue: tok.Queue, User: tok.User, Value: "wrong"},
		{Queue: "nowhere", User: tok.User, Value: tok.Value},
	} {
		called := false
		if err := g.Check(context.Background(), bad, func(context.Context) spend.Outcome { called = true; return spend.Succeeded }); !errors.Is(err, queue.ErrTokenInvalid) || called {
			t.Errorf("%+v: %v, called %v", bad, err, called)
		}
	}
}

// A token spent through this guard no longer opens a Check, trusted or not.
func TestCheckAfterUseOnThisGuard(t *testing.T) {
	s, tok := admitted(t)
	g := spend.NewGuard(s, 0, nil)
	ok := func(context.Context) spend.Outcome { return spend.Succeeded }
	if err := g.Check(context.Background(), tok, ok); err != nil {
		t.Fatal(err)
	}
	if err := g.Use(context.Background(), tok, ok); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(context.Background(), tok, ok); !errors.Is(err, queue.ErrTokenInvalid) {
		t.Fatalf("Check after the token was spent here: %v, want ErrTokenInvalid", err)
	}
}

// TestWaitTimesThePool: a call that waits for the backend's pool is
// counted in Queued while it waits, and its wait and hold reach the
// observer; one that never gets a connection (a panic, an error) stops
// counting when it ends; outside a protected call, Wait times nothing.
func TestWaitTimesThePool(t *testing.T) {
	s, tok := admitted(t)
	var seen spend.Call
	g := spend.NewGuard(s, 0, func(c spend.Call) { seen = c })
	var queuedWhileWaiting, queuedWhileHolding int64
	err := g.Use(context.Background(), tok, func(ctx context.Context) spend.Outcome {
		acquired := spend.Wait(ctx)
		time.Sleep(5 * time.Millisecond) // the wait for a connection
		queuedWhileWaiting = g.Queued(tok.Queue)
		released := acquired()
		queuedWhileHolding = g.Queued(tok.Queue)
		time.Sleep(10 * time.Millisecond) // the order's work on it
		released()
		return spend.Refused
	})
	if err != nil {
		t.Fatal(err)
	}
	if queuedWhileWaiting != 1 || queuedWhileHolding != 0 || g.Queued(tok.Queue) != 0 {
		t.Errorf("queued %d while waiting, %d while holding, %d after; want 1, 0, 0", queuedWhileWaiting, queuedWhileHolding, g.Queued(tok.Queue))
	}
	if seen.Waited < 5*time.Millisecond || seen.Held < 10*time.Millisecond || seen.Took < seen.Waited+seen.Held {
		t.Errorf("observed waited %v, held %v of %v; want ≥ 5 ms, ≥ 10 ms, their sum at least", seen.Waited, seen.Held, seen.Took)
	}

	func() {
		defer func() { recover() }()
		g.Use(context.Background(), tok, func(ctx context.Context) spend.Outcome {
			spend.Wait(ctx)
			panic("the pool's driver")
		})
	}()
	if n := g.Queued(tok.Queue); n != 0 {
		t.Errorf("a call that never got a connection is still counted waiting: %d", n)
	}
	spend.Wait(context.Background())()() // outside a protected call: nothing, and no panic
}

// flakyEnd is a store whose first failures EndUse calls fail as Redis's
// do while the client cannot reach it (queue.ErrUnavailable).
type flakyEnd struct {
	*memstore.Store
	failures atomic.Int32
}

func (f *flakyEnd) EndUse(ctx context.Context, q, user, token, owner string, consumed bool) error {
	if f.failures.Add(-1) >= 0 {
		return fmt.Errorf("%w: dial tcp 127.0.0.1:6379: connect: connection reset by peer", queue.ErrUnavailable)
	}
	return f.Store.EndUse(ctx, q, user, token, owner, consumed)
}

// An order that succeeded while the store could not be reached for a
// moment (after a Redis restart, go-redis's pool fails new dials for up
// to a second): the use's end is asked again, so the token is spent and
// its lock released by the time the call's answer goes out, not left
// live and locked for the lock TTL (the fairness check's redis-kill
// histories: 201, then READY and "order in progress" for seconds).
func TestUseEndsOnceTheStoreAnswersAgain(t *testing.T) {
	for _, tt := range []struct {
		outcome spend.Outcome
		kept    bool
	}{
		{spend.Succeeded, false},
		{spend.Refused, true},
	} {
		t.Run(tt.outcome.String(), func(t *testing.T) {
			s, tok := admitted(t)
			f := &flakyEnd{Store: s}
			f.failures.Store(3)
			g := spend.NewGuard(f, 0, nil)
			if err := g.Use(context.Background(), tok, func(context.Context) spend.Outcome { return tt.outcome }); err != nil {
				t.Fatalf("Use: %v", err)
			}
			if got := holds(t, s, tok); got != tt.kept {
				t.Errorf("token kept = %v, want %v", got, tt.kept)
			}
			err := g.Use(context.Background(), tok, func(context.Context) spend.Outcome { return spend.Refused })
			switch {
			case tt.kept && err != nil:
				t.Errorf("next use of the kept token: %v, want its lock released", err)
			case !tt.kept && !errors.Is(err, queue.ErrTokenInvalid):
				t.Errorf("next use of the spent token: %v, want ErrTokenInvalid", err)
			}
		})
	}
}
