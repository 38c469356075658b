package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue/admission"
)

// HerdMode is one admission schedule of the herd experiment.
type HerdMode struct {
	Name      string
	Rate      float64
	Batch     int
	Interval  time.Duration
	Jitter    bool
	Described string
	// Adaptive runs the schedule with the adaptive rate on: Rate is where
	// it starts and its ceiling (Options.HerdFixed turns it off).
	Adaptive bool
}

// HerdModes are the seed's three schedules, all 100 users/s.
var HerdModes = []HerdMode{
	{Name: "burst", Rate: 100, Batch: 100, Interval: time.Second, Jitter: false, Described: "100 per 1 s tick"},
	{Name: "spread", Rate: 100, Batch: 10, Interval: 100 * time.Millisecond, Jitter: false, Described: "10 per 100 ms, jitter off"},
	{Name: "spread+jitter", Rate: 100, Batch: 10, Interval: 100 * time.Millisecond, Jitter: true, Described: "10 per 100 ms, jitter on"},
}

// HerdResult is one mode's figures.
type HerdResult struct {
	Mode          HerdMode
	Users, Orders int
	Errors        int
	ErrorSample   string
	// Retries counts 503 answers a user waited out (Retry-After) and asked
	// again, as the page does; Errors are the users who never got an order.
	Retries         int
	RetrySample     string
	P50, P95, P99   time.Duration
	Max             time.Duration
	RatioP95ToBurst float64
	// P95Ratio is P95 ÷ the order's own work (herdOrderWork).
	P95Ratio     float64
	MaxBusyConns int
	BusySamples  int
	Duration     time.Duration
	Latency      []Point // order start (s since the crowd arrived) → latency (ms)
	Busy         []Point // s → busy connections
	StatusPolls  int
	// Rate is the admission rate in force (GET effectiveRatePerSecond),
	// sampled every half second: s → users/s. SettledRate is its median
	// over the second half of the run.
	Rate        []Point
	SettledRate float64
	// With no-shows (herdSpec.vanish): how many vanished, how many of them
	// were given a token all the same, how many admission skipped, and
	// when the last present user was let in (since the crowd arrived).
	Vanished, NoShowTokens int
	Abandoned              int64
	LastPresentReady       time.Duration
	// Unserved: users still waiting for their order when a run of fixed
	// length (herdSpec.runFor) ended; not errors.
	Unserved int
	// Sale is the run's sale as the instance's report tells it, beside
	// the bench's own time in line (the herd section's runs only).
	Sale *HerdSale
	// LineP95 is the time in line as lived (enter asked → READY
	// received) and ArrivalToOrderP95 the line and the order together
	// (enter asked → order answered), p95 over the users who ordered.
	LineP95, ArrivalToOrderP95 time.Duration
	// LoadMin and LoadMax: the machine's 1-minute load average, sampled
	// every herdLoadEvery during the run (0 where there is none to read).
	LoadMin, LoadMax float64
	// Against the capacity swept in the same run (HerdReport.Capacity;
	// 0 without one): the settled rate ÷ the capacity, the order p95 ÷
	// the order's own latency, and ArrivalToOrderP95 ÷ the burst's.
	SettledToCapacity, P95ToOwnLatency, ArrivalToOrderToBurst float64
}

// Point is one sample of a time series.
type Point struct{ X, Y float64 }

// HerdReport is the herd section.
type HerdReport struct {
	Clients   string // HerdPage or HerdPolling (Options.HerdClients)
	Users     int
	OrderWork time.Duration
	PoolSize  int
	Products  int
	Modes     []HerdResult
	// Adaptive: the modes ran with the adaptive rate (Target, from Rate
	// down to herdMinRate); DerivedRate is what --order-latency 200ms
	// derives for the pool.
	Adaptive    bool
	Target      time.Duration
	DerivedRate float64
	// Capacity is what the backend bears, swept before the modes (or
	// given by hand); every adaptive figure is read against it.
	Capacity *HerdCapacity
}

