package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/webhook"
)

var secret = []byte("a-webhook-secret-of-32-bytes-----")

// patience is how long a test waits for a condition: waiting is polled,
// so a long bound costs a passing test nothing.
const patience = time.Minute

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after %v: %s", patience, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSignature: t is the attempt's Unix second and v1 the hex of
// HMAC-SHA256 over "<t>.<body>", as a receiver recomputes it.
func TestSignature(t *testing.T) {
	body := []byte(`{"id":"queue.paused:sale:1","type":"queue.paused"}`)
	at := time.Unix(1_765_000_000, 900_000_000)
	got := webhook.Sign(secret, at, body)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("1765000000."))
	mac.Write(body)
	if want := "t=1765000000,v1=" + hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	if webhook.Sign([]byte("another secret of the same size!!"), at, body) == got {
		t.Fatal("another secret signs alike")
	}
}

// receiverLog is a test receiver: it checks each request's signature and
// keeps the ids of the events it took (answered 2xx).
type receiverLog struct {
	t      *testing.T
	mu     sync.Mutex
	answer func(n int) int // the status of the n-th request (0-based)
	n      int
	taken  []string
}

func (l *receiverLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := verify(r.Header.Get(webhook.SignatureHeader), body); err != nil {
		l.t.Errorf("a request whose signature does not verify: %v", err)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
		l.t.Errorf("%s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
	}
	var e events.Event
	if err := json.Unmarshal(body, &e); err != nil {
		l.t.Errorf("body %s: %v", body, err)
	}
	l.mu.Lock()
	status := l.answer(l.n)
	l.n++
	if status/100 == 2 {
		l.taken = append(l.taken, e.ID)
	}
	l.mu.Unlock()
	w.WriteHeader(status)
}

func (l *receiverLog) ids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.taken...)
}

// verify is what a receiver does (examples/verify-webhook does it in Go,
// Node and Python).
func verify(header string, body []byte) error {
	var ts, sig string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("timestamp %q", ts)
	}
	if webhook.Sign(secret, time.Unix(sec, 0), body) != header {
		return fmt.Errorf("signature %q", sig)
	}
	return nil
}

func event(queue string, n int) events.Event {
	return events.Event{ID: fmt.Sprintf("queue.paused:%s:%d", queue, n), Type: events.QueuePaused, Queue: queue,
		At: time.UnixMilli(int64(n)).UTC(), Data: map[string]any{}}
}

// run starts s until the test ends.
func run(t *testing.T, s *webhook.Sender) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// metric reads a counter or gauge of reg with the given labels (0 when
// absent).
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, labels) {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := labels[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}

// TestRetriedUntilTaken: a receiver that fails gets the event again, with
// backoff, until it takes it, and then not again; each event is taken
// once (in whatever order: attempts overlap).
func TestRetriedUntilTaken(t *testing.T) {
	t.Parallel()
	rec := &receiverLog{t: t, answer: func(n int) int {
		if n < 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	}}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	s := webhook.New(webhook.Options{Secret: secret, Registry: reg}, []webhook.Receiver{{URL: srv.URL + "/hooks?token=x"}})
	run(t, s)
	s.Publish(event("sale", 1))
	s.Publish(event("sale", 2))
	label := map[string]string{"receiver": srv.URL + "/hooks", "result": "delivered"}
	waitFor(t, "both events taken", func() bool { return metric(t, reg, "waitroom_webhook_deliveries_total", label) == 2 })
	if got := strings.Join(slices.Sorted(slices.Values(rec.ids())), " "); got != "queue.paused:sale:1 queue.paused:sale:2" {
		t.Fatalf("the receiver took %s, want each event once", got)
	}
	if n := metric(t, reg, "waitroom_webhook_attempts_failed_total", map[string]string{"receiver": srv.URL + "/hooks"}); n != 2 {
		t.Fatalf("%v failed attempts counted, want 2", n)
	}
	if n := metric(t, reg, "waitroom_events_published_total", map[string]string{"type": "queue.paused"}); n != 2 {
		t.Fatalf("%v events published counted, want 2", n)
	}
}

// TestAReceiverThatNeverAnswersHoldsOnlyItsOwnEvents: Publish returns at
// once while a receiver hangs; its buffer keeps the newest events it may,
// the older ones dropped and counted; another receiver gets every event.
func TestAReceiverThatNeverAnswersHoldsOnlyItsOwnEvents(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); dead.Close() })
	live := &receiverLog{t: t, answer: func(int) int { return http.StatusOK }}
	liveSrv := httptest.NewServer(live)
	t.Cleanup(liveSrv.Close)
	reg := prometheus.NewRegistry()
	const buffer, extra = 1000, 5
	s := webhook.New(webhook.Options{Secret: secret, Registry: reg, Buffer: buffer}, []webhook.Receiver{{URL: dead.URL}, {URL: liveSrv.URL}})
	run(t, s)
	delivered := func() float64 {
		return metric(t, reg, "waitroom_webhook_deliveries_total", map[string]string{"receiver": liveSrv.URL, "result": "delivered"})
	}
	for i := range buffer + extra {
		if i == buffer { // the live receiver's buffer, which is as big, must not overflow
			waitFor(t, "the live receiver took the first events", func() bool { return delivered() == buffer })
		}
		s.Publish(event("sale", i))
	}
	// Counted delivered once the sender has read the answer and taken the
	// event out of the live receiver's buffer; the receiver logs it before.
	waitFor(t, "the live receiver took every event", func() bool {
		return metric(t, reg, "waitroom_webhook_deliveries_total", map[string]string{"receiver": liveSrv.URL, "result": "delivered"}) == buffer+extra
	})
	if n := len(live.ids()); n != buffer+extra {
		t.Fatalf("the live receiver logged %d events, want %d", n, buffer+extra)
	}
	if n := metric(t, reg, "waitroom_webhook_deliveries_total", map[string]string{"receiver": dead.URL, "result": "dropped"}); n != extra {
		t.Fatalf("%v dropped for the hanging receiver, want %d (the oldest beyond its buffer)", n, extra)
	}
	if n := metric(t, reg, "waitroom_webhook_pending", nil); n != buffer {
		t.Fatalf("%v events pending, want the hanging receiver's full buffer, %d", n, buffer)
	}
}

