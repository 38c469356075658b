package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// TestRangesComeTrueOnTheFakeClock is the estimate's own proof (issue 54)
// on a deterministic clock: a sale at 20/s in which 30% of those who
// enter never come back (skipped as no-shows at the front, 15 s after they
// were last seen), and a phase that halves the rate 60 s in, announced
// from the start. A herd of 800 comes at once, then 25 a second for 90 s.
// Among those who entered after settled, at least 90% are admitted within
// the range told at entry, and the median of the wait realised ÷ the
// point told is within 0.9–1.1; the phase was announced, so nobody is
// scored apart.
//
// settled is 20 s: until then the herd's no-shows have not reached the
// front, the share who take their turn reads high and the range stays
// wide for them (the prior's part for no-shows). With that share measured
// over a minute, not estimate.ClaimWindow, it read 0.89 at 20 s and 61% of
// those entering from 20 s on were admitted within their range; now all
// are. Everyone's figures, the herd's too, are logged beside.
func TestRangesComeTrueOnTheFakeClock(t *testing.T) {
	clock := newFakeClock()
	store := memstore.New(clock.Now)
	ctx := context.Background()
	start := clock.Now()
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval, c.AbandonAfter = 20, 10, 100*time.Millisecond, 15*time.Second
	c, err := queue.Apply(c, map[string]any{"phases": json.RawMessage(`[{"name": "half", "startsAt": "` +
		start.Add(time.Minute).Format(time.RFC3339Nano) + `", "ratePerSecond": 10}]`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	var present []string // who asks for their status (every 5 s)
	entered := 0
	enter := func() {
		u := fmt.Sprintf("u%d", entered)
		if _, err := store.Enter(ctx, "q", u); err != nil {
			t.Fatal(err)
		}
		if entered%10 >= 3 {
			present = append(present, u)
		}
		entered++
	}
	for range 800 {
		enter()
	}
	var waits []rollup.Wait
	for tick := 0; ; tick++ {
		elapsed := time.Duration(tick) * c.Interval
		if elapsed < 90*time.Second {
			for entered < 800+int(25*elapsed.Seconds()) {
				enter()
			}
		}
		if elapsed%(5*time.Second) == 0 {
			if err := store.Seen(ctx, "q", present, false); err != nil {
				t.Fatal(err)
			}
		}
		a, err := store.Admit(ctx, "q", queue.NewTokens(c.BatchSize))
		if err != nil || !a.Ticked {
			t.Fatalf("tick %d: %+v, %v", tick, a, err)
		}
		waits = append(waits, a.Waited...)
		if st, err := store.Stats(ctx, "q"); err != nil || elapsed > 90*time.Second && st.Length == 0 {
			break
		}
		if elapsed > 10*time.Minute {
			t.Fatal("the line never emptied")
		}
		clock.Add(c.Interval)
	}
	logRanges(t, waits, start, 0)
	n, coverage, median, apart := logRanges(t, waits, start, settled)
	if n < 500 || coverage < 0.9 || median < 0.9 || median > 1.1 || apart > 0 {
		t.Errorf("%d admitted after %v: coverage %.1f%% (want ≥ 90%%), median realised ÷ point %.3f (want 0.9–1.1), %d apart (want none: the phase was announced)",
			n, settled, 100*coverage, median, apart)
	}
}

// settled is when a sale's estimate has what it needs to come true
// (TestRangesComeTrueOnTheFakeClock).
const settled = 20 * time.Second

// logRanges logs, and answers, the figures of the waits of those who
// entered from after into the sale begun at start: how many, the share admitted within their range,
// realised ÷ point at the median, and how many were scored apart. Every
// one must have a range and a time in line kept.
func logRanges(t *testing.T, waits []rollup.Wait, start time.Time, after time.Duration) (n int, coverage, median float64, apart int) {
	t.Helper()
	var ratios, widths []float64
	covered := 0
	for _, w := range waits {
		if w.Entered.Before(start.Add(after)) {
			continue
		}
		in, ok := w.Covered()
		r, timed := w.Ratio()
		if !ok || !timed {
			t.Fatalf("a wait with no range or no time kept: %+v", w)
		}
		if in {
			covered++
		}
		if w.Apart {
			apart++
		}
		ratios = append(ratios, r)
		widths = append(widths, float64(w.High)/float64(max(w.Low, 1)))
	}
	if n = len(ratios); n == 0 {
		return 0, 0, 0, apart
	}
	slices.Sort(ratios)
	slices.Sort(widths)
	coverage, median = float64(covered)/float64(n), ratios[n/2]
	t.Logf("entered from %v: %d admitted, coverage %.1f%%, realised ÷ point p10 %.3f, p50 %.3f, p90 %.3f; width high ÷ low at the median %.3f",
		after, n, 100*coverage, ratios[n/10], median, ratios[n*9/10], widths[n/2])
	return n, coverage, median, apart
}
