package events_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/queue"
)

// found is every kind's events in r, as type and id, in table order.
func found(r events.Reading) []string {
	var out []string
	for _, k := range events.Kinds {
		for _, e := range k.Found(r) {
			if e.Type != k.Type || e.Queue != r.Queue {
				panic("a kind found another type's or queue's event")
			}
			out = append(out, e.ID)
		}
	}
	return out
}

// TestKindsFindHappeningsByTheStoresInstants: each state names its
// happening by the instant the store gives it, whenever it is read; a
// state undone is its undoing's event; nothing is found in a new queue.
func TestKindsFindHappeningsByTheStoresInstants(t *testing.T) {
	t0 := time.UnixMilli(1_765_000_000_000).UTC()
	ms := func(d time.Duration) time.Time { return t0.Add(d) }
	base := func(edit func(*queue.Stats)) queue.Stats {
		st := queue.Stats{Config: queue.DefaultConfig()}
		if edit != nil {
			edit(&st)
		}
		return st
	}
	tests := []struct {
		name  string
		stats queue.Stats
		rates []queue.RateChange
		now   time.Time
		want  []string
	}{
		{"a new queue", base(nil), nil, ms(time.Hour), nil},
		{"paused", base(func(s *queue.Stats) { s.Config.Paused, s.Changed.Paused = true, ms(5*time.Millisecond) }), nil, ms(time.Minute),
			[]string{"queue.paused:sale:1765000000005"}},
		{"resumed", base(func(s *queue.Stats) { s.Changed.Paused = ms(9 * time.Millisecond) }), nil, ms(time.Minute),
			[]string{"queue.resumed:sale:1765000000009"}},
		{"opening to come", base(func(s *queue.Stats) { s.Config.OpensAt = ms(time.Minute) }), nil, ms(time.Second), nil},
		{"opening come, its pre-queue still being placed", base(func(s *queue.Stats) { s.Config.OpensAt, s.PreQueued = ms(time.Second), 40 }), nil, ms(time.Minute), nil},
		{"opened", base(func(s *queue.Stats) { s.Config.OpensAt = ms(time.Second) }), nil, ms(time.Minute),
			[]string{"queue.opened:sale:1765000001000"}},
		{"closing to come", base(func(s *queue.Stats) { s.Config.ClosesAt = ms(time.Minute) }), nil, ms(time.Second), nil},
		{"closed at closesAt", base(func(s *queue.Stats) { s.Config.ClosesAt = ms(time.Second) }), nil, ms(time.Minute),
			[]string{"queue.closed:sale:1765000001000"}},
		{"closed by the method", base(func(s *queue.Stats) { s.Config.Method, s.Changed.Method = queue.MethodReject, ms(7*time.Millisecond) }), nil, ms(time.Minute),
			[]string{"queue.closed:sale:1765000000007"}},
		{"another method: no closing", base(func(s *queue.Stats) { s.Config.Method, s.Changed.Method = queue.MethodRandom, ms(7*time.Millisecond) }), nil, ms(time.Minute), nil},
		{"sold out", base(func(s *queue.Stats) { s.Stock, s.Changed.SoldOut = queue.Stock{Known: true}, ms(3*time.Millisecond) }), nil, ms(time.Minute),
			[]string{"stock.sold_out:sale:1765000000003"}},
		{"restocked", base(func(s *queue.Stats) {
			s.Stock, s.Changed.SoldOut = queue.Stock{Known: true, Units: 4}, ms(8*time.Millisecond)
		}), nil, ms(time.Minute),
			[]string{"stock.restocked:sale:1765000000008"}},
		{"selling, never sold out", base(func(s *queue.Stats) { s.Stock = queue.Stock{Known: true, Units: 4} }), nil, ms(time.Minute), nil},
		{"the rate log: each change after the first (the queue's creation)", base(nil),
			[]queue.RateChange{{At: ms(1 * time.Millisecond), Rate: 100, Why: "the configured rate"},
				{At: ms(2 * time.Millisecond), Rate: 50, Why: "adaptive on"}, {At: ms(2 * time.Millisecond), Rate: 40, Why: "p90 above target"}}, ms(time.Minute),
			[]string{"rate.changed:sale:1765000000002:50", "rate.changed:sale:1765000000002:40"}},
		{"phases, one begun", base(func(s *queue.Stats) {
			s.Config.Phases = []queue.Phase{{Name: "members", StartsAt: ms(time.Second)}, {Name: "public", StartsAt: ms(time.Hour)}}
		}), nil, ms(time.Minute), []string{"phase.started:sale:1765000001000:members"}},
		{"the rate log of a new queue", base(nil), []queue.RateChange{{At: ms(1 * time.Millisecond), Rate: 50}}, ms(time.Minute), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := found(events.Reading{Queue: "sale", Stats: tt.stats, Rates: tt.rates, Now: tt.now})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			// Read again later by another instance: the same ids.
			again := found(events.Reading{Queue: "sale", Stats: tt.stats, Rates: tt.rates, Now: tt.now.Add(3 * time.Second)})
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("read 3 s later (-first +later):\n%s", diff)
			}
		})
	}
}

