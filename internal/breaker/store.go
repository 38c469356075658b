package breaker

import (
	"context"
	"errors"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// Store is a queue.Store behind the breaker. The calls requests make
// about a queue whose breaker is open fail at once with ErrOpen; a call
// that meets the store's failure opens its queue's breaker. Calls that end
// something begun (EndUse: a spent token's compare-and-delete) and the
// loops' calls always go to the store, so a breaker opened on one slow
// call never costs a consumption; the answers of EndUse and of admission's
// tick close an open breaker at once.
type Store struct {
	queue.Store
	b *Breaker
	// cut: calls about a queue whose breaker is open fail at once (else
	// they still go to the store, and the breaker only watches).
	cut bool
}

var _ queue.Store = (*Store)(nil)

// Guard puts store behind b. With cut, the requests' calls about a queue
// whose breaker is open fail at once with ErrOpen; without it every call
// still asks the store, and b only follows its failures and answers (for
// the gateway's own decision, the log, the metrics and readiness).
func Guard(store queue.Store, b *Breaker, cut bool) *Store {
	return &Store{Store: store, b: b, cut: cut}
}

// noted records err of a call about queue: the store's own failure opens
// the breaker; the caller leaving (context.Canceled) says nothing of the
// store, a timeout does.
func (s *Store) noted(ctx context.Context, q string, err error) error {
	if err != nil && errors.Is(err, queue.ErrUnavailable) && !errors.Is(err, ErrOpen) && !errors.Is(ctx.Err(), context.Canceled) {
		s.b.Failed(q, err)
	}
	return err
}

// answered records err of a call made past the breaker: a failure opens
// it, an answer closes it at once (Succeeded).
func (s *Store) answered(ctx context.Context, q string, err error) error {
	if err == nil {
		s.b.Succeeded(q)
		return nil
	}
	return s.noted(ctx, q, err)
}

// guarded runs call unless the queue's breaker is open.
func guarded[T any](s *Store, ctx context.Context, q string, call func() (T, error)) (T, error) {
	if s.cut && s.b.Open(q) {
		var zero T
		return zero, ErrOpen
	}
	v, err := call()
	return v, s.noted(ctx, q, err)
}

func (s *Store) Enter(ctx context.Context, q, user string) (queue.Standing, error) {
	return guarded(s, ctx, q, func() (queue.Standing, error) { return s.Store.Enter(ctx, q, user) })
}

func (s *Store) Status(ctx context.Context, q, user string) (queue.Standing, error) {
	return guarded(s, ctx, q, func() (queue.Standing, error) { return s.Store.Status(ctx, q, user) })
}

func (s *Store) Leave(ctx context.Context, q, user string) (bool, error) {
	return guarded(s, ctx, q, func() (bool, error) { return s.Store.Leave(ctx, q, user) })
}

func (s *Store) AdmitNow(ctx context.Context, q, user, token string) (queue.Standing, error) {
	return guarded(s, ctx, q, func() (queue.Standing, error) { return s.Store.AdmitNow(ctx, q, user, token) })
}

func (s *Store) Snapshot(ctx context.Context, q string) (queue.Snapshot, error) {
	return guarded(s, ctx, q, func() (queue.Snapshot, error) { return s.Store.Snapshot(ctx, q) })
}

func (s *Store) Config(ctx context.Context, q string) (queue.Config, error) {
	return guarded(s, ctx, q, func() (queue.Config, error) { return s.Store.Config(ctx, q) })
}

func (s *Store) FirstUse(ctx context.Context, q, key string, ttl time.Duration) (bool, error) {
	return guarded(s, ctx, q, func() (bool, error) { return s.Store.FirstUse(ctx, q, key, ttl) })
}

func (s *Store) Extend(ctx context.Context, q, user, token string) (time.Time, error) {
	return guarded(s, ctx, q, func() (time.Time, error) { return s.Store.Extend(ctx, q, user, token) })
}

func (s *Store) BeginUse(ctx context.Context, q, user, token, owner string, lock time.Duration) error {
	_, err := guarded(s, ctx, q, func() (struct{}, error) {
		return struct{}{}, s.Store.BeginUse(ctx, q, user, token, owner, lock)
	})
	return err
}

// EndUse always asks the store (see Store); its answer opens or closes the
// breaker.
func (s *Store) EndUse(ctx context.Context, q, user, token, owner string, consumed bool) error {
	return s.answered(ctx, q, s.Store.EndUse(ctx, q, user, token, owner, consumed))
}

// Admit, the admission loop's tick, always asks the store; its answer
// opens or closes the breaker, so a queue's breaker closes within a tick
// of its store answering again, not only at the next probe.
func (s *Store) Admit(ctx context.Context, q string, tokens []string) (queue.Admission, error) {
	a, err := s.Store.Admit(ctx, q, tokens)
	return a, s.answered(ctx, q, err)
}

// PutHandoff and ClaimHandoff are a request's calls (issue 55), guarded
// as Enter is.
func (s *Store) PutHandoff(ctx context.Context, q, user, codeHash string, ttl time.Duration) (time.Time, error) {
	return guarded(s, ctx, q, func() (time.Time, error) { return s.Store.PutHandoff(ctx, q, user, codeHash, ttl) })
}

func (s *Store) ClaimHandoff(ctx context.Context, q, codeHash, user string) (string, queue.Standing, error) {
	type claimed struct {
		from string
		e    queue.Standing
	}
	c, err := guarded(s, ctx, q, func() (claimed, error) {
		from, e, err := s.Store.ClaimHandoff(ctx, q, codeHash, user)
		return claimed{from, e}, err
	})
	return c.from, c.e, err
}
