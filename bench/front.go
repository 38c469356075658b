package bench

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/proxyfront"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/front"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
)

// The front section (issue 37): one line, polled first by pages on the
// front document through deploy/nginx.conf's cache, then by today's exact
// polls, in one run. Two instance processes on one Redis behind the
// shipped nginx config; people entered through an instance, each keeping
// the signed ticket its answer carried; a few leave before the runs, so the
// document's leavers are not empty. The pages are simulated in Go doing
// what waiting.js does: far from the front they read the document and work
// out their place from their ticket (package front's Place and Ask), and
// ask their instance (entries/me, ?waitSeconds=20, the ticket sent back)
// only where the document says to; the exact run polls entries/me as the
// page did before the document. What reaches the instances is their own
// count of requests answered; CPU is from /proc of each process and INFO
// of Redis; the moment each person was let in is read from Redis every
// 20 ms, and the delay to the page knowing READY is from the admission
// read before the one that found them gone from the line.

// frontSizes are the section's counts and durations.
type frontSizes struct {
	users  int
	rate   float64       // the queue's admission rate during the runs
	leave  int           // one in leave leaves the line before the runs
	idle   time.Duration // nobody asking, to read the instances' floor
	warm   time.Duration
	window time.Duration
	first  time.Duration // first looks spread over this long
	// exactEvery and exactFront: in the exact run, the first exactFront
	// waiting poll and one in exactEvery behind them (each person's cost is
	// the same; all of them would take more of the two shared cores than
	// the instances get).
	exactEvery, exactFront int
	conns                  int // connections for the reads far from the front
	near                   int // connections for the asks (each may be held)
}

func frontSizesFor(short bool) frontSizes {
	if short {
		return frontSizes{users: 2000, rate: 10, leave: 50, idle: time.Second, warm: time.Second, window: 3 * time.Second,
			first: 2 * time.Second, exactEvery: 1, conns: 16, near: 64}
	}
	// 20/s: a line of 100,000 is an 83-minute wait, a big sale's. The
	// share of requests reaching the instances is about 3 × rate ÷ (line ÷
	// 10 s), since every person let in asks their instance a few times
	// near the front (docs/benchmarks.md says so beside the figures).
	return frontSizes{users: 100_000, rate: 20, leave: 50, idle: 10 * time.Second, warm: 12 * time.Second, window: 40 * time.Second,
		first: 10 * time.Second, exactEvery: 4, exactFront: 3000, conns: 512, near: 512}
}

// Goals of issue 37.
const (
	GoalFrontReachedShare = 0.01 // requests reaching instances ≤ 1% of the polls (goal 0.1%)
	GoalFrontCPURatio     = 20.0 // instance CPU per waiting person per minute ≥ 20× less
)

// FrontRun is one way of polling the line, measured over its window.
type FrontRun struct {
	Name string
	// Document: pages on the front document through nginx's cache; else
	// today's exact polls of entries/me through the same nginx.
	Document bool
	Window   time.Duration
	Waiting  int // in line as the window opened
	// Polling is how many of them the run's pages are: all of them on
	// the document, a sample with exact polls (frontSizes.exactEvery).
	Polling int
	// Polls are the pages' requests sent in the window (reads of the
	// document and asks of entries/me); Asks those of entries/me; Failed
	// those answered wrongly or not at all, TimedOut those the generator
	// gave up waiting for (a starved machine's, counted apart).
	Polls, Asks, Failed, TimedOut int64
	// Late counts looks the generator sent over 100 ms after they were
	// due; LateMax is the latest: its own backlog, not the servers'.
	Late    int64
	LateMax time.Duration
	// DocumentBytes is the mean size of the document as read (its body,
	// uncompressed).
	DocumentBytes float64
	FailedSample  string // the first failure's status, body and error
	// Reached are the requests the instances answered in the window, by
	// route (their own count).
	Reached map[string]uint64
	Use     MeterDelta // instances, generator, Redis
	Nginx   time.Duration
	// Admitted counts people let in during the window (up to 5 s before
	// its end); ReadyDelays the delays from each one's admission to their
	// page seeing READY, sorted; Unseen those whose page did not see it by
	// the end.
	Admitted    int
	ReadyDelays []time.Duration
	Unseen      int
	// OnTime are ReadyDelays of those whose page sent every look in the
	// lateWindow before their admission on time (under 100 ms late),
	// sorted; LateNear counts the others: a page the generator let fall
	// behind asks late, and that lateness is the generator's, not the
	// product's.
	OnTime   []time.Duration
	LateNear int
	// Placed counts places worked out from the document, checked against
	// the line as it stood at the document's head; Outside those not
	// within the stated bound; Off the largest distance from the exact
	// rank; Unlisted the most leavers a document did not list.
	Placed, Outside, Off, Unlisted int64
}