// The herd's client models (Options.HerdClients).
const (
	// HerdPage clients do what the waiting page does: honour
	// pollAfterSeconds, and enter and poll with ?waitSeconds=20, so near
	// the front the server holds the request and answers the moment they
	// are READY (the default).
	HerdPage = "page"
	// HerdPolling clients honour pollAfterSeconds and never wait for news,
	// so they learn READY only at their next poll: the page before it
	// asked with waitSeconds, for comparison.
	HerdPolling = "polling"

	herdWaitSeconds = 20
)

const (
	herdPool      = 20
	herdOrderWork = 200 * time.Millisecond
	herdProducts  = 20 // buyers spread over 20 products: the pool is the bottleneck, not one row's lock
	// The adaptive rate of the herd, never below 10/s, guarded at an order
	// p90 of 1.5× the order's work: above it the rate never grows and a
	// backlog drains twice as fast. Not lower: under the herd's load an
	// order's p90 runs 225–260 ms with nobody waiting for a connection, and
	// a guard that unqueued orders trip holds the rate wherever a dip left
	// it (a run guarded at 240 ms settled at 82/s of the 95.6/s capacity).
	herdTarget  = 300 * time.Millisecond
	herdMinRate = 10
	// herdLoadEvery: /proc/loadavg's 1-minute figure moves slowly; a
	// sample every few seconds catches its range over a run.
	herdLoadEvery = 2 * time.Second
)

func runHerd(ctx context.Context, o Options) (*HerdReport, error) {
	users := 3000
	if o.Short {
		users = 100 // a second of admission at 100/s: the smoke test's shape, not a figure
	}
	clients := o.HerdClients
	switch clients {
	case "":
		clients = HerdPage
	case HerdPage, HerdPolling:
	default:
		return nil, fmt.Errorf("unknown client model %q (want %s or %s)", clients, HerdPage, HerdPolling)
	}
	o.HerdClients = clients
	derived, _, err := admission.RateFromPool(herdPool, 1, herdOrderWork)
	if err != nil {
		return nil, err
	}
	rep := &HerdReport{Clients: clients, Users: users, OrderWork: herdOrderWork, PoolSize: herdPool, Products: herdProducts,
		Adaptive: !o.HerdFixed, Target: herdTarget, DerivedRate: derived}
	if rep.Capacity, err = herdCapacity(ctx, o, users); err != nil {
		return rep, err
	}
	if o.HerdSweepOnly {
		return rep, nil
	}
	for _, mode := range HerdModes {
		if len(o.HerdModes) > 0 && !slices.Contains(o.HerdModes, mode.Name) {
			continue
		}
		// The burst is the seed's baseline, at its fixed rate: an adaptive
		// rate on one-second ticks of a hundred only learns that bursts
		// are slow (the test of that: a hundred orders at once on twenty
		// connections take five rounds) and sinks to ~15/s.
		mode.Adaptive = !o.HerdFixed && mode.Interval < time.Second
		if o.HerdRate > 0 { // the same schedules at another rate
			mode = atRate(mode, o.HerdRate)
		}
		o.logf("herd: %s (%s, adaptive %v), %d users", mode.Name, mode.Described, mode.Adaptive, users)
		res, err := herdRun(ctx, o, herdSpec{mode: mode, users: users, report: true})
		if err != nil {
			return rep, fmt.Errorf("%s: %w", mode.Name, err)
		}
		o.logf("herd: %s: %d orders, p50 %v p95 %v p99 %v, max busy %d, errors %d, %d status polls (%.0f/s), settled at %.1f/s, %v",
			mode.Name, res.Orders, res.P50, res.P95, res.P99, res.MaxBusyConns, res.Errors,
			res.StatusPolls, float64(res.StatusPolls)/res.Duration.Seconds(), res.SettledRate, res.Duration.Round(time.Millisecond))
		if s := res.Sale; s != nil {
			o.logf("herd: %s: time in line p50 %v p95 %v as lived, %v and %v entered to admitted; the report's %v (×%.3f) and %v (×%.3f), %d of %d admitted counted",
				mode.Name, s.LivedP50.Round(time.Millisecond), s.LivedP95.Round(time.Millisecond),
				s.BenchP50.Round(time.Millisecond), s.BenchP95.Round(time.Millisecond),
				s.ReportP50.Round(time.Millisecond), ratio(s.ReportP50, s.BenchP50),
				s.ReportP95.Round(time.Millisecond), ratio(s.ReportP95, s.BenchP95), s.ReportCounted, s.Admitted)
		}
		rep.Modes = append(rep.Modes, res)
	}
	if len(rep.Modes) == 0 {
		return nil, fmt.Errorf("no herd schedule is named %q", o.HerdModes)
	}
	rep.againstCapacity()
	return rep, nil
}

