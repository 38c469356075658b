package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue/perqueue"
)

// View is what a user is told about their standing.
type View struct {
	State    State
	Position int64
	Length   int64
	// Drawn: the queue draws whom it lets in (MethodRandom): Position is 0
	// and shown as none, and the estimate is a draw's.
	Drawn bool
	// EstimatedWaitSeconds is ceil(position/rate), 0 within the next batch;
	// when Drawn, the expected wait of a draw (EstimateDrawWait).
	EstimatedWaitSeconds int64
	// PollAfterSeconds is nil when there is nothing to wait for (READY,
	// NOT_IN_QUEUE).
	PollAfterSeconds *int64
	Token            string
	ExpiresAt        time.Time
	// Paused says admission is stopped, so the estimate is not a promise.
	Paused bool
	// Stalled says admission is not paused yet nobody has been let in for
	// a while: the estimate is not a promise either.
	Stalled bool
	// OpensAt is set while the user waits for the line's opening, with no
	// place yet (Position 0).
	OpensAt time.Time
	// BeyondStock: fewer units are left than people ahead of the user, so
	// those ahead could buy everything before admission reaches them.
	BeyondStock bool
}

// AdmissionNear reports whether admission may reach this waiting user
// before their next poll is due: an estimated wait within the shortest
// pollAfter (2 s), in a queue that is neither paused nor stalled, with a
// place in line. WaitStatus holds such users; nobody else is worth holding
// (a held request answers as soon as the line is found stalled).
func (v View) AdmissionNear() bool {
	return v.State == Waiting && !v.Paused && !v.Stalled && v.OpensAt.IsZero() && v.EstimatedWaitSeconds <= pollAfter(0)
}

// ErrQueueClosed: the queue's closesAt has passed, or its method is reject,
// and nobody new may take a place (Config.ClosesAt, MethodReject).
var ErrQueueClosed = errors.New("the queue is closed to newcomers")

// SetStock tells the queue what it has left to sell (Store.SetStock); a
// stock of 0 is sold out, and any other (or one not known) is a restock:
// whoever waits has their place again, and admission goes on. Status polls
// through this instance see the change at once; through another, within
// the age of that instance's snapshot of the line (NewService).
func (s *Service) SetStock(ctx context.Context, queue string, st Stock, onlyLower bool) (Stock, error) {
	if err := ValidateQueueName(queue); err != nil {
		return Stock{}, err
	}
	if st.Known && (st.Units < 0 || st.Units > maxUnits) {
		return Stock{}, fmt.Errorf("%w: unitsLeft must be 0..%d, got %d", ErrInvalidConfig, maxUnits, st.Units)
	}
	now, err := s.store.SetStock(ctx, queue, st, onlyLower)
	if err == nil {
		s.Changed(queue)
	}
	return now, err
}

// maxUnits bounds a queue's units left, as the order API bounds a
// product's stock.
const maxUnits = 1_000_000_000

// Service is the line as users and operators see it: validation, estimates
// and poll hints around the Store's atomic steps.
type Service struct {
	// Clock judges the instants of a queue's config that the store does not
	// (ClosesAt): time.Now unless a test sets it.
	Clock func() time.Time

	store    Store
	snaps    *snapshots // nil: every status poll asks the store
	presence *presence

	mu      sync.Mutex
	changes map[string]chan struct{} // closed when the queue changes here (WaitStatus)

	configsMu sync.Mutex
	configs   map[string]recentConfig // RecentConfig's reads

	knownMu sync.Mutex
	known   []string // the last list of queues the store gave
}

// recentConfig is a queue's config as read at a moment.
type recentConfig struct {
	c  Config
	at time.Time
}

// recentConfigAge is how old a config RecentConfig answers with may be: a
// change made through another instance shows within it.
const recentConfigAge = time.Second

// NewService returns a Service over store. With snapshotAge > 0, status polls
// far from the front are answered from a snapshot of the line at most that
// old (see snapshots); 0 sends every poll to the store.
func NewService(store Store, snapshotAge time.Duration) *Service {
	s := &Service{Clock: time.Now, store: store, presence: newPresence(store), changes: map[string]chan struct{}{}, configs: map[string]recentConfig{}}
	if snapshotAge > 0 {
		s.snaps = newSnapshots(store, snapshotAge)
	}
	return s
}

