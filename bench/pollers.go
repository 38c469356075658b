package bench

import (
	"bytes"
	"container/heap"
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The poller model: people already in line, each polling status when the
// last answer's pollAfterSeconds says, as the waiting page does (with
// ?waitSeconds=, so near the front the server holds the poll until they are
// let in), while admission runs at the queue's rate. The load it offers is
// the line's, not a chosen rate: people ÷ their poll interval. It is open
// loop across users (a slow answer delays only that user's next poll, as on
// the page), and each poll's latency is counted from when it was due.

// Pollers is one run of the poller model.
type Pollers struct {
	Base  string
	Queue string
	// Users are the pollers' Authorization header values, the front of
	// the line first: the first Front of them may be held from their first
	// poll on.
	Users []string
	Front int
	// Conns carry the polls answered at once; polls that may be held (the
	// user was about to be let in at their last answer) go on NearConns
	// connections of their own, as each person has their own connection: a
	// held poll must not keep anyone else's poll waiting.
	Conns, NearConns int
	// Duration is the whole run; polls due before WarmUp are sent but not
	// measured (the first answers, and the instance learning tickets).
	Duration, WarmUp time.Duration
	// FirstWithin spreads each user's first poll uniformly over this long,
	// as if they had been polling all along (default 10 s, the far band).
	FirstWithin time.Duration
	// WaitSeconds is the page's ?waitSeconds= (0: none).
	WaitSeconds int
	Client      string
	// AtWarmUp and AtEnd, when set, are called as the measured window
	// opens and closes (to read CPU meters).
	AtWarmUp, AtEnd func()
}

// PollersResult is what a poller run measured, over its window (after the
// warm-up).
type PollersResult struct {
	Users  int
	Window time.Duration
	// Offered is the polls due in the window per second; Answered those of
	// them answered, per second.
	Offered, Answered float64
	// Far are the polls answered from further back than the next 2 s
	// (never held): their latencies from the intended time are the claim.
	Far LoadResult
	// Near counts the polls answered READY or within 2 s of admission: the
	// server may hold those until the user is let in, so their time is not
	// a latency.
	Near int
	// Ready and Gone count users let in (and so done) and users the line
	// no longer knew (NOT_IN_QUEUE), over the whole run.
	Ready, Gone int
}

// pollDue is one user's next poll.
type pollDue struct {
	at   time.Duration // since the start
	user int32
}

type dueHeap []pollDue

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(pollDue)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// schedule holds every user's next poll, soonest first.
type schedule struct {
	mu sync.Mutex
	h  dueHeap
}

func (s *schedule) push(p pollDue) {
	s.mu.Lock()
	heap.Push(&s.h, p)
	s.mu.Unlock()
}

// due pops every poll due by now, appending to out.
func (s *schedule) due(now time.Duration, out []pollDue) []pollDue {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.h) > 0 && s.h[0].at <= now {
		out = append(out, heap.Pop(&s.h).(pollDue))
	}
	return out
}

// answer is what the poller model reads of a status answer.
type answer struct {
	state      string // WAITING, READY, NOT_IN_QUEUE
	etaSeconds int64  // -1 when absent
	pollAfter  int64  // seconds; -1 when absent or null
	paused     bool
}

// near says the server may have held this answer (queue.View.AdmissionNear,
// or the READY it ended with).
func (a answer) near() bool {
	return a.state == "READY" || a.state == "WAITING" && !a.paused && a.etaSeconds >= 0 && a.etaSeconds <= 2
}

// nextNear says the user's next poll may be held: by then admission may
// be within the hold's reach (estimate − poll interval ≤ 2 s), with room
// for a late poll or a rate that moves.
func (a answer) nextNear() bool {
	return a.state == "WAITING" && !a.paused && a.etaSeconds >= 0 && a.etaSeconds-max(a.pollAfter, 0) <= 8
}

// parseAnswer reads the fields the model needs from an enter or status answer
// without a JSON decoder (the generator's CPU is the server's too).
func parseAnswer(body []byte) answer {
	a := answer{etaSeconds: -1, pollAfter: -1}
	if v := jsonField(body, "status"); len(v) > 2 && v[0] == '"' {
		a.state = string(v[1 : len(v)-1])
	}
	if n, err := strconv.ParseInt(string(jsonField(body, "estimatedWaitSeconds")), 10, 64); err == nil {
		a.etaSeconds = n
	}
	if n, err := strconv.ParseInt(string(jsonField(body, "pollAfterSeconds")), 10, 64); err == nil {
		a.pollAfter = n
	}
	a.paused = string(jsonField(body, "paused")) == "true"
	return a
}

// jsonField is the raw value of a top-level field of a flat JSON object
// whose values are numbers, literals or strings without escapes.
func jsonField(body []byte, name string) []byte {
	var key [64]byte
	k := append(append(append(key[:0], '"'), name...), '"', ':')
	i := bytes.Index(body, k)
	if i < 0 {
		return nil
	}
	v := body[i+len(k):]
	if len(v) > 0 && v[0] == '"' {
		if j := bytes.IndexByte(v[1:], '"'); j >= 0 {
			return v[:j+2]
		}
		return nil
	}
	end := bytes.IndexAny(v, ",}")
	if end < 0 {
		return nil
	}
	return bytes.TrimSpace(v[:end])
}