// TestEventData: what each kind adds, as the shop reads it.
func TestEventData(t *testing.T) {
	t0 := time.UnixMilli(1_765_000_000_000).UTC()
	st := queue.Stats{Config: queue.DefaultConfig(), Stock: queue.Stock{}, Changed: queue.Changes{SoldOut: t0}}
	st.Config.Method, st.Changed.Method = queue.MethodReject, t0
	r := events.Reading{Queue: "sale", Stats: st, Now: t0.Add(time.Second),
		Rates: []queue.RateChange{{At: t0, Rate: 100, Why: "the configured rate"}, {At: t0, Rate: 50, Why: "adaptive on"},
			{At: t0.Add(time.Millisecond), Rate: 40, Why: "slower"}}}
	data := map[events.Type][]map[string]any{}
	for _, k := range events.Kinds {
		for _, e := range k.Found(r) {
			if !e.At.Equal(e.At.UTC()) || e.At.Location() != time.UTC {
				t.Errorf("%s at %v, want UTC", e.ID, e.At)
			}
			data[e.Type] = append(data[e.Type], e.Data)
		}
	}
	want := map[events.Type][]map[string]any{
		events.QueueClosed:    {{"reason": "queueingMethod"}},
		events.StockRestocked: {{"unitsLeft": nil}},
		events.RateChanged: {{"rate": 50.0, "previousRate": 100.0, "reason": "adaptive on"},
			{"rate": 40.0, "previousRate": 50.0, "reason": "slower"}},
	}
	if diff := cmp.Diff(want, data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	b := events.BreakerEvent("sale", true, "host-1a2b3c", t0)
	if b.ID != "breaker.opened:sale:1765000000000:host-1a2b3c" || b.Data["instance"] != "host-1a2b3c" {
		t.Errorf("a breaker's event: %+v", b)
	}
}

// TestReadyEventNamesTheEntry: entry.ready's JSON is the webhook contract
// (common to the parts of issue 55): the id names the queue, the user and
// the entry's expiry in Unix ms, at and data.expiresAt are UTC to the ms.
func TestReadyEventNamesTheEntry(t *testing.T) {
	at := time.Date(2026, 12, 6, 22, 0, 0, 123_456_789, time.FixedZone("CET", 3600))
	e := events.ReadyEvent("sale", "alice", at, at.Add(5*time.Minute))
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"entry.ready:sale:alice:1796591100123","type":"entry.ready","queue":"sale","at":"2026-12-06T21:00:00.123Z","data":{"expiresAt":"2026-12-06T21:05:00.123Z","user":"alice"}}`
	if string(raw) != want {
		t.Errorf("entry.ready is\n%s\nwant\n%s", raw, want)
	}
}

// TestDirectPublishesAtOnce: Direct hands each user's entry.ready and a
// breaker's event to the publisher as it is told, and a Direct without a
// publisher (or none at all) publishes nothing and does not panic.
func TestDirectPublishesAtOnce(t *testing.T) {
	var got []string
	d := events.NewDirect(publisherFunc(func(e events.Event) { got = append(got, e.ID) }))
	at := time.UnixMilli(1_000)
	d.Ready("q", []string{"a", "b"}, at, at.Add(time.Minute))
	d.Breaker("q", true, "i1", at)
	want := []string{"entry.ready:q:a:61000", "entry.ready:q:b:61000", "breaker.opened:q:1000:i1"}
	if !slices.Equal(got, want) {
		t.Errorf("published %q, want %q", got, want)
	}
	events.NewDirect(nil).Ready("q", []string{"a"}, at, at)
	var none *events.Direct
	none.Breaker("q", false, "i1", at)
}

type publisherFunc func(events.Event)

func (f publisherFunc) Publish(e events.Event) { f(e) }