// RunPresence sends this instance's seen marks (no-shows, see presence)
// every PresenceFlush until ctx ends.
func (s *Service) RunPresence(ctx context.Context, logger *slog.Logger) {
	troubles := perqueue.NewTroubles(logger, "no-shows: sending seen marks")
	perqueue.Every(ctx, presenceFlush, func() { s.presence.flush(ctx, troubles) })
	// The marks taken since the last flush go too: an instance draining
	// must not make its pollers look absent.
	s.presence.flush(context.WithoutCancel(ctx), troubles)
}

// SnapshotAnswers counts status polls answered from a snapshot (hits) and
// by the store (misses), for metrics.
func (s *Service) SnapshotAnswers() (hits, misses uint64) {
	if s.snaps == nil {
		return 0, 0
	}
	return s.snaps.hits.Load(), s.snaps.misses.Load()
}

// Changed tells the service that the queue changed on this instance but
// outside its own calls (the admitter admitted users): a snapshot it holds
// is stale, and held status requests look again.
func (s *Service) Changed(queue string) {
	if s.snaps != nil {
		s.snaps.changed(queue)
	}
	s.mu.Lock()
	if ch, ok := s.changes[queue]; ok {
		close(ch)
		delete(s.changes, queue)
	}
	s.mu.Unlock()
}

// changedSignal returns a channel closed at the queue's next change made
// through this instance.
func (s *Service) changedSignal(queue string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.changes[queue]
	if !ok {
		ch = make(chan struct{})
		s.changes[queue] = ch
	}
	return ch
}

// holdRecheck is how often a held status request asks again when nothing
// on this instance said the line moved (another instance may have admitted
// the user): the default admission tick.
const holdRecheck = 100 * time.Millisecond