// herdCapacity sweeps what the backend bears, or takes it as given by
// hand (Options.HerdCapacity).
func herdCapacity(ctx context.Context, o Options, users int) (*HerdCapacity, error) {
	if o.HerdCapacity > 0 {
		return &HerdCapacity{Rate: o.HerdCapacity, OwnLatency: cmp.Or(o.HerdOwnLatency, herdOrderWork), ByHand: true}, nil
	}
	c, err := sweepCapacity(ctx, o, users)
	if err != nil {
		return c, err
	}
	o.logf("herd capacity: %.2f/s (at least: %v), the order's own latency %v, %d points in %v",
		c.Rate, c.AtLeast, c.OwnLatency.Round(time.Millisecond), len(c.Points), c.Took.Round(time.Second))
	return c, nil
}

// againstCapacity reads each mode against the burst and the capacity.
func (h *HerdReport) againstCapacity() {
	burst := h.Modes[0]
	hasBurst := burst.Mode.Name == HerdModes[0].Name
	for i := range h.Modes {
		m := &h.Modes[i]
		if hasBurst {
			m.RatioP95ToBurst = ratio(m.P95, burst.P95)
			m.ArrivalToOrderToBurst = ratio(m.ArrivalToOrderP95, burst.ArrivalToOrderP95)
		}
		if c := h.Capacity; c != nil {
			if c.Rate > 0 {
				m.SettledToCapacity = m.SettledRate / c.Rate
			}
			m.P95ToOwnLatency = ratio(m.P95, c.OwnLatency)
		}
	}
}

// client speaks the API as a shop's page would.
type client struct {
	base, admin string
	poll, order *http.Client
}

// herdMaxRetries bounds how often one request is asked again after a 503.
const herdMaxRetries = 3

// doRetrying is do, but a 503 (Redis or the database slow to answer, which
// fails fast by design) is waited out for its Retry-After and asked again,
// up to herdMaxRetries times, as the page does. Each retry is counted in r.
func (c *client) doRetrying(ctx context.Context, r *userOutcome, hc *http.Client, method, path, auth string, body any, hdr ...string) (int, map[string]any, error) {
	for try := 0; ; try++ {
		st, m, retryAfter, err := c.do(ctx, hc, method, path, auth, body, hdr...)
		if err != nil || st != http.StatusServiceUnavailable || try == herdMaxRetries {
			return st, m, err
		}
		r.retries++
		if r.retrySample == "" {
			r.retrySample = fmt.Sprintf("%s %s: %d %v", method, path, st, m)
		}
		select {
		case <-ctx.Done():
			return st, m, nil
		case <-time.After(retryAfter):
		}
	}
}

// pollAgain waits the pollAfterSeconds a WAITING answer gave, then asks
// for the user's standing (path) again, as the page does; the run's end
// cuts the wait short, as an error.
func (c *client) pollAgain(ctx context.Context, r *userOutcome, after float64, path, auth string) (int, map[string]any, error) {
	select {
	case <-ctx.Done():
		return 0, nil, errors.New("time limit reached while waiting")
	case <-time.After(time.Duration(after * float64(time.Second))):
	}
	r.polls++
	r.polled = time.Now()
	return c.doRetrying(ctx, r, c.poll, "GET", path, auth, nil)
}

