package bench

// Ready (issue 55): the shop told of each signed-in user let in, at the
// admission rate, through several instances on one Redis. Three instance
// processes share a queue at 500 users/s (50 a tick of 100 ms) with
// notifyOnReady, every instance sending to one receiver; 30,000 signed
// users enter over 60 s, each through one instance, and poll through
// another until READY. The receiver verifies each POST's signature and
// keeps every id it took, as a shop's does: what it shows is whether every
// user told READY was told to the shop (missing must be 0), how many
// deliveries came twice (dropped by id) and how long after admission each
// event arrived (the store's clock in `at`, the receiver's on arrival: one
// machine).

import (
	"bufio"
	"context"
	"encoding/json"
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
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/webhook"
)

// ReadyReport is the ready section.
type ReadyReport struct {
	// The run's shape: Instances on one Redis, admission at Rate (Batch
	// every Interval), Users signed in arriving evenly over Arrival.
	Instances int
	Rate      float64
	Batch     int
	Interval  time.Duration
	Users     int
	Arrival   time.Duration
	// Admitted users were told READY; Received entry.ready POSTs were
	// taken (signature verified), Unique of them distinct ids, Duplicates
	// an id taken before (dropped by id). Missing: users told READY whose
	// entry.ready never came; Strangers: events for a user not told READY,
	// or a second id for one user; Refused: POSTs whose signature did not
	// verify.
	Admitted, Received, Unique, Duplicates int
	Missing, Strangers, Refused            int
	MissingSample                          string
	// Published is the instances' waitroom_events_published_total of
	// entry.ready, summed; ByInstance each one's share.
	Published  float64
	ByInstance []float64
	// Lag from admission (`at`) to the receiver's taking it.
	LagP50, LagP99, LagMax time.Duration
	// Pass: everyone let in, none missing, no stranger, no refusal, no
	// error.
	Pass                  bool
	Errors, Retries       int
	ErrorSample           string
	Duration              time.Duration
	LoadBefore, LoadAfter float64
}

// The run's shape (the issue's), and its short form for CI.
const (
	readyInstances = 3
	readyUsers     = 30_000
	readyArrival   = 60 * time.Second
	readyRate      = 500
	readyBatch     = 50
	readyQueue     = "ready"
	// readyDrain is how long after the crowd's last arrival the users have
	// to be let in, and the events to come.
	readyDrain = time.Minute
)

// readyShape is the run's shape: the issue's, or a short one (a thirtieth
// of the users over a sixth of the time, at a fifth of the rate: the
// machine's load in CI is not the point, the counts are).
func readyShape(short bool) ReadyReport {
	r := ReadyReport{Instances: readyInstances, Rate: readyRate, Batch: readyBatch, Interval: 100 * time.Millisecond,
		Users: readyUsers, Arrival: readyArrival}
	if short {
		r.Rate, r.Batch, r.Users, r.Arrival = 100, 10, 1000, 10*time.Second
	}
	return r
}

func runReady(ctx context.Context, o Options) (*ReadyReport, error) {
	rep := readyShape(o.Short)
	rep.LoadBefore, _ = loadAverage()
	start := time.Now()
	dir, err := os.MkdirTemp("", "waitroom-bench-ready-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	secret := []byte(fmt.Sprintf("bench-webhook-%032x", start.UnixNano()))
	secretFile := filepath.Join(dir, "webhook-secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		return nil, err
	}
	rec, err := startReadyReceiver(secret)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	cfg := newInstanceConfig(o)
	cfg.Args = []string{"--webhook", rec.url, "--webhook-secret-file", secretFile}
	rdb, err := newRedis(o.RedisURL)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	defer dropPrefix(context.WithoutCancel(ctx), rdb, cfg.KeyPrefix)
	var clients []*client
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxConnsPerHost: 1024, MaxIdleConnsPerHost: 1024}}
	defer hc.CloseIdleConnections()
	for range rep.Instances {
		in, err := startInstance(ctx, cfg, &serverLog{tee: o.Log})
		if err != nil {
			return nil, err
		}
		defer in.stop()
		clients = append(clients, &client{base: "http://" + in.Addr, admin: "Bearer " + cfg.AdminToken, poll: hc, order: hc})
	}
	if err := readyCrowd(ctx, o, clients, []byte(cfg.AuthSecret), rec, &rep); err != nil {
		return nil, err
	}
	for _, c := range clients {
		n := readyPublished(ctx, c)
		rep.ByInstance = append(rep.ByInstance, n)
		rep.Published += n
	}
	rep.Duration = time.Since(start)
	rep.LoadAfter, _ = loadAverage()
	return &rep, nil
}