// ReachedTotal is every request that reached an instance.
func (r FrontRun) ReachedTotal() uint64 {
	n := uint64(0)
	for _, v := range r.Reached {
		n += v
	}
	return n
}

// CPUPerPersonMinute is the instances' CPU per waiting person polling,
// per minute.
func (r FrontRun) CPUPerPersonMinute() time.Duration {
	if r.Polling == 0 || r.Window <= 0 {
		return 0
	}
	return time.Duration(float64(r.Use.Server) / float64(r.Polling) / r.Window.Minutes())
}

// FrontReport is the front section.
type FrontReport struct {
	Users, Left, Instances int
	Rate                   float64
	FillTime               time.Duration
	FillUse                MeterDelta // entering everyone, through an instance
	RedisBytes             int64      // Redis's used_memory growth over the fill
	// Idle is what the instances and Redis spent with nobody asking, over
	// a stretch before the runs.
	Idle         MeterDelta
	NginxVersion string
	Runs         []FrontRun
	// Skipped says why the section did not run (no nginx on the machine).
	Skipped string
}

func runFront(ctx context.Context, o Options) (*FrontReport, error) {
	sz := frontSizesFor(o.Short)
	rep := &FrontReport{Users: sz.users, Rate: sz.rate, Instances: 2}
	if proxyfront.Binary("nginx") == "" {
		rep.Skipped = "no nginx on this machine (bench/run.sh installs Debian's)"
		return rep, nil
	}
	rdb, err := newRedis(o.RedisURL)
	if err != nil {
		return rep, err
	}
	defer rdb.Close()
	cfg := newInstanceConfig(o)
	defer dropPrefix(context.WithoutCancel(ctx), rdb, cfg.KeyPrefix)
	var instances []*instance
	defer func() {
		for _, in := range instances {
			in.stop()
		}
	}()
	var upstreams []string
	for range rep.Instances {
		in, err := startInstance(ctx, cfg, o.Log)
		if err != nil {
			return rep, err
		}
		instances, upstreams = append(instances, in), append(upstreams, in.Addr)
	}
	nginx, err := proxyfront.NginxWith(ctx, func(dir, addr string) (string, error) {
		return apptest.DeployedNginxConf(dir, addr, upstreams)
	}, o.Log)
	if err != nil {
		return rep, fmt.Errorf("nginx on deploy/nginx.conf: %w", err)
	}
	defer nginx.Stop()
	rep.NginxVersion = nginx.Version

	c := &client{base: "http://" + instances[0].Addr, admin: "Bearer " + cfg.AdminToken, poll: httpClient()}
	const q = "front"
	if st, body, _, err := c.do(ctx, c.poll, "PUT", "/admin/v1/queues/"+q, c.admin,
		map[string]any{"paused": true, "capacity": 2 * sz.users, "ratePerSecond": sz.rate}); err != nil || st != 200 {
		return rep, fmt.Errorf("creating the queue: %d %v %v", st, body, err)
	}
	line := &frontLine{q: q, auth: signUsers(cfg.AuthSecret, sz.users)}
	m0, err := readMeter(ctx, rdb, pidsOf(instances))
	if err != nil {
		return rep, err
	}
	used0, err := usedMemory(ctx, rdb)
	if err != nil {
		return rep, err
	}
	t := time.Now()
	if err := line.enter(ctx, "http://"+instances[0].Addr, sz); err != nil {
		return rep, err
	}
	rep.FillTime = time.Since(t)
	m1, err := readMeter(ctx, rdb, pidsOf(instances))
	if err != nil {
		return rep, err
	}
	rep.FillUse = m0.to(m1)
	used1, err := usedMemory(ctx, rdb)
	if err != nil {
		return rep, err
	}
	rep.RedisBytes = used1 - used0
	rep.Left = line.leavers
	o.logf("front: %d entered in %v, %d left; nginx %s on %s", sz.users, rep.FillTime.Round(time.Millisecond), line.leavers, nginx.Version, nginx.Addr)

	if st, body, _, err := c.do(ctx, c.poll, "PATCH", "/admin/v1/queues/"+q, c.admin, map[string]any{"paused": false}); err != nil || st != 200 {
		return rep, fmt.Errorf("resuming the queue: %d %v %v", st, body, err)
	}
	watch := &admissions{store: redisstore.New(rdb, cfg.KeyPrefix), q: q}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); watch.run(watchCtx) }()
	defer func() { stopWatch(); <-watchDone }()

	// The instances' own floor: what they spend with nobody asking
	// (admission's ticks, the line's snapshot, the runtime).
	i0, err := readMeter(ctx, rdb, pidsOf(instances))
	if err != nil {
		return rep, err
	}
	profiled := profileInstances(ctx, instances, o.FrontProfiles, "idle", max(time.Second, sz.idle-time.Second), o.logf)
	select {
	case <-ctx.Done():
		return rep, ctx.Err()
	case <-time.After(sz.idle):
	}
	profiled.Wait()
	i1, err := readMeter(ctx, rdb, pidsOf(instances))
	if err != nil {
		return rep, err
	}
	rep.Idle = i0.to(i1)
	o.logf("front: nobody asking for %v: instances %.1f%% of a core, Redis %.1f%%", rep.Idle.Wall.Round(time.Millisecond),
		100*rep.Idle.Server.Seconds()/rep.Idle.Wall.Seconds(), 100*rep.Idle.Redis.Seconds()/rep.Idle.Wall.Seconds())

	for _, document := range []bool{true, false} {
		// The document is read through nginx; every ask of entries/me, in
		// both runs, goes straight to the instances, round robin by person,
		// as nginx would send it: nginx's cost of passing on what it does
		// not cache is not the instances', on these two shared cores it
		// would crowd them, and READY then travels the same way in both.
		bases := []string{"http://" + nginx.Addr}
		for _, in := range instances {
			bases = append(bases, "http://"+in.Addr)
		}
		run, err := line.poll(ctx, pageRun{sizes: sz, document: document, bases: bases,
			instances: instances, nginx: nginx, rdb: rdb, watch: watch, log: o.logf, profiles: o.FrontProfiles})
		if err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, run)
	}
	return rep, nil
}