// do sends one request and returns the status, the JSON body and the
// Retry-After (1 s when absent).
func (c *client) do(ctx context.Context, hc *http.Client, method, path, auth string, body any, hdr ...string) (int, map[string]any, time.Duration, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	status, m, wait := readAnswer(res)
	return status, m, wait, nil
}

// herdSpec is one run of the herd: a schedule, a crowd, and what happens
// to them.
type herdSpec struct {
	mode  HerdMode
	users int
	// target and minRate of the adaptive rate (herdTarget, herdMinRate
	// when zero); the ceiling is mode.Rate.
	target  time.Duration
	minRate float64
	// vanish: users who enter and never come back (no-shows); abandon:
	// the queue's abandonAfterSeconds.
	vanish  func(i int) bool
	abandon time.Duration
	// At stepAt the order work becomes stepWork (0: never).
	stepAt   time.Duration
	stepWork time.Duration
	// runFor ends the run after that long (0: once every present user
	// ordered).
	runFor time.Duration
	// report: read the sale's report from the instance after the run
	// (HerdResult.Sale), the crowd let in only once the queue's first
	// row is written.
	report bool
}

func herdRun(ctx context.Context, o Options, spec herdSpec) (HerdResult, error) {
	mode, users := spec.mode, spec.users
	res := HerdResult{Mode: mode, Users: users}
	appName := fmt.Sprintf("wrbench-herd-%d", rand.Int64())
	m, logs, err := bootShop(ctx, o, appName, mode.Jitter)
	if err != nil {
		return res, err
	}
	defer m.Close()
	c := &client{
		base: "http://" + m.Addr(), admin: "Bearer " + m.Config.AdminToken,
		poll:  &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1024, MaxIdleConnsPerHost: 1024}},
		order: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}},
	}
	defer c.poll.CloseIdleConnections()
	defer c.order.CloseIdleConnections()

	q := fmt.Sprintf("herd-%d", rand.IntN(1e9))
	cfg := map[string]any{
		"ratePerSecond": mode.Rate, "batchSize": mode.Batch, "intervalMs": mode.Interval.Milliseconds(),
		"capacity": users * 2, "tokenTtlSeconds": herdTokenTTL.Seconds(), "abandonAfterSeconds": int(spec.abandon.Seconds()),
	}
	if mode.Adaptive {
		target, floor := cmp.Or(spec.target, herdTarget), cmp.Or(spec.minRate, herdMinRate)
		cfg["adaptive"], cfg["minRatePerSecond"], cfg["maxRatePerSecond"] = true, floor, mode.Rate
		cfg["targetLatencyMs"] = target.Milliseconds()
	}
	st, body, _, err := c.do(ctx, c.poll, "PUT", "/admin/v1/queues/"+q, c.admin, cfg)
	if err != nil || st != 200 {
		return res, fmt.Errorf("creating queue: %d %v %v", st, body, err)
	}
	products, err := c.herdProducts(ctx, q)
	if err != nil {
		return res, err
	}
	jwts := herdJWTs(m.Config.AuthSecret, q, users)

	if spec.report {
		if err := awaitFirstRow(ctx, c, q); err != nil {
			return res, err
		}
	}

	// Bounded: the line drains in users/rate seconds, at the adaptive
	// rate's floor at worst; give it that thrice over plus a minute.
	slowest := mode.Rate
	if mode.Adaptive {
		slowest = cmp.Or(spec.minRate, herdMinRate)
	}
	limit := 3*time.Duration(float64(users)/slowest*float64(time.Second)) + time.Minute
	if spec.runFor > 0 {
		limit = spec.runFor
	}
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	// Sample the busy order connections every 20 ms on a connection of our own.
	pg, err := pgx.Connect(ctx, o.DatabaseURL)
	if err != nil {
		return res, err
	}
	defer pg.Close(context.Background())
	start := time.Now()
	stopSampler := make(chan struct{})
	busyDone := every(runCtx, stopSampler, 20*time.Millisecond, func() {
		var n int
		err := pg.QueryRow(runCtx, `SELECT count(*) FROM pg_stat_activity
				WHERE application_name = $1 AND state = 'active' AND query LIKE '%pg_sleep%'`, appName).Scan(&n)
		if err != nil {
			return
		}
		res.BusySamples++
		res.MaxBusyConns = max(res.MaxBusyConns, n)
		res.Busy = append(res.Busy, Point{time.Since(start).Seconds(), float64(n)})
	})
	// Sample the rate in force every half second; step the order work.
	stepped := spec.stepAt == 0
	rateDone := every(runCtx, stopSampler, 500*time.Millisecond, func() {
		if !stepped && time.Since(start) >= spec.stepAt {
			m.Orders.SetWork(spec.stepWork)
			stepped = true
		}
		if st, b, _, err := c.do(runCtx, c.poll, "GET", "/admin/v1/queues/"+q, c.admin, nil); err == nil && st == 200 {
			if r, ok := b["effectiveRatePerSecond"].(float64); ok {
				res.Rate = append(res.Rate, Point{time.Since(start).Seconds(), r})
			}
		}
	})

	var load loadRange
	load.sample()
	loadDone := every(runCtx, stopSampler, herdLoadEvery, load.sample)

	wait := "" // ?waitSeconds= on enter and status, as the page sends it
	if o.HerdClients == HerdPage {
		wait = fmt.Sprintf("?waitSeconds=%d", herdWaitSeconds)
	}
	out := make([]userOutcome, users)
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if spec.vanish != nil && spec.vanish(i) {
				out[i] = userOutcome{vanished: true}
				c.doRetrying(runCtx, &out[i], c.poll, "POST", "/api/v1/queues/"+q+"/entries", jwts[i], nil)
				return
			}
			out[i] = herdUser(runCtx, c, wait, jwts[i], q, products[i%len(products)], start)
		}()
	}
	wg.Wait()
	res.Duration = time.Since(start)
	close(stopSampler)
	<-busyDone
	<-rateDone
	<-loadDone
	load.sample()
	res.LoadMin, res.LoadMax = load.min, load.max
	res.SettledRate = settled(res.Rate)
	if spec.report {
		if res.Sale, err = herdSale(ctx, c, q, out); err != nil {
			return res, fmt.Errorf("the sale's report: %w", err)
		}
	}
	if spec.vanish != nil {
		if err := countNoShows(ctx, c, q, jwts, out, &res); err != nil {
			return res, err
		}
	}

	var lats []time.Duration
	for _, u := range out {
		res.StatusPolls += u.polls
		res.Retries += u.retries
		if u.vanished {
			continue
		}
		res.LastPresentReady = max(res.LastPresentReady, u.readyAt)
		if spec.runFor > 0 && u.err != nil && runCtx.Err() != nil {
			res.Unserved++ // the run's end came first
			continue
		}
		if res.RetrySample == "" && u.retrySample != "" {
			res.RetrySample = u.retrySample
			if l := logs.First(); l != "" {
				res.RetrySample += "; the server logged: " + l
			}
		}
		if u.err != nil {
			res.Errors++
			if res.ErrorSample == "" {
				res.ErrorSample = u.err.Error()
				if l := logs.First(); l != "" {
					res.ErrorSample += "; the server logged: " + l
				}
			}
			continue
		}
		res.Orders++
		lats = append(lats, u.lat)
		res.Latency = append(res.Latency, Point{u.at.Seconds(), ms(u.lat)})
	}
	slices.SortFunc(res.Latency, func(a, b Point) int {
		switch {
		case a.X < b.X:
			return -1
		case a.X > b.X:
			return 1
		}
		return 0
	})
	slices.Sort(lats)
	res.P50, res.P95, res.P99 = percentile(lats, 50), percentile(lats, 95), percentile(lats, 99)
	res.LineP95, res.ArrivalToOrderP95 = livedP95s(out)
	if len(lats) > 0 {
		res.Max = lats[len(lats)-1]
	}
	res.P95Ratio = float64(res.P95) / float64(herdOrderWork)
	// A run of fixed length may end before any order on a loaded machine:
	// its users are counted Unserved, not failed.
	if res.Orders == 0 && res.Unserved == 0 {
		return res, fmt.Errorf("no order succeeded (%d errors, first: %s)", res.Errors, res.ErrorSample)
	}
	return res, nil
}