// TestDroppedAfterRetryFor: an event a receiver keeps refusing is dropped
// once it is RetryFor old, and counted.
func TestDroppedAfterRetryFor(t *testing.T) {
	t.Parallel()
	rec := &receiverLog{t: t, answer: func(int) int { return http.StatusInternalServerError }}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	s := webhook.New(webhook.Options{Secret: secret, Registry: reg, RetryFor: 100 * time.Millisecond}, []webhook.Receiver{{URL: srv.URL}})
	run(t, s)
	s.Publish(event("sale", 1))
	waitFor(t, "the event expired", func() bool {
		return metric(t, reg, "waitroom_webhook_deliveries_total", map[string]string{"result": "expired"}) == 1
	})
	if n := metric(t, reg, "waitroom_webhook_pending", nil); n != 0 {
		t.Fatalf("%v pending after it expired", n)
	}
}

// TestReceiversByQueue: a receiver of every queue gets every event, one of
// some queues only theirs; a reload keeps a receiver's waiting events and
// drops (counting them) those of a receiver no longer named.
func TestReceiversByQueue(t *testing.T) {
	t.Parallel()
	all := &receiverLog{t: t, answer: func(int) int { return http.StatusOK }}
	sale := &receiverLog{t: t, answer: func(int) int { return http.StatusOK }}
	allSrv, saleSrv := httptest.NewServer(all), httptest.NewServer(sale)
	t.Cleanup(allSrv.Close)
	t.Cleanup(saleSrv.Close)
	reg := prometheus.NewRegistry()
	s := webhook.New(webhook.Options{Secret: secret, Registry: reg},
		[]webhook.Receiver{{URL: allSrv.URL}, {URL: saleSrv.URL, Queues: []string{"sale"}}, {URL: saleSrv.URL, Queues: []string{"drop"}}})
	// Not running yet: the events wait in the buffers.
	s.Publish(event("sale", 1))
	s.Publish(event("other", 2))
	s.Publish(event("drop", 3))
	s.SetReceivers([]webhook.Receiver{{URL: saleSrv.URL, Queues: []string{"sale", "drop"}}})
	run(t, s)
	s.Publish(event("drop", 4))
	s.Publish(event("other", 5))
	waitFor(t, "the queues' receiver took its events", func() bool { return len(sale.ids()) == 3 })
	if got := strings.Join(slices.Sorted(slices.Values(sale.ids())), " "); got != "queue.paused:drop:3 queue.paused:drop:4 queue.paused:sale:1" {
		t.Fatalf("the receiver of sale and drop took %s", got)
	}
	if n := metric(t, reg, "waitroom_webhook_deliveries_total", map[string]string{"receiver": allSrv.URL, "result": "dropped"}); n != 3 || len(all.ids()) != 0 {
		t.Fatalf("the receiver removed: %v dropped, took %v; want its 3 dropped, nothing taken", n, all.ids())
	}
}