func pidsOf(instances []*instance) []int {
	var pids []int
	for _, in := range instances {
		pids = append(pids, in.pid())
	}
	return pids
}

// frontLine is the section's line as the bench knows it: every person's
// JWT and signed ticket, and the tickets still waiting or let in (not
// left), ascending: the ground truth a place is checked against.
type frontLine struct {
	q       string
	auth    []string
	signed  []string
	epoch   []int64
	ticket  []int64
	gone    []bool // left, or let in and seen READY
	kept    []int64
	leavers int
}

// enter puts everyone in line through the instance at base, keeping each
// one's ticket, then has one in sz.leave leave.
func (l *frontLine) enter(ctx context.Context, base string, sz frontSizes) error {
	n := len(l.auth)
	l.signed, l.epoch, l.ticket, l.gone = make([]string, n), make([]int64, n), make([]int64, n), make([]bool, n)
	newConn, err := clientFor(ClientRaw, []string{base}, sz.conns)
	if err != nil {
		return err
	}
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		firstErr = cmpErr(firstErr, err)
		mu.Unlock()
	}
	onConns(sz.conns, newConn, 0, func(c conn, _ *recorder) {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			st, body, err := c.do(ctx, Request{Method: "POST", Path: "/api/v1/queues/" + l.q + "/entries", Auth: l.auth[i]})
			if err != nil || st != 200 {
				fail(fmt.Errorf("entering person %d: %d %s %v", i, st, body, err))
				return
			}
			signed := strings.Trim(string(jsonField(body, "ticket")), `"`)
			parts := strings.Split(signed, ".")
			if len(parts) != 4 {
				fail(fmt.Errorf("person %d: no signed ticket in %s", i, body))
				return
			}
			l.signed[i] = signed
			l.epoch[i], _ = strconv.ParseInt(parts[1], 10, 64)
			l.ticket[i], _ = strconv.ParseInt(parts[2], 10, 64)
		}
	})
	if firstErr != nil {
		return firstErr
	}
	left := map[int64]bool{}
	onConns(1, newConn, 0, func(c conn, _ *recorder) {
		for i := sz.leave / 2; i < n; i += sz.leave {
			st, body, err := c.do(ctx, Request{Method: "DELETE", Path: "/api/v1/queues/" + l.q + "/entries/me", Auth: l.auth[i]})
			if err != nil || st != 204 {
				fail(fmt.Errorf("person %d leaving: %d %s %v", i, st, body, err))
				return
			}
			l.gone[i], left[l.ticket[i]] = true, true
		}
	})
	for _, t := range l.ticket {
		if !left[t] {
			l.kept = append(l.kept, t)
		}
	}
	slices.Sort(l.kept)
	l.leavers = len(left)
	return firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// exactRank is the place of ticket in the line whose lowest waiting
