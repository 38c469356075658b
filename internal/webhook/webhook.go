// Package webhook takes the shop's events (package events) to the shop over
// HTTP: each a POST of the event's JSON, signed with HMAC-SHA256 over its
// timestamp and body in the scheme Stripe made familiar
// (Waitroom-Signature: t=<unix seconds>,v1=<hex>), to every receiver that
// wants it, at least once: a receiver that fails is tried again with
// exponential backoff and jitter, an event for RetryFor at most, then it
// is dropped and counted.
//
// A receiver that is down or slow never slows the line: Publish puts the
// event in each receiver's bounded buffer (the oldest dropped and counted
// when it is full) and returns. Each receiver's events are sent oldest
// first, up to InFlight attempts at once (entry.ready comes at the
// admission rate, hundreds a second, faster than one attempt at a time
// over one connection keeps up with), each under AttemptTimeout, one event
// per POST; an event is never in two attempts at once. A failing receiver
// holds back only its own events: after a failure it is sent one attempt
// at a time, after a backoff, until one succeeds (the backoff grows once
// per failure seen, not once per attempt that was in flight with it); an
// event that failed is tried again before those behind it. Events may
// arrive out of order: receivers order by the event's at.
package webhook

import (
	"bytes"
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/events"
)

// SignatureHeader carries an attempt's signature.
const SignatureHeader = "Waitroom-Signature"

// Sign is the signature header's value for body sent at at:
// t=<unix seconds>,v1=<hex of HMAC-SHA256(secret, "<t>.<body>")>. Each
// attempt is signed when it is made, so a receiver can refuse a signature
// older than a few minutes (a replay) without refusing a retry.
func Sign(secret []byte, at time.Time, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(t + "."))
	mac.Write(body)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

const (
	// DefaultRetryFor is how long an event is retried by default
	// (--webhook-retry-for).
	DefaultRetryFor = time.Hour
	// AttemptTimeout bounds one attempt, from connecting to the answer's
	// status: a receiver that hangs costs its own events this long, never
	// the line anything.
	AttemptTimeout = 10 * time.Second
	// Buffer is how many events a receiver may have waiting by default
	// (Options.Buffer); beyond it the oldest is dropped (a receiver away
	// for long on a busy night). At 500 entry.ready a second it holds 3
	// minutes 20 seconds of them, most of a default entry's 5 minutes
	// (after which its entry.ready is moot), in some 40 MB at most (by
	// estimate, not measured: a body of about 200 B, its id, the bookkeeping).
	Buffer = 100_000
	// InFlight is how many attempts a receiver may have at once.
	InFlight = 32
	// The backoff after a failed attempt doubles from firstBackoff up to
	// maxBackoff; each wait is drawn between half of it and all of it, so
	// instances that failed together do not try again together.
	firstBackoff = time.Second
	maxBackoff   = time.Minute
)

// Receiver is one place the shop receives events.
type Receiver struct {
	URL string
	// Queues are the queues whose events it receives; nil: every queue's.
	Queues []string
}

// Options configures a Sender.
type Options struct {
	// Secret keys every signature (--webhook-secret-file).
	Secret []byte
	// RetryFor is how long an event is retried (DefaultRetryFor when 0).
	RetryFor time.Duration
	// Client sends the attempts (nil: one of its own, following no
	// redirect: a receiver answers 2xx or the attempt failed).
	Client *http.Client
	// Buffer is how many events a receiver may have waiting (Buffer when
	// 0).
	Buffer int
	// Registry receives the metrics (none when nil).
	Registry prometheus.Registerer
	Logger   *slog.Logger
	Now      func() time.Time // time.Now when nil
}

// Sender delivers events to the receivers (an events.Publisher).
type Sender struct {
	secret   []byte
	retryFor time.Duration
	buffer   int
	client   *http.Client
	logger   *slog.Logger
	now      func() time.Time
	metrics  metrics

	mu        sync.Mutex
	receivers map[string]*receiver // by URL
	run       context.Context      // Run's, for receivers added while it runs; nil before
	loops     sync.WaitGroup
}

var _ events.Publisher = (*Sender)(nil)

