package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
)

// ledger is a queue name's draws (issue 57): every commitment ever made to
// one of its openings, oldest first, and the record of each one drawn. It
// belongs to the name, not to one life of the queue: DeleteQueue hands it
// to the tombstone and a queue made again under the name takes it up, so
// a withdrawn or drawn commitment stays listed whatever the queue became.
//
// Changes are queue steps (CommitDraw, SaveDraw: journaled, numbered and
// run under the live state's lock); mu guards the ledger itself, because a
// read may hold a state that was deleted meanwhile while the queue made
// again writes the same ledger under its own lock.
type ledger struct {
	mu      sync.Mutex
	entries []draw.Committed
	// records are each drawn commitment's record as its JSON (the
	// published encoding): a record of 100,000 participants keeps 7.2 MiB
	// of heap so, 10.5 MiB as a draw.Record, whose 200,000 strings the
	// collector would trace on every cycle (BenchmarkDrawRecordBytes).
	records map[string][]byte
}

func newLedger() *ledger { return &ledger{records: map[string][]byte{}} }

// errNotDrawable: SaveDraw's commitment is not the pending one of the
// opening being placed.
var errNotDrawable = errors.New("memstore: the commitment is not pending for the opening being placed")

// drawnOpening is the opening a commitment may be made to now: the one
// ahead (Config.OpensAt) or the one being placed (the instant its
// pre-queue closed for); false for none.
func (q *state) drawnOpening() (time.Time, bool) {
	switch {
	case q.openState == "placing":
		return q.openAt, true
	case q.pending():
		return q.cfg.OpensAt, true
	}
	return time.Time{}, false
}

// CommitDraw implements queue.Store (ErrQueueNotFound for a queue that
// does not exist, as on Redis).
func (s *Store) CommitDraw(_ context.Context, name string, c draw.Committed) (draw.Committed, bool, error) {
	blob, err := c.MarshalStored()
	if err != nil {
		return draw.Committed{}, false, err
	}
	return s.commitDraw(name, c, blob)
}

// commitDraw is CommitDraw with c as the journal keeps it (blob,
// MarshalStored), for a replay to run again.
func (s *Store) commitDraw(name string, c draw.Committed, blob []byte) (draw.Committed, bool, error) {
	var ok bool
	got, err := change(s, &op{kind: opCommitDraw, queue: name, blob: blob}, func(q *state, now time.Time) (draw.Committed, bool, error) {
		at, open := q.drawnOpening()
		if !open || at.UnixMilli() != c.OpensAt.UnixMilli() {
			return draw.Committed{}, false, nil
		}
		l := q.draws
		l.mu.Lock()
		defer l.mu.Unlock()
		if n := len(l.entries); n > 0 {
			last := &l.entries[n-1]
			same := last.Epoch == q.epoch && last.OpensAt.UnixMilli() == c.OpensAt.UnixMilli()
			switch {
			case same && last.State == draw.Drawn:
				return draw.Committed{}, false, nil
			case same && last.State == draw.Pending && last.BeaconKey() == c.BeaconKey():
				ok = true
				return *last, false, nil
			case last.State == draw.Pending:
				last.State, last.WithdrawnAt = draw.Withdrawn, now.UTC()
			}
		}
		c.OpensAt = c.OpensAt.Truncate(time.Millisecond).UTC()
		c.MadeAt, c.WithdrawnAt, c.State, c.Epoch = now.UTC(), time.Time{}, draw.Pending, q.epoch
		l.entries = append(l.entries, c)
		ok = true
		return c, true, nil
	})
	return got, ok && err == nil, err
}

// SaveDraw implements queue.Store. A queue that does not exist has no
// lease on its opening: ErrNotOwner, as on Redis.
func (s *Store) SaveDraw(_ context.Context, name, owner string, r draw.Record) (draw.Record, error) {
	js, err := json.Marshal(r)
	if err != nil {
		return draw.Record{}, err
	}
	kept, err := s.saveDraw(name, owner, r.Commitment, js)
	if errors.Is(err, queue.ErrQueueNotFound) {
		return draw.Record{}, queue.ErrNotOwner
	}
	if err != nil || kept == nil {
		return r, err
	}
	return decodeRecord(kept)
}

// saveDraw is SaveDraw with the record as its JSON (js), the journal's
// form. It answers the record kept before, if one was (nil when js is
// kept now).
func (s *Store) saveDraw(name, owner, commitment string, js []byte) ([]byte, error) {
	o := &op{kind: opSaveDraw, queue: name, owner: owner, token: commitment, blob: js}
	return change(s, o, func(q *state, _ time.Time) ([]byte, bool, error) {
		if q.openState != "placing" || q.openOwner != owner {
			return nil, false, queue.ErrNotOwner
		}
		l := q.draws
		l.mu.Lock()
		defer l.mu.Unlock()
		if kept, ok := l.records[commitment]; ok {
			return kept, false, nil
		}
		i := slices.IndexFunc(l.entries, func(c draw.Committed) bool { return c.Hash == commitment })
		if i < 0 || l.entries[i].State != draw.Pending || l.entries[i].Epoch != q.epoch ||
			l.entries[i].OpensAt.UnixMilli() != q.openAt.UnixMilli() {
			return nil, false, fmt.Errorf("%w: %s", errNotDrawable, commitment)
		}
		l.entries[i].State = draw.Drawn
		l.records[commitment] = js
		return nil, true, nil
	})
}

// Draws implements queue.Store: the ledger outlives the queue, so a
// deleted queue's is answered too.
func (s *Store) Draws(_ context.Context, name string) ([]draw.Committed, error) {
	var out []draw.Committed
	err := s.readLedger(name, func(l *ledger) { out = slices.Clone(l.entries) })
	return out, err
}

// DrawRecord implements queue.Store.
func (s *Store) DrawRecord(_ context.Context, name, commitment string) (draw.Record, bool, error) {
	var js []byte
	if err := s.readLedger(name, func(l *ledger) { js = l.records[commitment] }); err != nil || js == nil {
		return draw.Record{}, false, err
	}
	r, err := decodeRecord(js)
	return r, err == nil, err
}

// readLedger runs f on the name's ledger, if it ever had one (a tombstone
// keeps it). As in, under fsync always it answers once the queue's last
// step is on disk.
func (s *Store) readLedger(name string, f func(l *ledger)) error {
	s.mu.Lock()
	q, ok := s.queues[name]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	q.mu.Lock()
	l, n := q.draws, q.rec
	q.mu.Unlock()
	l.mu.Lock()
	f(l)
	l.mu.Unlock()
	return s.await(n)
}

func decodeRecord(js []byte) (draw.Record, error) {
	var r draw.Record
	if err := json.Unmarshal(js, &r); err != nil {
		return draw.Record{}, fmt.Errorf("memstore: a kept draw record: %w", err)
	}
	return r, nil
}

// ledgerImage is a ledger as a snapshot keeps it: the records as their
// JSON, shared with the live ledger (never written in place).
type ledgerImage struct {
	Entries []draw.Committed
	Records map[string][]byte
}

func (l *ledger) image() ledgerImage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ledgerImage{Entries: slices.Clone(l.entries), Records: maps.Clone(l.records)}
}

func (img ledgerImage) restore() *ledger {
	l := newLedger()
	l.entries = img.Entries
	if img.Records != nil {
		l.records = img.Records
	}
	return l
}
