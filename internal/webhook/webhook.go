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
// when it is full) and returns; each receiver has one goroutine sending its
// events in the order they came, an attempt at a time, each attempt under
// AttemptTimeout. A failing receiver holds back only its own events: one
// that fails is retried before those behind it, so they arrive in order.
package webhook

import (
	"bytes"
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
	"slices"
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
	// Buffer is how many events a receiver may have waiting; beyond it
	// the oldest is dropped (a receiver away for long on a busy night).
	Buffer = 10_000
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
	// Registry receives the metrics (none when nil).
	Registry prometheus.Registerer
	Logger   *slog.Logger
	Now      func() time.Time // time.Now when nil
}

// Sender delivers events to the receivers (an events.Publisher).
type Sender struct {
	secret   []byte
	retryFor time.Duration
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	s := &Sender{secret: o.Secret, retryFor: o.RetryFor, client: o.Client, logger: o.Logger, now: o.Now,
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
			w = &receiver{url: r.URL, label: redact(r.URL), queues: map[string]bool{}}
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

// deliver sends r's events, oldest first, until ctx ends: an event that
// fails is tried again after a backoff, until it is RetryFor old.
func (s *Sender) deliver(ctx context.Context, r *receiver) {
	var backoff time.Duration
	var failed int // attempts failed since the last success
	for {
		d := r.oldest()
		if d == nil {
			select {
			case <-ctx.Done():
				return
			case <-r.wake:
				continue
			}
		}
		if s.now().Sub(d.since) > s.retryFor {
			if r.remove(d) {
				s.metrics.deliveries.WithLabelValues(r.label, "expired").Inc()
			}
			continue
		}
		err := s.attempt(ctx, r.url, d)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			if r.remove(d) {
				s.metrics.deliveries.WithLabelValues(r.label, "delivered").Inc()
			}
			if failed > 0 {
				s.logger.Info("a webhook receiver takes events again", "receiver", r.label, "attempts_failed", failed)
			}
			backoff, failed = 0, 0
			continue
		}
		s.metrics.attemptsFailed.WithLabelValues(r.label).Inc()
		if failed++; failed == 1 {
			s.logger.Warn("a webhook receiver failed: its events are tried again with backoff, each for "+s.retryFor.String()+"; logged again when it takes them",
				"receiver", r.label, "event", d.id, "err", err)
		}
		backoff = min(max(2*backoff, firstBackoff), maxBackoff)
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
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

// receiver is one receiver's buffer of waiting events.
type receiver struct {
	url, label string
	wake       chan struct{} // a new event: cap 1
	stop       context.CancelFunc

	mu      sync.Mutex
	all     bool            // every queue's events
	queues  map[string]bool // else these queues'
	pending []*delivery     // oldest first, at most Buffer
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

// push adds d, dropping the oldest when the buffer is full (and saying so).
func (r *receiver) push(d *delivery) (dropped bool) {
	r.mu.Lock()
	if len(r.pending) >= Buffer {
		r.pending = slices.Delete(r.pending, 0, 1)
		dropped = true
	}
	r.pending = append(r.pending, d)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return dropped
}

func (r *receiver) oldest() *delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return nil
	}
	return r.pending[0]
}

// remove takes d out, unless the buffer dropped it meanwhile.
func (r *receiver) remove(d *delivery) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.pending, d)
	if i < 0 {
		return false
	}
	r.pending = slices.Delete(r.pending, i, i+1)
	return true
}

// drain empties the buffer and says how many it held.
func (r *receiver) drain() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.pending)
	r.pending = nil
	return n
}

func (r *receiver) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}