// readyCrowd makes the queue, lets the crowd in, waits for their events
// and counts what the receiver took.
func readyCrowd(ctx context.Context, o Options, clients []*client, secret []byte, rec *readyReceiver, rep *ReadyReport) error {
	st, body, _, err := clients[0].do(ctx, clients[0].poll, "PUT", "/admin/v1/queues/"+readyQueue, clients[0].admin, map[string]any{
		"ratePerSecond": rep.Rate, "batchSize": rep.Batch, "intervalMs": rep.Interval.Milliseconds(), "notifyOnReady": true,
		"capacity": 10 * rep.Users,
	})
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("creating the queue: %d %v %v", st, body, err)
	}
	runCtx, cancel := context.WithTimeout(ctx, rep.Arrival+readyDrain)
	defer cancel()
	people := make([]userOutcome, rep.Users)
	begin := time.Now()
	var wg sync.WaitGroup
	for i := range people {
		at := time.Duration(int64(rep.Arrival) * int64(i) / int64(rep.Users))
		if sleepCtx(runCtx, time.Until(begin.Add(at))) != nil {
			people[i].err = fmt.Errorf("not arrived: %w", runCtx.Err())
			continue
		}
		raw, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": readyUser(i), "exp": time.Now().Add(time.Hour).Unix()}).SignedString(secret)
		if err != nil {
			return err
		}
		wg.Go(func() {
			readyWait(runCtx, clients[i%len(clients)], clients[(i+1)%len(clients)], "Bearer "+raw, &people[i])
		})
	}
	wg.Wait()
	o.logf("ready: crowd done in %v; waiting for the events", time.Since(begin).Round(time.Second))
	told := map[string]bool{}
	for i, p := range people {
		rep.Retries += p.retries
		switch {
		case p.err != nil:
			if rep.Errors++; rep.ErrorSample == "" {
				rep.ErrorSample = p.err.Error()
			}
		case !p.told.IsZero():
			rep.Admitted++
			told[readyUser(i)] = true
		}
	}
	// Every event comes within seconds; the bound is for a run gone wrong.
	for deadline := time.Now().Add(readyDrain); time.Now().Before(deadline) && rec.missing(told) > 0; {
		if sleepCtx(ctx, 100*time.Millisecond) != nil {
			break
		}
	}
	sleepCtx(ctx, time.Second) // a duplicate in flight comes too
	rec.count(told, rep)
	rep.Pass = rep.Admitted == rep.Users && rep.Missing == 0 && rep.Strangers == 0 && rep.Refused == 0 && rep.Errors == 0
	return nil
}

func readyUser(i int) string { return "ready-" + strconv.Itoa(i) }

// readyWait enters through one instance and polls through another, as the
// page does (at pollAfterSeconds, held near the front), until READY.
func readyWait(ctx context.Context, enter, poll *client, auth string, p *userOutcome) {
	path := "/api/v1/queues/" + readyQueue + "/entries"
	wait := fmt.Sprintf("?waitSeconds=%d", herdWaitSeconds)
	p.asked = time.Now()
	st, body, err := enter.doRetrying(ctx, p, enter.poll, "POST", path+wait, auth, nil)
	for {
		switch {
		case err != nil:
			p.err = err
			return
		case st != http.StatusOK:
			p.err = fmt.Errorf("queue answer %d %v", st, body)
			return
		case body["status"] == "READY":
			p.told = time.Now()
			return
		}
		after, ok := body["pollAfterSeconds"].(float64)
		if !ok || body["status"] != "WAITING" {
			p.err = fmt.Errorf("unexpected answer %v", body)
			return
		}
		st, body, err = poll.pollAgain(ctx, p, after, path+"/me"+wait, auth)
	}
}

// readyPublished is an instance's waitroom_events_published_total of
// entry.ready, from its /metrics (0 when unreadable).
func readyPublished(ctx context.Context, c *client) float64 {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/metrics", nil)
	res, err := c.poll.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	series := `waitroom_events_published_total{type="` + string(events.EntryReady) + `"} `
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n
		}
	}
	return 0
}

// readyReceiver is the shop's receiver of the run: it verifies each
// POST's signature and keeps, per id, the user, the event's `at` and when
// it first took it.
type readyReceiver struct {
	secret []byte
	url    string
	srv    *http.Server

	mu      sync.Mutex
	first   map[string]readyTaken // by id
	ids     map[string][]string   // user → the ids taken for them
	times   int                   // entry.ready POSTs taken
	refused int
}

type readyTaken struct {
	user     string
	at, took time.Time
}

func startReadyReceiver(secret []byte) (*readyReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &readyReceiver{secret: secret, url: "http://" + ln.Addr().String() + "/hooks", first: map[string]readyTaken{}, ids: map[string][]string{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *readyReceiver) close() { r.srv.Close() }

func (r *readyReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	took := time.Now()
	body, _ := io.ReadAll(req.Body)
	var e events.Event
	header := req.Header.Get(webhook.SignatureHeader)
	t, _, _ := strings.Cut(strings.TrimPrefix(header, "t="), ",")
	sec, _ := strconv.ParseInt(t, 10, 64)
	if webhook.Sign(r.secret, time.Unix(sec, 0), body) != header || json.Unmarshal(body, &e) != nil {
		r.mu.Lock()
		r.refused++
		r.mu.Unlock()
		http.Error(w, "not signed", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
	if e.Type != events.EntryReady {
		return
	}
	user, _ := e.Data["user"].(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.times++
	if _, seen := r.first[e.ID]; !seen { // a duplicate is dropped by its id
		r.first[e.ID] = readyTaken{user: user, at: e.At, took: took}
		r.ids[user] = append(r.ids[user], e.ID)
	}
}

// missing counts the users told READY with no event taken.
func (r *readyReceiver) missing(told map[string]bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for u := range told {
		if len(r.ids[u]) == 0 {
			n++
		}
	}
	return n
}

// count sets the receiver's figures in rep.
func (r *readyReceiver) count(told map[string]bool, rep *ReadyReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep.Received, rep.Unique, rep.Refused = r.times, len(r.first), r.refused
	rep.Duplicates = r.times - len(r.first)
	for u := range told {
		if len(r.ids[u]) == 0 {
			if rep.Missing++; rep.MissingSample == "" {
				rep.MissingSample = u
			}
		}
	}
	for u, ids := range r.ids {
		if !told[u] || len(ids) > 1 {
			rep.Strangers++
		}
	}
	var lags []time.Duration
	for _, t := range r.first {
		lags = append(lags, t.took.Sub(t.at))
	}
	slices.Sort(lags)
	rep.LagP50, rep.LagP99 = percentile(lags, 50), percentile(lags, 99)
	if len(lags) > 0 {
		rep.LagMax = lags[len(lags)-1]
	}
}
