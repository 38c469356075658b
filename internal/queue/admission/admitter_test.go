package admission_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// scriptedStore is the part of a store the admitter uses, answering Admit
// with a due time the test chooses, under a config the test can change.
type scriptedStore struct {
	queue.Store // only the methods below are called
	mu          sync.Mutex
	cfg         queue.Config
	nextIn      func(queue.Config) time.Duration
	calls       chan struct{}
}

func newScriptedStore(cfg queue.Config, nextIn func(queue.Config) time.Duration) *scriptedStore {
	return &scriptedStore{cfg: cfg, nextIn: nextIn, calls: make(chan struct{}, 1000)}
}

func (s *scriptedStore) Queues(context.Context) ([]string, error) { return []string{"q"}, nil }

func (s *scriptedStore) Config(context.Context, string) (queue.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg, nil
}

func (s *scriptedStore) setConfig(c queue.Config) { s.mu.Lock(); s.cfg = c; s.mu.Unlock() }

func (s *scriptedStore) Admit(context.Context, string, []string) (queue.Admission, error) {
	s.calls <- struct{}{}
	c, _ := s.Config(context.Background(), "q")
	return queue.Admission{Ticked: true, NextIn: s.nextIn(c)}, nil
}

// CommitDraw: an opening set is committed to, as a store would.
func (s *scriptedStore) CommitDraw(_ context.Context, _ string, c draw.Committed) (draw.Committed, bool, error) {
	return c, true, nil
}

// Sweep: the janitor finds nothing to sweep.
func (s *scriptedStore) Sweep(context.Context, string) (bool, error) { return false, nil }

