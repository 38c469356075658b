package redisstore

import (
	"context"
	"errors"

	"github.com/waitroom/waitroom/internal/queue"
)

// errShadowPending: the shadow line is being built (issue 51); these
// stand in until it is, and must not reach main's head.
var errShadowPending = errors.New("the shadow line is not built yet")

// EnterShadow: see queue.Store.
func (s *Store) EnterShadow(ctx context.Context, q, user string, mark queue.SuspectMark) (queue.Standing, error) {
	return queue.Standing{}, errShadowPending
}

// Suspects: see queue.Store.
func (s *Store) Suspects(ctx context.Context, q string, limit int) ([]queue.Suspect, error) {
	return nil, errShadowPending
}

// ClearSuspect: see queue.Store.
func (s *Store) ClearSuspect(ctx context.Context, q string, ticket int64) (bool, error) {
	return false, errShadowPending
}