// ticket was head, from the bench's own record: the tickets from head to
// it that did not leave.
func (l *frontLine) exactRank(head, ticket int64) int64 {
	below, _ := slices.BinarySearch(l.kept, head)
	upTo, found := slices.BinarySearch(l.kept, ticket)
	if found {
		upTo++
	}
	return int64(upTo - below)
}

// admissions reads the line's head from Redis every 20 ms: person with
// ticket t was let in between the last read whose head was at most t and
// the first that was above it.
type admissions struct {
	store *redisstore.Store
	q     string
	mu    sync.Mutex
	at    []time.Time
	heads []int64 // 0: nobody left waiting
}

func (a *admissions) run(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if sn, err := a.store.Snapshot(ctx, a.q); err == nil {
			head := sn.Head
			if head == 0 {
				head = math.MaxInt64
			}
			a.mu.Lock()
			a.at, a.heads = append(a.at, time.Now()), append(a.heads, head)
			a.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// admittedAt is the read before the first that found ticket let in (the
// earliest it may have been), and false when none has yet.
func (a *admissions) admittedAt(ticket int64) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, _ := slices.BinarySearch(a.heads, ticket+1)
	if i == len(a.heads) {
		return time.Time{}, false
	}
	return a.at[max(0, i-1)], true
}

// pageRun is one run of the pages over the line.
type pageRun struct {
	sizes     frontSizes
	document  bool
	bases     []string // nginx, then the instances
	instances []*instance
	nginx     *proxyfront.Front
	rdb       *redis.Client
	watch     *admissions
	log       func(string, ...any)
	profiles  string // a directory for each instance's CPU profile over the window ("": none)
}

// page is one simulated waiting page's state between looks.
type page struct {
	askNext   bool  // the next look asks the instance (else reads the document)
	askWithin int64 // the last document's askWithin (-1: none read)
	lastAsked time.Time
}

// frontDoc is the document as the page reads it (openapi.yaml's Front).
type frontDoc struct {
	Epoch       int64 `json:"epoch"`
	Head        int64 `json:"head"`
	Last        int64 `json:"last"`
	QueueLength int64 `json:"queueLength"`
	Left        struct {
		Deltas   []int64 `json:"deltas"`
		Unlisted int64   `json:"unlisted"`
	} `json:"left"`
	Cleared []int64 `json:"cleared"`
	Pace    struct {
		Rate         float64 `json:"ratePerSecond"`
		EstimateRate float64 `json:"estimateRatePerSecond"`
		Batch        int     `json:"batchSize"`
		NextTick     int64   `json:"nextTickAdmits"` // a place within it is told 0
		Paused       bool    `json:"paused"`
		Stalled      bool    `json:"stalled"`
		Estimate     *struct {
			AdmitRate float64 `json:"admitRatePerSecond"`
			Claim     float64 `json:"claim"`
			Spread    float64 `json:"spread"`
			Interval  float64 `json:"intervalSeconds"`
			Steps     []struct {
				After float64 `json:"afterSeconds"`
				Rate  float64 `json:"ratePerSecond"`
			} `json:"steps"`
		} `json:"estimate"` // the model (issue 54); nil from a server without it
	} `json:"pace"`
	Drawn     bool       `json:"drawn"`
	OpensAt   *time.Time `json:"opensAt"`
	Placing   bool       `json:"placing"`
	AskWithin int64      `json:"askWithin"`
	Presence  *struct {
		Within       int64 `json:"within"`
		EverySeconds int64 `json:"everySeconds"`
	} `json:"presence"`
}

// document is the page's reading of the JSON as package front's Document.
func (f frontDoc) document() front.Document {
	d := front.Document{Epoch: f.Epoch, Head: f.Head, Last: f.Last, Length: f.QueueLength, Unlisted: f.Left.Unlisted,
		Rate: f.Pace.Rate, EstimateRate: f.Pace.EstimateRate, Batch: f.Pace.Batch, NextTickAdmits: f.Pace.NextTick, Paused: f.Pace.Paused, Stalled: f.Pace.Stalled,
		Drawn: f.Drawn, Placing: f.Placing, AskWithin: f.AskWithin, Cleared: f.Cleared}
	at := f.Head
	for _, gap := range f.Left.Deltas {
		at += gap
		d.Left = append(d.Left, at)
	}
	if f.OpensAt != nil {
		d.OpensAt = *f.OpensAt
	}
	if f.Presence != nil {
		d.PresenceWithin, d.PresenceEvery = f.Presence.Within, time.Duration(f.Presence.EverySeconds)*time.Second
	}
	if m := f.Pace.Estimate; m != nil {
		d.Model = estimate.Params{Rate: m.AdmitRate, Claim: m.Claim, Spread: m.Spread, Tick: f.Pace.NextTick, Interval: m.Interval}
		for _, s := range m.Steps {
			d.Model.Steps = append(d.Model.Steps, estimate.Step{After: s.After, Rate: s.Rate})
		}
	}
	return d
}

// pageEstimate and pageLook are waiting.js's estimate and poll band: the
// server's model (estimate.Of) on the document's, as the page applies it
// (its range's median), or, from a document without the model, the
// formula an older server told by.
func pageEstimate(position int64, d front.Document) int64 {
	if d.Model.Claim > 0 {
		return estimate.Of(position, position, d.Model).Seconds
	}
	if position <= d.NextTickAdmits || !(d.EstimateRate > 0) {
		return 0
	}
	return int64(math.Ceil(float64(position) / d.EstimateRate))
}

func pageLook(estimate int64) time.Duration {
	band := 2.0
	switch {
	case estimate >= 60:
		band = 10
	case estimate >= 10:
		band = 5
	}
	return time.Duration(max(1, math.Round(band*(0.8+0.4*rand.Float64())))) * time.Second
}

// askAheadSeconds is waiting.js's ASK_AHEAD_SECONDS.
const askAheadSeconds = 5

// reader is one connection's worker: its last document parsed, so that
// the same bytes are parsed once (a browser parses each; the generator's
// CPU is the machine's).
type reader struct {
	c        conn
	lastBody []byte
	last     front.Document
}

// parse is the document in body, parsed again only when its bytes changed.
func (rd *reader) parse(body []byte) (front.Document, error) {
	if rd.lastBody != nil && string(body) == string(rd.lastBody) {
		return rd.last, nil
	}
	var f frontDoc
	if err := json.Unmarshal(body, &f); err != nil {
		return front.Document{}, err
	}
	rd.lastBody, rd.last = append(rd.lastBody[:0], body...), f.document()
	return rd.last, nil
}

// runMeters are the meters read as a run's window opens and closes.
type runMeters struct {
	meter   meterReading
	nginx   time.Duration
	reached map[string]uint64 // requests the instances answered, by route
	err     error
}

// frontTally is what the workers count while a run goes.
type frontTally struct {
	polls, asks, failed, slow   atomic.Int64
	placed, outside, off, unlis atomic.Int64
	late, lateMax               atomic.Int64 // looks sent over 100 ms after due; the latest, in µs
	docBytes, docReads          atomic.Int64 // the documents' bytes read in the window, and reads
	sample                      atomic.Value // the first failure, a string
}

func (t *frontTally) fail(status int, body []byte, err error) {
	if ne := net.Error(nil); status == 0 && errors.As(err, &ne) && ne.Timeout() {
		t.slow.Add(1)
		return
	}
	t.failed.Add(1)
	t.sample.CompareAndSwap(nil, fmt.Sprintf("%d %.200s %v", status, body, err))
}

func atomicMax(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

// poll runs the pages over the line for the run's warm-up and window.
func (l *frontLine) poll(ctx context.Context, r pageRun) (FrontRun, error) {
	sz := r.sizes
	run := FrontRun{Name: "today's exact polls (entries/me)", Document: r.document, Window: sz.window}
	if r.document {
		run.Name = "pages on the front document through nginx"
	}
	pages := make([]page, len(l.auth))
	readyAt := make([]time.Time, len(l.auth))
	lastLate := make([]time.Time, len(l.auth)) // when each page last sent a look over 100 ms late
	polling := make([]bool, len(l.auth))
	sched := &schedule{}
	sn, err := r.watch.store.Snapshot(ctx, l.q)
	if err != nil {
		return run, err
	}
	for u := range pages {
		pages[u] = page{askNext: !r.document, askWithin: -1}
		sampled := r.document || sz.exactEvery <= 1 || l.ticket[u] < sn.Head+int64(sz.exactFront) || u%sz.exactEvery == 0
		if !l.gone[u] && sampled {
			run.Polling++
			polling[u] = true
			sched.h = append(sched.h, pollDue{at: time.Duration(rand.Int64N(int64(sz.first))), user: int32(u)})
		}
	}
	heap.Init(&sched.h)
	newConn, err := clientFor(ClientRaw, r.bases, sz.conns+sz.near)
	if err != nil {
		return run, err
	}
	frontPath := "/api/v1/queues/" + l.q + "/front"
	mePath := "/api/v1/queues/" + l.q + "/entries/me?waitSeconds=" + strconv.Itoa(herdWaitSeconds)
	end := sz.warm + sz.window
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(end+3*time.Second))
	defer cancel()
	far, near := make(chan pollDue, len(pages)), make(chan pollDue, 2*len(pages))
	var tally frontTally
	var before, after runMeters
	read := func(into *runMeters) {
		into.reached = map[string]uint64{}
		for _, in := range r.instances {
			h, err := in.heap(ctx, false)
			into.err = cmpErr(into.err, err)
			for k, v := range h.Requests {
				into.reached[k] += v
			}
		}
		u, s, err := pidsCPU(r.nginx.PIDs)
		into.nginx, into.err = u+s, cmpErr(into.err, err)
		into.meter, err = readMeter(ctx, r.rdb, pidsOf(r.instances))
		into.err = cmpErr(into.err, err)
		if into == &before {
			sn, err := r.watch.store.Snapshot(ctx, l.q)
			run.Waiting, into.err = int(sn.Length), cmpErr(into.err, err)
		}
	}
	var profiled *sync.WaitGroup
	defer func() {
		if profiled != nil {
			profiled.Wait()
		}
	}()
	profile := func() {
		kind := "exact"
		if r.document {
			kind = "document"
		}
		profiled = profileInstances(ctx, r.instances, r.profiles, kind, max(time.Second, sz.window-time.Second), r.log)
	}
	go func() {
		defer close(far)
		defer close(near)
		dispatch(ctx, sched, start, sz.warm, end, func() { read(&before); profile() }, func() { read(&after) }, func(d pollDue) {
			if pages[d.user].askNext {
				near <- d
			} else {
				far <- d
			}
		})
	}()
	inWindow := func(at time.Duration) bool { return at >= sz.warm && at < end }
	var look func(rd *reader, d pollDue)
	look = func(rd *reader, d pollDue) {
		p, u := &pages[d.user], int(d.user)
		lag := time.Since(start) - d.at
		if lag > 100*time.Millisecond {
			lastLate[u] = time.Now()
		}
		if inWindow(d.at) {
			tally.polls.Add(1)
			if lag > 100*time.Millisecond {
				tally.late.Add(1)
			}
			atomicMax(&tally.lateMax, lag.Microseconds())
		}
		later := func(after time.Duration) {
			sched.push(pollDue{at: time.Since(start) + after, user: d.user})
		}
		if !p.askNext {
			st, body, err := rd.c.do(ctx, Request{Method: "GET", Path: frontPath})
			if ctx.Err() != nil {
				return
			}
			var doc front.Document
			if err == nil && st == 200 {
				doc, err = rd.parse(body)
			}
			if err != nil || st != 200 {
				tally.fail(st, body, err)
				p.askNext = true // the page asks its instance instead
				later(0)
				return
			}
			if inWindow(d.at) {
				tally.docBytes.Add(int64(len(body)))
				tally.docReads.Add(1)
			}
			position, lowest, placed := doc.Place(l.epoch[u], l.ticket[u])
			if placed {
				exact := l.exactRank(doc.Head, l.ticket[u])
				tally.placed.Add(1)
				if exact < lowest || exact > position {
					tally.outside.Add(1)
				}
				atomicMax(&tally.off, position-exact)
				atomicMax(&tally.unlis, doc.Unlisted)
			}
			p.askWithin = doc.AskWithin
			presenceDue := placed && doc.PresenceWithin > 0 && lowest <= doc.PresenceWithin && time.Since(p.lastAsked) >= doc.PresenceEvery
			if !placed || doc.Ask(lowest) || presenceDue {
				p.askNext = true
				later(0) // at once: the page asks now
				return
			}
			later(pageLook(pageEstimate(position, doc)))
			return
		}
		if inWindow(d.at) {
			tally.asks.Add(1)
		}
		req := Request{Method: "GET", Path: mePath, Auth: l.auth[u], To: 1 + u%(len(r.bases)-1)}
		if r.document {
			req.Header = "X-Waitroom-Ticket: " + l.signed[u]
		}
		p.lastAsked = time.Now()
		st, body, err := rd.c.do(ctx, req)
		if ctx.Err() != nil {
			return
		}
		if err != nil || st != 200 {
			tally.fail(st, body, err)
			later(time.Second)
			return
		}
		a := parseAnswer(body)
		switch a.state {
		case "READY":
			readyAt[u], l.gone[u] = time.Now(), true
		case "WAITING":
			position, _ := strconv.ParseInt(string(jsonField(body, "position")), 10, 64)
			if r.document {
				p.askNext = !(position > 0 && a.etaSeconds > askAheadSeconds && !(p.askWithin >= 0 && position <= p.askWithin))
			}
			later(time.Duration(max(a.pollAfter, 1)) * time.Second)
		default:
			l.gone[u] = true
		}
	}
	var wg sync.WaitGroup
	for _, pool := range []struct {
		n    int
		work chan pollDue
	}{{sz.conns, far}, {sz.near, near}} {
		for range pool.n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rd := &reader{c: newConn()}
				defer rd.c.close()
				for d := range pool.work {
					look(rd, d)
				}
			}()
		}
	}
	wg.Wait()
	if before.err != nil || after.err != nil {
		return run, fmt.Errorf("reading the meters: %v", cmpErr(before.err, after.err))
	}
	run.Polls, run.Asks, run.Failed, run.TimedOut = tally.polls.Load(), tally.asks.Load(), tally.failed.Load(), tally.slow.Load()
	run.FailedSample, _ = tally.sample.Load().(string)
	run.Late, run.LateMax = tally.late.Load(), time.Duration(tally.lateMax.Load())*time.Microsecond
	if n := tally.docReads.Load(); n > 0 {
		run.DocumentBytes = float64(tally.docBytes.Load()) / float64(n)
	}
	run.Placed, run.Outside, run.Off, run.Unlisted = tally.placed.Load(), tally.outside.Load(), tally.off.Load(), tally.unlis.Load()
	run.Use, run.Nginx = before.meter.to(after.meter), after.nginx-before.nginx
	run.Reached = map[string]uint64{}
	for k, v := range after.reached {
		if n := v - before.reached[k]; n > 0 {
			run.Reached[k] = n
		}
	}
	// Everyone let in from the window's start to 5 s before its end: how
	// long after their admission their page saw READY.
	windowStart, last := start.Add(sz.warm), start.Add(end-5*time.Second)
	for u, t := range l.ticket {
		at, ok := r.watch.admittedAt(t)
		if !ok || at.Before(windowStart) || at.After(last) || !polling[u] {
			continue
		}
		if readyAt[u].IsZero() {
			if !l.leftBefore(t) {
				run.Admitted++
				run.Unseen++
			}
			continue
		}
		run.Admitted++
		run.ReadyDelays = append(run.ReadyDelays, readyAt[u].Sub(at))
		if !lastLate[u].IsZero() && lastLate[u].After(at.Add(-lateWindow)) {
			run.LateNear++
		} else {
			run.OnTime = append(run.OnTime, readyAt[u].Sub(at))
		}
	}
	slices.Sort(run.ReadyDelays)
	slices.Sort(run.OnTime)
	r.log("front: %s: %d waiting, %d polling; %d polls (%d asks, %d failed, %d timed out) in %v, %d reached the instances %v; instances %.1f µs CPU per waiting person per minute; %d let in, READY seen p99 %v after (%d unseen); %d places checked, %d outside the bound, at most %d above the exact rank; first failure: %s; %d looks sent over 100 ms late, the latest %v",
		run.Name, run.Waiting, run.Polling, run.Polls, run.Asks, run.Failed, run.TimedOut, run.Window, run.ReachedTotal(), run.Reached,
		float64(run.CPUPerPersonMinute())/float64(time.Microsecond), run.Admitted, percentile(run.ReadyDelays, 99), run.Unseen,
		run.Placed, run.Outside, run.Off, run.FailedSample, run.Late, run.LateMax)
	r.log("front: %s: READY p99 of the %d whose page sent its looks on time in the %v before admission: %v (%d excluded, a look sent late)",
		run.Name, len(run.OnTime), lateWindow, percentile(run.OnTime, 99), run.LateNear)
	return run, nil
}

// lateWindow is how long before a person's admission their page's looks
// must all have been sent on time for their READY delay to count as the
// product's (FrontRun.OnTime): the page's last two looks far from the
// front and its asks near it.
const lateWindow = 10 * time.Second

// profileInstances takes a CPU profile of each instance over the next d
// into dir/front-<kind>-<i>.pprof (dir "": none); Wait for them.
func profileInstances(ctx context.Context, instances []*instance, dir, kind string, d time.Duration, logf func(string, ...any)) *sync.WaitGroup {
	var wg sync.WaitGroup
	if dir == "" {
		return &wg
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("front: profile: %v", err)
		return &wg
	}
	for i, in := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.profile(ctx, d, filepath.Join(dir, fmt.Sprintf("front-%s-%d.pprof", kind, i))); err != nil {
				logf("front: profile: %v", err)
			}
		}()
	}
	return &wg
}

// leftBefore says the person holding ticket left the line before the runs.
func (l *frontLine) leftBefore(ticket int64) bool {
	_, kept := slices.BinarySearch(l.kept, ticket)
	return !kept
}
