package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/storetest"
)

// TestDurableEstimate: the estimate's model admission fitted (issue 54:
// the share who take their turn, the rate's spread, the phases' changes
// ahead, the last surprise) and the range each place kept come back after
// a restart, whether the log replays them or a snapshot holds them: every
// answer tells the same range as before, and admission answers the waits
// kept, apart where a pause came after them.
func TestDurableEstimate(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewFakeClock()
	dir := t.TempDir()
	s := mustOpen(t, dir, journal.Always, clock.Now)
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval, c.AbandonAfter = 2, 10, 100*time.Millisecond, time.Second
	c, err := queue.Apply(c, map[string]any{"phases": json.RawMessage(`[{"name": "slower", "startsAt": "` +
		clock.Now().Add(30*time.Second).Format(time.RFC3339Nano) + `", "ratePerSecond": 1}]`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	var present []string
	for i := range 60 {
		u := fmt.Sprintf("u%02d", i)
		mustEnterQ(t, s, u)
		if i%3 != 2 {
			present = append(present, u)
		}
	}
	told := map[string]estimate.Estimate{}
	for i := range 130 { // 13 s: the pace measured, no-shows skipped
		if err := s.Seen(ctx, "q", present, false); err != nil {
			t.Fatal(err)
		}
		mustTick(t, s, clock)
		if i == 120 {
			e := mustEnterQ(t, s, "before")
			told["before"], present = e.Pace.Estimate(e.Position, e.Length), append(present, "before")
		}
	}
	c.Paused = true // a surprise: "before" is admitted apart
	if err := s.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	mustTick(t, s, clock)
	c.Paused = false
	if err := s.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	mustTick(t, s, clock)
	clock.Sleep(time.Millisecond)
	e := mustEnterQ(t, s, "after")
	told["after"] = e.Pace.Estimate(e.Position, e.Length)
	p := e.Pace
	if p.Measured == 0 || p.Claim >= 1 || p.Claim <= 0 || len(p.Ahead) == 0 || !told["before"].Known || !told["after"].Known {
		t.Fatalf("pace %+v, told %+v: want it measured, some no-shows, the phase ahead and ranges known", p, told)
	}

	for _, compact := range []bool{false, true} {
		if compact {
			if err := s.Compact(); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		s = mustOpen(t, dir, journal.Always, clock.Now)
		got, err := s.Status(ctx, "q", "after")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(p, got.Pace); diff != "" {
			t.Errorf("the pace after a restart (compacted %v) (-before +after):\n%s", compact, diff)
		}
	}

	c.RatePerSecond, c.BatchSize, c.Interval, c.AbandonAfter, c.Phases = 10_000, 100, time.Millisecond, 0, nil
	if err := s.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	waits := map[string]rollup.Wait{}
	for range 10 {
		a := mustTick(t, s, clock)
		for i, u := range a.Admitted {
			waits[u] = a.Waited[i]
		}
	}
	for u, apart := range map[string]bool{"before": true, "after": false} {
		w, est := waits[u], told[u]
		if w.Shown != est.Seconds || w.Low != est.Low || w.High != est.High || w.Apart != apart {
			t.Errorf("%s: admitted with %d s in %d–%d s kept, apart %v; told %+v, want apart %v", u, w.Shown, w.Low, w.High, w.Apart, est, apart)
		}
	}
}

func mustEnterQ(t *testing.T, s *memstore.Store, user string) queue.Standing {
	t.Helper()
	e, err := s.Enter(context.Background(), "q", user)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// mustTick lets the clock reach q's next tick and runs it.
func mustTick(t *testing.T, s *memstore.Store, clock *storetest.FakeClock) queue.Admission {
	t.Helper()
	for range 100 {
		a, err := s.Admit(context.Background(), "q", queue.NewTokens(100))
		if err != nil {
			t.Fatal(err)
		}
		if a.Ticked {
			return a
		}
		clock.Sleep(a.NextIn)
	}
	t.Fatal("no tick came due")
	return queue.Admission{}
}
