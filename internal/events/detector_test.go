package events_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/testenv"
)

// collector is a Publisher that keeps what it was handed.
type collector struct {
	mu     sync.Mutex
	events []events.Event
}

func (c *collector) Publish(e events.Event) {
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
}

func (c *collector) all() []events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// TestThreeInstancesPublishEachEventOnce: three Services over one real
// Redis, each with its detector, read the same queue on passes made at
// once; every happening is published by exactly one of them, whichever
// wins its claim. On the embedded store, the one instance publishes each.
func TestThreeInstancesPublishEachEventOnce(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		rdb := testenv.RedisClient(t)
		prefix := fmt.Sprintf("wrevents%d:", rand.Int64())
		var stores []queue.Store
		for range 3 {
			stores = append(stores, redisstore.New(rdb, prefix))
		}
		happenEach(t, stores)
	})
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		// A clock that moves on a millisecond at every reading, as
		// changes made through HTTP are apart at least that much.
		var ticks atomic.Int64
		happenEach(t, []queue.Store{memstore.New(func() time.Time {
			return time.Now().Add(time.Duration(ticks.Add(1)) * time.Millisecond)
		})})
	})
}

// instance is one instance's line: the user's path and the operator's
// calls, on one line of signals.
type instance struct {
	*queue.Service
	*operate.Operator
}

// happenEach makes one of each happening in a queue, with a pass of every
// instance's detector (one per store) after each, all at once, and checks
// that each happening was published once in all.
func happenEach(t *testing.T, stores []queue.Store) {
	ctx := context.Background()
	q := fmt.Sprintf("sale%d", rand.Int64())
	var services []instance
	var detectors []*events.Detector
	out := &collector{}
	for _, s := range stores {
		line := signals.New()
		svc := instance{queue.NewService(s, 0, line), operate.New(s, line)}
		services = append(services, svc)
		detectors = append(detectors, events.NewDetector(events.Options{Store: svc, Publisher: out,
			Queues: func(context.Context) []string { return []string{q} }}))
	}
	pass := func() {
		var wg sync.WaitGroup
		for _, d := range detectors {
			wg.Go(func() { d.Pass(ctx) })
		}
		wg.Wait()
	}
	// An instance to make each change through, each time another.
	turn := 0
	through := func() instance { turn++; return services[turn%len(services)] }
	c := queue.DefaultConfig()
	put := func(edit func(*queue.Config)) {
		t.Helper()
		edit(&c)
		if err := through().PutConfig(ctx, q, c); err != nil {
			t.Fatal(err)
		}
	}
	stock := func(st queue.Stock) {
		t.Helper()
		if _, err := through().SetStock(ctx, q, st, false); err != nil {
			t.Fatal(err)
		}
	}
	// Opened, a phase begun and closed a moment ago: the instances' first
	// pass finds all three.
	now := time.Now().Truncate(time.Millisecond)
	put(func(c *queue.Config) {
		c.OpensAt, c.ClosesAt = now.Add(-2*time.Second), now.Add(-time.Second)
		c.Phases = []queue.Phase{{Name: "members", StartsAt: now.Add(-1500 * time.Millisecond)}}
	})
	pass()
	put(func(c *queue.Config) { c.Paused = true })
	pass()
	put(func(c *queue.Config) { c.Paused = false })
	pass()
	// Paused and resumed between two passes: only the resumption is seen.
	put(func(c *queue.Config) { c.Paused = true })
	put(func(c *queue.Config) { c.Paused = false })
	pass()
	put(func(c *queue.Config) { c.RatePerSecond = 50 })
	pass()
	stock(queue.Stock{Known: true, Units: 0})
	pass()
	stock(queue.Stock{Known: true, Units: 20})
	pass()
	put(func(c *queue.Config) { c.Method = queue.MethodReject })
	pass()
	pass() // nothing new
	// An instance that starts now publishes nothing: every happening it
	// finds has been claimed.
	late := events.NewDetector(events.Options{Store: services[0], Publisher: out,
		Queues: func(context.Context) []string { return []string{q} }})
	late.Pass(ctx)

	st, err := services[0].Stats(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(at time.Time) string { return fmt.Sprint(at.UnixMilli()) }
	rates, err := services[0].RateChanges(ctx, q)
	if err != nil || len(rates) != 2 {
		t.Fatalf("the rate log: %v, %v; want the creation's and the change's", rates, err)
	}
	want := []string{
		"queue.opened:" + q + ":" + ms(c.OpensAt),
		"phase.started:" + q + ":" + ms(c.Phases[0].StartsAt) + ":members",
		"queue.closed:" + q + ":" + ms(c.ClosesAt),
		"queue.paused:" + q + ":?", // the first pause's stamp, since moved on
		"queue.resumed:" + q + ":?",
		"queue.resumed:" + q + ":" + ms(st.Changed.Paused),
		"rate.changed:" + q + ":" + ms(rates[1].At) + ":50",
		"stock.sold_out:" + q + ":?",
		"stock.restocked:" + q + ":" + ms(st.Changed.SoldOut),
		"queue.closed:" + q + ":" + ms(st.Changed.Method),
	}
	var got []string
	for _, e := range out.all() {
		got = append(got, e.ID)
	}
	// The instants of states changed again since are the store's own; the
	// rest must be exactly as read now.
	for i, id := range want {
		prefix, ok := strings.CutSuffix(id, "?")
		if !ok {
			continue
		}
		for _, g := range got {
			if strings.HasPrefix(g, prefix) && !slices.Contains(want, g) {
				want[i] = g
				break
			}
		}
	}
	// One instance publishes in the order things happened; several at once
	// interleave theirs within a pass (one claims the opening while another
	// claims the closing), so then only which were published, each once,
	// is fixed.
	if len(stores) > 1 {
		slices.Sort(want)
		slices.Sort(got)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("published, by every instance together (-want +got):\n%s", diff)
	}
	// Each published happening is a moment of the sale's rows, recorded
	// once for all instances, by the one whose claim won.
	var published, moments []string
	for _, e := range out.all() {
		published = append(published, string(e.Type)+"@"+ms(e.At))
	}
	r, err := services[0].Rollups(ctx, q, now.Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Moments {
		moments = append(moments, m.Type+"@"+ms(m.At))
	}
	slices.Sort(published)
	slices.Sort(moments)
	if diff := cmp.Diff(published, moments); diff != "" {
		t.Errorf("the sale's moments against the events published (-published +moments):\n%s", diff)
	}
}
