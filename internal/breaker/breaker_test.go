package breaker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/breaker"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
)

var errDown = fmt.Errorf("%w: connection refused", queue.ErrUnavailable)

// clock is a clock the test steps.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// prober is a store that answers probes as told, counting them per queue.
type prober struct {
	mu     sync.Mutex
	down   map[string]bool
	probes map[string]int
}

func (p *prober) probe(_ context.Context, q string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probes[q]++
	if p.down[q] {
		return errDown
	}
	return nil
}

func (p *prober) set(q string, down bool) { p.mu.Lock(); defer p.mu.Unlock(); p.down[q] = down }
func (p *prober) count(q string) int      { p.mu.Lock(); defer p.mu.Unlock(); return p.probes[q] }

type change struct {
	Queue string
	Open  bool
}

func newBreaker(t *testing.T) (*breaker.Breaker, *clock, *prober, *[]change, *bytes.Buffer) {
	t.Helper()
	c := &clock{now: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
	p := &prober{down: map[string]bool{}, probes: map[string]int{}}
	var changes []change
	var logs bytes.Buffer
	b := breaker.New(breaker.Options{Probe: p.probe, Now: c.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		OnChange: func(q string, open bool) { changes = append(changes, change{q, open}) }})
	return b, c, p, &changes, &logs
}

func TestBreakerOpensOnFailureProbesOnceASecondAndClosesOnSuccess(t *testing.T) {
	ctx := context.Background()
	b, c, p, changes, logs := newBreaker(t)
	if b.Open("sale") {
		t.Fatal("a new breaker is open")
	}
	p.set("sale", true)
	for range 50 { // a crowd meeting the outage: one change of state
		b.Failed("sale", errDown)
	}
	if !b.Open("sale") || b.Open("other") {
		t.Fatalf("after a failure of sale: open(sale)=%v open(other)=%v, want true false", b.Open("sale"), b.Open("other"))
	}
	if got := b.Tick(ctx); got != nil || p.count("sale") != 0 {
		t.Fatalf("a probe before a second passed: closed %v, %d probes", got, p.count("sale"))
	}
	c.step(999 * time.Millisecond)
	b.Tick(ctx)
	if p.count("sale") != 0 {
		t.Fatalf("probed %d times at 999 ms", p.count("sale"))
	}
	c.step(time.Millisecond)
	b.Tick(ctx)
	b.Tick(ctx) // not due again until another second
	if p.count("sale") != 1 || !b.Open("sale") {
		t.Fatalf("at 1 s with the store still down: %d probes, open %v; want 1, true", p.count("sale"), b.Open("sale"))
	}
	p.set("sale", false)
	c.step(500 * time.Millisecond)
	if got := b.Tick(ctx); got != nil {
		t.Fatalf("closed %v half a second after the last probe", got)
	}
	c.step(500 * time.Millisecond)
	if got := b.Tick(ctx); !cmp.Equal(got, []string{"sale"}) || b.Open("sale") {
		t.Fatalf("at 2 s with the store back: closed %v, open %v", got, b.Open("sale"))
	}
	if diff := cmp.Diff([]change{{"sale", true}, {"sale", false}}, *changes); diff != "" {
		t.Errorf("changes of state (-want +got):\n%s", diff)
	}
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Errorf("%d log lines, want 2 (one per change of state):\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "requests_answered_without_it=49") {
		t.Errorf("the closing line does not count the failures while open:\n%s", logs.String())
	}
}

// TestBreakerClosesOnACallThatAnswered: a call made past the breaker (the
// admission tick) that the store answers closes it at once, before its
// probe is due; one that fails opens it.
func TestBreakerClosesOnACallThatAnswered(t *testing.T) {
	ctx := context.Background()
	b, _, p, changes, _ := newBreaker(t)
	f := &failing{Store: memstore.New(nil)}
	if err := f.PutConfig(ctx, "q", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	s := breaker.Guard(f, b, true)
	b.Failed("q", errDown)
	if _, err := s.Admit(ctx, "q", queue.NewTokens(10)); err != nil {
		t.Fatal(err)
	}
	if b.Open("q") || p.count("q") != 0 {
		t.Fatalf("after an admission tick the store answered: open %v, %d probes", b.Open("q"), p.count("q"))
	}
	if diff := cmp.Diff([]change{{"q", true}, {"q", false}}, *changes); diff != "" {
		t.Errorf("changes of state (-want +got):\n%s", diff)
	}
	b.Succeeded("q") // closed already: nothing
	if len(*changes) != 2 {
		t.Errorf("Succeeded on a closed breaker changed its state: %v", *changes)
	}
}

func TestBreakerIsPerQueue(t *testing.T) {
	ctx := context.Background()
	b, c, p, _, _ := newBreaker(t)
	p.set("a", true)
	b.Failed("a", errDown)
	c.step(300 * time.Millisecond)
	b.Failed("b", errDown)
	if diff := cmp.Diff([]string{"a", "b"}, b.OpenQueues()); diff != "" {
		t.Fatal(diff)
	}
	c.step(700 * time.Millisecond) // a's probe is due, b's is not
	b.Tick(ctx)
	if p.count("a") != 1 || p.count("b") != 0 {
		t.Fatalf("probes a=%d b=%d, want 1 0", p.count("a"), p.count("b"))
	}
	c.step(300 * time.Millisecond)
	if got := b.Tick(ctx); !cmp.Equal(got, []string{"b"}) {
		t.Fatalf("closed %v, want [b] (a is still down)", got)
	}
	if !b.Open("a") || b.Open("b") {
		t.Fatalf("open a=%v b=%v, want true false", b.Open("a"), b.Open("b"))
	}
}

func TestBreakerNotFoundIsAnAnswer(t *testing.T) {
	c := &clock{now: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
	b := breaker.New(breaker.Options{Now: c.Now, Probe: func(context.Context, string) error { return queue.ErrQueueNotFound }})
	b.Failed("gone", errDown)
	c.step(time.Second)
	if b.Tick(context.Background()); b.Open("gone") {
		t.Fatal("a store answering queue not found is down to the breaker")
	}
}

func TestBreakerOpensAtMostMaxOpen(t *testing.T) {
	b, _, _, _, _ := newBreaker(t)
	for i := range breaker.MaxOpen + 10 {
		b.Failed(fmt.Sprintf("made-up-%d", i), errDown)
	}
	if n := len(b.OpenQueues()); n != breaker.MaxOpen {
		t.Fatalf("%d breakers open, want at most %d", n, breaker.MaxOpen)
	}
}

// TestBreakerCheckCostsNothing: the check each protected request makes is
// an atomic load, and no allocation, open or closed.
func TestBreakerCheckCostsNothing(t *testing.T) {
	b, _, _, _, _ := newBreaker(t)
	if n := testing.AllocsPerRun(1000, func() { b.Open("sale") }); n != 0 {
		t.Errorf("Open (all closed) allocates %v times", n)
	}
	b.Failed("other", errDown)
	if n := testing.AllocsPerRun(1000, func() { b.Open("sale") }); n != 0 {
		t.Errorf("Open (some open) allocates %v times", n)
	}
	// Nor does the guarded store add any to a call it lets through.
	ctx := context.Background()
	m := memstore.New(nil)
	if err := m.PutConfig(ctx, "sale", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	m.Enter(ctx, "sale", "ann")
	s := breaker.Guard(m, b, true)
	bare := testing.AllocsPerRun(1000, func() { m.Status(ctx, "sale", "ann") })
	if n := testing.AllocsPerRun(1000, func() { s.Status(ctx, "sale", "ann") }); n != bare {
		t.Errorf("a guarded Status allocates %v times, the store's own %v", n, bare)
	}
}

func BenchmarkBreakerOpen(b *testing.B) {
	br := breaker.New(breaker.Options{})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			br.Open("default")
		}
	})
}

// failing is a store whose calls fail while down.
type failing struct {
	queue.Store
	mu    sync.Mutex
	down  bool
	calls int
}

func (f *failing) Status(ctx context.Context, q, user string) (queue.Standing, error) {
	f.mu.Lock()
	f.calls++
	down := f.down
	f.mu.Unlock()
	if down {
		return queue.Standing{}, errDown
	}
	return f.Store.Status(ctx, q, user)
}

func (f *failing) EndUse(ctx context.Context, q, user, token, owner string, consumed bool) error {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	return f.Store.EndUse(ctx, q, user, token, owner, consumed)
}

func TestStoreAnswersAtOnceWhileOpen(t *testing.T) {
	ctx := context.Background()
	b, c, _, _, _ := newBreaker(t)
	f := &failing{Store: memstore.New(nil), down: true}
	if err := f.PutConfig(ctx, "q", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	s := breaker.Guard(f, b, true)
	if _, err := s.Status(ctx, "q", "alice"); !errors.Is(err, errDown) {
		t.Fatalf("first call = %v, want the store's own failure", err)
	}
	for range 10 {
		if _, err := s.Status(ctx, "q", "alice"); !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, queue.ErrUnavailable) {
			t.Fatalf("call while open = %v, want ErrOpen (queue.ErrUnavailable)", err)
		}
	}
	// A spent token's compare-and-delete is never cut short.
	if err := s.EndUse(ctx, "q", "alice", "t", "o", true); err != nil {
		t.Fatal(err)
	}
	if f.calls != 2 {
		t.Fatalf("the store was asked %d times, want 2 (the failure, the EndUse)", f.calls)
	}
	f.mu.Lock()
	f.down = false
	f.mu.Unlock()
	c.step(time.Second)
	b.Tick(ctx)
	if _, err := s.Status(ctx, "q", "alice"); err != nil {
		t.Fatalf("after the probe found the store back: %v", err)
	}
}

func TestStoreIgnoresCallersWhoLeft(t *testing.T) {
	b, _, _, _, _ := newBreaker(t)
	f := &failing{Store: memstore.New(nil), down: true}
	s := breaker.Guard(f, b, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Status(ctx, "q", "alice")
	if b.Open("q") {
		t.Fatal("a caller that left opened the breaker")
	}
}
