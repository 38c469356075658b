package operate

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/staff"
)

// Recorder keeps the audit log (staff.Auditor; httpapi.Auditor is the same
// method): the operator's calls tell it each change they made, with what
// was before and after, here where both are known.
type Recorder interface {
	Record(ctx context.Context, e staff.Entry)
}

// audited says whether a change made with ctx is recorded: one someone
// made (ctx carries an actor: an admin request, the queues file, the
// backend), while the log is kept. The loops' own changes (the default
// queue made at start) name no actor and are not.
func (o *Operator) audited(ctx context.Context) bool {
	_, ok := staff.ActorOf(ctx)
	return o.Audit != nil && ok
}

// record keeps one change of queue q; op names it where ctx does not
// (staff.WithOp).
func (o *Operator) record(ctx context.Context, q, op string, changes []staff.Change) {
	o.recordWith(ctx, q, op, "", changes)
}

// recordWith is record with a Detail.
func (o *Operator) recordWith(ctx context.Context, q, op, detail string, changes []staff.Change) {
	if named := staff.OpOf(ctx); named != "" {
		op = named
	}
	o.Audit.Record(ctx, staff.Entry{Queue: q, Op: op, Outcome: staff.Done, Changes: changes, Detail: detail})
}

// before is what a change found before it, for its record: the value,
// or none (a queue the change made), or not read (the store did not
// answer the read: the record then says so rather than guess).
type before[T any] struct {
	v      *T
	unread bool
}

// unreadDetail is a record's Detail when the values before were not read.
const unreadDetail = "the values before could not be read (the store did not answer)"

// configBefore is the queue's config before a change, for its record.
func (o *Operator) configBefore(ctx context.Context, q string) before[queue.Config] {
	if !o.audited(ctx) {
		return before[queue.Config]{}
	}
	c, err := o.store.Config(ctx, q)
	switch {
	case errors.Is(err, queue.ErrQueueNotFound):
		return before[queue.Config]{}
	case err != nil:
		return before[queue.Config]{unread: true}
	}
	return before[queue.Config]{v: &c}
}

// recordConfig keeps the change from was to after: each setting whose JSON
// value differs, before and after; a queue made (or one whose config
// before was not read), every setting its config differs from the
// defaults in, before null.
func (o *Operator) recordConfig(ctx context.Context, q string, was before[queue.Config], after queue.Config) {
	op, from, detail := "config", was.v, ""
	switch {
	case was.unread:
		from, detail = new(queue.DefaultConfig()), unreadDetail
	case was.v == nil:
		op, from = "create", new(queue.DefaultConfig())
	}
	var changes []staff.Change
	for _, set := range queue.Settings {
		if set.ReadOnly {
			continue
		}
		b, a := set.Value(*from), set.Value(after)
		if sameJSON(b, a) {
			continue
		}
		if was.v == nil {
			b = nil
		}
		changes = append(changes, staff.Change{Field: set.Name, Before: b, After: a})
	}
	if was.v != nil && len(changes) == 0 {
		return
	}
	o.recordWith(ctx, q, op, detail, changes)
}

func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// stockBefore is the queue's stock before a stock command, for its record
// (nil v and not unread: not recorded).
func (o *Operator) stockBefore(ctx context.Context, q string) before[queue.Stock] {
	if !o.audited(ctx) {
		return before[queue.Stock]{}
	}
	st, err := o.store.Stats(ctx, q)
	if err != nil {
		return before[queue.Stock]{unread: true}
	}
	return before[queue.Stock]{v: &st.Stock}
}

// recordStock keeps a stock command that changed the stock (a repeat of
// the stock the queue has, as a backend sends on every answer, changes
// nothing and is not kept).
func (o *Operator) recordStock(ctx context.Context, q string, was before[queue.Stock], after queue.Stock) {
	var from any
	detail := ""
	switch {
	case was.unread:
		detail = unreadDetail
	case was.v == nil:
		return // not recorded
	case *was.v == after:
		return
	default:
		from = units(*was.v)
	}
	op := "restock"
	if after.SoldOut() {
		op = "sold-out"
	}
	o.recordWith(ctx, q, op, detail, []staff.Change{{Field: "unitsLeft", Before: from, After: units(after)}})
}

// units is a stock as the admin API writes it: its units, or null when
// not known.
func units(st queue.Stock) any {
	if st.Known {
		return st.Units
	}
	return nil
}

// recordCodes keeps codes added: how many and to which lanes, never a code
// (the store has only their hashes, and so has the log: not even those).
func (o *Operator) recordCodes(ctx context.Context, q string, codes []accesscode.Code, added accesscode.Added) {
	if !o.audited(ctx) || added.Added == 0 {
		return
	}
	lanes := map[string]int{}
	for _, c := range codes {
		lanes[c.Lane]++
	}
	o.record(ctx, q, "codes", []staff.Change{{Field: "codes", Before: nil,
		After: map[string]any{"added": added.Added, "duplicates": added.Duplicates, "lanes": lanes}}})
}

// recordDelete keeps a queue deleted (not one that was not there).
func (o *Operator) recordDelete(ctx context.Context, q string, err error) {
	if o.audited(ctx) && err == nil {
		o.record(ctx, q, "delete", []staff.Change{{Field: "queue", Before: q, After: nil}})
	}
}

// recordCleared keeps a suspect's place moved into the real line.
func (o *Operator) recordCleared(ctx context.Context, q string, ticket int64) {
	if o.audited(ctx) {
		o.record(ctx, q, "clear-suspect", []staff.Change{{Field: "suspect", Before: ticket, After: "cleared"}})
	}
}
