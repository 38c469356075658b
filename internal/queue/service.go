package queue

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/suspect"
)

// View is what a user is told about their standing.
type View struct {
	State    State
	Position int64
	Length   int64
	// Drawn: the queue draws whom it lets in (MethodRandom): Position is 0
	// and shown as none, and the estimate is a draw's.
	Drawn bool
	// EstimatedWaitSeconds is the median wait (Estimate.Seconds: at a
	// steady rate with nobody skipped, ceil(position/rate)), 0 within what
	// the next tick surely lets in (Pace.NextTickAdmits: rate × interval
	// rounded down, at most a batch; none at a rate below one a tick);
	// when Drawn, the median wait of a draw.
	EstimatedWaitSeconds int64
	// Estimate is the wait in full (issue 54; Pace.Estimate): its median
	// (EstimatedWaitSeconds), the range of its 5th to 95th percentiles,
	// and whether the line can say, with why not. While WAITING with a
	// place, and, not known, before the opening (Reason "opening") and
	// SOLD_OUT ("sold_out"); zero for READY and NOT_IN_QUEUE.
	Estimate estimate.Estimate
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
	// Ticket and Epoch are the user's place-holder in the line (Standing),
	// while they hold one (WAITING with a place, or SOLD_OUT): with the
	// queue's front document they give the page the position without
	// asking (internal/queue/front). 0 before an opening.
	Ticket, Epoch int64
	// Shadow: the place is in the shadow line (a suspect's, EnterShadow).
	// Nothing else of the answer says so: Ticket and Epoch are then the
	// real line's, the ticket a person arriving with it would hold
	// (Standing.Behind+1), so a page places it where it is shown; the HTTP
	// layer signs it as a shadow place's (front.Tickets.SignShadow), which
	// only the MAC tells, so that shown back it places no one in the real
	// line.
	Shadow bool
	// AdmissionNear: admission may reach this waiting user before their
	// next poll is due (admissionNear), so a request willing to wait for
	// news is worth holding (HoldFrom).
	AdmissionNear bool
	// Hidden: the page asked as a hidden one (issue 55; Status's hidden):
	// its presence mark says so, HoldFrom's rechecks mark alike, and
	// PollAfterSeconds may be longer (hiddenPollAfter). Not in the answer.
	Hidden bool
	// Lane is the lane the place is in (issue 53) while WAITING, "" for
	// the public lane (which the answer names only in a queue with
	// lanes, so a queue without keeps its answers' shape). Position and
	// Length are within the lane. A place in another lane than the
	// public's has no Ticket: the front document places only the public
	// lane.
	Lane string
}

// admissionNear says whether admission may reach this waiting user before
// their next poll is due: an estimated wait within the shortest pollAfter
// (2 s), in a queue that is neither paused nor stalled, with a place in
// line. HoldFrom holds such users; nobody else is worth holding (a held
// request answers as soon as the line is found stalled). A shadow place is
// never near: shown at position 1 with no wait under shadowAdmits never,
// it would hold every poll for the whole hold and never be let in, and a
// farm of them would fill the instance's hold slots.
func (v View) admissionNear() bool {
	return v.State == Waiting && !v.Shadow && !v.Paused && !v.Stalled && v.OpensAt.IsZero() && v.EstimatedWaitSeconds <= pollAfter(0)
}

// ErrQueueClosed: the queue's closesAt has passed, or its method is reject,
// and nobody new may take a place (Config.ClosesAt, MethodReject).
var ErrQueueClosed = errors.New("the queue is closed to newcomers")

// Service is the line as its users see it: validation, estimates and
// poll hints around the Store's atomic steps (the operator's calls are
// package operate's).
type Service struct {
	// Clock judges the instants of a queue's config that the store does not
	// (ClosesAt): time.Now unless a test sets it.
	Clock func() time.Time

	// line is told who joined through this instance (which wakes the
	// admission loop), and tells of the line moved or read by the
	// admission loop and of configs changed by the operator's calls.
	line     *signals.Line
	store    Store
	snaps    *snapshots // nil: every status poll asks the store
	presence *presence

	mu      sync.Mutex
	changes map[string]chan struct{} // closed when the queue changes here (WaitStatus)

	configsMu sync.Mutex
	configs   map[string]recentConfig // ConfigInForce's reads

}

