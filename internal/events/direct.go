package events

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// EntryReady: a signed-in user was let in (queue.Config.NotifyOnReady);
// data.user is the user id, data.expiresAt when their entry's token
// expires.
const EntryReady Type = "entry.ready"

// ToldDirectly are the kinds of event an instance publishes itself, at
// once and unclaimed (Direct), with what each means, for the docs.
var ToldDirectly = []Kind{
	{Type: EntryReady, Means: "a signed-in user was let in, by an admission tick or straight in, in a queue whose `notifyOnReady` is on: `data.user` is the user id (the JWT's `sub`), `data.expiresAt` when their entry expires (RFC 3339); `at` is when they were let in, by the store's clock; the id is `entry.ready:<queue>:<user>:<expiresAt in Unix ms>`. Anonymous sessions produce none. Sent by the instance that let them in, unclaimed: the store gives each tick to one instance"},
	{Type: AdminChanged, Means: "an entry of the audit log was kept: someone changed the sale (through the admin API, the admin page or the CLI, the queues file, the backend's `sold-out` and `restock`), or an admin request was refused (rate-limited); `data` is the entry as `GET /admin/v1/audit` answers it (`actor`, `op`, `outcome`, `changes` with each field's `before` and `after`, `detail`, `repeats`); `queue` is empty for a change of no queue (a token); the id is `admin.changed:<the entry's id>`. Never a secret: no code, seed, token or URL credentials. Sent by the instance that kept it, unclaimed"},
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

// AdminChanged publishes e, an entry of the audit log just kept, as
// admin.changed.
func (d *Direct) AdminChanged(e staff.Entry) {
	d.publish(AdminChangedEvent(e))
}

// AdminChangedEvent is e's admin.changed: its data is the entry as the
// audit log answers it, its id the entry's.
func AdminChangedEvent(e staff.Entry) Event {
	data := map[string]any{}
	if b, err := json.Marshal(e); err == nil {
		json.Unmarshal(b, &data) // its own JSON: an object
	}
	return Event{ID: string(AdminChanged) + ":" + e.ID, Type: AdminChanged, Queue: e.Queue, At: e.At.UTC().Truncate(time.Millisecond), Data: data}
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