// herdProducts creates the herd's products, in plenty, sold through q.
func (c *client) herdProducts(ctx context.Context, q string) ([]string, error) {
	products := make([]string, herdProducts)
	for i := range products {
		products[i] = fmt.Sprintf("%s-p%d", q, i)
		st, body, _, err := c.do(ctx, c.poll, "PUT", "/admin/v1/products/"+products[i], c.admin, map[string]any{
			"name": "bench tee", "stock": 1_000_000, "queue": q,
		})
		if err != nil || st != 200 && st != 201 {
			return nil, fmt.Errorf("creating product: %d %v %v", st, body, err)
		}
	}
	return products, nil
}

// herdJWTs are n users' bearer JWTs for q, signed with the instance's secret.
func herdJWTs(secret, q string, n int) []string {
	id := identity.New([]byte(secret))
	jwts := make([]string, n)
	for i := range jwts {
		jwts[i] = "Bearer " + id.SignJWT(fmt.Sprintf("%s-u%d", q, i), time.Hour)
	}
	return jwts
}

// bootShop boots a waitroom with the order API on the herd's pool and
// order work, its connections named appName in pg_stat_activity; its
// warnings go to the serverLog it returns.
func bootShop(ctx context.Context, o Options, appName string, jitter bool) (*app.Main, *serverLog, error) {
	dbURL, err := herdDatabaseURL(o.DatabaseURL, appName)
	if err != nil {
		return nil, nil, err
	}
	logs := &serverLog{tee: o.Log}
	m, err := boot(ctx, o, logs, func(c *app.Config) {
		c.DatabaseURL = dbURL
		c.DBPoolSize = herdPool
		c.OrderWork = herdOrderWork
		c.AdmissionJitter = jitter
	})
	return m, logs, err
}

