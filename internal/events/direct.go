package events

import (
	"strconv"
	"time"
)

// EntryReady: a signed-in user was let in (queue.Config.NotifyOnReady);
// data.user is the user id, data.expiresAt when their entry's token
// expires.
const EntryReady Type = "entry.ready"

// ToldDirectly are the kinds of event an instance publishes itself, at
// once and unclaimed (Direct), with what each means, for the docs.
var ToldDirectly = []Kind{
	{Type: EntryReady, Means: "a signed-in user was let in, by an admission tick or straight in, in a queue whose `notifyOnReady` is on: `data.user` is the user id (the JWT's `sub`), `data.expiresAt` when their entry expires (RFC 3339); `at` is when they were let in, by the store's clock; the id is `entry.ready:<queue>:<user>:<expiresAt in Unix ms>`. Anonymous sessions produce none. Sent by the instance that let them in, unclaimed: the store gives each tick to one instance"},
}

// Direct is the one path of the events an instance publishes itself,
// because it alone knows of them, at once and without a claim through the
// store: its breaker's (the store may be away), and the users it let in
// (the store gave the tick, or the place let straight in, to this
// instance alone, so each is told once however many instances run). The
// Detector's events, which every instance finds, are claimed instead.
type Direct struct {
	out Publisher
}

// NewDirect returns a Direct publishing to out (nothing when nil).
func NewDirect(out Publisher) *Direct { return &Direct{out: out} }

// Breaker publishes one instance's breaker on queue's store opening or
// closing at at; instance names the instance.
func (d *Direct) Breaker(queue string, open bool, instance string, at time.Time) {
	d.publish(BreakerEvent(queue, open, instance, at))
}

// Ready publishes entry.ready for each of users, signed-in users let into
// queue at at with tokens expiring at expires. The caller leaves out the
// anonymous sessions (identity.Anonymous: this package knows ids only).
func (d *Direct) Ready(queue string, users []string, at, expires time.Time) {
	for _, u := range users {
		d.publish(ReadyEvent(queue, u, at, expires))
	}
}

func (d *Direct) publish(e Event) {
	if d != nil && d.out != nil {
		d.out.Publish(e)
	}
}

// ReadyEvent is user's entry.ready: let into queue at at, their entry
// expiring at expires. Its id names the entry (the user and its expiry),
// so a retry keeps it, and another entry of the same user later is another
// event.
func ReadyEvent(queue, user string, at, expires time.Time) Event {
	at, expires = at.UTC().Truncate(time.Millisecond), expires.UTC().Truncate(time.Millisecond)
	return Event{ID: string(EntryReady) + ":" + queue + ":" + user + ":" + strconv.FormatInt(expires.UnixMilli(), 10),
		Type: EntryReady, Queue: queue, At: at, Data: map[string]any{"user": user, "expiresAt": expires}}
}
