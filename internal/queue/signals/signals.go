// Package signals carries the news the parts of the line on one instance
// give each other, the loop between the user's path and admission made one
// value. The user's path (queue.Service) says someone joined, which wakes
// the admission loop; the admission loop (admission.Admitter) says it moved
// the line or read it and moved nobody, and the operator's calls
// (queue/operate) that a queue's config or stock changed, which the
// service's snapshots and held status requests hear. The wiring makes one
// Line and hands it to each of them when it makes them, as asynq passes its
// channels in each component's params: the loop shows in their
// constructors, not only in the wiring.
package signals

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// Line carries one instance's signals. A nil *Line carries nothing (a
// service or an admitter alone, in tests). Safe for concurrent use;
// telling is cheap enough for every enter (an atomic load and the
// listeners' calls).
type Line struct {
	mu        sync.Mutex // serializes Listen
	listeners atomic.Pointer[[]Listener]
}

// Listener is what one part of the instance does on each signal; a nil
// field ignores that signal. Each is called on the teller's goroutine, so
// it must be quick and must not block.
type Listener struct {
	// Joined: someone joined the queue's line, or was let straight in,
	// through this instance (the admission loop wakes: an idle queue's
	// loop ticks at once).
	Joined func(queue string)
	// Moved: this instance moved the queue's line: a tick let the admitted
	// in (waited: when each took their place, in their order) or passed
	// no-shows over (neither, then), an opening was placed, the stock
	// changed, or an operator cleared a suspect into the line. A held
	// status request looks again.
	Moved func(queue string, admitted []string, waited []rollup.Wait)
	// Read: this instance's admission loop read the queue's line and moved
	// nobody itself; another instance may have moved it since.
	Read func(queue string)
	// Reconfigured: the queue's config was changed or the queue deleted
	// through this instance; a config kept for it is stale.
	Reconfigured func(queue string)
	// LetIn: this instance let users into a queue whose notifyOnReady is
	// on (queue.Config.NotifyOnReady): a tick's admitted, or one let
	// straight in, at at (the store's clock), each holding a token that
	// expires at expires. Told by the one instance that let them in (a
	// tick is claimed by one caller), once, so whoever hears it here may
	// tell the shop without a claim of its own.
	LetIn func(queue string, users []string, at, expires time.Time)
}

// New returns a Line with no listeners yet.
func New() *Line { return &Line{} }

// Listen adds l to the listeners; the constructors given the Line call it.
func (s *Line) Listen(l Listener) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []Listener
	if old := s.listeners.Load(); old != nil {
		all = append(all, *old...)
	}
	all = append(all, l)
	s.listeners.Store(&all)
}

// all is the listeners (none for a nil Line): ranged over by each
// signal, with no closure, so telling allocates nothing.
func (s *Line) all() []Listener {
	if s == nil {
		return nil
	}
	if all := s.listeners.Load(); all != nil {
		return *all
	}
	return nil
}

// Joined tells the listeners that someone joined the queue (Listener.Joined).
func (s *Line) Joined(queue string) {
	for _, l := range s.all() {
		if l.Joined != nil {
			l.Joined(queue)
		}
	}
}

// Moved tells the listeners that this instance moved the queue's line
// (Listener.Moved).
func (s *Line) Moved(queue string, admitted []string, waited []rollup.Wait) {
	for _, l := range s.all() {
		if l.Moved != nil {
			l.Moved(queue, admitted, waited)
		}
	}
}

// Read tells the listeners that the admission loop read the queue's line
// and moved nobody (Listener.Read).
func (s *Line) Read(queue string) {
	for _, l := range s.all() {
		if l.Read != nil {
			l.Read(queue)
		}
	}
}

// LetIn tells the listeners that this instance let users in to a queue
// that tells the shop of them (Listener.LetIn).
func (s *Line) LetIn(queue string, users []string, at, expires time.Time) {
	for _, l := range s.all() {
		if l.LetIn != nil {
			l.LetIn(queue, users, at, expires)
		}
	}
}

// Reconfigured tells the listeners that the queue's config changed or the
// queue went (Listener.Reconfigured).
func (s *Line) Reconfigured(queue string) {
	for _, l := range s.all() {
		if l.Reconfigured != nil {
			l.Reconfigured(queue)
		}
	}
}
