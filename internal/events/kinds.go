package events

import (
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// Reading is one queue's state as one detection pass read it.
type Reading struct {
	Queue string
	// Stats carries the config, the stock and when states last changed
	// (queue.Changes).
	Stats queue.Stats
	// Rates are the queue's recent rate changes, oldest first; read while
	// its rate is adaptive, or when the rate in force is not what this
	// instance read last (none otherwise).
	Rates []queue.RateChange
	// Now is this instance's clock when the queue was read: it tells
	// whether opensAt and closesAt have come.
	Now time.Time
}

// Kind is one row of what the shop is told: an event type and the
// happenings of that type a queue's reading shows. A happening's instant
// must come from the store's state, never from when it was read, so that
// every instance names it alike. A new kind is one more row.
type Kind struct {
	Type Type
	// Means says what the event means and what its data holds, for the
	// docs (docs/operations.md's table of events is checked against it).
	Means string
	// Found lists the happenings of this kind the reading shows (at most
	// a few: the latest of each state, not its history).
	Found func(r Reading) []Event
}

// Kinds is every kind of event found in a queue's state.
var Kinds = []Kind{
	{QueueOpened, "the opening (`opensAt`) came and everyone who arrived before it is placed in line; `at` is `opensAt`",
		opened},
	{QueueClosed, "nobody new takes a place from now on: `closesAt` came (`data.reason` `closesAt`, `at` is `closesAt`), or `queueingMethod` was set to `reject` (`data.reason` `queueingMethod`)",
		closed},
	{QueuePaused, "admission was paused (`paused` set)", stamped(QueuePaused,
		func(st queue.Stats) (time.Time, bool) { return st.Changed.Paused, st.Config.Paused })},
	{QueueResumed, "admission was resumed (`paused` cleared)", stamped(QueueResumed,
		func(st queue.Stats) (time.Time, bool) { return st.Changed.Paused, !st.Config.Paused })},
	{StockSoldOut, "the queue has nothing left to sell (units left 0): newcomers are refused, whoever waits keeps their place", stamped(StockSoldOut,
		func(st queue.Stats) (time.Time, bool) { return st.Changed.SoldOut, st.Stock.SoldOut() })},
	{StockRestocked, "a sold-out queue has something to sell again; `data.unitsLeft` is what it has left as found (null: not known)",
		restocked},
	{RateChanged, "the admission rate in force changed: the adaptive controller's decision (once a second at most), or an operator's change of the rate or of `adaptive`; `data.rate` and `data.previousRate` in users/s, `data.reason` in words (for people: its wording may change)",
		rateChanged},
	{PhaseStarted, "a phase of the sale (`phases`) began: `data.phase` is its name, `at` its `startsAt`; what it changes while it lasts (the rate, the method, the message, …) is told by this event alone",
		phaseStarted},
}

// stamped is the kind of a state change the store stamps (queue.Changes):
// the last change, when the state is now the one it names (a change
// undone since is the undoing's event).
func stamped(t Type, last func(queue.Stats) (at time.Time, isNow bool)) func(Reading) []Event {
	return func(r Reading) []Event {
		at, isNow := last(r.Stats)
		if at.IsZero() || !isNow {
			return nil
		}
		return []Event{newEvent(t, r.Queue, at, "", nil)}
	}
}

func opened(r Reading) []Event {
	c := r.Stats.Config
	if c.OpensAt.IsZero() || r.Now.Before(c.OpensAt) || r.Stats.PreQueued > 0 {
		return nil
	}
	return []Event{newEvent(QueueOpened, r.Queue, c.OpensAt, "", nil)}
}

func closed(r Reading) []Event {
	c := r.Stats.Config
	var out []Event
	if !c.ClosesAt.IsZero() && !r.Now.Before(c.ClosesAt) {
		out = append(out, newEvent(QueueClosed, r.Queue, c.ClosesAt, "", map[string]any{"reason": "closesAt"}))
	}
	if at := r.Stats.Changed.Method; !at.IsZero() && c.Method == queue.MethodReject {
		out = append(out, newEvent(QueueClosed, r.Queue, at, "", map[string]any{"reason": "queueingMethod"}))
	}
	return out
}

func restocked(r Reading) []Event {
	st := r.Stats
	if st.Changed.SoldOut.IsZero() || st.Stock.SoldOut() {
		return nil
	}
	var units any // JSON null: not known
	if st.Stock.Known {
		units = st.Stock.Units
	}
	return []Event{newEvent(StockRestocked, r.Queue, st.Changed.SoldOut, "", map[string]any{"unitsLeft": units})}
}

// rateChanged lists the rate log's changes, each with the rate before it:
// the adaptive controller's decisions and an operator's changes alike (the
// log's first entry, the queue's creation, has no rate before it).
func rateChanged(r Reading) []Event {
	var out []Event
	for i := 1; i < len(r.Rates); i++ {
		c := r.Rates[i]
		// Two changes within a millisecond are told apart by the rate.
		out = append(out, newEvent(RateChanged, r.Queue, c.At, strconv.FormatFloat(c.Rate, 'g', -1, 64), map[string]any{
			"rate": c.Rate, "previousRate": r.Rates[i-1].Rate, "reason": c.Why}))
	}
	return out
}

// phaseStarted lists the phases begun by now, each at its start.
func phaseStarted(r Reading) []Event {
	var out []Event
	for _, p := range r.Stats.Config.Phases {
		if !r.Now.Before(p.StartsAt) {
			out = append(out, newEvent(PhaseStarted, r.Queue, p.StartsAt, p.Name, map[string]any{"phase": p.Name}))
		}
	}
	return out
}
