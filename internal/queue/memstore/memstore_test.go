package memstore_test

import (
	"context"
	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/storetest"
	"github.com/waitroom/waitroom/internal/suspect"
)

// TestConformance runs the suite on a fake clock: the store takes its
// clock, so no test waits in real time or depends on the machine's pace.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (queue.Store, storetest.Clock) {
		clock := storetest.NewFakeClock()
		return memstore.New(clock.Now), clock
	})
}

// TestDistributions checks the Go draw's distributions, once for every
// variant of the store (they draw with the same code).
func TestDistributions(t *testing.T) {
	storetest.RunDistributions(t, func(t *testing.T) (queue.Store, storetest.Clock) {
		clock := storetest.NewFakeClock()
		return memstore.New(clock.Now), clock
	})
}

// TestConformanceDurable runs the suite on the store kept in a directory,
// under fsync always (every change waits for its sync) and no.
func TestConformanceDurable(t *testing.T) {
	for _, p := range []journal.Policy{journal.Always, journal.No} {
		t.Run(string(p), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) (queue.Store, storetest.Clock) {
				clock := storetest.NewFakeClock()
				return mustOpen(t, t.TempDir(), p, clock.Now), clock
			})
		})
	}
}

// TestConformanceRestarting runs the suite on a durable store that is
// closed and opened again from its directory after every third call, and
// compacted into a snapshot every few restarts: a restart, from the log or
// from a snapshot, changes no answer the suite checks.
func TestConformanceRestarting(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (queue.Store, storetest.Clock) {
		clock := storetest.NewFakeClock()
		r := &restarting{t: t, dir: t.TempDir(), now: clock.Now}
		r.s = mustOpen(t, r.dir, journal.EverySec, clock.Now)
		return r, clock
	})
}