// New returns a Sender to receivers; it delivers once Run runs.
func New(o Options, receivers []Receiver) *Sender {
	if o.RetryFor == 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Buffer <= 0 {
		o.Buffer = Buffer
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	s := &Sender{secret: o.Secret, retryFor: o.RetryFor, buffer: o.Buffer, client: o.Client, logger: o.Logger, now: o.Now,
		receivers: map[string]*receiver{}}
	s.metrics = newMetrics(o.Registry, s.pending)
	s.SetReceivers(receivers)
	return s
}

// SetReceivers makes rs the receivers (a reloaded queues file): a receiver
// named before keeps the events it has waiting; one no longer named stops,
// and its waiting events are dropped and counted.
func (s *Sender) SetReceivers(rs []Receiver) {
	want := map[string]*receiver{}
	for _, r := range rs {
		w, ok := want[r.URL]
		if !ok {
			w = &receiver{url: r.URL, label: redact(r.URL), queues: map[string]bool{}, max: s.buffer, pending: list.New()}
			want[r.URL] = w
		}
		if r.Queues == nil {
			w.all = true
		}
		for _, q := range r.Queues {
			w.queues[q] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for url, r := range s.receivers {
		if _, ok := want[url]; !ok {
			if r.stop != nil {
				r.stop()
			}
			s.metrics.deliveries.WithLabelValues(r.label, "dropped").Add(float64(r.drain()))
			delete(s.receivers, url)
		}
	}
	for url, w := range want {
		if r, ok := s.receivers[url]; ok {
			r.route(w.all, w.queues)
			continue
		}
		w.wake = make(chan struct{}, 1)
		s.receivers[url] = w
		if s.run != nil {
			s.start(w)
		}
	}
}

// Publish puts e in the buffer of every receiver that wants it (none: it
// costs nothing), and returns at once.
func (s *Sender) Publish(e events.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var to []*receiver
	for _, r := range s.receivers {
		if r.wants(e.Queue) {
			to = append(to, r)
		}
	}
	if len(to) == 0 {
		return
	}
	body, err := json.Marshal(e)
	if err != nil { // an event's data is numbers and strings
		s.logger.Error("an event could not be written as JSON: not sent", "id", e.ID, "err", err)
		return
	}
	s.metrics.published.WithLabelValues(string(e.Type)).Inc()
	d := &delivery{id: e.ID, body: body, since: s.now()}
	for _, r := range to {
		if r.push(d) {
			s.metrics.deliveries.WithLabelValues(r.label, "dropped").Inc()
		}
	}
}

// Run delivers until ctx ends; events still waiting then are not sent.
func (s *Sender) Run(ctx context.Context) {
	s.mu.Lock()
	s.run = ctx
	for _, r := range s.receivers {
		s.start(r)
	}
	s.mu.Unlock()
	<-ctx.Done()
	s.loops.Wait()
}

// start runs r's deliveries under Run's context (s.mu held).
func (s *Sender) start(r *receiver) {
	ctx, cancel := context.WithCancel(s.run)
	r.stop = cancel
	s.loops.Go(func() { s.deliver(ctx, r) })
}

// pending counts the events waiting, every receiver's.
func (s *Sender) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.receivers {
		n += r.waiting()
	}
	return n
}

// deliver sends r's events until ctx ends: the oldest not in flight,
// while r may have another attempt in flight (receiver.next); an event
// that fails is tried again after the receiver's backoff, until it is
// RetryFor old. It waits for its attempts before it returns.
func (s *Sender) deliver(ctx context.Context, r *receiver) {
	var attempts sync.WaitGroup
	defer attempts.Wait()
	for {
		d, wait := r.next(s.now())
		if d != nil && s.now().Sub(d.since) > s.retryFor {
			if r.remove(d) {
				s.metrics.deliveries.WithLabelValues(r.label, "expired").Inc()
			}
			continue
		}
		if d != nil {
			attempts.Go(func() { s.send(ctx, r, d) })
			continue
		}
		var after <-chan time.Time
		if wait > 0 {
			after = time.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake: // a new event, or an attempt done
		case <-after: // the backoff passed
		}
	}
}

// send makes one attempt at d, then tells r how it went.
func (s *Sender) send(ctx context.Context, r *receiver, d *delivery) {
	err := s.attempt(ctx, r.url, d)
	if ctx.Err() != nil {
		return
	}
	if err == nil {
		removed, failed := r.succeeded(d)
		if removed {
			s.metrics.deliveries.WithLabelValues(r.label, "delivered").Inc()
		}
		if failed > 0 {
			s.logger.Info("a webhook receiver takes events again", "receiver", r.label, "attempts_failed", failed)
		}
		return
	}
	s.metrics.attemptsFailed.WithLabelValues(r.label).Inc()
	if r.failed(d, s.now()) == 1 {
		s.logger.Warn("a webhook receiver failed: its events are tried again with backoff, each for "+s.retryFor.String()+"; logged again when it takes them",
			"receiver", r.label, "event", d.id, "err", err)
	}
}

// attempt POSTs d to url, signed now; a 2xx answer is success.
func (s *Sender) attempt(ctx context.Context, url string, d *delivery) error {
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "waitroom-webhook")
	req.Header.Set(SignatureHeader, Sign(s.secret, s.now(), d.body))
	res, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // lets the connection be used again
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("answered %s", res.Status)
	}
	return nil
}

// redact is a receiver's URL as logs and metrics name it: without its
// query and user info, which may hold a secret.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// ValidURL checks a receiver's URL: absolute, http or https, with a host.
func ValidURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: want an http:// or https:// URL", redact(raw))
	case u.Host == "":
		return fmt.Errorf("%q: no host", redact(raw))
	}
	return nil
}

