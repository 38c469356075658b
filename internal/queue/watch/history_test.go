package watch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/queue/watch"
)

// TestHistoryKeepsTheRecentSamples: every queue is sampled at the interval,
// samples older than the window go, and the points say what Stats said.
func TestHistoryKeepsTheRecentSamples(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, line := memstore.New(nil), signals.New()
	svc, op := queue.NewService(store, 0, line), operate.New(store, line)
	for _, q := range []string{"a", "b"} {
		if err := op.PutConfig(ctx, q, queue.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 7 {
		svc.Enter(ctx, "a", fmt.Sprintf("u%d", i))
	}
	h := watch.NewHistory(op, 10*time.Millisecond, 100*time.Millisecond)
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	// Samples come when the machine lets the sampler run: wait for three of
	// each, and past the window, rather than a fixed time.
	began := time.Now()
	for deadline := began.Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pa, pb := h.Points("a"), h.Points("b")
		if len(pa) >= 3 && len(pb) >= 3 && time.Since(began) > 200*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("points after 20 s: a %d, b %d", len(pa), len(pb))
		}
	}
	cancel()
	<-done
	pa, pb := h.Points("a"), h.Points("b")
	if last := pa[len(pa)-1]; last.Length != 7 || pb[len(pb)-1].Length != 0 {
		t.Errorf("last samples: a %+v, b %+v", last, pb[len(pb)-1])
	}
	if span := pa[len(pa)-1].At.Sub(pa[0].At); span > 100*time.Millisecond {
		t.Errorf("kept %v of samples, want at most the 100 ms window", span)
	}
	if len(h.Points("nosuch")) != 0 {
		t.Error("points for a queue that does not exist")
	}
}
