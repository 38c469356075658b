package app_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/testenv"
	"github.com/waitroom/waitroom/internal/webhook"
)

// OutageVar sets how long TestWebhooksAcrossAReceiverOutage keeps the
// receiver down: 30s (issue 38's figure) unless it names a shorter time.
const outageVar = "WAITROOM_TEST_WEBHOOK_OUTAGE"

// TestWebhooksAcrossAReceiverOutage: three instances on one Redis tell a
// receiver of a queue's sale while it is down (30 s, or
// $WAITROOM_TEST_WEBHOOK_OUTAGE): its resumption, closing, selling out,
// restock, rate change and pause, each made through another instance. Once
// it is back it gets every event, each id exactly once, whichever instance
// claimed it; and then every instance has nothing left to send.
func TestWebhooksAcrossAReceiverOutage(t *testing.T) {
	t.Parallel()
	outage := 30 * time.Second
	if v := os.Getenv(outageVar); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", outageVar, v, err)
		}
		outage = d
	}
	secret := []byte(strings.Repeat("w", 32))
	hooks := startHookReceiver(t, secret)
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secretFile, append(secret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	// SQLite beside each: orders are not this test's, and a shared
	// database's products would tell the default queue their stock.
	backend := apptest.Backend{Name: "redis", Redis: true}
	a := apptest.Boot(t, backend, func(c *app.Config) {
		c.Webhooks, c.WebhookSecretFile = []string{hooks.url() + "/hooks"}, secretFile
	})
	instances := []*apptest.Instance{a}
	for range 2 {
		instances = append(instances, apptest.Boot(t, backend, func(c *app.Config) {
			c.Webhooks, c.WebhookSecretFile = []string{hooks.url() + "/hooks"}, secretFile
			c.KeyPrefix, c.AuthSecret, c.AdminToken = a.KeyPrefix, a.AuthSecret, a.AdminToken
		}))
	}
	const q = "sale"
	a.PutQueue(q, map[string]any{"ratePerSecond": 100})
	instances[1].PatchQueue(q, map[string]any{"paused": true})
	hooks.waitFor(t, "the pause, before the outage", 1, q)

	hooks.down()
	downAt := time.Now()
	b, c := instances[1], instances[2]
	c.PatchQueue(q, map[string]any{"paused": false})
	admin := func(in *apptest.Instance, path string, body any) {
		t.Helper()
		if r := in.Do("POST", "/admin/v1/queues/"+q+path, in.AdminAuth(), body); r.Status != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, r.Status, r.Raw)
		}
	}
	// Each change once the one before it was published: every instance
	// reads the queue once a second, and two changes found in one reading
	// (a sold out undone by a restock) would be one state.
	publishedSoFar := func() (n float64) { // the sale's events, not the audit log's (admin.changed)
		for _, in := range instances {
			for series, v := range apptest.Metrics(t, in.Base) {
				if strings.HasPrefix(series, "waitroom_events_published_total") && !strings.Contains(series, string(events.AdminChanged)) {
					n += v
				}
			}
		}
		return n
	}
	steps := []func(){
		func() { admin(a, "/sold-out", nil) },
		func() { admin(b, "/restock", map[string]any{"unitsLeft": 10}) },
		func() { c.PatchQueue(q, map[string]any{"ratePerSecond": 50}) },
		func() { a.PatchQueue(q, map[string]any{"queueingMethod": "reject"}) },
		func() { b.PatchQueue(q, map[string]any{"paused": true}) },
	}
	for i, step := range steps {
		want := float64(2 + i) // the pause and the resume, then each step's
		for deadline := time.Now().Add(apptest.Patience); publishedSoFar() < want; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("before step %d: %v events published, want %v", i+1, publishedSoFar(), want)
			}
		}
		step()
	}
	time.Sleep(time.Until(downAt.Add(outage))) // the outage is the scenario
	hooks.up()
	upAt := time.Now()
	want := []events.Type{events.QueuePaused, events.QueueResumed, events.StockSoldOut, events.StockRestocked,
		events.RateChanged, events.QueueClosed, events.QueuePaused}
	got := hooks.waitFor(t, "every event of the outage", len(want), q)
	took := time.Since(upAt)
	for _, in := range instances {
		for deadline := time.Now().Add(apptest.Patience); apptest.Metrics(t, in.Base)["waitroom_webhook_pending"] != 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s still has events to send after %v", in.Base, apptest.Patience)
			}
		}
	}
	// Every event sent: one more than want is seen, not taken for one less.
	got = hooks.waitFor(t, "every event sent", len(want), q)

	// Each instance sends the events it claimed in order; the instances
	// among themselves do not wait for each other: "at" orders them.
	slices.SortStableFunc(got, func(x, y events.Event) int { return x.At.Compare(y.At) })
	var types []events.Type
	for _, e := range got {
		types = append(types, e.Type)
	}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("events of %s by their instants: %v, want %v", q, types, want)
		for _, e := range got {
			t.Logf("%s at %s", e.ID, e.At.Format("15:04:05.000"))
		}
	}
	var published, delivered float64
	for _, in := range instances {
		m := apptest.Metrics(t, in.Base)
		for k, v := range m {
			switch {
			case strings.HasPrefix(k, "waitroom_events_published_total"):
				published += v
			case strings.HasPrefix(k, "waitroom_webhook_deliveries_total") && strings.Contains(k, `result="delivered"`):
				delivered += v
			}
		}
	}
	all, times := hooks.taken()
	for id, n := range times {
		if n != 1 {
			t.Errorf("%s was taken %d times, want once", id, n)
		}
	}
	if published != float64(len(all)) || delivered != float64(len(all)) {
		t.Errorf("the instances published %v and delivered %v events, the receiver took %d", published, delivered, len(all))
	}
	var others []string
	for _, e := range all {
		if e.Queue != q {
			others = append(others, e.ID)
		}
	}
	t.Logf("receiver down for %v; back at %v, it had all %d events of %s within %v; of other queues: %v",
		upAt.Sub(downAt).Round(100*time.Millisecond), upAt.Format(time.TimeOnly), len(got), q, took.Round(100*time.Millisecond), others)
}

