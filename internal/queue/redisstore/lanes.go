package redisstore

import (
	"context"
	"errors"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// errLanesNotYet: the contract's base (issue 53); the store's lanes land next.
var errLanesNotYet = errors.New("lanes: not built yet")

// Join is Store.Join (queue.Store).
func (s *Store) Join(ctx context.Context, q, user string, j lane.Join) (queue.Standing, error) {
	if j.Code == "" && (j.Lane == "" || j.Lane == lane.Public) {
		return s.Enter(ctx, q, user)
	}
	return queue.Standing{}, errLanesNotYet
}

// AddCodes is Store.AddCodes (queue.Store).
func (s *Store) AddCodes(ctx context.Context, q string, codes []accesscode.Code) (accesscode.Added, error) {
	return accesscode.Added{}, errLanesNotYet
}
