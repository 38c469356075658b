package memstore

import (
	"context"
	"errors"

	"github.com/waitroom/waitroom/internal/draw"
)

// errDrawsNotBuilt: the base of issue 57, filled in on its branches.
var errDrawsNotBuilt = errors.New("draws: not built yet")

// CommitDraw implements queue.Store.
func (s *Store) CommitDraw(ctx context.Context, name string, c draw.Committed) (draw.Committed, bool, error) {
	return draw.Committed{}, false, errDrawsNotBuilt
}

// SaveDraw implements queue.Store.
func (s *Store) SaveDraw(ctx context.Context, name, owner string, r draw.Record) (draw.Record, error) {
	return draw.Record{}, errDrawsNotBuilt
}

// Draws implements queue.Store.
func (s *Store) Draws(ctx context.Context, name string) ([]draw.Committed, error) {
	return nil, errDrawsNotBuilt
}

// DrawRecord implements queue.Store.
func (s *Store) DrawRecord(ctx context.Context, name, commitment string) (draw.Record, bool, error) {
	return draw.Record{}, false, errDrawsNotBuilt
}