// TestOperationsDocsExampleVerifies: the signed request docs/operations.md
// shows is signed with the secret it names, as Sign signs.
func TestOperationsDocsExampleVerifies(t *testing.T) {
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	_, rest, ok := strings.Cut(doc, webhook.SignatureHeader+": t=")
	if !ok {
		t.Fatal("docs/operations.md shows no signed request")
	}
	header, rest, _ := strings.Cut(rest, "\n")
	body, _, _ := strings.Cut(strings.TrimLeft(rest, "\n"), "\n")
	_, after, _ := strings.Cut(doc, "signed with the secret `")
	docSecret, _, _ := strings.Cut(after, "`")
	sec, err := strconv.ParseInt(strings.Split(header, ",")[0], 10, 64)
	if err != nil {
		t.Fatalf("the example's t: %v", err)
	}
	if want := webhook.Sign([]byte(docSecret), time.Unix(sec, 0), []byte(body)); "t="+header != want {
		t.Errorf("the example's signature\n  %s\nwant (secret %q, body %s)\n  %s", "t="+header, docSecret, body, want)
	}
	var e events.Event
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.ID != string(e.Type)+":"+e.Queue+":"+strconv.FormatInt(e.At.UnixMilli(), 10) {
		t.Errorf("the example's body %s (%v): want an event whose id is its type, queue and instant", body, err)
	}
}

// overlapLog is a receiver that holds each request until InFlight are
// held at once (then lets them all go), and checks that no event is in two
// attempts at once.
type overlapLog struct {
	t        *testing.T
	fail     int // the first fail requests are answered 500
	mu       sync.Mutex
	n        int
	now, max int             // requests held now, and at most
	flying   map[string]bool // ids in a request now
	taken    map[string]int  // ids answered 2xx, and how often
	full     chan struct{}   // closed once InFlight were held at once
}

func (l *overlapLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var e events.Event
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &e)
	l.mu.Lock()
	if l.flying[e.ID] {
		l.t.Errorf("event %s sent in two attempts at once", e.ID)
	}
	l.flying[e.ID] = true
	l.n++
	status := http.StatusNoContent
	if l.n <= l.fail {
		status = http.StatusInternalServerError
	}
	l.now++
	l.max = max(l.max, l.now)
	if l.now == webhook.InFlight {
		close(l.full)
	}
	l.mu.Unlock()
	if status != http.StatusInternalServerError {
		// Held until the receiver is full, or nothing more comes: the
		// first wave after failures never fills it, and the wave that
		// does must all arrive within this. 200 ms was too short for 32
		// requests on a loaded two-core CI machine under -race (31 at
		// once at most was seen); the first wave's wait costs the 2 s.
		select {
		case <-l.full:
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}
	l.mu.Lock()
	l.now--
	delete(l.flying, e.ID)
	if status/100 == 2 {
		l.taken[e.ID]++
	}
	l.mu.Unlock()
	w.WriteHeader(status)
}

func (l *overlapLog) snapshot() (maxAtOnce int, taken map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max, maps.Clone(l.taken)
}

// TestAttemptsOverlapUpToInFlight: a receiver's events are sent up to
// InFlight at once, never more, never one event in two attempts at once,
// each taken once whatever order they complete in; three failures of
// attempts in flight together are retried, and each event still taken
// once.
func TestAttemptsOverlapUpToInFlight(t *testing.T) {
	t.Parallel()
	for _, fail := range []int{0, 3} {
		t.Run(fmt.Sprintf("%d failures", fail), func(t *testing.T) {
			t.Parallel()
			rec := &overlapLog{t: t, fail: fail, flying: map[string]bool{}, taken: map[string]int{}, full: make(chan struct{})}
			srv := httptest.NewServer(rec)
			t.Cleanup(srv.Close)
			reg := prometheus.NewRegistry()
			s := webhook.New(webhook.Options{Secret: secret, Registry: reg}, []webhook.Receiver{{URL: srv.URL}})
			const n = 3 * webhook.InFlight
			for i := range n { // waiting before it runs: every attempt may start at once
				s.Publish(event("sale", i))
			}
			run(t, s)
			waitFor(t, "every event delivered", func() bool {
				return metric(t, reg, "waitroom_webhook_deliveries_total", map[string]string{"result": "delivered"}) == n
			})
			most, taken := rec.snapshot()
			if most != webhook.InFlight {
				t.Errorf("%d attempts at once at most, want %d", most, webhook.InFlight)
			}
			for i := range n {
				if id := event("sale", i).ID; taken[id] != 1 {
					t.Errorf("event %s taken %d times, want once", id, taken[id])
				}
			}
			if got := metric(t, reg, "waitroom_webhook_attempts_failed_total", nil); got != float64(fail) {
				t.Errorf("%v attempts failed, want %d", got, fail)
			}
		})
	}
}