// TestBreakerEventsNameTheInstance: an instance's breaker on the store
// opening (Redis stopped) and closing (Redis back) reaches the receiver as
// that instance's own events, sent although the store is away.
func TestBreakerEventsNameTheInstance(t *testing.T) {
	t.Parallel()
	secret := []byte(strings.Repeat("b", 32))
	hooks := startHookReceiver(t, secret)
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	redis := testenv.StartRedis(t)
	apptest.Boot(t, apptest.Backend{Name: "private redis"}, func(c *app.Config) {
		c.RedisURL, c.KeyPrefix = redis.URL(), "wr:"
		c.Webhooks, c.WebhookSecretFile = []string{hooks.url()}, secretFile
	})
	redis.Stop()
	opened := hooks.waitFor(t, "the breaker open", 1, "default")
	redis.Restart()
	closed := hooks.waitFor(t, "the breaker closed", 2, "default")[1]
	if opened[0].Type != events.BreakerOpened || closed.Type != events.BreakerClosed {
		t.Fatalf("events %v, then %v; want the breaker opened, then closed", opened[0], closed)
	}
	instance, _ := opened[0].Data["instance"].(string)
	if instance == "" || closed.Data["instance"] != instance || !strings.HasSuffix(opened[0].ID, ":"+instance) {
		t.Fatalf("the breaker's events %+v and %+v: want both to name the instance", opened[0], closed)
	}
}

// hookReceiver is a shop's webhook receiver for the tests: it verifies
// each signature (and fails the test on one that does not), keeps what it
// took, and can be taken down and brought back on the same address.
type hookReceiver struct {
	t      *testing.T
	secret []byte
	addr   string

	mu    sync.Mutex
	srv   *http.Server
	got   []events.Event // in the order taken
	times map[string]int // id → times taken
}

func startHookReceiver(t *testing.T, secret []byte) *hookReceiver {
	h := &hookReceiver{t: t, secret: secret, addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), times: map[string]int{}}
	h.up()
	t.Cleanup(h.down)
	return h
}

func (h *hookReceiver) url() string { return "http://" + h.addr }

// up listens again on the receiver's address.
func (h *hookReceiver) up() {
	h.t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(apptest.Patience); ; time.Sleep(50 * time.Millisecond) {
		if ln, err = net.Listen("tcp", h.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		h.t.Fatalf("the receiver's address again: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	go srv.Serve(ln)
}

// down closes the listener and every connection: attempts are refused.
func (h *hookReceiver) down() {
	h.mu.Lock()
	srv := h.srv
	h.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := h.verify(r.Header.Get(webhook.SignatureHeader), body); err != nil {
		h.t.Errorf("a webhook whose signature does not verify: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var e events.Event
	if err := json.Unmarshal(body, &e); err != nil || e.ID == "" || e.At.IsZero() || e.Data == nil {
		h.t.Errorf("a webhook's body %s: %v", body, err)
	}
	h.mu.Lock()
	h.got = append(h.got, e)
	h.times[e.ID]++
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// verify checks the signature as examples/verify-webhook does.
func (h *hookReceiver) verify(header string, body []byte) error {
	fields := map[string]string{}
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		fields[k] = v
	}
	sec, err := strconv.ParseInt(fields["t"], 10, 64)
	if err != nil {
		return fmt.Errorf("%s %q: no timestamp", webhook.SignatureHeader, header)
	}
	if webhook.Sign(h.secret, time.Unix(sec, 0), body) != header {
		return errors.New("the signature is not the secret's")
	}
	if time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("signed at %d, more than 5 minutes from now", sec)
	}
	return nil
}

// waitFor waits until the receiver has taken n events of queue, and
// returns them in the order taken: the sale's, not the audit log's
// (admin.changed, the tests' own admin calls: TestAuditLogOfAScriptedSale).
func (h *hookReceiver) waitFor(t *testing.T, what string, n int, queue string) []events.Event {
	t.Helper()
	for deadline := time.Now().Add(apptest.Patience); ; time.Sleep(50 * time.Millisecond) {
		all, _ := h.taken()
		var of []events.Event
		for _, e := range all {
			if e.Queue == queue && e.Type != events.AdminChanged {
				of = append(of, e)
			}
		}
		if len(of) >= n {
			return of
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the receiver took %d events of %s within %v, want %d: %+v", what, len(of), queue, apptest.Patience, n, of)
		}
	}
}

func (h *hookReceiver) taken() ([]events.Event, map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	times := make(map[string]int, len(h.times))
	for id, n := range h.times {
		times[id] = n
	}
	return append([]events.Event(nil), h.got...), times
}
