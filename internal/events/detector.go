package events

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// Store is what detection reads a queue's state from and claims an event
// through (queue.Service and operate.Operator).
type Store interface {
	Stats(ctx context.Context, queue string) (queue.Stats, error)
	RateChanges(ctx context.Context, queue string) ([]queue.RateChange, error)
	// FirstUse is the store-wide claim: of every instance asking for one
	// key, exactly one gets true until ttl passes.
	FirstUse(ctx context.Context, queue, key string, ttl time.Duration) (bool, error)
	// Roll writes into the queue's row of the minute (queue.Store.Roll).
	Roll(ctx context.Context, queue string, w rollup.Write) error
}

const (
	// Every is how often each instance reads the queues.
	Every = time.Second
	// lookBack is how far back a reading's happenings are told: an
	// instance that starts, or reads a queue again after its store was
	// away, tells what happened within it that no instance has claimed
	// (everything, when it is the only one); anything older is history.
	lookBack = 5 * time.Minute
	// claimFor is how long a claim is kept in the store: longer than
	// lookBack and any clock difference between instances, so a happening
	// some instance may still find is never published twice.
	claimFor = 15 * time.Minute
)

// claimKey is an event's claim in the store (queue.Store.FirstUse).
func claimKey(id string) string { return "event:" + id }

// Detector finds the queues' happenings on every pass and publishes those
// whose claim this instance wins, recording each as a moment of the sale
// (package rollup); the same pass writes each queue's row of the minute.
type Detector struct {
	store    Store
	out      Publisher
	queues   func(ctx context.Context) []string
	now      func() time.Time
	troubles *perqueue.Troubles

	mu sync.Mutex
	// handled are the ids of happenings claimed already, by this instance
	// or another, with their instants (forgotten past lookBack).
	handled map[string]time.Time
	// rates are the rates in force each queue was last read with: a
	// queue's rate log is read again only when it moved (or while its rate
	// is adaptive, when it may move between two readings and back).
	rates map[string]float64

	// The sale's rows (package rollup): each pass writes every queue's
	// reading, with what this instance observed meanwhile (pending), kept
	// for keep; a reading that changed nothing is not written again
	// (written: the last, with its minute).
	pending *rollup.Pending
	keep    time.Duration
	written map[string]rolled
}

// rolled is the last reading written of a queue, and its minute.
type rolled struct {
	r      rollup.Reading
	minute time.Time
}

// Options configures a Detector.
type Options struct {
	Store     Store
	Publisher Publisher
	// Queues lists the queues to read: every queue (the sale's rows and
	// moments are kept whether or not anyone receives its events).
	Queues func(ctx context.Context) []string
	Now    func() time.Time // time.Now when nil
	Logger *slog.Logger
	// Pending is what this instance observed for the rows (admitted
	// users' waits, orders) and Keep how long rows are kept
	// (rollup.DefaultKeep when 0).
	Pending *rollup.Pending
	Keep    time.Duration
}

// NewDetector returns a Detector with nothing handled yet.
func NewDetector(o Options) *Detector {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Pending == nil {
		o.Pending = &rollup.Pending{}
	}
	if o.Keep <= 0 {
		o.Keep = rollup.DefaultKeep
	}
	return &Detector{store: o.Store, out: o.Publisher, queues: o.Queues, now: o.Now, handled: map[string]time.Time{},
		rates: map[string]float64{}, troubles: perqueue.NewTroubles(o.Logger, "reading a queue for the shop's events"),
		pending: o.Pending, keep: o.Keep, written: map[string]rolled{}}
}

// Run makes a pass every second until ctx ends.
func (d *Detector) Run(ctx context.Context) {
	d.Pass(ctx)
	perqueue.Every(ctx, Every, func() { d.Pass(ctx) })
}

