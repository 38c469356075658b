package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
)

// A fair opening anyone can check (Config.OpensAt; issue 57). As soon as a
// queue has an opening, a seed is drawn and its commitment published
// (Commit). Users entering before the opening wait in a pre-queue with no
// place; at OpensAt an instance closes the pre-queue (a ticket is reserved
// for each of its users, so anyone entering from then on is behind them
// all), draws their order from the committed seed, the closed list of
// their participant ids and, where one is named, a beacon's round
// (package draw), keeps the record, and places them in line in that order
// (Store.OpenDue, SaveDraw, Place), whether or not admission is paused.
// Admission waits until they are all placed. Arriving earlier, or by
// script, gains nothing: every order of the pre-queue is as likely as any
// other, and anyone can recompute it from the published record.

// openLease is how long an instance may take to place an opening before
// another takes it over (each placed chunk renews it).
const openLease = 30 * time.Second

// beaconTimeout bounds one request to a beacon named by a commitment when
// this instance has none of its own: the opening asks again at its next
// pass.
const beaconTimeout = 5 * time.Second

// Drawer is what an opening is drawn with.
type Drawer struct {
	// Participants gives each user their participant id (every instance
	// the same: from --auth-secret).
	Participants draw.Participants
	// Beacon is the public randomness beacon whose round each new
	// commitment names (--draw-beacon); nil: none.
	Beacon draw.BeaconSource
	// Seeds, if set, is where the seeds come from instead of crypto/rand:
	// for tests that must repeat.
	Seeds io.Reader
}

// Commit makes sure queue's opening at opensAt has a commitment, naming
// the beacon's round where there is one, and answers it; false when the
// queue has no such opening to commit to (moved, or drawn already).
func Commit(ctx context.Context, store queue.Store, queue string, opensAt time.Time, d Drawer) (draw.Committed, bool, error) {
	var beacon *draw.Beacon
	if d.Beacon != nil {
		b, err := d.Beacon.Name(ctx, opensAt)
		if err != nil {
			return draw.Committed{}, false, fmt.Errorf("naming the beacon's round: %w", err)
		}
		beacon = &b
	}
	c := draw.NewCommitted(queue, opensAt, beacon)
	if d.Seeds != nil {
		var seed draw.Seed
		if _, err := io.ReadFull(d.Seeds, seed[:]); err != nil {
			return draw.Committed{}, false, err
		}
		c = draw.NewCommittedWith(seed, queue, opensAt, beacon)
	}
	return store.CommitDraw(ctx, queue, c)
}

// OpenLine places the queue's opening if it is due by the store's clock:
// the order drawn once (a takeover reads the record kept, so it places
// the same order), then placed from where the last placing stopped. It
// reports the opening as the store saw it, and how many users it named to
// place (those of the closed list who left since among them: their
// tickets stay gaps).
// While the beacon's round is not yet out it places no one and answers the
// opening as not due, to be asked again.
func OpenLine(ctx context.Context, store queue.Store, name, owner string, d Drawer) (queue.Opening, int, error) {
	o, err := store.OpenDue(ctx, name, owner, openLease)
	if err != nil || !o.Due {
		return o, 0, err
	}
	ids := d.Participants.IDs(name, o.Pending)
	byID := make(map[string]string, len(ids))
	for i, u := range o.Pending {
		byID[ids[i]] = u
	}
	rec, err := drawOpening(ctx, store, name, owner, o, ids, d)
	if errors.Is(err, draw.ErrNotYet) {
		return queue.Opening{In: time.Second}, 0, nil
	}
	if err != nil {
		return o, 0, err
	}
	from := o.Next - rec.FirstTicket
	if from < 0 || from > int64(len(rec.Order)) {
		return o, 0, fmt.Errorf("the opening's next ticket %d is outside its draw (%d from %d)", o.Next, len(rec.Order), rec.FirstTicket)
	}
	users := make([]string, 0, int64(len(rec.Order))-from)
	placed := 0
	for _, id := range rec.Order[from:] {
		u := byID[id] // "": placed already, or left
		users = append(users, u)
		if u != "" {
			placed++
		}
	}
	_, err = store.Place(ctx, name, owner, o.Next, users, openLease)
	return o, placed, err
}

// drawOpening is the record of the due opening o: the one kept, or drawn
// now from the commitment to it over ids, its pending users' participant
// ids, and kept.
func drawOpening(ctx context.Context, store queue.Store, name, owner string, o queue.Opening, ids []string, d Drawer) (draw.Record, error) {
	c, err := commitmentTo(ctx, store, name, o, d)
	if err != nil {
		return draw.Record{}, err
	}
	if c.State == draw.Drawn {
		r, ok, err := store.DrawRecord(ctx, name, c.Hash)
		if err == nil && !ok {
			err = fmt.Errorf("the draw of commitment %s is not kept", c.Hash)
		}
		return r, err
	}
	var beacon *draw.Beacon
	if c.Beacon != nil {
		// The round the commitment named, from the chain it named: this
		// instance may have no --draw-beacon (a rolling deploy, the flag
		// dropped since), or another one.
		src := d.Beacon
		if src == nil {
			src = draw.NewDrand(c.Beacon.URL, &http.Client{Timeout: beaconTimeout})
		}
		b, err := src.Read(ctx, *c.Beacon)
		if err != nil {
			return draw.Record{}, err
		}
		beacon = &b
	}
	r, err := draw.Draw(c, ids, beacon, o.First, time.Now())
	if err != nil {
		return draw.Record{}, err
	}
	return store.SaveDraw(ctx, name, owner, r)
}

// commitmentTo is the commitment to the due opening o: the newest pending
// or drawn one to it in this life of the queue, or one made now (the
// opening came before any was made: its madeAt then says so).
func commitmentTo(ctx context.Context, store queue.Store, name string, o queue.Opening, d Drawer) (draw.Committed, error) {
	all, err := store.Draws(ctx, name)
	if err != nil {
		return draw.Committed{}, err
	}
	if n := len(all); n > 0 {
		if c := all[n-1]; c.State != draw.Withdrawn && c.OpensAt.Equal(o.OpensAt) && c.Epoch == o.Epoch {
			return c, nil
		}
	}
	c, ok, err := Commit(ctx, store, name, o.OpensAt, d)
	if err == nil && !ok {
		err = fmt.Errorf("no opening at %s to draw", o.OpensAt.Format(time.RFC3339Nano))
	}
	return c, err
}
