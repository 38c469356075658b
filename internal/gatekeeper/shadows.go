package gatekeeper

import (
	"sync"
	"sync/atomic"

	"github.com/waitroom/waitroom/internal/queue"
)

// shadowsKnownMax bounds the shadow places an instance remembers; past it
// the set starts again (as the line's snapshot does with its tickets): a
// place forgotten is judged on its signals alone, as before it was known.
const shadowsKnownMax = 100_000

// shadowsKnown are the users this instance last answered as shadow places
// (queue.View.Shadow), by queue: with the store away, such a user is
// refused a degraded entry whatever its request looks like now (the human
// check is judged on entering only; an address range may no longer match).
type shadowsKnown struct {
	n  atomic.Int64 // len(m), read without the lock: most answers are people's
	mu sync.Mutex
	m  map[string]struct{}
}

// answered records the answer v given to the user in queue q.
func (s *shadowsKnown) answered(q, user string, v queue.View) {
	if !v.Shadow && s.n.Load() == 0 || user == "" {
		return
	}
	k := pollKey(q, user)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !v.Shadow {
		delete(s.m, k)
	} else {
		if s.m == nil || len(s.m) >= shadowsKnownMax {
			s.m = map[string]struct{}{}
		}
		s.m[k] = struct{}{}
	}
	s.n.Store(int64(len(s.m)))
}

// known says the user was last answered as a shadow place in queue q.
func (s *shadowsKnown) known(q, user string) bool {
	if s.n.Load() == 0 || user == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[pollKey(q, user)]
	return ok
}