// Pass reads every queue at once, each under its own deadline, and
// offers each happening it shows, oldest first.
func (d *Detector) Pass(ctx context.Context) {
	perqueue.Each(ctx, d.queues(ctx), perqueue.CallTimeout, func(ctx context.Context, q string) {
		r, err := d.read(ctx, q)
		if errors.Is(err, queue.ErrQueueNotFound) {
			return // deleted meanwhile: nothing to tell
		}
		if d.troubles.Result(q, err) > 0 {
			return
		}
		d.roll(ctx, r)
		var found []Event
		for _, k := range Kinds {
			found = append(found, k.Found(r)...)
		}
		slices.SortStableFunc(found, func(a, b Event) int { return a.At.Compare(b.At) })
		for _, e := range found {
			d.offer(ctx, e, r.Now)
		}
	})
	d.forget()
}

// read is the queue's reading: its stats, and its rate changes when the
// rate may have changed since the last reading.
func (d *Detector) read(ctx context.Context, q string) (Reading, error) {
	r := Reading{Queue: q, Now: d.now()}
	var err error
	if r.Stats, err = d.store.Stats(ctx, q); err != nil {
		return r, err
	}
	d.mu.Lock()
	last, seen := d.rates[q]
	d.mu.Unlock()
	if !r.Stats.Config.Adaptive && seen && last == r.Stats.EffectiveRate {
		return r, nil
	}
	if r.Rates, err = d.store.RateChanges(ctx, q); err == nil {
		d.mu.Lock()
		d.rates[q] = r.Stats.EffectiveRate
		d.mu.Unlock()
	}
	return r, err
}

// offer claims a happening not handled yet and within lookBack, and
// publishes it when the claim is this instance's. A claim the store could
// not answer is asked again on the next pass.
func (d *Detector) offer(ctx context.Context, e Event, now time.Time) {
	if e.At.Before(now.Add(-lookBack)) {
		return
	}
	d.mu.Lock()
	_, done := d.handled[e.ID]
	d.mu.Unlock()
	if done {
		return
	}
	first, err := d.store.FirstUse(ctx, e.Queue, claimKey(e.ID), claimFor)
	if err != nil {
		return
	}
	d.mu.Lock()
	d.handled[e.ID] = e.At
	d.mu.Unlock()
	if first {
		d.out.Publish(e)
		// A moment of the sale, for its report; a write lost here is a
		// moment missing from the report, never one told twice.
		_ = d.store.Roll(ctx, e.Queue, rollup.MomentWrite(rollup.Moment{At: e.At, Type: string(e.Type), Data: e.Data}, d.keep))
	}
}

// roll writes the queue's reading into its row of the minute, with what
// this instance observed since its last write; a write that failed gives
// back what it took, for the next.
func (d *Detector) roll(ctx context.Context, r Reading) {
	st := r.Stats
	reading := rollup.Reading{Entered: st.EnteredTotal, Left: st.LeftTotal, Skipped: st.AbandonedTotal, Admitted: st.AdmittedTotal,
		Used: st.ConsumedTotal, Expired: st.ExpiredTotal, Shadowed: st.ShadowEnteredTotal, Cleared: st.ClearedTotal,
		Length: st.Length, PreQueue: st.PreQueued, Rate: st.EffectiveRate}
	for _, l := range st.Lanes {
		reading.Lanes = append(reading.Lanes, rollup.LaneFigures{Name: l.Name, Share: l.Share, Length: l.Length, Admitted: l.Admitted,
			Redeemed: l.Redeemed, CodesLeft: l.CodesLeft})
	}
	minute := r.Now.Truncate(time.Minute)
	add := d.pending.Take(r.Queue)
	d.mu.Lock()
	last, ok := d.written[r.Queue]
	d.mu.Unlock()
	if ok && len(add) == 0 && last.r.Equal(reading) {
		return // a queue whose numbers stand still costs no write (rollup.Fill)
	}
	if err := d.store.Roll(ctx, r.Queue, reading.Write(add, d.keep)); err != nil {
		d.pending.Return(r.Queue, add)
		return
	}
	d.mu.Lock()
	d.written[r.Queue] = rolled{r: reading, minute: minute}
	d.mu.Unlock()
}

// forget drops the handled ids no reading can show again.
func (d *Detector) forget() {
	horizon := d.now().Add(-2 * lookBack)
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, at := range d.handled {
		if at.Before(horizon) {
			delete(d.handled, id)
		}
	}
}
