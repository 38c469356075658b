package admission_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
	"github.com/waitroom/waitroom/internal/queue/watch"
)

// partialStore is a store whose queue "hung" never answers (each call
// waits for its deadline, as a call to a Redis node that went silent
// does) and whose queue "broken" fails at once (a node that refuses
// connections); every other queue is served by a memstore. It counts the
// admission ticks of each queue.
type partialStore struct {
	queue.Store
	mu    sync.Mutex
	ticks map[string]int
	// foldedAt is when each queue's samples reached the store (the silent
	// queue's: when its call gave up).
	foldedAt map[string]time.Time
	// down: the two queues' faults are on (else every queue is served).
	down atomic.Bool
}

var errBroken = fmt.Errorf("%w: connection refused", queue.ErrUnavailable)

func (s *partialStore) fault(ctx context.Context, q string) error {
	if !s.down.Load() {
		return nil
	}
	switch q {
	case "hung":
		<-ctx.Done()
		return fmt.Errorf("%w: %w", queue.ErrUnavailable, ctx.Err())
	case "broken":
		return errBroken
	}
	return nil
}

func (s *partialStore) Config(ctx context.Context, q string) (queue.Config, error) {
	if err := s.fault(ctx, q); err != nil {
		return queue.Config{}, err
	}
	return s.Store.Config(ctx, q)
}

func (s *partialStore) Stats(ctx context.Context, q string) (queue.Stats, error) {
	if err := s.fault(ctx, q); err != nil {
		return queue.Stats{}, err
	}
	return s.Store.Stats(ctx, q)
}

func (s *partialStore) Admit(ctx context.Context, q string, tokens []string) (queue.Admission, error) {
	s.mu.Lock()
	s.ticks[q]++
	s.mu.Unlock()
	if err := s.fault(ctx, q); err != nil {
		return queue.Admission{}, err
	}
	return s.Store.Admit(ctx, q, tokens)
}

func (s *partialStore) FoldRate(ctx context.Context, q string, smp queue.RateSample, w time.Duration) (queue.RateWindow, error) {
	err := s.fault(ctx, q)
	s.mu.Lock()
	s.foldedAt[q] = time.Now()
	s.mu.Unlock()
	if err != nil {
		return queue.RateWindow{}, err
	}
	return s.Store.FoldRate(ctx, q, smp, w)
}

func (s *partialStore) tickCount(q string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.ticks[q] }

// newPartialStore holds the queues live, hung and broken (each admitting
// every 20 ms).
func newPartialStore(t *testing.T) *partialStore {
	t.Helper()
	s := &partialStore{Store: memstore.New(nil), ticks: map[string]int{}, foldedAt: map[string]time.Time{}}
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 50, 1, 20*time.Millisecond
	for _, q := range []string{"live", "hung", "broken"} {
		if err := s.Store.PutConfig(context.Background(), q, c); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestOneQueueDownCostsTheOthersNothing: with one queue's store silent
// and another's refusing, the healthy queue's admission ticks on at its
// pace, its adaptive-rate samples reach the store at once rather than
// after the silent queue's timeout, the health check names exactly the two
// queues down, and each broken queue's admission trouble is logged once,
// however many ticks fail, and its recovery once.
func TestOneQueueDownCostsTheOthersNothing(t *testing.T) {
	s := newPartialStore(t)
	logs := &lockedBuilder{}
	logger := slog.New(slog.NewTextHandler(logs, nil))

	ctx, cancel := context.WithCancel(context.Background())
	a := admission.NewAdmitter(s, logger, nil, nil)
	a.Discover = 50 * time.Millisecond
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	// Every queue's loop runs; then two queues' store goes away.
	for deadline := time.Now().Add(20 * time.Second); s.tickCount("hung") == 0 || s.tickCount("broken") == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the admitter never ticked every queue")
		}
	}
	s.down.Store(true)
	brokenBefore := s.tickCount("broken")

	// Samples of all three handed over in one flush: the healthy queue's
	// arrive while the silent one's call is still waiting.
	rates := admission.NewRateController(s, logger)
	for _, q := range []string{"hung", "live", "broken"} {
		rates.Observe(q, time.Millisecond, 0, 0, false)
	}
	began := time.Now()
	rates.Flush(ctx)
	flushed := time.Since(began)
	s.mu.Lock()
	live, hung := s.foldedAt["live"], s.foldedAt["hung"]
	s.mu.Unlock()
	if !live.Before(hung) {
		t.Errorf("the healthy queue's samples reached the store %v after the flush began, the silent queue's call gave up after %v: want them before, not behind it",
			live.Sub(began), hung.Sub(began))
	}
	if flushed < perqueue.CallTimeout/2 {
		t.Errorf("the flush took %v: the silent queue's call did not wait (the test's store is wrong)", flushed)
	}

	h := watch.NewHealthCheck(operate.New(s, nil), s, logger).Check(ctx)
	if !h.Reachable || strings.Join(h.Down, ",") != "broken,hung" || h.State() != "degraded" {
		t.Errorf("health: reachable %v, down %v, state %q; want reachable, down [broken hung], degraded", h.Reachable, h.Down, h.State())
	}

	// Meanwhile (the flush and the check took a couple of seconds) the
	// healthy queue kept ticking every 20 ms; ten more ticks of it (a
	// minute is the bound, not a pace):
	before := s.tickCount("live")
	start := time.Now()
	ticked := 0
	for deadline := start.Add(time.Minute); ticked < 10 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		ticked = s.tickCount("live") - before
	}
	if took := time.Since(start); took > time.Second {
		t.Logf("ten ticks of the healthy queue took %v (a busy machine)", took)
	}
	// Back: each says so, once.
	s.down.Store(false)
	for deadline := time.Now().Add(20 * time.Second); strings.Count(logs.String(), `msg="admission tick recovered"`) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery logged for both queues within 20 s:\n%s", logs.String())
		}
	}
	cancel()
	<-done
	if ticked < 10 {
		t.Errorf("the healthy queue ticked %d times in a minute beside two queues down, want at least 10 (about 50 a second)", ticked)
	}
	if n := s.tickCount("broken") - brokenBefore; n < 3 {
		t.Errorf("the broken queue's admission was tried %d times: the test needs several failures", n)
	}
	for _, q := range []string{"broken", "hung"} {
		if n := strings.Count(logs.String(), `msg="admission tick failed; logged again when it recovers" queue=`+q+" "); n != 1 {
			t.Errorf("%s's failing ticks logged %d times, want once:\n%s", q, n, logs.String())
		}
	}
	if strings.Contains(logs.String(), "queue=live") {
		t.Errorf("the healthy queue logged trouble:\n%s", logs.String())
	}
}

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
