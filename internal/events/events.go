// Package events owns what the shop's own systems are told of: a queue
// opened, closed, paused, resumed, sold out, restocked, its rate changed, a
// phase of its sale began, an instance's store breaker opened or closed. It
// finds each happening in the store's state, names it the same way on every
// instance, and hands it on once for all instances together; how an event
// reaches the shop (package webhook) is not its business.
//
// Every instance looks (Detector): once a second it reads each
// queue's stats (its config, its stock, when its pause, method and stock
// last changed: queue.Changes) and, while its rate is adaptive, its rate
// changes, and lists the happenings they show (the Kinds table). A
// happening's id is its type, its queue and the instant the store gives it
// (the stamp of the change, opensAt, closesAt, a phase's start, the rate
// change's time), so
// every instance that sees it derives the same id. Only the instance whose
// claim of that id through the store (queue.Store.FirstUse) is the first
// publishes it; the others drop it. A store breaker is one instance's, and
// so are its events: they name the instance and are published at once,
// unclaimed (the store may well be away).
package events

import (
	"fmt"
	"time"
)

// Type names what happened.
type Type string

const (
	// QueueOpened: the queue's opening (opensAt) came and its pre-queue is
	// placed in line.
	QueueOpened Type = "queue.opened"
	// QueueClosed: nobody new takes a place any more: closesAt came, or
	// queueingMethod was set to reject.
	QueueClosed Type = "queue.closed"
	// QueuePaused and QueueResumed: admission was paused, or resumed.
	QueuePaused  Type = "queue.paused"
	QueueResumed Type = "queue.resumed"
	// StockSoldOut: the queue has nothing left to sell (units left 0).
	StockSoldOut Type = "stock.sold_out"
	// StockRestocked: a sold-out queue has something to sell again.
	StockRestocked Type = "stock.restocked"
	// RateChanged: the admission rate in force changed.
	RateChanged Type = "rate.changed"
	// PhaseStarted: one of the sale's phases (queue.Config.Phases) began.
	PhaseStarted Type = "phase.started"
	// BreakerOpened and BreakerClosed: one instance's breaker on the
	// queue's store opened (the store failed) or closed (it answers again).
	BreakerOpened Type = "breaker.opened"
	BreakerClosed Type = "breaker.closed"
	// AdminChanged: an entry of the audit log (issue 56): someone changed
	// the sale, or was refused.
	AdminChanged Type = "admin.changed"
)

// Event is one happening as the shop receives it (its JSON is the
// webhook's body).
type Event struct {
	// ID is the same on every instance for the same happening: receivers
	// drop an id they have processed already.
	ID    string    `json:"id"`
	Type  Type      `json:"type"`
	Queue string    `json:"queue"`
	At    time.Time `json:"at"` // when it happened (RFC 3339, UTC)
	// Data is what the type adds (documented with each kind); never nil.
	Data map[string]any `json:"data"`
}

// newEvent is the event of a happening of type t in queue at the instant
// at; extra tells happenings apart that share all three (none: "").
func newEvent(t Type, queue string, at time.Time, extra string, data map[string]any) Event {
	at = at.UTC().Truncate(time.Millisecond)
	id := fmt.Sprintf("%s:%s:%d", t, queue, at.UnixMilli())
	if extra != "" {
		id += ":" + extra
	}
	if data == nil {
		data = map[string]any{}
	}
	return Event{ID: id, Type: t, Queue: queue, At: at, Data: data}
}

// Publisher takes events on to the shop. Publish must not block: it is
// called from the detection loop and from the store's breaker, which
// requests pass through.
type Publisher interface {
	Publish(Event)
}

// BreakerEvent is the event of one instance's breaker on queue's store
// opening or closing at at; instance names the instance.
func BreakerEvent(queue string, open bool, instance string, at time.Time) Event {
	t := BreakerClosed
	if open {
		t = BreakerOpened
	}
	return newEvent(t, queue, at, instance, map[string]any{"instance": instance})
}