// delivery is one event on its way to one receiver.
type delivery struct {
	id    string
	body  []byte
	since time.Time // published: it is retried until RetryFor after
}

// waiting is a delivery in one receiver's buffer.
type waiting struct {
	*delivery
	inFlight bool
	// failures is the receiver's count of failures seen when its attempt
	// began: a failure of an attempt begun before another failure was
	// seen is that same outage, and grows the backoff no further.
	failures int
}

// receiver is one receiver's buffer of waiting events, and its backoff.
type receiver struct {
	url, label string
	wake       chan struct{} // a new event, or an attempt done: cap 1
	stop       context.CancelFunc
	max        int // the buffer's bound

	mu      sync.Mutex
	all     bool            // every queue's events
	queues  map[string]bool // else these queues'
	pending *list.List      // of *waiting, oldest first, at most max
	at      map[*delivery]*list.Element
	flying  int // attempts in flight
	// failures counts the failures seen since the last success, backoff
	// is the last wait drawn from, and retryAt when attempts may start
	// again.
	failures int
	backoff  time.Duration
	retryAt  time.Time
}

func (r *receiver) route(all bool, queues map[string]bool) {
	r.mu.Lock()
	r.all, r.queues = all, queues
	r.mu.Unlock()
}

func (r *receiver) wants(queue string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all || r.queues[queue]
}

// poke wakes the receiver's loop unless a wake is pending already.
func (r *receiver) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// push adds d, dropping the oldest not in flight when the buffer is full
// (and saying so).
func (r *receiver) push(d *delivery) (dropped bool) {
	r.mu.Lock()
	if r.at == nil {
		r.at = map[*delivery]*list.Element{}
	}
	if r.pending.Len() >= r.max {
		for e := r.pending.Front(); e != nil; e = e.Next() {
			if w := e.Value.(*waiting); !w.inFlight {
				r.pending.Remove(e)
				delete(r.at, w.delivery)
				dropped = true
				break
			}
		}
	}
	r.at[d] = r.pending.PushBack(&waiting{delivery: d})
	r.mu.Unlock()
	r.poke()
	return dropped
}

// next is the oldest event not in flight, marked in flight, when another
// attempt may start now: fewer than InFlight in flight, or, while the
// receiver is failing, none in flight and its backoff past. Otherwise nil,
// and how long until the backoff passes (0: until an event comes or an
// attempt ends).
func (r *receiver) next(now time.Time) (*delivery, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.failures > 0 && r.flying > 0, r.flying >= InFlight:
		return nil, 0
	case r.failures > 0 && now.Before(r.retryAt):
		return nil, r.retryAt.Sub(now)
	}
	for e := r.pending.Front(); e != nil; e = e.Next() {
		if w := e.Value.(*waiting); !w.inFlight {
			w.inFlight, w.failures = true, r.failures
			r.flying++
			return w.delivery, 0
		}
	}
	return nil, 0
}

// succeeded takes d out (removed: unless the buffer dropped it meanwhile)
// and ends the receiver's backoff; failed is how many failures it had
// seen.
func (r *receiver) succeeded(d *delivery) (removed bool, failed int) {
	r.mu.Lock()
	r.flying--
	failed = r.failures
	r.failures, r.backoff = 0, 0
	if e, ok := r.at[d]; ok {
		r.pending.Remove(e)
		delete(r.at, d)
		removed = true
	}
	r.mu.Unlock()
	r.poke()
	return removed, failed
}

// failed puts d back to be tried again and, unless another failure was
// seen since its attempt began, counts a failure and draws the backoff:
// doubling from firstBackoff up to maxBackoff, each wait between half of
// it and all of it, so instances that failed together do not try again
// together. It says how many failures the receiver has seen since its
// last success.
func (r *receiver) failed(d *delivery, now time.Time) int {
	r.mu.Lock()
	r.flying--
	if e, ok := r.at[d]; ok {
		w := e.Value.(*waiting)
		w.inFlight = false
		if w.failures == r.failures {
			r.failures++
			r.backoff = min(max(2*r.backoff, firstBackoff), maxBackoff)
			r.retryAt = now.Add(r.backoff/2 + rand.N(r.backoff/2+1))
		}
	}
	n := r.failures
	r.mu.Unlock()
	r.poke()
	return n
}

// remove takes d out, unless the buffer dropped it meanwhile.
func (r *receiver) remove(d *delivery) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.at[d]
	if !ok {
		return false
	}
	if e.Value.(*waiting).inFlight {
		r.flying--
	}
	r.pending.Remove(e)
	delete(r.at, d)
	return true
}

// drain empties the buffer and says how many it held.
func (r *receiver) drain() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.pending.Len()
	r.pending.Init()
	clear(r.at)
	return n
}

func (r *receiver) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending.Len()
}