// recentConfig is a queue's config as read at a moment.
type recentConfig struct {
	c  Config
	at time.Time
}

// recentConfigAge is how old a config ConfigInForce answers with may be: a
// change made through another instance shows within it.
const recentConfigAge = time.Second

// NewService returns a Service over store, on the instance's line of
// signals: it tells line who joined, and listens to it for the line moved
// or read elsewhere on the instance (the admitter, the operator's calls).
// With snapshotAge > 0, status polls far from the front are answered from
// a snapshot of the line at most that old (see snapshots); 0 sends every
// poll to the store. A nil line is one of the service's own.
func NewService(store Store, snapshotAge time.Duration, line *signals.Line) *Service {
	if line == nil { // a service alone still hears its own calls
		line = signals.New()
	}
	s := &Service{Clock: time.Now, line: line, store: store, presence: newPresence(store), changes: map[string]chan struct{}{}, configs: map[string]recentConfig{}}
	if snapshotAge > 0 {
		s.snaps = newSnapshots(store, snapshotAge)
	}
	line.Listen(signals.Listener{
		Moved:        func(queue string, _ []string, _ []rollup.Wait) { s.changed(queue) },
		Read:         s.lineRead,
		Reconfigured: s.reconfigured,
	})
	return s
}

// reconfigured forgets the queue's config read last, and what was held on
// the queue looks again.
func (s *Service) reconfigured(queue string) {
	s.configsMu.Lock()
	delete(s.configs, queue)
	s.configsMu.Unlock()
	s.changed(queue)
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

// Snapshot is the queue's line as this instance last read it, no older
// than the snapshot age (NewService): the one read the status polls share,
// so a front document built from it costs the store nothing more.
// ErrQueueNotFound for a queue that does not exist, asked before anything
// is kept for it, so made-up names leave nothing behind.
func (s *Service) Snapshot(ctx context.Context, queue string) (Snapshot, error) {
	if _, err := s.ConfigInForce(ctx, queue); err != nil {
		return Snapshot{}, err
	}
	if s.snaps != nil {
		if sn, ok := s.snaps.fresh(ctx, s.snaps.view(queue, true), s.snaps.maxAge); ok {
			return sn, nil
		}
	}
	// No snapshots kept, or the fetch failed: the store's own answer (and
	// its error).
	return s.store.Snapshot(ctx, queue)
}

// SnapshotAnswers counts status polls answered from a snapshot (hits) and
// by the store (misses), for metrics.
func (s *Service) SnapshotAnswers() (hits, misses uint64) {
	if s.snaps == nil {
		return 0, 0
	}
	return s.snaps.hits.Load(), s.snaps.misses.Load()
}

// changed is told that the queue changed on this instance, through its
// own calls or outside them (signals.Line.Moved: the admitter admitted
// users): a snapshot it holds is stale, and held status requests look
// again.
func (s *Service) changed(queue string) {
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

// TicketShown says the user showed the ticket the line gave them (epoch,
// ticket), its signature checked by the caller: this instance's snapshot
// of the line may then answer their status by arithmetic, as it does after
// the store has told it their ticket, rather than ask the store. A page
// reading the front document calls its instance only near the front, so
// without this each of its calls was the store's.
func (s *Service) TicketShown(queue, user string, epoch, ticket int64) {
	if s.snaps != nil {
		s.snaps.shown(queue, user, epoch, ticket)
	}
}

// lineRead is told (signals.Line.Read) that this instance's admitter has just read the queue's line
// and moved nobody itself: another instance may have let people in since
// it last looked. Requests held on the queue (HoldFrom) recheck now,
// sharing one fresh read of the line, so they learn READY at the
// admitter's next read after anyone lets them in (within half an
// interval, its jitter, when two instances share the queue), and wake
// with it rather than on timers of their own. Without held requests it
// does nothing.
func (s *Service) lineRead(queue string) {
	s.mu.Lock()
	_, held := s.changes[queue]
	s.mu.Unlock()
	if held {
		s.changed(queue)
	}
}

// holdFallback is how often a held status request asks again when nothing
// on this instance says the line may have moved: the instance's admitter
// reads it every tick (lineRead), so this is only for a queue whose ticks
// it cannot read (the store failing, a queue not yet discovered). On the
// process's beat, so the held requests fall back together.
const holdFallback = time.Second

// holdRecheck is the oldest snapshot of the line a held request's recheck
// trusts: the default admission tick.
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
//
// The held requests of a queue on one instance recheck together, when
// the line may have moved: this instance's admitter let people in
// (changed) or read the line (lineRead), or holdFallback passed. Each
// recheck first asks the instance's snapshot of the line, read once for
// all of them (snapshots.stillWaiting), and the store only for a user it
// no longer places (so READY, and its token, still come from the store).
func (s *Service) HoldFrom(ctx context.Context, queue, user string, hold time.Duration, v View) (View, error) {
	deadline := time.Now().Add(hold)
	for first := true; ; first = false {
		if !first {
			e, err := s.recheck(context.WithoutCancel(ctx), queue, user, v.Hidden)
			if err != nil {
				return View{}, err
			}
			v = s.view(ctx, queue, e, v.Hidden)
		}
		left := time.Until(deadline)
		if !v.AdmissionNear || left <= 0 {
			return v, nil
		}
		// Asked for only now that the queue is known to exist, so made-up
		// names leave nothing behind; a change between the read above and
		// this is caught by the recheck.
		changed := s.changedSignal(queue)
		t := time.NewTimer(min(left, perqueue.UntilBeat(holdFallback)))
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

// recheck reads a held user's standing again: from the snapshot the
// instance's held requests share while it places the user still in line,
// else as Status does.
func (s *Service) recheck(ctx context.Context, queue, user string, hidden bool) (Standing, error) {
	if s.snaps != nil {
		if e, ok := s.snaps.stillWaiting(ctx, queue, user, holdRecheck); ok {
			s.presence.note(queue, user, e, hidden)
			return e, nil
		}
	}
	return s.status(ctx, queue, user, hidden)
}

// Enter puts the user in line (or tells them they are already in or READY).
// A closed queue (ClosesAt passed, or Method reject) tells whoever holds a
// place where they stand, and refuses anyone else (ErrQueueClosed). Under
// passthrough a newcomer is let straight in while MaxActiveTokens has room
// (Store.AdmitNow, outside the rate), and joins the line otherwise.
//
// in, at most one, is the lane asked for (issue 53): the lane the user's
// claims give, or an access code's hash, which then decides the lane and
// is redeemed with the place (Store.Join: accesscode.ErrInvalid,
// accesscode.ErrUsed). None, or the public lane without a code, enters as
// in a queue without lanes. (A parameter rather than a method of its own:
// package queue's exports are capped, and every caller but the HTTP
// layer's enters the public lane.) A code is never let straight in under
// passthrough: it is checked, and spent, by the store's step. With
// in's Handoff set, it claims the place a handoff link carries instead
// (claim; issue 55).
func (s *Service) Enter(ctx context.Context, queue, user string, in ...lane.Join) (View, error) {
	var j lane.Join
	if len(in) > 0 {
		j = in[0]
	}
	if j.Handoff != "" {
		return s.claim(ctx, queue, user, j.Handoff)
	}
	return s.enter(ctx, queue, user, nil, j)
}

// EnterShadow is Enter for a suspect (issue 51): a newcomer's place is
// taken in the shadow line, keeping mark (Store.EnterShadow), and answered
// as a person's is; whoever already holds a place, in either line, or is
// READY is told so as by Enter, so a mark is never shed by entering again.
// Closed, full (the shadow line's own capacity), sold out and an opening
// ahead answer as for a person. Under passthrough a suspect is never let
// straight in: it takes its place in the shadow line, as when the line is
// busy.
func (s *Service) EnterShadow(ctx context.Context, queue, user string, mark suspect.Mark) (View, error) {
	return s.enter(ctx, queue, user, &mark, lane.Join{})
}

// enter is Enter in the lane j asks for, and EnterShadow when mark is set.
func (s *Service) enter(ctx context.Context, queue, user string, mark *suspect.Mark, j lane.Join) (View, error) {
	if err := validate(queue, user); err != nil {
		return View{}, err
	}
	c, err := s.ConfigInForce(ctx, queue)
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
	if c.Method == MethodPassthrough && mark == nil && j.Code == "" {
		if v, err := s.admitNow(ctx, c, queue, user); err != nil || v.State != NotInQueue {
			return v, err
		}
	}
	var e Standing
	switch {
	case mark != nil:
		e, err = s.store.EnterShadow(ctx, queue, user, *mark)
	case j.Code != "" || !isPublic(j.Lane):
		e, err = s.store.Join(ctx, queue, user, j)
	default:
		e, err = s.store.Enter(ctx, queue, user)
	}
	if err != nil {
		return View{}, err
	}
	if s.snaps != nil {
		s.snaps.remember(queue, user, e)
		s.snaps.changed(queue)
	}
	if e.State == Waiting {
		s.line.Joined(queue)
	}
	return s.view(ctx, queue, e, false), nil
}

// RefusesNewcomers is the refusal a newcomer to the queue would get now
// (ErrQueueClosed, ErrQueueFull, ErrSoldOut), as this instance knows it:
// the config read within the second (ConfigInForce) and the length and
// stock in its snapshot of the line (Snapshot, the read the status polls share; with snapshots off, a
// read of its own). Nil when the queue takes newcomers, and when the line
// cannot be read just now: entering tells them then. For what is asked
// only of a newcomer (a challenge), so that nobody is handed work for a
// place they cannot have.
func (s *Service) RefusesNewcomers(ctx context.Context, queue string) error {
	c, err := s.ConfigInForce(ctx, queue)
	if err != nil {
		return err
	}
	if s.closedTo(c) {
		return ErrQueueClosed
	}
	sn, err := s.Snapshot(ctx, queue)
	if err != nil {
		return nil
	}
	return s.refusal(c, sn.Length, sn.Pace.Stock)
}

// refusal is why a newcomer may not take a place in a queue of config c
// whose line is length long, with stock st (Enter's rules: closed, then
// full, then sold out), nil when they may. The length is a snapshot's, up
// to its age old, and leaves out an opening's pre-queue, which Enter
// counts: a newcomer may be told the line is full a moment after it had
// room again, or let through to be told so when they enter.
func (s *Service) refusal(c InForce, length int64, st Stock) error {
	switch {
	case s.closedTo(c):
		return ErrQueueClosed
	case length >= c.Capacity:
		return ErrQueueFull
	case st.SoldOut():
		return ErrSoldOut
	}
	return nil
}

// Status reads the user's standing. hidden, at most one, true: the page
// asking is hidden (issue 55): its presence mark is a hidden one, and a
// WAITING answer may ask it back later (View.Hidden). (A parameter rather
// than a method of its own, as Enter's lane: package queue's exports are
// capped, and only the HTTP layer's polls say it.)
func (s *Service) Status(ctx context.Context, queue, user string, hidden ...bool) (View, error) {
	h := len(hidden) > 0 && hidden[0]
	e, err := s.status(ctx, queue, user, h)
	if err != nil {
		return View{}, err
	}
	if h && e.State == Waiting && !e.PreQueue && !e.Shadow {
		s.markHidden(ctx, queue, user)
	}
	return s.view(ctx, queue, e, h), nil
}

// markHidden marks a waiting user's page hidden whatever their position
// (a beacon, a hidden page's poll; issue 55), where the queue skips
// no-shows: a page hidden far back, a phone locked, asks nothing more,
// and must still be known hidden when the front reaches it
// (AbandonAfterHidden). Such words are few, one as a page hides; a
// visible one marks within the reach only, as every poll (presence.note).
func (s *Service) markHidden(ctx context.Context, queue, user string) {
	if c, err := s.ConfigInForce(ctx, queue); err == nil && c.AbandonAfter > 0 {
		s.presence.mark(queue, user, true)
	}
}

// status is Status before the estimate: from the snapshot when it can
// answer, else from the store (remembering the ticket it gives). A user
// near enough the front for no-shows to matter is marked present, as a
// hidden page or not.
func (s *Service) status(ctx context.Context, queue, user string, hidden bool) (Standing, error) {
	if err := validate(queue, user); err != nil {
		return Standing{}, err
	}
	if s.snaps != nil {
		if e, ok := s.snaps.status(ctx, queue, user); ok {
			s.presence.note(queue, user, e, hidden)
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
	s.presence.note(queue, user, e, hidden)
	return e, nil
}

// AdmitNow lets the user straight in while the line is quiet (see
// Store.AdmitNow): READY with a token, or where they stand in line, or
// NOT_IN_QUEUE when the line is busy and they must join it.
func (s *Service) AdmitNow(ctx context.Context, queue, user string) (View, error) {
	if err := validate(queue, user); err != nil {
		return View{}, err
	}
	c, err := s.ConfigInForce(ctx, queue)
	if err != nil {
		return View{}, err
	}
	if s.closedTo(c) { // nobody new is let in, at once or otherwise
		return s.Status(ctx, queue, user)
	}
	return s.admitNow(ctx, c, queue, user)
}

// admitNow is AdmitNow once the queue, of config c, is known to take
// newcomers.
func (s *Service) admitNow(ctx context.Context, c InForce, queue, user string) (View, error) {
	token := NewTokens(1)[0]
	e, err := s.store.AdmitNow(ctx, queue, user, token)
	if err != nil {
		return View{}, err
	}
	if e.State == Ready {
		s.line.Joined(queue) // what was let in comes out of the next tick's quota, which that tick resets
	}
	if e.State == Ready && e.Token == token && c.NotifyOnReady { // let in now, not READY before
		s.line.LetIn(queue, []string{user}, e.ExpiresAt.Add(-c.TokenTTL), e.ExpiresAt)
	}
	if s.snaps != nil {
		s.snaps.remember(queue, user, e)
		if e.State == Ready {
			s.snaps.changed(queue)
		}
	}
	return s.view(ctx, queue, e, false), nil
}

// closedTo says whether a queue of config c takes no newcomers now: its
// method is reject, or its ClosesAt has passed by the service's clock. The
// one rule for both: whoever holds a place keeps it, nobody new takes one.
func (s *Service) closedTo(c InForce) bool {
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

// ConfigInForce is the queue's settings as they stand now: its config,
// read at most a second ago, with the phase in force by the service's
// clock put over it (Config.InForce). Every enter asks it (the join
// policy, the method) without a store round trip each time. A change made
// through this instance shows at once, one made through another within
// the second; a phase starts on time whenever the config was read.
func (s *Service) ConfigInForce(ctx context.Context, queue string) (InForce, error) {
	s.configsMu.Lock()
	r, ok := s.configs[queue]
	s.configsMu.Unlock()
	if ok && time.Since(r.at) < recentConfigAge {
		return r.c.InForce(s.Clock()), nil
	}
	if err := ValidateQueueName(queue); err != nil {
		return InForce{}, err
	}
	at := time.Now()
	c, err := s.store.Config(ctx, queue)
	if err != nil {
		return InForce{}, err
	}
	s.configsMu.Lock()
	s.configs[queue] = recentConfig{c: c, at: at}
	s.configsMu.Unlock()
	return c.InForce(s.Clock()), nil
}

// isPublic says whether name is the public lane ("" in a Standing).
func isPublic(name string) bool { return name == "" || name == lane.Public }

// view is what the user of the queue is told of their standing e, asking
// as a hidden page or not.
func (s *Service) view(ctx context.Context, queue string, e Standing, hidden bool) View {
	v := View{State: e.State, Paused: e.Pace.Paused, Hidden: hidden}
	if e.State == Waiting && !isPublic(e.Lane) {
		v.Lane = e.Lane
	}
	// Only the public lane's places are placed by the front document (and
	// the snapshot): another lane's ticket is a gap in the public line, so
	// its page asks this instance, which asks the store.
	if e.State == Waiting && !e.PreQueue && isPublic(e.Lane) {
		v.Ticket, v.Epoch, v.Shadow = e.Ticket, e.Epoch, e.Shadow
	}
	if v.Shadow { // its shadow line's number would tell it apart
		v.Ticket = e.Behind + 1
	}
	switch {
	case e.State == Waiting && e.Pace.Stock.SoldOut():
		// Their place is kept for a restock, but nothing moves until one.
		v.State = SoldOut
		v.Estimate = estimate.Estimate{Reason: estimate.UnknownSoldOut}
		poll := int64(pollAfterSoldOut)
		if c, err := s.ConfigInForce(ctx, queue); err == nil {
			poll = int64(c.SoldOutPoll / time.Second)
		}
		p := jitterSeconds(poll)
		v.PollAfterSeconds = &p
	case e.State == Waiting && e.PreQueue:
		v.OpensAt = e.Pace.OpensAt
		v.Estimate = estimate.Estimate{Reason: estimate.UnknownOpening}
		p := pollAfterOpening(time.Until(v.OpensAt))
		v.PollAfterSeconds = &p
	case e.State == Waiting:
		v.Position, v.Length, v.Stalled = e.Position, e.Length, e.Pace.Stalled
		v.Estimate = e.Pace.Estimate(e.Position, e.Length)
		v.EstimatedWaitSeconds = v.Estimate.Seconds
		if e.Pace.Drawn {
			v.Position, v.Drawn = 0, true
		}
		p := jitterSeconds(pollAfter(v.EstimatedWaitSeconds))
		if hidden {
			p = s.hiddenPollAfter(ctx, queue, v.Estimate, p)
		}
		v.PollAfterSeconds = &p
		v.BeyondStock = e.Pace.Stock.Known && !e.Pace.Drawn && e.Position > e.Pace.Stock.Units
	case e.State == Ready:
		v.Token, v.ExpiresAt = e.Token, e.ExpiresAt
	}
	v.AdmissionNear = v.admissionNear()
	return v
}

// hiddenPollAfter is the pollAfterSeconds of a hidden page that would be
// told p (issue 55): its polls cost a background tab's battery, and its
// browser slows their timers anyway, so it may wait up to
// pollAfterHidden, but never more than a tenth of the queue's token TTL
// (READY unseen for longer would waste more of the turn), and only while
// admission cannot reach it sooner: its estimate is known and the low end
// of its range (the 5th percentile) is further off. Otherwise p, the
// bands of a visible page. Jittered downward only: never above the cap.
func (s *Service) hiddenPollAfter(ctx context.Context, queue string, est estimate.Estimate, p int64) int64 {
	c, err := s.ConfigInForce(ctx, queue)
	if err != nil {
		return p
	}
	long := min(pollAfterHidden, int64(c.TokenTTL/time.Second)/10)
	if long <= p || !est.Known || est.Low <= long {
		return p
	}
	return max(p, long-rand.Int64N(long/5+1))
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
