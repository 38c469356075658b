package fairness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/waitroom/waitroom/internal/identity"
)

// History is what one recording saw: every call with its times, the
// faults injected, and any answer outside the contract's vocabulary.
type History struct {
	Kind   string
	Ops    []porcupine.Operation
	Specs  []*Spec
	Faults []Fault
	// Problems are answers no call may give (a 500, a 401 for a valid
	// user): each fails the history.
	Problems []string
	// Restarts are Redis restarts (kill -9 and back from the AOF), with
	// what Redis kept, for the check.
	Restarts []restart
	// ReadTimeout is the instances' Redis read timeout, past which the
	// client sends a command again (0: the embedded line, nothing is sent
	// twice); Cuts are when connections to Redis were cut (ns from the
	// start), which the client also answers by sending again.
	ReadTimeout time.Duration
	Cuts        []int64
	// StockLeft is, by queue, what its product's stock (stock at the
	// start) was once the crowd had stopped, read from the order backend
	// through the API (nil: not read, as for a history loaded from a file).
	StockLeft map[string]int64
}

// Fault is one fault injected, at its time from the history's start.
type Fault struct {
	At   time.Duration
	What string
}

// restart is one Redis kill -9 and start from its AOF: the calls answered
// before Killed happened before it; Reopened is when the instances could
// reach Redis again, after kept was read.
type restart struct {
	Killed, Reopened int64
	kept             map[string]*line // by queue
}

// infinity is the return time of a call whose outcome is unknown.
const infinity = math.MaxInt64

// recorder drives one history.
type recorder struct {
	c     *cluster
	h     *History
	start time.Time
	http  *http.Client
	ids   *identity.Identity
	mu    sync.Mutex
}

// now is the time since the history began, in ns: the time base of calls
// and answers (monotonic).
func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Problems = append(r.h.Problems, fmt.Sprintf(format, args...))
}

func (r *recorder) fault(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Faults = append(r.h.Faults, Fault{At: time.Since(r.start), What: what})
	r.c.o.logf("  %6.2f s  %s", time.Since(r.start).Seconds(), what)
}

func (r *recorder) record(op porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Ops = append(r.h.Ops, op)
}

// user is one client of one queue: a person who enters, polls, buys,
// leaves and comes back, one call at a time.
type user struct {
	n       int // within the queue (the visualisation's client)
	name    string
	auth    string
	spec    *Spec
	product string
	rng     *rand.Rand
	// seen is when the user last sent an enter or a status (SinceSeen).
	seen int64
}

// answer is one HTTP exchange's outcome.
type answer struct {
	status int // 0: no answer
	body   map[string]any
	err    error
	// unsent: the call failed while its instance was down from before it
	// was sent until after it failed: it reached no waitroom.
	unsent bool
}

func (a answer) code() string {
	e, _ := a.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// send makes one HTTP call to a random instance.
func (r *recorder) send(ctx context.Context, u *user, method, path string, body any, header ...string) (a answer, n int) {
	in := r.c.insts[u.rng.IntN(len(r.c.insts))]
	sent := time.Now()
	defer func() { a.unsent = a.err != nil && in.downSince(sent) }()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+in.front.addr()+path, rd)
	if err != nil {
		return answer{err: err}, in.n
	}
	req.Header.Set("Authorization", u.auth)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := r.http.Do(req)
	if err != nil {
		return answer{err: err}, in.n
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{err: err}, in.n
	}
	a = answer{status: res.StatusCode}
	if len(raw) > 0 {
		json.Unmarshal(raw, &a.body)
	}
	return a, in.n
}

// unknown reports whether an answer leaves the call's outcome unknown: no
// answer at all, or a 5xx (the store failed, maybe after acting).
func (a answer) unknown() bool { return a.err != nil || a.status >= 500 || a.status == 499 }

// call makes one call of the contract, records it, and returns its output
// (ok false: the answer was outside the contract, recorded as a problem).
func (r *recorder) call(ctx context.Context, u *user, kind Kind, token string) (Output, bool) {
	in := Input{Spec: u.spec, Kind: kind, User: u.name, Token: token}
	entries := "/api/v1/queues/" + u.spec.Queue + "/entries"
	call := r.now()
	var a answer
	switch kind {
	case Enter:
		a, in.Instance = r.send(ctx, u, "POST", entries, nil)
	case Status:
		a, in.Instance = r.send(ctx, u, "GET", entries+"/me", nil)
	case Leave:
		a, in.Instance = r.send(ctx, u, "DELETE", entries+"/me", nil)
	case Order:
		a, in.Instance = r.send(ctx, u, "POST", "/api/v1/orders", map[string]any{"productId": u.product, "quantity": 1},
			"X-Entry-Token", token)
	}
	ret := r.now()
	if a.unsent { // as if never made
		return Output{Unknown: true}, true
	}
	seenBefore := u.seen
	if kind == Enter || kind == Status {
		u.seen = call
	}
	out, ok := parse(kind, a)
	if ctx.Err() != nil && a.err != nil {
		out, ok = Output{Unknown: true}, true // cut off by the history's end
	}
	if !ok {
		r.problem("%s %s by %s on instance %d: %d %v %v", kind, u.spec.Queue, u.name, in.Instance, a.status, a.body, a.err)
		return out, false
	}
	if out.Unknown {
		if kind == Status {
			return out, true // a read that may not have happened changes nothing
		}
		ret = infinity
	}
	if out.State == NotInQueue {
		in.SinceSeen = time.Duration(ret - seenBefore)
	}
	r.record(porcupine.Operation{ClientId: u.n, Input: in, Call: call, Output: out, Return: ret})
	return out, true
}

