package watch

import (
	"context"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
)

// HistoryPoint is one sample of a queue's numbers.
type HistoryPoint struct {
	At            time.Time
	Length        int64
	AdmittedTotal int64
	// EffectiveRate is the rate admission used (Stats.EffectiveRate).
	EffectiveRate float64
}

// History samples every queue's length and admitted total at a fixed
// interval and keeps the recent ones, so an operator who opens the admin
// page on sale night sees the last minutes at once, not a chart that starts
// when the page did. Each instance keeps its own; the line is shared, so
// they agree.
type History struct {
	svc         *operate.Operator
	every, keep time.Duration

	mu     sync.Mutex
	points map[string][]HistoryPoint
}

// NewHistory returns a History sampling svc every `every`, keeping `keep`.
func NewHistory(svc *operate.Operator, every, keep time.Duration) *History {
	return &History{svc: svc, every: every, keep: keep, points: map[string][]HistoryPoint{}}
}

// Every is the sampling interval.
func (h *History) Every() time.Duration { return h.every }

// Run samples until ctx ends. A failed sample (the store, or the queue's
// node, away) is skipped: the gap shows in the chart.
func (h *History) Run(ctx context.Context) {
	h.sample(ctx, time.Now())
	perqueue.Every(ctx, h.every, func() { h.sample(ctx, time.Now()) })
}

func (h *History) sample(ctx context.Context, now time.Time) {
	names := h.svc.KnownQueues(ctx)
	var takenMu sync.Mutex
	taken := make(map[string]HistoryPoint, len(names))
	perqueue.Each(ctx, names, perqueue.CallTimeout, func(ctx context.Context, q string) {
		st, err := h.svc.Stats(ctx, q)
		if err != nil {
			return
		}
		takenMu.Lock()
		taken[q] = HistoryPoint{At: now, Length: st.Length, AdmittedTotal: st.AdmittedTotal, EffectiveRate: st.EffectiveRate}
		takenMu.Unlock()
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	for q, p := range taken {
		pts := append(h.points[q], p)
		drop := 0
		for drop < len(pts) && now.Sub(pts[drop].At) > h.keep {
			drop++
		}
		h.points[q] = pts[drop:]
	}
	listed := make(map[string]bool, len(names))
	for _, q := range names {
		listed[q] = true
	}
	for q := range h.points { // a queue no longer listed: forget it
		if !listed[q] {
			delete(h.points, q)
		}
	}
}

// Points returns the queue's samples, oldest first.
func (h *History) Points(queue string) []HistoryPoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HistoryPoint(nil), h.points[queue]...)
}