// every runs fn every d, in a goroutine of its own, until stop is closed or
// ctx ends; the channel it returns is closed when it has stopped.
func every(ctx context.Context, stop <-chan struct{}, d time.Duration, fn func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fn()
		}
	}()
	return done
}

// userOutcome is one virtual user's order: when it started (since the crowd
// arrived), how long it took, or why there was none.
type userOutcome struct {
	at, lat     time.Duration
	readyAt     time.Duration // since the crowd arrived
	err         error
	polls       int
	retries     int
	retrySample string
	vanished    bool      // entered and never came back (no-shows)
	polled      time.Time // when the last poll was sent (pollAgain)
	// The user's time in line (HerdSale): when they asked to enter, when
	// the enter's request was written, when admission let them in (the
	// store's clock, from the READY answer) and when they were told.
	asked, placed, admitted, told time.Time
}

// livedP95s are the p95s, over the users who ordered, of the time in line
// as lived (enter asked → READY received) and of the arrival to the order
// (enter asked → order answered).
func livedP95s(out []userOutcome) (line, arrivalToOrder time.Duration) {
	var lines, arrivals []time.Duration
	for _, u := range out {
		if u.vanished || u.err != nil || u.told.IsZero() {
			continue
		}
		lines = append(lines, u.told.Sub(u.asked))
		arrivals = append(arrivals, u.told.Sub(u.asked)+u.lat)
	}
	slices.Sort(lines)
	slices.Sort(arrivals)
	return percentile(lines, 95), percentile(arrivals, 95)
}

