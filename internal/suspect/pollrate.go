package suspect

import (
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// Defaults for the instance's poll-rate signal: over a minute, a session
// that polled more than three times as fast as it was told is a suspect.
// The page polls at its pollAfterSeconds with ±20% jitter, and retries
// quickly only after an error, so three times is far from any page.
const (
	DefaultPollWindow = 60 * time.Second
	DefaultPollFactor = 3.0
	// minPolls is how many timed polls a window needs before it judges:
	// a couple of quick retries after a network error are never enough.
	minPolls = 8
	// defaultPollKeys caps the sessions remembered; BenchmarkPollRateFull
	// measures what that costs at most.
	defaultPollKeys = 1 << 20
	pollShards      = 64
)

// PollRates counts, in the instance's memory, how fast each session polls
// its status compared with the pollAfterSeconds it was told. A session is
// keyed by queue and user (its session), never by address, so the people
// behind one carrier-NAT address are judged one by one. Memory is bounded:
// each shard keeps two generations of sessions and forgets the older one
// when the newer fills, so the sessions not seen for longest go first.
// Safe for concurrent use; shards keep the lock of one poll short and
// uncontended.
type PollRates struct {
	window time.Duration
	factor float64
	seed   maphash.Seed
	// perGen is the number of sessions one generation of one shard holds.
	perGen int
	shards [pollShards]pollShard
}

type pollShard struct {
	mu         sync.Mutex
	young, old map[uint64]pollState
}

// pollState is one session's count, in two fixed windows (the current one
// and the one before), so that Suspect can weigh a sliding window as a
// sliding-window counter does. Sums are in milliseconds, saturating; cur
// counts the window the last poll fell in (last / window).
type pollState struct {
	last int64 // the last poll, Unix milliseconds
	cur  pollSums
	prev pollSums
}

type pollSums struct {
	polls uint32 // timed polls: with a poll before and a pollAfter told
	told  uint32 // sum of the pollAfter told before each, ms
	gap   uint32 // sum of the time since the poll before each, ms
}

// NewPollRate returns a counter over window (the type is PollRates, as
// PollRate is the signal's name) that marks a session polling
// more than factor times faster than told (the app's window is
// DefaultPollWindow; its factor --suspect-poll-factor, DefaultPollFactor
// the one the docs recommend).
func NewPollRate(window time.Duration, factor float64) *PollRates {
	return newPollRate(window, factor, defaultPollKeys)
}

func newPollRate(window time.Duration, factor float64, maxKeys int) *PollRates {
	p := &PollRates{
		window: max(window, time.Millisecond),
		factor: factor,
		seed:   maphash.MakeSeed(),
		// 7/8 of a power of two: a map sized for that many fills its
		// table without doubling it.
		perGen: max(1, maxKeys/pollShards/2*7/8),
	}
	for i := range p.shards {
		p.shards[i].young = make(map[uint64]pollState)
	}
	return p
}

// Polled notes one status poll of a session (key: queue + "\x00" + user)
// at now; told is the pollAfter the previous answer gave it, 0 if none.
func (p *PollRates) Polled(key string, told time.Duration, now time.Time) {
	h := maphash.String(p.seed, key)
	sh := &p.shards[h%pollShards]
	ms := now.UnixMilli()
	w := p.windowOf(ms)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st, ok := sh.young[h]
	if !ok {
		// A 64-bit hash stands for the key: half the memory of the
		// string, and a collision between two live sessions is as likely
		// as winning a lottery twice.
		if st, ok = sh.old[h]; ok {
			delete(sh.old, h)
		}
		if len(sh.young) >= p.perGen {
			sh.old, sh.young = sh.young, make(map[uint64]pollState, p.perGen)
		}
	}
	st.roll(p.windowOf(st.last), w)
	if ok && told > 0 {
		st.cur.polls = satAdd(st.cur.polls, 1)
		st.cur.told = satAdd(st.cur.told, uint64(told.Milliseconds()))
		st.cur.gap = satAdd(st.cur.gap, uint64(max(ms-st.last, 0)))
	}
	st.last = ms
	sh.young[h] = st
}

// Suspect reports whether, within the last window before now, the session
// made at least a handful of timed polls and polled on average more than
// factor times faster than told. The mark fades once a window passes
// without such polls.
func (p *PollRates) Suspect(key string, now time.Time) bool {
	h := maphash.String(p.seed, key)
	sh := &p.shards[h%pollShards]
	sh.mu.Lock()
	st, ok := sh.young[h]
	if !ok {
		st, ok = sh.old[h]
	}
	sh.mu.Unlock()
	if !ok || now.UnixMilli()-st.last > p.window.Milliseconds() {
		return false
	}
	st.roll(p.windowOf(st.last), p.windowOf(now.UnixMilli()))
	// A sliding window's estimate: all of this window's polls, and the
	// share of the previous window's that the last window still covers.
	elapsed := float64(now.UnixMilli()%p.window.Milliseconds()) / float64(p.window.Milliseconds())
	weight := 1 - elapsed
	polls := float64(st.cur.polls) + weight*float64(st.prev.polls)
	told := float64(st.cur.told) + weight*float64(st.prev.told)
	gap := float64(st.cur.gap) + weight*float64(st.prev.gap)
	return polls >= minPolls && told > p.factor*gap
}

func (p *PollRates) windowOf(ms int64) int64 {
	return ms / p.window.Milliseconds()
}

// roll moves the sums on from window from (the last poll's) to window to:
// the current window's become the previous one's if to is the next, and
// both are forgotten if to is later.
func (st *pollState) roll(from, to int64) {
	switch {
	case from == to:
		return
	case from+1 == to:
		st.prev = st.cur
	default:
		st.prev = pollSums{}
	}
	st.cur = pollSums{}
}

func satAdd(a uint32, b uint64) uint32 {
	return uint32(min(uint64(a)+b, math.MaxUint32))
}