// HoldFrom is Status for a client willing to wait up to hold for news,
// from v, the standing the caller has just read (not read again): a
// user still waiting whom admission may reach before their next poll would
// be due (estimated wait ≤ the shortest pollAfter, 2 s) is held until no
// longer waiting (READY, or out of line) or until hold or ctx ends, and then
// told where they stand. A client polling every 2 s in the last 10 s band
// always lands in that window once, so people near the front learn READY
// within about a tick instead of at their next poll, and orders reach the
// database at the pace admission lets users in, not at the pace of their
// polls (docs/benchmarks.md, the herd). Anyone further back, or in a
// paused queue, is answered at once, as by Status. ctx ending (the client
// left, the server drains) ends the hold with the last answer, never a
// reading in progress, so it is never an error.
func (s *Service) HoldFrom(ctx context.Context, queue, user string, hold time.Duration, v View) (View, error) {
	deadline := time.Now().Add(hold)
	for first := true; ; first = false {
		if !first {
			e, err := s.status(context.WithoutCancel(ctx), queue, user)
			if err != nil {
				return View{}, err
			}
			v = s.view(e)
		}
		left := time.Until(deadline)
		if !v.AdmissionNear() || left <= 0 {
			return v, nil
		}
		// Asked for only now that the queue is known to exist, so made-up
		// names leave nothing behind; a change between the read above and
		// this is caught by the recheck.
		changed := s.changedSignal(queue)
		t := time.NewTimer(min(left, holdRecheck))
		select {
		case <-ctx.Done(): // the client left, or the server drains
			t.Stop()
			return v, nil
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// Enter puts the user in line (or tells them they are already in or READY).
// A closed queue (ClosesAt passed, or Method reject) tells whoever holds a
// place where they stand, and refuses anyone else (ErrQueueClosed). Under
// passthrough a newcomer is let straight in while MaxActiveTokens has room
// (Store.AdmitNow, outside the rate), and joins the line otherwise.
func (s *Service) Enter(ctx context.Context, queue, user string) (View, error) {
	if err := validate(queue, user); err != nil {
		return View{}, err
	}
	c, err := s.RecentConfig(ctx, queue)
	if err != nil {
		return View{}, err
	}
	if s.closedTo(c) {
		v, err := s.Status(ctx, queue, user)
		if err == nil && v.State == NotInQueue {
			err = ErrQueueClosed
		}
		return v, err
	}
	if c.Method == MethodPassthrough {
		if v, err := s.admitNow(ctx, queue, user); err != nil || v.State != NotInQueue {
			return v, err
		}
	}
	e, err := s.store.Enter(ctx, queue, user)
	if err != nil {
		return View{}, err
	}
	if s.snaps != nil {
		s.snaps.remember(queue, user, e)
		s.snaps.changed(queue)
	}
	return s.view(e), nil
}

// Status reads the user's standing.
func (s *Service) Status(ctx context.Context, queue, user string) (View, error) {
	e, err := s.status(ctx, queue, user)
	if err != nil {
		return View{}, err
	}
	return s.view(e), nil
}

// status is Status before the estimate: from the snapshot when it can
// answer, else from the store (remembering the ticket it gives). A user
// near enough the front for no-shows to matter is marked present.
func (s *Service) status(ctx context.Context, queue, user string) (Standing, error) {
	if err := validate(queue, user); err != nil {
		return Standing{}, err
	}
	if s.snaps != nil {
		if e, ok := s.snaps.status(ctx, queue, user); ok {
			s.presence.note(queue, user, e)
			return e, nil
		}
	}
	e, err := s.store.Status(ctx, queue, user)
	if err != nil {
		return Standing{}, err
	}
	if s.snaps != nil {
		s.snaps.remember(queue, user, e)
	}
	s.presence.note(queue, user, e)
	return e, nil
}

// AdmitNow lets the user straight in while the line is quiet (see
// Store.AdmitNow): READY with a token, or where they stand in line, or
// NOT_IN_QUEUE when the line is busy and they must join it.
func (s *Service) AdmitNow(ctx context.Context, queue, user string) (View, error) {
	if err := validate(queue, user); err != nil {
		return View{}, err
	}
	c, err := s.RecentConfig(ctx, queue)
	if err != nil {
		return View{}, err
	}
	if s.closedTo(c) { // nobody new is let in, at once or otherwise
		return s.Status(ctx, queue, user)
	}
	return s.admitNow(ctx, queue, user)
}

// admitNow is AdmitNow once the queue is known to take newcomers.
func (s *Service) admitNow(ctx context.Context, queue, user string) (View, error) {
	e, err := s.store.AdmitNow(ctx, queue, user, NewTokens(1)[0])
	if err != nil {
		return View{}, err
	}
	if s.snaps != nil {
		s.snaps.remember(queue, user, e)
		if e.State == Ready {
			s.snaps.changed(queue)
		}
	}
	return s.view(e), nil
}

// closedTo says whether a queue of config c takes no newcomers now: its
// method is reject, or its ClosesAt has passed by the service's clock. The
// one rule for both: whoever holds a place keeps it, nobody new takes one.
func (s *Service) closedTo(c Config) bool {
	return c.Method == MethodReject || !c.ClosesAt.IsZero() && !s.Clock().Before(c.ClosesAt)
}

// Leave takes the user out of line or gives back their unused token.
// Leaving when not in line is not an error: the outcome is the same.
func (s *Service) Leave(ctx context.Context, queue, user string) error {
	if err := validate(queue, user); err != nil {
		return err
	}
	_, err := s.store.Leave(ctx, queue, user)
	if err == nil && s.snaps != nil {
		s.snaps.remember(queue, user, Standing{State: NotInQueue})
		s.snaps.changed(queue)
	}
	return err
}

// Config returns a queue's config.
func (s *Service) Config(ctx context.Context, queue string) (Config, error) {
	if err := ValidateQueueName(queue); err != nil {
		return Config{}, err
	}
	return s.store.Config(ctx, queue)
}

// RecentConfig is Config read at most a second ago: what every enter asks
// (the queue's join policy) without a store round trip each time. A
// change made through this instance shows at once, one made through
// another within the second.
func (s *Service) RecentConfig(ctx context.Context, queue string) (Config, error) {
	s.configsMu.Lock()
	r, ok := s.configs[queue]
	s.configsMu.Unlock()
	if ok && time.Since(r.at) < recentConfigAge {
		return r.c, nil
	}
	at := time.Now()
	c, err := s.Config(ctx, queue)
	if err != nil {
		return c, err
	}
	s.configsMu.Lock()
	s.configs[queue] = recentConfig{c: c, at: at}
	s.configsMu.Unlock()
	return c, nil
}

// PutConfig validates and stores a queue's config, creating the queue.
func (s *Service) PutConfig(ctx context.Context, queue string, c Config) error {
	if err := ValidateQueueName(queue); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	err := s.store.PutConfig(ctx, queue, c)
	s.configsMu.Lock()
	delete(s.configs, queue)
	s.configsMu.Unlock()
	s.Changed(queue)
	return err
}

// DeleteQueue removes a queue with everyone in it (Store.DeleteQueue):
// whoever polls it next is told it is not found.
func (s *Service) DeleteQueue(ctx context.Context, queue string) error {
	if err := ValidateQueueName(queue); err != nil {
		return err
	}
	err := s.store.DeleteQueue(ctx, queue)
	s.configsMu.Lock()
	delete(s.configs, queue)
	s.configsMu.Unlock()
	s.Changed(queue)
	return err
}

// FirstUse records a one-time key of the queue (Store.FirstUse).
func (s *Service) FirstUse(ctx context.Context, queue, key string, ttl time.Duration) (bool, error) {
	if err := ValidateQueueName(queue); err != nil {
		return false, err
	}
	return s.store.FirstUse(ctx, queue, key, ttl)
}

// Stats returns the operator's view of a queue.
func (s *Service) Stats(ctx context.Context, queue string) (Stats, error) {
	if err := ValidateQueueName(queue); err != nil {
		return Stats{}, err
	}
	st, err := s.store.Stats(ctx, queue)
	st.Queue = queue
	return st, err
}

// RateChanges lists the recent changes of a queue's admission rate,
// oldest first (the admin chart).
func (s *Service) RateChanges(ctx context.Context, queue string) ([]RateChange, error) {
	if err := ValidateQueueName(queue); err != nil {
		return nil, err
	}
	return s.store.RateChanges(ctx, queue)
}

// Queues lists the queue names.
func (s *Service) Queues(ctx context.Context) ([]string, error) {
	names, err := s.store.Queues(ctx)
	if err == nil {
		s.knownMu.Lock()
		s.known = names
		s.knownMu.Unlock()
	}
	return names, err
}

// KnownQueues lists the queues for the loops that visit them all (the
// history, the metrics, the store's health): the store's list, or when the
// store cannot give it, the last list it gave. On Redis Cluster the list
// lives on one node; while that node is down the queues on the others are
// still there to serve, and to watch.
func (s *Service) KnownQueues(ctx context.Context) []string {
	if names, err := s.Queues(ctx); err == nil {
		return names
	}
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	return s.known
}

// EnsureQueue creates the queue with c unless it exists already, and says
// whether it did; an existing queue keeps its config, so restarting an
// instance never undoes an operator's change.
func (s *Service) EnsureQueue(ctx context.Context, queue string, c Config) (created bool, err error) {
	_, err = s.store.Config(ctx, queue)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, ErrQueueNotFound) {
		return false, err
	}
	return true, s.PutConfig(ctx, queue, c)
}

func (s *Service) view(e Standing) View {
	v := View{State: e.State, Paused: e.Pace.Paused}
	switch {
	case e.State == Waiting && e.Pace.Stock.SoldOut():
		// Their place is kept for a restock, but nothing moves until one.
		v.State = SoldOut
		p := jitterSeconds(pollAfterSoldOut)
		v.PollAfterSeconds = &p
	case e.State == Waiting && e.PreQueue:
		v.OpensAt = e.Pace.OpensAt
		p := pollAfterOpening(time.Until(v.OpensAt))
		v.PollAfterSeconds = &p
	case e.State == Waiting:
		v.Position, v.Length, v.Stalled = e.Position, e.Length, e.Pace.Stalled
		v.EstimatedWaitSeconds = estimateWait(e.Position, e.Pace)
		if e.Pace.Drawn {
			v.Position, v.Drawn = 0, true
			v.EstimatedWaitSeconds = estimateDrawWait(e.Length, e.Pace)
		}
		p := jitterSeconds(pollAfter(v.EstimatedWaitSeconds))
		v.PollAfterSeconds = &p
		v.BeyondStock = e.Pace.Stock.Known && !e.Pace.Drawn && e.Position > e.Pace.Stock.Units
	case e.State == Ready:
		v.Token, v.ExpiresAt = e.Token, e.ExpiresAt
	}
	return v
}

func validate(queue, user string) error {
	if err := ValidateQueueName(queue); err != nil {
		return err
	}
	if err := ValidateUserID(user); err != nil {
		return err
	}
	return nil
}

// RateFromPool derives the admission rate from the bottleneck: the order
// API's share of the database pool, each connection serving 1/latency
// orders per second. It returns the rate and a sentence explaining it.
func RateFromPool(poolSize int, share float64, orderLatency time.Duration) (float64, string, error) {
	if poolSize < 1 || !(share > 0 && share <= 1) || orderLatency <= 0 {
		return 0, "", fmt.Errorf("%w: pool size ≥ 1, share in (0,1] and latency > 0 are needed, got %d, %v, %v",
			ErrInvalidConfig, poolSize, share, orderLatency)
	}
	conns := float64(poolSize) * share
	perConn := float64(time.Second) / float64(orderLatency)
	rate := conns * perConn
	why := fmt.Sprintf("%d conns × %g × 1000/%g ms = %g/s", poolSize, share,
		float64(orderLatency)/float64(time.Millisecond), rate)
	return rate, why, nil
}
