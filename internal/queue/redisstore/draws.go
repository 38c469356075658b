package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
)

// A queue's draws (issue 57): the ledger of commitments (K.draws, a LIST
// of draw.Committed.MarshalStored's JSON) and the records (K.drawn,
// commitment → draw.Record's JSON), kept apart from the queue's other
// keys (keys.go): DeleteQueue leaves them. commit_draw.lua and
// save_draw.lua change them, each in one step with the opening's state;
// Draws and DrawRecord read them with plain commands.

// CommitDraw implements queue.Store.
func (s *Store) CommitDraw(ctx context.Context, name string, c draw.Committed) (draw.Committed, bool, error) {
	c.State, c.Epoch, c.MadeAt, c.WithdrawnAt = draw.Pending, 0, time.UnixMilli(0), time.Time{} // commit_draw.lua sets them
	b, err := c.MarshalStored()
	if err != nil {
		return draw.Committed{}, false, err
	}
	r, err := s.run(ctx, commitDrawScript, name, []any{string(b)}).Slice()
	if err != nil {
		return draw.Committed{}, false, unavailable(err)
	}
	p := reply{r: r}
	switch p.int(0) {
	case kindUnknownQueue, kindNoCommitment:
		return draw.Committed{}, false, p.err
	case kindCommitted:
		kept, err := draw.UnmarshalStored([]byte(p.str(1)))
		return kept, err == nil && p.err == nil, errors.Join(p.err, err)
	}
	return draw.Committed{}, false, fmt.Errorf("unexpected commit_draw.lua reply %v", r)
}

// SaveDraw implements queue.Store.
func (s *Store) SaveDraw(ctx context.Context, name, owner string, rec draw.Record) (draw.Record, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return draw.Record{}, err
	}
	r, err := s.run(ctx, saveDrawScript, name, []any{owner, rec.Commitment, string(b)}).Slice()
	if err != nil {
		return draw.Record{}, unavailable(err)
	}
	p := reply{r: r}
	switch p.int(0) {
	case kindNotOwner: // or no such queue: no lease either
		return draw.Record{}, queue.ErrNotOwner
	case kindNoCommitment:
		return draw.Record{}, fmt.Errorf("saving the draw of %s: the commitment is not pending for the opening being placed, in this life of the queue", rec.Commitment)
	case kindDrawn:
		if len(r) == 1 { // kept now: the record given
			return rec, nil
		}
		var kept draw.Record
		if err := json.Unmarshal([]byte(p.str(1)), &kept); err != nil {
			return draw.Record{}, fmt.Errorf("the record kept for %s: %w", rec.Commitment, err)
		}
		return kept, p.err
	}
	return draw.Record{}, fmt.Errorf("unexpected save_draw.lua reply %v", r)
}

// Draws implements queue.Store: one LRANGE of the ledger.
func (s *Store) Draws(ctx context.Context, name string) ([]draw.Committed, error) {
	raw, err := s.rdb.LRange(ctx, keysFor(s.prefix, name)[kDraws], 0, -1).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]draw.Committed, len(raw))
	for i, b := range raw {
		if out[i], err = draw.UnmarshalStored([]byte(b)); err != nil {
			return nil, fmt.Errorf("%s's ledger, entry %d: %w", name, i, err)
		}
	}
	return out, nil
}

// DrawRecord implements queue.Store: one HMGET (of one field: the client
// interface the store takes has no HGET).
func (s *Store) DrawRecord(ctx context.Context, name, commitment string) (draw.Record, bool, error) {
	vals, err := s.rdb.HMGet(ctx, keysFor(s.prefix, name)[kDrawn], commitment).Result()
	if err != nil {
		return draw.Record{}, false, unavailable(err)
	}
	b, ok := vals[0].(string)
	if !ok {
		return draw.Record{}, false, nil
	}
	var r draw.Record
	if err := json.Unmarshal([]byte(b), &r); err != nil {
		return draw.Record{}, false, fmt.Errorf("the record of %s: %w", commitment, err)
	}
	return r, true, nil
}
