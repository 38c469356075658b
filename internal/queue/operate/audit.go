package operate

import (
	"context"
	"encoding/json"

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
	if named := staff.OpOf(ctx); named != "" {
		op = named
	}
	o.Audit.Record(ctx, staff.Entry{Queue: q, Op: op, Outcome: staff.Done, Changes: changes})
}

// configBefore is the queue's config before a change, for its record
// (nil: a queue made by the change, or not recorded).
func (o *Operator) configBefore(ctx context.Context, q string) *queue.Config {
	if !o.audited(ctx) {
		return nil
	}
	c, err := o.store.Config(ctx, q)
	if err != nil {
		return nil
	}
	return &c
}

// recordConfig keeps the change from before (nil: none) to after: each
// setting whose JSON value differs, before and after; a queue made, every
// setting its config differs from the defaults in, before null.
func (o *Operator) recordConfig(ctx context.Context, q string, before *queue.Config, after queue.Config) {
	op, from := "config", before
	if before == nil {
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
		if before == nil {
			b = nil
		}
		changes = append(changes, staff.Change{Field: set.Name, Before: b, After: a})
	}
	if before != nil && len(changes) == 0 {
		return
	}
	o.record(ctx, q, op, changes)
}

func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// stockBefore is the queue's stock before a stock command, for its record
// (false: not recorded, or not read).
func (o *Operator) stockBefore(ctx context.Context, q string) (queue.Stock, bool) {
	if !o.audited(ctx) {
		return queue.Stock{}, false
	}
	st, err := o.store.Stats(ctx, q)
	return st.Stock, err == nil
}

// recordStock keeps a stock command that changed the stock (a repeat of
// the stock the queue has, as a backend sends on every answer, changes
// nothing and is not kept).
func (o *Operator) recordStock(ctx context.Context, q string, before, after queue.Stock) {
	if before == after {
		return
	}
	op := "restock"
	if after.SoldOut() {
		op = "sold-out"
	}
	o.record(ctx, q, op, []staff.Change{{Field: "unitsLeft", Before: units(before), After: units(after)}})
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
