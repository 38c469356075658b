package storetest

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// The suite's part for when a queue's states last changed (Stats.Changed),
// which the shop's events name their happenings by.
func init() {
	register(suiteTest{"ChangesAreStampedWhenTheyHappen", testChangesStamped},
		suiteTest{"StatsShowAStampWithItsState", testStatsStampWithState})
}

// testChangesStamped: a new queue has changed nothing; pausing, resuming,
// another method, selling out and a restock after it are each stamped with
// the store's time when they happen, and only then: a config written again
// with the same pause and method, or a sale's count that leaves the queue
// selling, moves no stamp.
func testChangesStamped(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	q := newQueue(t, s, c)
	changed := func() queue.Changes {
		t.Helper()
		st, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		return st.Changed
	}
	if got := changed(); got != (queue.Changes{}) {
		t.Fatalf("a new queue: %+v, want nothing changed", got)
	}
	put := func(edit func(*queue.Config)) {
		t.Helper()
		clock.Sleep(5 * time.Millisecond) // each step at a later instant
		edit(&c)
		if err := s.PutConfig(ctx, q, c); err != nil {
			t.Fatalf("PutConfig: %v", err)
		}
	}
	stock := func(st queue.Stock, onlyLower bool) {
		t.Helper()
		clock.Sleep(5 * time.Millisecond)
		if _, err := s.SetStock(ctx, q, st, onlyLower); err != nil {
			t.Fatalf("SetStock: %v", err)
		}
	}
	// stamped checks that the step stamped the field which picks (none:
	// nil) with the store's time, and left the others as they were.
	paused := func(c *queue.Changes) *time.Time { return &c.Paused }
	method := func(c *queue.Changes) *time.Time { return &c.Method }
	soldOut := func(c *queue.Changes) *time.Time { return &c.SoldOut }
	var last queue.Changes
	stamped := func(step string, which func(*queue.Changes) *time.Time) {
		t.Helper()
		got, want := changed(), last
		if which != nil {
			at, before := *which(&got), *which(&last)
			if !at.After(before) || at.After(clock.Now().Add(time.Second)) {
				t.Fatalf("%s: stamped %v (before it: %v; the store's clock: %v), want the time it happened", step, at, before, clock.Now())
			}
			*which(&want) = at
		}
		if got != want {
			t.Fatalf("%s: %+v, want %+v", step, got, want)
		}
		last = got
	}
	put(func(c *queue.Config) { c.Paused = true })
	stamped("paused", paused)
	put(func(c *queue.Config) { c.RatePerSecond = 5000 })
	stamped("the rate changed while paused", nil)
	put(func(c *queue.Config) { c.Paused = false })
	stamped("resumed", paused)
	put(func(c *queue.Config) { c.Method = queue.MethodReject })
	stamped("closed to newcomers", method)
	put(func(c *queue.Config) { c.Capacity = 500 })
	stamped("the capacity changed", nil)

	stock(units(10), false)
	stamped("the stock told", nil)
	stock(units(3), true)
	stamped("a sale's count", nil)
	stock(units(0), true)
	stamped("sold out", soldOut)
	stock(units(0), false)
	stamped("sold out told again", nil)
	stock(unknown, false)
	stamped("restocked, the count not known", soldOut)
	stock(units(5), false)
	stamped("the count told while selling", nil)
}

// testStatsStampWithState: a queue's stats are one reading, so the stamp
// of its pause comes with the state it stamped. Resumed and paused in
// turn while two readers read its stats, every stamp (none yet, each
// pause, each resume) is read with one state only. Read apart, the stamp
// of a resume with the pause that followed it is a pause the shop is told
// of at the resume's instant: a pause that never happened (package
// events names a pause by its stamp).
func testStatsStampWithState(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	q := newQueue(t, s, c)
	var (
		mu    sync.Mutex
		state = map[time.Time]bool{} // stamp → paused, as first read
		torn  = map[time.Time]bool{} // stamps read with both states
		reads int
	)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				st, err := s.Stats(ctx, q)
				if err != nil {
					t.Errorf("Stats: %v", err)
					return
				}
				at, paused := st.Changed.Paused, st.Config.Paused
				mu.Lock()
				reads++
				if was, seen := state[at]; !seen {
					state[at] = paused
				} else if was != paused {
					torn[at] = true
				}
				mu.Unlock()
			}
		})
	}
	const turns = 100
	for i := range turns {
		clock.Sleep(2 * time.Millisecond) // each turn stamped at its own instant
		c.Paused = i%2 == 0
		if err := s.PutConfig(ctx, q, c); err != nil {
			t.Errorf("PutConfig: %v", err)
			break
		}
	}
	close(done)
	wg.Wait()
	if len(torn) > 0 {
		stamps := slices.SortedFunc(maps.Keys(torn), time.Time.Compare)
		t.Fatalf("over %d turns and %d readings, %d stamps were each read both paused and not, the first %v",
			turns, reads, len(torn), stamps[:min(3, len(stamps))])
	}
}