// settled is the median of the rate samples of the run's second half.
func settled(rate []Point) float64 {
	if len(rate) == 0 {
		return 0
	}
	var ys []float64
	for _, p := range rate[len(rate)/2:] {
		ys = append(ys, p.Y)
	}
	slices.Sort(ys)
	return ys[len(ys)/2]
}

// countNoShows asks, once the run is over, where every user who vanished
// stands: READY means they were given a token all the same.
func countNoShows(ctx context.Context, c *client, q string, jwts []string, out []userOutcome, res *HerdResult) error {
	for i, u := range out {
		if !u.vanished {
			continue
		}
		res.Vanished++
		st, b, _, err := c.do(ctx, c.poll, "GET", "/api/v1/queues/"+q+"/entries/me", jwts[i], nil)
		if err != nil || st != 200 {
			return fmt.Errorf("status of a no-show: %d %v %v", st, b, err)
		}
		if b["status"] == "READY" {
			res.NoShowTokens++
		}
	}
	st, b, _, err := c.do(ctx, c.poll, "GET", "/admin/v1/queues/"+q, c.admin, nil)
	if err != nil || st != 200 {
		return fmt.Errorf("queue stats: %d %v %v", st, b, err)
	}
	abandoned, _ := b["abandonedTotal"].(float64)
	res.Abandoned = int64(abandoned)
	return nil
}

// herdUser enters, polls as the page does (honouring pollAfterSeconds, or
// as cm says) and orders as soon as READY, timing the order as the client
// sees it.
func herdUser(ctx context.Context, c *client, wait, jwt, q, product string, start time.Time) (r userOutcome) {
	path := "/api/v1/queues/" + q + "/entries"
	var written atomic.Int64
	r.asked = time.Now()
	st, body, err := c.doRetrying(timeEnter(ctx, &written), &r, c.poll, "POST", path+wait, jwt, nil)
	if w := written.Load(); w != 0 {
		r.placed = time.Unix(0, w)
	}
	for {
		if err != nil {
			r.err = err
			return r
		}
		if st != 200 {
			r.err = fmt.Errorf("queue answer %d %v", st, body)
			return r
		}
		if body["status"] == "READY" {
			break
		}
		after, ok := body["pollAfterSeconds"].(float64)
		if !ok || body["status"] != "WAITING" {
			r.err = fmt.Errorf("unexpected answer %v", body)
			return r
		}
		st, body, err = c.pollAgain(ctx, &r, after, path+"/me"+wait, jwt)
	}
	c.orderOnce(ctx, &r, jwt, product, body, start)
	return r
}

// replayed says an order's answer is the replay of this order's own first
// try (200, its Idempotency-Key): Go's http.Transport sends a request
// with an Idempotency-Key again by itself when the connection it went on
// was lost before the answer (a loaded machine's keep-alive races), and
// the first try had been created.
func replayed(st int, body map[string]any, key string) bool {
	return st == http.StatusOK && body["idempotencyKey"] == key
}

// orderOnce orders one of product with the token of the READY answer
// ready, as soon as it came, timing the order as the client sees it into r.
func (c *client) orderOnce(ctx context.Context, r *userOutcome, jwt, product string, ready map[string]any, start time.Time) {
	token, _ := ready["token"].(string)
	t0 := time.Now()
	r.readyAt = t0.Sub(start)
	r.told, r.admitted = t0, admittedAt(ready)
	// The Idempotency-Key makes a retried order safe: if the first try was
	// created after all, the retry returns that order.
	key := "herd-" + token
	st, body, err := c.doRetrying(ctx, r, c.order, "POST", "/api/v1/orders", jwt,
		map[string]any{"productId": product, "quantity": 1}, "X-Entry-Token", token, "Idempotency-Key", key)
	r.lat = time.Since(t0)
	r.at = t0.Sub(start)
	switch {
	case err != nil:
		r.err = err
	case st != http.StatusCreated && !replayed(st, body, key):
		r.err = fmt.Errorf("order answer %d %v", st, body)
	}
}