func mustOpen(t *testing.T, dir string, p journal.Policy, now func() time.Time) *memstore.Store {
	t.Helper()
	s, _, err := memstore.Open(dir, memstore.Options{Fsync: p, Now: now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// restarting is a queue.Store that restarts its durable store after every
// restartEvery calls.
type restarting struct {
	t        *testing.T
	dir      string
	now      func() time.Time
	mu       sync.RWMutex
	s        *memstore.Store
	calls    atomic.Int64
	restarts int64
}

// restartEvery is how many calls pass between restarts: every call would
// take minutes on a busy machine (each restart syncs files), and the
// suite's steps fall in every place of the cycle anyway.
const restartEvery = 3

// restartsFor is how many calls of a test restart every restartEvery; a
// test that makes hundreds of calls (an opening's order, tried 600 times)
// restarts every restartLater after them.
const restartsFor, restartLater = 300, 100

// compactEvery: every so many restarts compact first, so the next opens
// from a snapshot and the log it has not folded in.
const compactEvery = 8

func (r *restarting) restart() {
	if n := r.calls.Add(1); n%restartEvery != 0 || n > restartsFor && n%restartLater != 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.restarts++; r.restarts%compactEvery == 0 {
		if err := r.s.Compact(); err != nil {
			r.t.Errorf("Compact: %v", err)
		}
	}
	if err := r.s.Close(); err != nil {
		r.t.Errorf("Close: %v", err)
	}
	s, rec, err := memstore.Open(r.dir, memstore.Options{Now: r.now})
	if err != nil {
		r.t.Fatalf("Open again: %v", err)
	}
	if rec.Torn != 0 {
		r.t.Errorf("a clean restart found a torn record: %+v", rec)
	}
	r.s = s
	r.t.Cleanup(func() { s.Close() })
}

func call[T any](r *restarting, f func(s *memstore.Store) (T, error)) (T, error) {
	r.mu.RLock()
	v, err := f(r.s)
	r.mu.RUnlock()
	r.restart()
	return v, err
}

func call0(r *restarting, f func(s *memstore.Store) error) error {
	_, err := call(r, func(s *memstore.Store) (struct{}, error) { return struct{}{}, f(s) })
	return err
}

var _ queue.Store = (*restarting)(nil)

func (r *restarting) PutConfig(ctx context.Context, q string, c queue.Config) error {
	return call0(r, func(s *memstore.Store) error { return s.PutConfig(ctx, q, c) })
}
func (r *restarting) DeleteQueue(ctx context.Context, q string) error {
	return call0(r, func(s *memstore.Store) error { return s.DeleteQueue(ctx, q) })
}
func (r *restarting) Config(ctx context.Context, q string) (queue.Config, error) {
	return call(r, func(s *memstore.Store) (queue.Config, error) { return s.Config(ctx, q) })
}
func (r *restarting) Queues(ctx context.Context) ([]string, error) {
	return call(r, func(s *memstore.Store) ([]string, error) { return s.Queues(ctx) })
}
func (r *restarting) Enter(ctx context.Context, q, user string) (queue.Standing, error) {
	return call(r, func(s *memstore.Store) (queue.Standing, error) { return s.Enter(ctx, q, user) })
}
func (r *restarting) Join(ctx context.Context, q, user string, j lane.Join) (queue.Standing, error) {
	return call(r, func(s *memstore.Store) (queue.Standing, error) { return s.Join(ctx, q, user, j) })
}
func (r *restarting) AddCodes(ctx context.Context, q string, codes []accesscode.Code) (accesscode.Added, error) {
	return call(r, func(s *memstore.Store) (accesscode.Added, error) { return s.AddCodes(ctx, q, codes) })
}
func (r *restarting) PutHandoff(ctx context.Context, q, user, codeHash string, ttl time.Duration) (time.Time, error) {
	return call(r, func(s *memstore.Store) (time.Time, error) { return s.PutHandoff(ctx, q, user, codeHash, ttl) })
}
func (r *restarting) ClaimHandoff(ctx context.Context, q, codeHash, user string) (string, queue.Standing, error) {
	type out struct {
		from string
		e    queue.Standing
	}
	o, err := call(r, func(s *memstore.Store) (out, error) {
		from, e, err := s.ClaimHandoff(ctx, q, codeHash, user)
		return out{from, e}, err
	})
	return o.from, o.e, err
}
func (r *restarting) Status(ctx context.Context, q, user string) (queue.Standing, error) {
	return call(r, func(s *memstore.Store) (queue.Standing, error) { return s.Status(ctx, q, user) })
}
func (r *restarting) EnterShadow(ctx context.Context, q, user string, m suspect.Mark) (queue.Standing, error) {
	return call(r, func(s *memstore.Store) (queue.Standing, error) { return s.EnterShadow(ctx, q, user, m) })
}
func (r *restarting) Suspects(ctx context.Context, q string, limit int) ([]suspect.Place, error) {
	return call(r, func(s *memstore.Store) ([]suspect.Place, error) { return s.Suspects(ctx, q, limit) })
}
func (r *restarting) ClearSuspect(ctx context.Context, q string, ticket int64) (bool, error) {
	return call(r, func(s *memstore.Store) (bool, error) { return s.ClearSuspect(ctx, q, ticket) })
}
func (r *restarting) Leave(ctx context.Context, q, user string) (bool, error) {
	return call(r, func(s *memstore.Store) (bool, error) { return s.Leave(ctx, q, user) })
}
func (r *restarting) Admit(ctx context.Context, q string, tokens []string) (queue.Admission, error) {
	return call(r, func(s *memstore.Store) (queue.Admission, error) { return s.Admit(ctx, q, tokens) })
}
func (r *restarting) AdmitNow(ctx context.Context, q, user, tok string) (queue.Standing, error) {
	return call(r, func(s *memstore.Store) (queue.Standing, error) { return s.AdmitNow(ctx, q, user, tok) })
}
func (r *restarting) Sweep(ctx context.Context, q string) (bool, error) {
	return call(r, func(s *memstore.Store) (bool, error) { return s.Sweep(ctx, q) })
}
func (r *restarting) SetStock(ctx context.Context, q string, st queue.Stock, onlyLower bool) (queue.Stock, error) {
	return call(r, func(s *memstore.Store) (queue.Stock, error) { return s.SetStock(ctx, q, st, onlyLower) })
}
func (r *restarting) Seen(ctx context.Context, q string, users []string, hidden bool) error {
	return call0(r, func(s *memstore.Store) error { return s.Seen(ctx, q, users, hidden) })
}
func (r *restarting) FoldRate(ctx context.Context, q string, sample queue.RateSample, window time.Duration) (queue.RateWindow, error) {
	return call(r, func(s *memstore.Store) (queue.RateWindow, error) { return s.FoldRate(ctx, q, sample, window) })
}
func (r *restarting) SetRate(ctx context.Context, q string, d queue.RateDecision) (float64, bool, error) {
	type out struct {
		before float64
		ok     bool
	}
	o, err := call(r, func(s *memstore.Store) (out, error) {
		before, ok, err := s.SetRate(ctx, q, d)
		return out{before, ok}, err
	})
	return o.before, o.ok, err
}
func (r *restarting) RateChanges(ctx context.Context, q string) ([]queue.RateChange, error) {
	return call(r, func(s *memstore.Store) ([]queue.RateChange, error) { return s.RateChanges(ctx, q) })
}
func (r *restarting) OpenDue(ctx context.Context, q, owner string, lease time.Duration) (queue.Opening, error) {
	return call(r, func(s *memstore.Store) (queue.Opening, error) { return s.OpenDue(ctx, q, owner, lease) })
}
func (r *restarting) Place(ctx context.Context, q, owner string, first int64, users []string, lease time.Duration) (bool, error) {
	return call(r, func(s *memstore.Store) (bool, error) { return s.Place(ctx, q, owner, first, users, lease) })
}
func (r *restarting) CommitDraw(ctx context.Context, q string, c draw.Committed) (draw.Committed, bool, error) {
	var ok bool
	got, err := call(r, func(s *memstore.Store) (draw.Committed, error) {
		c, o, err := s.CommitDraw(ctx, q, c)
		ok = o
		return c, err
	})
	return got, ok, err
}
func (r *restarting) SaveDraw(ctx context.Context, q, owner string, rec draw.Record) (draw.Record, error) {
	return call(r, func(s *memstore.Store) (draw.Record, error) { return s.SaveDraw(ctx, q, owner, rec) })
}
func (r *restarting) Draws(ctx context.Context, q string) ([]draw.Committed, error) {
	return call(r, func(s *memstore.Store) ([]draw.Committed, error) { return s.Draws(ctx, q) })
}
func (r *restarting) DrawRecord(ctx context.Context, q, commitment string) (draw.Record, bool, error) {
	var ok bool
	got, err := call(r, func(s *memstore.Store) (draw.Record, error) {
		rec, o, err := s.DrawRecord(ctx, q, commitment)
		ok = o
		return rec, err
	})
	return got, ok, err
}
func (r *restarting) BeginUse(ctx context.Context, q, user, tok, owner string, lock time.Duration) error {
	return call0(r, func(s *memstore.Store) error { return s.BeginUse(ctx, q, user, tok, owner, lock) })
}
func (r *restarting) EndUse(ctx context.Context, q, user, tok, owner string, consumed bool) error {
	return call0(r, func(s *memstore.Store) error { return s.EndUse(ctx, q, user, tok, owner, consumed) })
}
func (r *restarting) Snapshot(ctx context.Context, q string) (queue.Snapshot, error) {
	return call(r, func(s *memstore.Store) (queue.Snapshot, error) { return s.Snapshot(ctx, q) })
}
func (r *restarting) Stats(ctx context.Context, q string) (queue.Stats, error) {
	return call(r, func(s *memstore.Store) (queue.Stats, error) { return s.Stats(ctx, q) })
}
func (r *restarting) FirstUse(ctx context.Context, q, key string, ttl time.Duration) (bool, error) {
	return call(r, func(s *memstore.Store) (bool, error) { return s.FirstUse(ctx, q, key, ttl) })
}
func (r *restarting) Extend(ctx context.Context, q, user, tok string) (time.Time, error) {
	return call(r, func(s *memstore.Store) (time.Time, error) { return s.Extend(ctx, q, user, tok) })
}
func (r *restarting) Ping(ctx context.Context) error {
	return call0(r, func(s *memstore.Store) error { return s.Ping(ctx) })
}
func (r *restarting) Roll(ctx context.Context, q string, w rollup.Write) error {
	return call0(r, func(s *memstore.Store) error { return s.Roll(ctx, q, w) })
}
func (r *restarting) Rollups(ctx context.Context, q string, since, until time.Time) ([]rollup.Row, error) {
	return call(r, func(s *memstore.Store) ([]rollup.Row, error) { return s.Rollups(ctx, q, since, until) })
}
