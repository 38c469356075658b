package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// How a sale is measured (issue 38): each place keeps when it was taken
// and the wait its newcomer was shown, and admission answers them; the
// per-minute rows take any instance's writes, repeated or raced, and lapse
// after their keep.

func init() {
	register(suiteTest{"PlaceKeepsWhenAndTheWaitShown", testPlaceKeepsWhen},
		suiteTest{"RowsAddUpRaceFreeAndLapse", testRows})
}

func testPlaceKeepsWhen(t *testing.T, s queue.Store, clock Clock) {
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 100, 10, 100*time.Millisecond
	q := newQueue(t, s, c)
	start := clock.Now()
	shown := map[string]int64{}
	for i := range 15 {
		u := fmt.Sprintf("u%02d", i)
		e := mustEnter(t, s, q, u)
		shown[u] = e.Pace.Estimate(e.Position, e.Length).Seconds
	}
	if shown["u00"] != 0 || shown["u14"] != 1 {
		t.Fatalf("shown %v: want 0 within the first batch, ceil(15/100 per s) = 1 s at 15th", shown)
	}
	mustLeave(t, s, q, "u03")
	const waited = 300 * time.Millisecond
	clock.Sleep(waited)
	mustEnter(t, s, q, "u01") // again: the place, and when it was taken, are kept
	e := mustEnter(t, s, q, "u03")
	shown["u03"] = e.Pace.Estimate(e.Position, e.Length).Seconds
	got := map[string]rollup.Wait{}
	for len(got) < 15 {
		a := tickDue(t, s, clock, q, 10)
		if len(a.Waited) != len(a.Admitted) {
			t.Fatalf("%d admitted, %d waits", len(a.Admitted), len(a.Waited))
		}
		for i, u := range a.Admitted {
			got[u] = a.Waited[i]
		}
	}
	for u, w := range got {
		d, ok := w.TimeInLine()
		switch {
		case !ok:
			t.Errorf("%s: no time in line: %+v", u, w)
		case w.Shown != shown[u]:
			t.Errorf("%s: shown %d kept, %d told at entry", u, w.Shown, shown[u])
		case w.Entered.Before(start.Add(-time.Second)) || w.Admitted.Before(w.Entered):
			t.Errorf("%s: entered %v, admitted %v, test started %v", u, w.Entered, w.Admitted, start)
		case u != "u03" && d < waited:
			t.Errorf("%s: %v in line, but admission began %v after they took their place", u, d, waited)
		}
	}
}

func testRows(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	q := fmt.Sprintf("q%d", rand.Int64()) // rows need no queue config
	start := clock.Now()
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := rollup.Write{Max: map[string]int64{"entered": int64(i)},
				Min: map[string]int64{"from.entered": int64(i)}, Set: map[string]string{"length": "7"}, Keep: time.Hour}
			if i%2 == 0 { // the even ones twice, first with nothing to add: Max, Min and Set repeat safely
				if err := s.Roll(ctx, q, w); err != nil {
					t.Error(err)
				}
			}
			w.Add = map[string]int64{"ordered": 1}
			if err := s.Roll(ctx, q, w); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rows, err := s.Rollups(ctx, q, start.Add(-time.Minute), clock.Now().Add(time.Minute))
	if err != nil || len(rows) == 0 || len(rows) > 2 { // a minute may have turned meanwhile (a wall clock)
		t.Fatalf("Rollups = %d rows, %v; want the one or two minutes written", len(rows), err)
	}
	var ordered, most, least int64 = 0, -1, 1 << 62
	for _, r := range rows {
		n := func(k string) int64 { v, _ := strconv.ParseInt(r.Fields[k], 10, 64); return v }
		ordered += n("ordered")
		most, least = max(most, n("entered")), min(least, n("from.entered"))
		if r.Fields["length"] != "7" || r.Minute.Second() != 0 {
			t.Errorf("row %v: %v", r.Minute, r.Fields)
		}
	}
	if ordered != 30 || most != 29 || least != 0 {
		t.Errorf("ordered %d, most entered %d, least from.entered %d; want 30 (each added once), 29, 0", ordered, most, least)
	}
	// Nothing is kept past its keep.
	const keep = 200 * time.Millisecond
	q2 := q + "-brief"
	if err := s.Roll(ctx, q2, rollup.Write{Add: map[string]int64{"ordered": 1}, Keep: keep}); err != nil {
		t.Fatal(err)
	}
	clock.Sleep(2 * keep)
	if rows, err := s.Rollups(ctx, q2, start.Add(-time.Minute), clock.Now().Add(time.Minute)); err != nil || len(rows) != 0 {
		t.Errorf("after its keep: %v, %v; want no rows", rows, err)
	}
}
