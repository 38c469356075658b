package queue

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/perqueue"
)

// presenceLine is a line of 100,000 whose seen marks reach 50 from the
// front ("u<n>" stands at n), under cfg, recording the marks sent.
type presenceLine struct {
	Store
	cfg Config

	mu    sync.Mutex
	marks []string // "hidden user" or "visible user", in the order sent
}

func (l *presenceLine) Config(_ context.Context, q string) (Config, error) {
	if q != "q" {
		return Config{}, ErrQueueNotFound
	}
	return l.cfg, nil
}

func (l *presenceLine) Status(_ context.Context, q, user string) (Standing, error) {
	if q != "q" {
		return Standing{}, ErrQueueNotFound
	}
	var n int64
	fmt.Sscanf(user, "u%d", &n)
	reach := int64(50)
	if l.cfg.AbandonAfter == 0 {
		reach = 0 // the tick state's, where no-shows are not skipped (admission.PlanTick)
	}
	return Standing{State: Waiting, Position: n, Length: 100_000, Ticket: n,
		Pace: Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond, Reach: reach}}, nil
}

func (l *presenceLine) Seen(_ context.Context, q string, users []string, hidden bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range slices.Sorted(slices.Values(users)) {
		if hidden {
			l.marks = append(l.marks, "hidden "+u)
		} else {
			l.marks = append(l.marks, "visible "+u)
		}
	}
	return nil
}

// sent flushes svc's marks and answers those the store got, sorted.
func (l *presenceLine) sent(svc *Service) []string {
	svc.presence.flush(context.Background(), perqueue.NewTroubles(slog.New(slog.DiscardHandler), "test"))
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Sorted(slices.Values(l.marks))
	l.marks = nil
	return out
}

// TestHiddenMarks (issue 55): a hidden word (a poll's or a beacon's, both
// a status read) is marked whatever the position, a visible one within
// the reach only; the last word on one instance wins; a queue that skips
// no no-shows gets none.
func TestHiddenMarks(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.AbandonAfter = 15 * time.Second
	store := &presenceLine{cfg: cfg}
	svc := NewService(store, 0, nil)
	for _, c := range []struct {
		user   string
		hidden bool
	}{{"u10", true}, {"u20", false}, {"u30", false}, {"u100", true}} {
		if _, err := svc.Status(ctx, "q", c.user, c.hidden); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		user   string
		hidden bool
	}{{"u30", true}, {"u200", true}, {"u300", true}, {"u300", false}} {
		if _, err := svc.Status(ctx, "q", c.user, c.hidden); err != nil { // the beacon
			t.Fatal(err)
		}
	}
	want := []string{"hidden u10", "hidden u100", "hidden u200", "hidden u30", "hidden u300", "visible u20"}
	if got := store.sent(svc); !slices.Equal(got, want) {
		t.Errorf("marks sent %v, want %v (a hidden word marks beyond the reach, u300's visible one there does not)", got, want)
	}
	// A held poll (waitSeconds) rechecks, at least once when its hold
	// ends, as the hidden page it was.
	v, err := svc.Status(ctx, "q", "u5", true)
	if err != nil || !v.AdmissionNear || !v.Hidden {
		t.Fatalf("u5 near the front, hidden: %+v, %v; want AdmissionNear and Hidden", v, err)
	}
	store.sent(svc)
	if v, err := svc.HoldFrom(ctx, "q", "u5", 50*time.Millisecond, v); err != nil || !v.Hidden {
		t.Fatalf("held: %+v, %v; want still hidden", v, err)
	}
	if got := store.sent(svc); !slices.Equal(got, []string{"hidden u5"}) {
		t.Errorf("a held hidden poll's rechecks sent %v, want [hidden u5]", got)
	}
	if _, err := svc.Status(ctx, "elsewhere", "u1", true); err != ErrQueueNotFound {
		t.Errorf("a beacon to no queue: %v, want ErrQueueNotFound", err)
	}
	store.cfg.AbandonAfter = 0
	svc.reconfigured("q")
	if _, err := svc.Status(ctx, "q", "u1", true); err != nil {
		t.Fatal(err)
	}
	if got := store.sent(svc); len(got) != 0 {
		t.Errorf("a queue that skips no no-shows was sent %v, want nothing", got)
	}
}

// TestHiddenPollAfter (issue 55): a hidden page far from the front is
// asked back after up to 30 s, never more than a tenth of the token's
// lifetime, nor more than a visible page's band where that is longer; near
// the front, as a visible page.
func TestHiddenPollAfter(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		ttl      time.Duration
		user     string
		min, max int64
	}{
		{"far", 5 * time.Minute, "u90000", 24, 30},
		{"far, short tokens", 100 * time.Second, "u90000", 8, 12},
		{"far, shorter tokens", 30 * time.Second, "u90000", 8, 12},
		{"near", 5 * time.Minute, "u40", 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.TokenTTL = c.ttl
			svc := NewService(&presenceLine{cfg: cfg}, 0, nil)
			for range 50 {
				v, err := svc.Status(ctx, "q", c.user, true)
				if err != nil {
					t.Fatal(err)
				}
				if p := *v.PollAfterSeconds; p < c.min || p > c.max || !v.Hidden {
					t.Fatalf("pollAfterSeconds %d (estimate %+v, hidden %v), want %d to %d", p, v.Estimate, v.Hidden, c.min, c.max)
				}
			}
			v, err := svc.Status(ctx, "q", c.user)
			if err != nil || *v.PollAfterSeconds > 12 || v.Hidden {
				t.Errorf("a visible page: %+v, %v; want its band, at most 12 s", v, err)
			}
		})
	}
}