// Run runs the model and returns what it measured.
func (p Pollers) Run(ctx context.Context) (PollersResult, error) {
	res := PollersResult{Users: len(p.Users), Window: p.Duration - p.WarmUp}
	newConn, err := clientFor(p.Client, []string{p.Base}, p.Conns)
	if err != nil {
		return res, err
	}
	first := p.FirstWithin
	if first <= 0 {
		first = 10 * time.Second
	}
	path := "/api/v1/queues/" + p.Queue + "/entries/me"
	if p.WaitSeconds > 0 {
		path += "?waitSeconds=" + strconv.Itoa(p.WaitSeconds)
	}
	sched := &schedule{h: make(dueHeap, 0, len(p.Users))}
	rnd := rand.New(rand.NewPCG(uint64(len(p.Users)), 14))
	for u := range p.Users {
		sched.h = append(sched.h, pollDue{at: time.Duration(rnd.Int64N(int64(first))), user: int32(u)})
	}
	heap.Init(&sched.h)

	start := time.Now()
	end := p.Duration
	ctx, cancel := context.WithDeadline(ctx, start.Add(p.Duration+requestTimeout))
	defer cancel()
	// A user has one poll at a time, so neither channel is ever full.
	work, nearWork := make(chan pollDue, len(p.Users)), make(chan pollDue, len(p.Users))
	// nextNear remembers whether a user's next poll may be held.
	nextNear := make([]atomic.Bool, len(p.Users))
	for u := range min(p.Front, len(p.Users)) {
		nextNear[u].Store(true)
	}
	var dueInWindow atomic.Int64
	go func() {
		defer close(work)
		defer close(nearWork)
		dispatch(ctx, sched, start, p.WarmUp, end, p.AtWarmUp, p.AtEnd, func(d pollDue) {
			if d.at >= p.WarmUp {
				dueInWindow.Add(1)
			}
			if nextNear[d.user].Load() {
				nearWork <- d
			} else {
				work <- d
			}
		})
	}()

	var ready, gone, near atomic.Int64
	poll := func(c conn, rec *recorder, work <-chan pollDue) {
		for d := range work {
			intended := start.Add(d.at)
			measured := d.at >= p.WarmUp
			wasNear := nextNear[d.user].Load()
			sent := time.Now()
			status, body, err := c.do(ctx, Request{Method: "GET", Path: path, Auth: p.Users[d.user]})
			done := time.Now()
			if err != nil {
				if ctx.Err() != nil {
					return // the run is over
				}
				if measured && !wasNear {
					rec.add(timing(intended, sent, done), 0, err, done)
				}
				sched.push(pollDue{at: done.Sub(start) + time.Second, user: d.user})
				continue
			}
			if status != 200 { // 503 and the like: the page waits a second and asks again
				if measured {
					rec.add(timing(intended, sent, done), status, nil, done)
				}
				sched.push(pollDue{at: done.Sub(start) + time.Second, user: d.user})
				continue
			}
			a := parseAnswer(body)
			nextNear[d.user].Store(a.nextNear())
			switch {
			case a.near() && measured:
				near.Add(1)
			case measured:
				rec.add(timing(intended, sent, done), status, nil, done)
			}
			switch a.state {
			case "READY":
				ready.Add(1)
			case "WAITING":
				after := time.Duration(max(a.pollAfter, 1)) * time.Second
				sched.push(pollDue{at: done.Sub(start) + after, user: d.user})
			default:
				gone.Add(1)
			}
		}
	}
	var nearRecs []*recorder
	nearDone := make(chan struct{})
	go func() {
		defer close(nearDone)
		nearRecs, _ = onConns(max(p.NearConns, 1), newConn, 64, func(c conn, rec *recorder) { poll(c, rec, nearWork) })
	}()
	recs, _ := onConns(p.Conns, newConn, 1024, func(c conn, rec *recorder) { poll(c, rec, work) })
	<-nearDone
	recs = append(recs, nearRecs...)
	far := result(recs, 0, 0, start.Add(p.WarmUp), 0)
	far.Requests = far.Answered + far.Errors
	res.Far, res.Near = far, int(near.Load())
	res.Ready, res.Gone = int(ready.Load()), int(gone.Load())
	if w := res.Window.Seconds(); w > 0 {
		res.Offered = float64(dueInWindow.Load()) / w
		res.Answered = float64(far.Answered+res.Near) / w
	}
	return res, nil
}

// dispatch hands out the schedule's polls as they fall due, from start
// until end, to route; atWarm and atEnd (each may be nil) run as the
// measured window opens, warm after the start, and as it closes.
func dispatch(ctx context.Context, sched *schedule, start time.Time, warm, end time.Duration, atWarm, atEnd func(), route func(pollDue)) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	var batch []pollDue
	warmed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Since(start)
		if !warmed && now >= warm {
			warmed = true
			if atWarm != nil {
				atWarm()
			}
		}
		batch = sched.due(min(now, end-1), batch[:0])
		for _, d := range batch {
			route(d)
		}
		if now >= end {
			if atEnd != nil {
				atEnd()
			}
			return
		}
	}
}