// parse reads an answer into the model's output.
func parse(kind Kind, a answer) (Output, bool) {
	if a.unknown() {
		return Output{Unknown: true}, true
	}
	switch kind {
	case Enter, Status:
		if a.status == http.StatusTooManyRequests && a.code() == "queue_full" && kind == Enter {
			return Output{State: Full}, true
		}
		if a.status != http.StatusOK {
			return Output{}, false
		}
		switch a.body["status"] {
		case "WAITING":
			if _, ok := a.body["opensAt"]; ok {
				return Output{State: PreQueued}, true
			}
			p, ok1 := a.body["position"].(float64)
			n, ok2 := a.body["queueLength"].(float64)
			ln, _ := a.body["lane"].(string)
			return Output{State: Waiting, Position: int64(p), Length: int64(n), Lane: ln}, ok1 && ok2
		case "READY":
			t, ok := a.body["token"].(string)
			ln, _ := a.body["lane"].(string)
			return Output{State: Ready, Token: t, Lane: ln}, ok && t != ""
		case "NOT_IN_QUEUE":
			return Output{State: NotInQueue}, kind == Status
		}
	case Leave:
		return Output{}, a.status == http.StatusNoContent
	case Order:
		switch {
		case a.status == http.StatusCreated:
			return Output{Order: Bought}, true
		case a.status == http.StatusPaymentRequired, a.status == http.StatusConflict && a.code() == "out_of_stock":
			return Output{Order: Kept}, true
		case a.status == http.StatusConflict && a.code() == "order_in_progress":
			return Output{Order: InUse}, true
		case a.status == http.StatusForbidden && a.code() == "entry_token_invalid":
			return Output{Order: Invalid}, true
		}
	}
	return Output{}, false
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// run is the person's behaviour until ctx ends: enter; poll every 30-150
// ms (now and then leave, and come back); when READY, buy (a declined
// payment or sold-out stock keeps the token: try again, or give it back),
// now and then with a wrong token; after buying, come back for another.
// A no-show (Spec.AbandonAfter) stops polling for longer than it.
func (r *recorder) run(ctx context.Context, u *user) {
	const (
		out = iota
		waiting
		ready
	)
	phase, token, tries := out, "", 0
	poll := func() time.Duration { return time.Duration(30+u.rng.IntN(120)) * time.Millisecond }
	for ctx.Err() == nil {
		switch phase {
		case out:
			o, ok := r.call(ctx, u, Enter, "")
			switch {
			case !ok || o.Unknown || o.State == Full:
				sleep(ctx, poll())
			case o.State == Ready:
				phase, token, tries = ready, o.Token, 0
			default:
				phase = waiting
			}
		case waiting:
			wait := poll()
			if u.spec.AbandonAfter > 0 && u.rng.IntN(40) == 0 {
				// A no-show: away past the abandon time by 1-8 s.
				wait = u.spec.AbandonAfter + time.Duration(1000+u.rng.IntN(7000))*time.Millisecond
			}
			if !sleep(ctx, wait) {
				return
			}
			if u.rng.IntN(30) == 0 {
				if o, ok := r.call(ctx, u, Leave, ""); ok && !o.Unknown {
					phase = out
					sleep(ctx, poll())
				}
				continue
			}
			o, ok := r.call(ctx, u, Status, "")
			switch {
			case !ok || o.Unknown:
			case o.State == Ready:
				phase, token, tries = ready, o.Token, 0
			case o.State == NotInQueue:
				phase = out
			}
		case ready:
			if u.rng.IntN(5) == 0 { // look again: READY, with the same token
				if o, ok := r.call(ctx, u, Status, ""); ok && !o.Unknown && o.State != Ready {
					phase = out
				}
				continue
			}
			presented := token
			if u.rng.IntN(15) == 0 {
				presented = fmt.Sprintf("wrong-%x", u.rng.Uint64())
			}
			o, ok := r.call(ctx, u, Order, presented)
			switch {
			case !ok || presented != token:
			case o.Unknown:
				phase = waiting // ask where they stand
			case o.Order == Bought, o.Order == Invalid:
				phase = out
				sleep(ctx, poll())
			case o.Order == Kept:
				if tries++; tries > 2 {
					if o, ok := r.call(ctx, u, Leave, ""); ok && !o.Unknown {
						phase = out // gave the token back
					}
				}
			case o.Order == InUse:
				sleep(ctx, poll())
			}
		}
	}
}