func runAdmitter(t *testing.T, s queue.Store, discover time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := admission.NewAdmitter(s, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	a.Discover = discover
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitCalls waits for n more Admit calls; the deadline is generous (a busy
// machine is slow) and still far below what the bug would take.
func (s *scriptedStore) waitCalls(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for i := range n {
		select {
		case <-s.calls:
		case <-deadline:
			t.Fatalf("%s: only %d of %d admission calls within 20 s", what, i, n)
		}
	}
}

// TestAdmitterSleepsAtMostOneInterval: a store whose tick seems due an hour
// away (its clock went back) does not put the admitter to sleep for an
// hour: it asks again after one interval of the queue's config.
func TestAdmitterSleepsAtMostOneInterval(t *testing.T) {
	c := queue.DefaultConfig()
	c.Interval = 20 * time.Millisecond
	s := newScriptedStore(c, func(queue.Config) time.Duration { return time.Hour })
	runAdmitter(t, s, time.Hour)
	s.waitCalls(t, 3, "the store said the next tick is an hour away")
}

// TestAdmitterTakesANewIntervalAtTheNextTick: with a one-minute interval
// the admitter sleeps a minute after each tick; an operator shortening it
// to 20 ms is seen by the next discovery, which wakes the loop, so the
// new pace starts then, not a minute later.
func TestAdmitterTakesANewIntervalAtTheNextTick(t *testing.T) {
	c := queue.DefaultConfig()
	c.RatePerSecond, c.Interval = 0.1, time.Minute
	s := newScriptedStore(c, func(c queue.Config) time.Duration { return c.Interval })
	runAdmitter(t, s, 20*time.Millisecond)
	s.waitCalls(t, 1, "the first tick")
	c.RatePerSecond, c.Interval = 100, 20*time.Millisecond
	s.setConfig(c)
	s.waitCalls(t, 5, "after the interval went from 1 min to 20 ms")
}

// idleStore is a scriptedStore whose line is empty: every tick is idle.
type idleStore struct{ *scriptedStore }

func (s idleStore) Admit(ctx context.Context, q string, tokens []string) (queue.Admission, error) {
	a, err := s.scriptedStore.Admit(ctx, q, tokens)
	a.Idle = true
	return a, err
}

// TestAdmitterSleepsOnAnIdleQueueUntilWoken: an empty line's loop sleeps
// IdleEvery (here an hour) after an idle tick, not an interval; an enter
// through this instance, told on the line the admitter was made on
// (signals.Line.Joined, which calls Wake), ticks at once. A queue with an
// opening scheduled is ticked every interval, idle or not.
func TestAdmitterSleepsOnAnIdleQueueUntilWoken(t *testing.T) {
	c := queue.DefaultConfig()
	c.Interval = 20 * time.Millisecond
	s := idleStore{newScriptedStore(c, func(c queue.Config) time.Duration { return c.Interval })}
	ctx, cancel := context.WithCancel(context.Background())
	line := signals.New()
	a := admission.NewAdmitter(s, slog.New(slog.NewTextHandler(io.Discard, nil)), line, nil)
	a.Discover, a.IdleEvery = time.Hour, time.Hour
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	s.waitCalls(t, 1, "the first tick")
	time.Sleep(300 * time.Millisecond) // 15 intervals
	if n := len(s.calls); n > 0 {
		t.Fatalf("%d more ticks of an idle queue in 300 ms, want none before an hour or a wake", n)
	}
	for range 3 {
		line.Joined("q")
		s.waitCalls(t, 1, "a wake")
	}
	line.Joined("no such queue") // nothing to wake; no harm

	c.OpensAt = time.Now().Add(time.Hour)
	s.setConfig(c)
	a2 := admission.NewAdmitter(s, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	a2.Discover, a2.IdleEvery = time.Hour, time.Hour
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan struct{})
	go func() { defer close(done2); a2.Run(ctx2) }()
	defer func() { cancel2(); <-done2 }()
	s.waitCalls(t, 5, "an idle queue with an opening scheduled, ticked every interval")
}

// stoppingStore admits one user and stops the run while its answer is on
// the way, as a shutdown may.
type stoppingStore struct {
	*scriptedStore
	stop context.CancelFunc
}

func (s *stoppingStore) Admit(ctx context.Context, q string, tokens []string) (queue.Admission, error) {
	s.stop()
	return queue.Admission{Ticked: true, Admitted: []string{"u1"}, NextIn: time.Hour}, nil
}

// TestAdmitterReportsATickAnsweredAsItStops: users a tick let in are told
// to the line's signals (signals.Line.Moved) even when the run ended while the tick was answered:
// they are in all the same (the counts had missed them).
func TestAdmitterReportsATickAnsweredAsItStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &stoppingStore{scriptedStore: newScriptedStore(queue.DefaultConfig(), nil), stop: cancel}
	var told []string
	line := signals.New()
	line.Listen(signals.Listener{Moved: func(_ string, users []string, _ []rollup.Wait) { told = append(told, users...) }})
	a := admission.NewAdmitter(s, slog.New(slog.NewTextHandler(io.Discard, nil)), line, nil)
	a.Run(ctx) // returns once the run is stopped
	if len(told) != 1 || told[0] != "u1" {
		t.Errorf("told %v, want [u1]", told)
	}
}

// lettingInStore lets two users in at at, their tokens expiring a TTL
// later, and stops the run.
type lettingInStore struct {
	*scriptedStore
	stop context.CancelFunc
	at   time.Time
}

func (s *lettingInStore) Admit(ctx context.Context, q string, tokens []string) (queue.Admission, error) {
	s.stop()
	w := rollup.Wait{Admitted: s.at}
	return queue.Admission{Ticked: true, Admitted: []string{"u1", "u2"}, Waited: []rollup.Wait{w, w},
		Expires: s.at.Add(queue.DefaultConfig().TokenTTL), NextIn: time.Hour}, nil
}

// TestAdmitterSaysWhomItLetInWhereTheShopIsTold: a tick's admitted are
// told as let in (signals.Line.LetIn), with the tick's time and their
// tokens' expiry, only where the queue's notifyOnReady is on.
func TestAdmitterSaysWhomItLetInWhereTheShopIsTold(t *testing.T) {
	at := time.Date(2026, 12, 6, 22, 0, 0, 0, time.UTC)
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprint("notifyOnReady ", notify), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := queue.DefaultConfig()
			c.NotifyOnReady = notify
			s := &lettingInStore{scriptedStore: newScriptedStore(c, nil), stop: cancel, at: at}
			var told []string
			line := signals.New()
			line.Listen(signals.Listener{LetIn: func(q string, users []string, when, expires time.Time) {
				told = append(told, fmt.Sprint(q, users, when.Equal(at), expires.Sub(when)))
			}})
			admission.NewAdmitter(s, slog.New(slog.NewTextHandler(io.Discard, nil)), line, nil).Run(ctx)
			want := []string(nil)
			if notify {
				want = []string{fmt.Sprint("q", []string{"u1", "u2"}, true, c.TokenTTL)}
			}
			if !slices.Equal(told, want) {
				t.Errorf("told %q, want %q", told, want)
			}
		})
	}
}
