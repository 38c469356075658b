package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
)

// The million section (bench/run.sh --million): a million people in one
// line on one instance and one Redis, loaded open-loop, and what the
// measured costs say about ten million and a hundred queues. Not part of
// the default run (it takes minutes) nor of the test suite (a miniature of
// it is: TestMillionMiniature).

// millionSizes are the section's counts and durations.
type millionSizes struct {
	users       int   // entered through the instance
	points      []int // memory is read when the line reaches these
	extra       int   // users signed beyond the line, for the enter runs
	conns       int   // client connections
	sweep       []float64
	step        time.Duration // per sweep rate, and per enter and scale run
	pollers     time.Duration // the poller model's run, warm-up included
	pollWarm    time.Duration
	pollFront   int // the first pollFront users all poll ...
	pollEvery   int // ... and at most one in pollEvery of the rest
	compareRate float64
	slotCalls   int // pipelined script calls for the single-slot ceiling
	// grace is how long an open loop waits for answers after its schedule
	// (0: OpenLoop's default): in the short mode, the test command's smoke
	// test, a minute, so that a loaded machine's late answer is counted,
	// not lost.
	grace time.Duration
	// rate is the queue's admission rate: the line must outlast the
	// section however slowly a busy machine runs it, or the poller model
	// finds nobody left to poll. The short line drains in 300 s, beyond
	// TestMillionMiniature's 4-minute deadline; the million, in hours.
	rate float64
}

func sizesFor(short bool) millionSizes {
	if short {
		return millionSizes{users: 3000, points: []int{1000, 3000}, extra: 3000, conns: 16,
			sweep: []float64{300, 600}, step: time.Second, pollers: 3 * time.Second, pollWarm: time.Second,
			pollFront: 200, pollEvery: 2, compareRate: 300, slotCalls: 2000, rate: 10, grace: time.Minute}
	}
	return millionSizes{users: 1_000_000, points: []int{100_000, 1_000_000}, extra: 300_000, conns: 256,
		sweep: []float64{5000, 10_000, 15_000, 20_000, 25_000, 30_000, 35_000, 40_000, 50_000},
		step:  10 * time.Second, pollers: 45 * time.Second, pollWarm: 13 * time.Second,
		pollFront: 10_000, pollEvery: 4, compareRate: 10_000, slotCalls: 300_000, rate: 100}
}

// Goals of issue 14.
const (
	GoalMillionPollRate  = 25_000.0              // status polls/s offered, open loop, one instance, 1M in line ...
	GoalMillionPollP99   = 50 * time.Millisecond // ... answered with p99 within this
	GoalTicketBytes      = 100.0                 // instance bytes per remembered user
	GoalRedisBytes       = 150.0                 // Redis bytes per waiting user at 1M
	GoalEnterOpenLoopP99 = 10 * time.Millisecond // open loop at half the closed-loop maximum
)

// MeterDelta is what the server(s), the generator and Redis spent over a
// stretch of time. CPU times come from /proc/<pid>/stat for the instance
// processes and this process (the generator), and from INFO cpu for Redis;
// commands from INFO commandstats (FCALL counted as one, the commands its
// script runs counted too).
type MeterDelta struct {
	Wall, Server, Generator, Redis time.Duration
	Commands, Scripts              int64
	ScriptUsec                     int64 // Redis's own time inside FCALL
}

type meterReading struct {
	at                           time.Time
	server, generator, redis     time.Duration
	commands, scripts, scriptUse int64
}

func readMeter(ctx context.Context, rdb *redis.Client, pids []int) (meterReading, error) {
	m := meterReading{at: time.Now()}
	for _, pid := range pids {
		c, err := procCPU(pid)
		if err != nil {
			return m, err
		}
		m.server += c
	}
	var err error
	if m.generator, err = procCPU(0); err != nil {
		return m, err
	}
	info, err := redisInfo(ctx, rdb, "cpu", "commandstats")
	if err != nil {
		return m, err
	}
	sys, _ := strconv.ParseFloat(info["used_cpu_sys"], 64)
	user, _ := strconv.ParseFloat(info["used_cpu_user"], 64)
	m.redis = time.Duration((sys + user) * float64(time.Second))
	for k, v := range info {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok || name == "info" {
			continue
		}
		calls, usec := statField(v, "calls"), statField(v, "usec")
		m.commands += calls
		if name == "fcall" {
			m.scripts += calls
			m.scriptUse += usec
		}
	}
	return m, nil
}

// statField reads one field of a commandstats value ("calls=3,usec=12,…").
func statField(v, name string) int64 {
	for _, f := range strings.Split(v, ",") {
		if k, val, ok := strings.Cut(f, "="); ok && k == name {
			n, _ := strconv.ParseInt(val, 10, 64)
			return n
		}
	}
	return 0
}

func (a meterReading) to(b meterReading) MeterDelta {
	return MeterDelta{Wall: b.at.Sub(a.at), Server: b.server - a.server, Generator: b.generator - a.generator,
		Redis: b.redis - a.redis, Commands: b.commands - a.commands, Scripts: b.scripts - a.scripts,
		ScriptUsec: b.scriptUse - a.scriptUse}
}

// per is a cost per request in µs.
func per(d time.Duration, n int) float64 {
	if n <= 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(n)
}

// MemoryAt is memory with a number of users in line.
type MemoryAt struct {
	Users int
	// RedisBytes is used_memory's growth over the empty queue.
	RedisBytes int64
	// InstanceHeap is the instance's Go heap growth (after a full
	// collection) since before the first enter: its tickets, but also its
	// identity cache and everything else it keeps per user.
	InstanceHeap int64
	InstanceRSS  int64
	// TicketBytes is the line's remembered tickets alone, measured on their
	// own in this process (queue.Service over a store that only answers
	// status), per user, with 12-byte ids and with the page's 37-byte
	// session ids ("anon-" and 32 hex digits).
	TicketBytes, TicketBytesLongIDs float64
}

// MillionStep is one open-loop rate of the status sweep.
type MillionStep struct {
	Result LoadResult
	Use    MeterDelta
	RSS    int64
	// FromSnapshot is the share of the step's status answers the snapshot gave.
	FromSnapshot float64
	Pass         bool
}

// ScaleRun is the same status load on one instance or on three.
type ScaleRun struct {
	Instances int
	Result    LoadResult
	Use       MeterDelta
}

// SlotRun is one script called pipelined on one queue's slot.
type SlotRun struct {
	Script string
	Calls  int
	Use    MeterDelta
}

// ClientRun is the generator's own cost with one client.
type ClientRun struct {
	Client string
	Result LoadResult
	Use    MeterDelta
}

// CostShare is one part of a CPU profile, per request.
type CostShare struct {
	Part string
	Us   float64 // CPU µs per request
}

func (c CostShare) String() string { return fmt.Sprintf("%s %.1f µs", c.Part, c.Us) }

// MillionReport is the million section.
type MillionReport struct {
	Users   int
	Conns   int
	Rate    float64 // the queue's admission rate while the loads run
	Machine string  // what else ran: uptime and top at the start and the end
	Signed  int
	Signing time.Duration

	// Entering the million through the instance's HTTP enter, closed loop.
	FillTime time.Duration
	FillRate float64
	FillUse  MeterDelta
	Memory   []MemoryAt

	Clients []ClientRun // the generator's cost per request, raw vs net/http

	Sweep []MillionStep
	Knee  float64 // highest offered rate with p99 ≤ 50 ms (0: none)

	Pollers    PollersResult
	PollFront  int // the first PollFront waiting polled ...
	PollEvery  int // ... and one in PollEvery behind them
	PollersUse MeterDelta
	PollersRSS int64

	// Enter: closed loop against bare, and open loop at half the maximum.
	Bare, EnterClosed       LoadResult
	BareUse, EnterClosedUse MeterDelta
	EnterRatio              float64
	EnterOpen               LoadResult
	EnterOpenUse            MeterDelta
	// The instance's CPU profiles, split by part, per request.
	EnterProfile      []CostShare
	StatusProfile     []CostShare
	StatusProfileRate float64

	Scale []ScaleRun
	Slot  []SlotRun
}

func runMillion(ctx context.Context, o Options) (*MillionReport, error) {
	sz := sizesFor(o.Short)
	if n := o.MillionUsers; n > 0 { // a smaller (or bigger) line, same steps
		sz.users, sz.points, sz.extra = n, []int{n / 10, n}, max(n*3/10, 1000)
		sz.pollFront = min(sz.pollFront, n/10)
	}
	rep := &MillionReport{Users: sz.users, Conns: sz.conns, Rate: sz.rate}
	rep.Machine = machineLoad(ctx)
	o.logf("million: %d users; the machine: %s", sz.users, firstLine(rep.Machine))

	// The tickets alone, first, while nothing else runs in this process.
	for _, n := range sz.points {
		short, err := ticketBytes(n, millionUser)
		if err != nil {
			return rep, err
		}
		long, err := ticketBytes(n, func(i int) string { return fmt.Sprintf("anon-%032d", i) })
		if err != nil {
			return rep, err
		}
		rep.Memory = append(rep.Memory, MemoryAt{Users: n, TicketBytes: short, TicketBytesLongIDs: long})
		o.logf("million: remembered tickets: %.1f B per user at %d (%.1f B with 37-byte ids)", short, n, long)
	}

	rdb, err := newRedis(o.RedisURL)
	if err != nil {
		return rep, err
	}
	defer rdb.Close()
	cfg := newInstanceConfig(o)
	defer dropPrefix(context.WithoutCancel(ctx), rdb, cfg.KeyPrefix)
	a, err := startInstance(ctx, cfg, o.Log)
	if err != nil {
		return rep, err
	}
	instances := []*instance{a}
	defer func() {
		for _, in := range instances {
			in.stop()
		}
	}()
	base := "http://" + a.Addr
	c := &client{base: base, admin: "Bearer " + cfg.AdminToken, poll: httpClient()}
	const q = "million"
	if st, body, _, err := c.do(ctx, c.poll, "PUT", "/admin/v1/queues/"+q, c.admin,
		map[string]any{"paused": true, "capacity": 2 * (sz.users + sz.extra), "ratePerSecond": sz.rate}); err != nil || st != 200 {
		return rep, fmt.Errorf("creating the queue: %d %v %v", st, body, err)
	}

	t := time.Now()
	auth := signUsers(cfg.AuthSecret, sz.users+sz.extra)
	rep.Signing, rep.Signed = time.Since(t), len(auth)
	o.logf("million: signed %d JWTs in %v", len(auth), rep.Signing.Round(time.Millisecond))
	enterPath := "/api/v1/queues/" + q + "/entries"
	statusPath := enterPath + "/me"

	// Enter the million through the instance, as on the night, closed loop.
	baseRedis, err := usedMemory(ctx, rdb)
	if err != nil {
		return rep, err
	}
	baseHeap, err := a.heap(ctx, true)
	if err != nil {
		return rep, err
	}
	entered := 0
	m0, err := readMeter(ctx, rdb, []int{a.pid()})
	if err != nil {
		return rep, err
	}
	for i, n := range sz.points {
		from := entered
		res, err := ClosedLoop{Bases: []string{base}, Duration: 10 * time.Minute, Count: int64(n - from), Conns: sz.conns,
			Next: func(j int64) Request { return Request{Method: "POST", Path: enterPath, Auth: auth[from+int(j)]} }}.Run(ctx)
		if err != nil {
			return rep, err
		}
		if res.OK != n-from {
			return rep, fmt.Errorf("entering users %d–%d: %s (first error: %s)", from, n, res, res.ErrorSample)
		}
		entered = n
		rep.FillTime += res.Elapsed
		used, err := usedMemory(ctx, rdb)
		if err != nil {
			return rep, err
		}
		h, err := a.heap(ctx, true)
		if err != nil {
			return rep, err
		}
		rss, _ := procRSS(a.pid())
		mem := &rep.Memory[i]
		mem.RedisBytes, mem.InstanceHeap, mem.InstanceRSS = used-baseRedis, int64(h.HeapAlloc)-int64(baseHeap.HeapAlloc), rss
		o.logf("million: %d entered (%s); Redis %.1f B/user, instance heap %.1f B/user, RSS %.0f MB",
			n, res, float64(mem.RedisBytes)/float64(n), float64(mem.InstanceHeap)/float64(n), float64(rss)/1e6)
	}
	m1, err := readMeter(ctx, rdb, []int{a.pid()})
	if err != nil {
		return rep, err
	}
	rep.FillUse = m0.to(m1)
	rep.FillRate = float64(entered) / rep.FillTime.Seconds()

	// Admission runs from here on, at the queue's rate (sz.rate).
	if st, body, _, err := c.do(ctx, c.poll, "PATCH", "/admin/v1/queues/"+q, c.admin, map[string]any{"paused": false}); err != nil || st != 200 {
		return rep, fmt.Errorf("resuming the queue: %d %v %v", st, body, err)
	}

	// Every status request is a different user, round the line: those
	// still waiting until the end of the run (the admitted would be
	// ordering, not polling), so behind the few minutes admission takes.
	lo := min(sz.users/2, int(sz.rate*sz.runFor().Seconds()))
	stride := coprimeStride(sz.users - lo)
	var polled int64
	statusOf := func(to func(u int) int) func(int64) Request {
		off := polled
		return func(i int64) Request {
			u := lo + int(((off+i)*stride)%int64(sz.users-lo))
			return Request{Method: "GET", Path: statusPath, Auth: auth[u], To: to(u)}
		}
	}
	one := func(int) int { return 0 }
	dir, err := os.MkdirTemp("", "waitroom-million-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	measure := func(pids []int, load func(context.Context) (LoadResult, error)) (LoadResult, MeterDelta, error) {
		m0, err := readMeter(ctx, rdb, pids)
		if err != nil {
			return LoadResult{}, MeterDelta{}, err
		}
		res, err := load(ctx)
		if err != nil {
			return res, MeterDelta{}, err
		}
		polled += int64(res.Requests)
		m1, err := readMeter(ctx, rdb, pids)
		return res, m0.to(m1), err
	}

	// profiled is measure with the instance's CPU profile over the middle
	// 80% of the load, split by part into µs per request (the load's
	// answered rate × the profile's window).
	profiled := func(load func(context.Context) (LoadResult, error)) (LoadResult, MeterDelta, []CostShare, error) {
		path := filepath.Join(dir, fmt.Sprintf("profile-%d.pprof", rand.Int64()))
		window := time.Duration(max(1, int(sz.step.Seconds()*0.8))) * time.Second
		var wg sync.WaitGroup
		var profErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(sz.step / 10)
			profErr = a.profile(ctx, window, path)
		}()
		res, use, err := measure([]int{a.pid()}, load)
		wg.Wait()
		if err != nil || profErr != nil {
			if profErr != nil {
				o.logf("million: profile: %v", profErr)
			}
			return res, use, nil, err
		}
		shares, err := profileShares(ctx, path, res.AnsweredRate*window.Seconds())
		if err != nil {
			o.logf("million: reading the profile: %v", err)
		}
		return res, use, shares, nil
	}

	// The generator's own cost: the same load through either client.
	for _, client := range []string{ClientRaw, ClientNetHTTP} {
		d := min(sz.step, 5*time.Second)
		res, use, err := measure([]int{a.pid()},
			OpenLoop{Bases: []string{base}, Rate: sz.compareRate, Duration: d, Conns: sz.conns, Grace: sz.grace, Client: client, Next: statusOf(one)}.Run)
		if err != nil {
			return rep, err
		}
		rep.Clients = append(rep.Clients, ClientRun{Client: client, Result: res, Use: use})
		o.logf("million: client %s: %s; generator %.1f µs/request, server %.1f µs/request", client, res,
			per(use.Generator, res.Requests), per(use.Server, res.Requests))
	}

	// The sweep: open-loop status at rising rates, until p99 passes 50 ms
	// at two rates in a row.
	failed := 0
	for _, rate := range sz.sweep {
		h0, err := a.heap(ctx, false)
		if err != nil {
			return rep, err
		}
		res, use, err := measure([]int{a.pid()},
			OpenLoop{Bases: []string{base}, Rate: rate, Duration: sz.step, Conns: sz.conns, Grace: sz.grace, Next: statusOf(one)}.Run)
		if err != nil {
			return rep, err
		}
		h1, err := a.heap(ctx, false)
		if err != nil {
			return rep, err
		}
		rss, _ := procRSS(a.pid())
		st := MillionStep{Result: res, Use: use, RSS: rss,
			Pass: res.P99 <= GoalMillionPollP99 && float64(res.OK) >= 0.99*float64(res.Requests)}
		if n := (h1.SnapshotHits - h0.SnapshotHits) + (h1.SnapshotMisses - h0.SnapshotMisses); n > 0 {
			st.FromSnapshot = float64(h1.SnapshotHits-h0.SnapshotHits) / float64(n)
		}
		rep.Sweep = append(rep.Sweep, st)
		o.logf("million: status at %.0f/s: %s; server %.1f µs/poll, generator %.1f µs/poll, Redis %.2f commands/poll",
			rate, res, per(use.Server, res.Requests), per(use.Generator, res.Requests), float64(use.Commands)/float64(max(1, res.Requests)))
		if st.Pass {
			rep.Knee, failed = rate, 0
		} else if failed++; failed == 2 { // two in a row: past the knee, not a hiccup
			break
		}
	}

	// The status profile, at the goal's rate.
	goalRate := GoalMillionPollRate
	if o.Short {
		goalRate = sz.sweep[len(sz.sweep)-1]
	}
	if _, _, rep.StatusProfile, err = profiled(
		OpenLoop{Bases: []string{base}, Rate: goalRate, Duration: sz.step, Conns: sz.conns, Grace: sz.grace, Next: statusOf(one)}.Run); err != nil {
		return rep, err
	}
	rep.StatusProfileRate = goalRate
	o.logf("million: status profile at %.0f/s: %v", goalRate, rep.StatusProfile)

	// The poller model: the front of the line as it is now all polling,
	// and one in k behind (users entered in about their index order), k
	// such that the line's polls, about one per user every 10 s, come to
	// 80% of the knee: the share of a night one instance carries.
	head, err := admittedSoFar(ctx, c, q)
	if err != nil {
		return rep, err
	}
	k := sz.pollEvery
	if capacity := 0.8 * max(rep.Knee, sz.sweep[0]); float64(sz.users)/10 > capacity*float64(k) {
		k = int(math.Ceil(float64(sz.users) / 10 / capacity))
	}
	rep.PollEvery, rep.PollFront = k, sz.pollFront
	var pollers []string
	for u := head; u < sz.users; u++ {
		if u < head+sz.pollFront || u%k == 0 {
			pollers = append(pollers, auth[u])
		}
	}
	o.logf("million: poller model, %d of the %d in line polling, for %v", len(pollers), sz.users, sz.pollers)
	pm0, err := readMeter(ctx, rdb, []int{a.pid()})
	if err != nil {
		return rep, err
	}
	var pm1 meterReading
	pr, err := Pollers{Base: base, Queue: q, Users: pollers, Front: sz.pollFront / 10, Conns: sz.conns, NearConns: 4 * sz.conns,
		Duration: sz.pollers, WarmUp: sz.pollWarm,
		WaitSeconds: herdWaitSeconds, AtWarmUp: func() { pm0, _ = readMeter(ctx, rdb, []int{a.pid()}) },
		AtEnd: func() { pm1, _ = readMeter(ctx, rdb, []int{a.pid()}) }}.Run(ctx)
	if err != nil {
		return rep, err
	}
	rep.Pollers, rep.PollersUse = pr, pm0.to(pm1)
	rep.PollersRSS, _ = procRSS(a.pid())
	o.logf("million: pollers: offered %.0f/s answered %.0f/s; far %s; near %d, ready %d; server %.1f µs/poll, Redis %.3f commands/poll",
		pr.Offered, pr.Answered, pr.Far, pr.Near, pr.Ready, per(rep.PollersUse.Server, pr.Far.Answered+pr.Near),
		float64(rep.PollersUse.Commands)/float64(max(1, pr.Far.Answered+pr.Near)))

	// Enter: closed loop against the bare endpoint, then open loop at half
	// the closed-loop maximum, profiled.
	fresh := sz.users
	newUsers := func(i int64) Request {
		return Request{Method: "POST", Path: enterPath, Auth: auth[(fresh+int(i))%len(auth)]}
	}
	if rep.Bare, rep.BareUse, err = measure([]int{a.pid()}, ClosedLoop{Bases: []string{base}, Duration: sz.step, Conns: sz.conns,
		Next: func(int64) Request { return Request{Method: "GET", Path: "/healthz"} }}.Run); err != nil {
		return rep, err
	}
	if rep.EnterClosed, rep.EnterClosedUse, err = measure([]int{a.pid()}, ClosedLoop{Bases: []string{base}, Duration: sz.step, Conns: sz.conns,
		Count: int64(sz.extra / 2), Next: newUsers}.Run); err != nil {
		return rep, err
	}
	fresh += rep.EnterClosed.Requests
	if rep.Bare.AnsweredRate > 0 {
		rep.EnterRatio = rep.EnterClosed.AnsweredRate / rep.Bare.AnsweredRate
	}
	o.logf("million: bare closed loop %s; enter closed loop %s: %.2f×", rep.Bare, rep.EnterClosed, rep.EnterRatio)
	half := rep.EnterClosed.AnsweredRate / 2
	res, use, shares, err := profiled(OpenLoop{Bases: []string{base}, Rate: half, Duration: sz.step, Conns: sz.conns, Grace: sz.grace, Next: newUsers}.Run)
	if err != nil {
		return rep, err
	}
	rep.EnterOpen, rep.EnterOpenUse, rep.EnterProfile = res, use, shares
	o.logf("million: enter open loop at %.0f/s: %s; server %.1f µs/enter; profile %v", half, res, per(use.Server, res.Requests), shares)

	// Three instances on the one Redis: the same status load on one and
	// on three (each user always on the same one, as a sticky balancer
	// sends them), each run after an unmeasured pass over the same users
	// so every instance knows their tickets.
	for range 2 {
		in, err := startInstance(ctx, cfg, o.Log)
		if err != nil {
			return rep, err
		}
		instances = append(instances, in)
	}
	rate := sz.compareRate
	if rep.Knee > 0 {
		rate = max(rate, rep.Knee/2)
	}
	for _, k := range []int{1, 3} {
		var bases []string
		var pids []int
		for _, in := range instances[:k] {
			bases, pids = append(bases, "http://"+in.Addr), append(pids, in.pid())
		}
		to := func(u int) int { return u % k }
		start := polled
		load := func(ctx context.Context) (LoadResult, error) {
			polled = start // the same users in both passes
			return OpenLoop{Bases: bases, Rate: rate, Duration: sz.step, Conns: sz.conns, Grace: sz.grace, Next: statusOf(to)}.Run(ctx)
		}
		if _, err := load(ctx); err != nil { // warm
			return rep, err
		}
		res, use, err := measure(pids, load)
		if err != nil {
			return rep, err
		}
		rep.Scale = append(rep.Scale, ScaleRun{Instances: k, Result: res, Use: use})
		o.logf("million: %d instance(s) at %.0f/s: %s; servers %.1f µs/poll; Redis %.0f commands/s, %.1f%% of a core",
			k, rate, res, per(use.Server, res.Requests), float64(use.Commands)/use.Wall.Seconds(), 100*use.Redis.Seconds()/use.Wall.Seconds())
	}

	// One queue's slot: its scripts pipelined straight at Redis.
	if rep.Slot, err = slotCeiling(ctx, o, sz.slotCalls); err != nil {
		return rep, err
	}
	rep.Machine += "\n\n" + machineLoad(ctx)
	return rep, nil
}

// admittedSoFar is how many the queue has let in.
func admittedSoFar(ctx context.Context, c *client, q string) (int, error) {
	st, body, _, err := c.do(ctx, c.poll, "GET", "/admin/v1/queues/"+q, c.admin, nil)
	if err != nil || st != 200 {
		return 0, fmt.Errorf("queue stats: %d %v %v", st, body, err)
	}
	n, _ := body["admittedTotal"].(float64)
	return int(n), nil
}

// runFor is about how long the section's loads run after the line is
// full: the span over which admission moves the head.
func (sz millionSizes) runFor() time.Duration {
	return time.Duration(len(sz.sweep)+6)*sz.step + sz.pollers
}

// slotCeiling calls the enter and status scripts of one queue pipelined
// (256 callers on an auto-pipelined client), as fast as one Redis core
// runs them.
func slotCeiling(ctx context.Context, o Options, calls int) ([]SlotRun, error) {
	sc, err := newScratch(o)
	if err != nil {
		return nil, err
	}
	defer sc.close(ctx)
	cfg := queue.DefaultConfig()
	cfg.Capacity, cfg.Paused = 100_000_000, true
	if err := sc.store.PutConfig(ctx, "slot", cfg); err != nil {
		return nil, err
	}
	tokens := queue.NewTokens(cfg.BatchSize) // the queue is paused: never handed out
	var runs []SlotRun
	for _, s := range []struct {
		name string
		call func(*redisstore.Store, int) error
	}{
		{"enter.lua (a new user joins)", func(st *redisstore.Store, i int) error {
			_, err := st.Enter(ctx, "slot", fmt.Sprintf("slot-u%07d", i))
			return err
		}},
		{"status.lua (a waiting user's place)", func(st *redisstore.Store, i int) error {
			_, err := st.Status(ctx, "slot", fmt.Sprintf("slot-u%07d", (i*7919)%calls))
			return err
		}},
		{"snapshot.lua (the line for an instance)", func(st *redisstore.Store, i int) error {
			_, err := st.Snapshot(ctx, "slot")
			return err
		}},
		{"tick.lua (a tick read: mostly not yet due)", func(st *redisstore.Store, i int) error {
			_, err := st.Admit(ctx, "slot", tokens)
			return err
		}},
	} {
		m0, err := readMeter(ctx, sc.rdb, nil)
		if err != nil {
			return runs, err
		}
		if err := pipelined(ctx, sc.rdb, sc.prefix, calls, s.call); err != nil {
			return runs, err
		}
		m1, err := readMeter(ctx, sc.rdb, nil)
		if err != nil {
			return runs, err
		}
		r := SlotRun{Script: s.name, Calls: calls, Use: m0.to(m1)}
		o.logf("million: slot: %s: %.0f calls/s, Redis %.1f µs CPU per call (%.1f µs inside the script)", s.name,
			float64(calls)/r.Use.Wall.Seconds(), per(r.Use.Redis, calls), float64(r.Use.ScriptUsec)/float64(calls))
		runs = append(runs, r)
	}
	return runs, nil
}

// signUsers signs n users' JWTs (ids mil-u0000000…), as "Bearer …" values,
// on every core.
func signUsers(secret string, n int) []string {
	id := identity.New([]byte(secret))
	out := make([]string, n)
	var wg sync.WaitGroup
	w := runtime.GOMAXPROCS(0)
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n; i += w {
				out[i] = "Bearer " + id.SignJWT(millionUser(i), 3*time.Hour)
			}
		}()
	}
	wg.Wait()
	return out
}

func millionUser(i int) string { return fmt.Sprintf("mil-u%07d", i) } // 12 bytes, as §4's ids

// coprimeStride is a step through 0..n-1 that visits every index once.
func coprimeStride(n int) int64 {
	s := int64(7919)
	for gcd(s, int64(n)) != 1 {
		s++
	}
	return s
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// ticketStore answers status only: the user waits, with the ticket their
// id ends with. The service remembers each answer; nothing else is kept.
type ticketStore struct{ queue.Store }

func (ticketStore) Status(_ context.Context, _, user string) (queue.Standing, error) {
	n, _ := strconv.ParseInt(user[len(user)-7:], 10, 64)
	return queue.Standing{State: queue.Waiting, Position: n + 1, Length: 1 << 30, Ticket: n + 1, Pace: queue.LinePace(queue.PaceState{Config: queue.DefaultConfig().InForce(time.Time{})})}, nil
}

// ticketBytes is the Go heap a queue.Service keeps per remembered user,
// with n users remembered (ids from id, ending in 7 digits): the heap after
// a full collection, before and after.
func ticketBytes(n int, id func(int) string) (float64, error) {
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	svc := queue.NewService(ticketStore{}, time.Hour, nil)
	ctx := context.Background()
	if _, err := svc.Status(ctx, "q", id(0)); err != nil { // the queue's view exists
		return 0, err
	}
	before := heap()
	for i := 1; i <= n; i++ {
		if _, err := svc.Status(ctx, "q", id(i)); err != nil {
			return 0, err
		}
	}
	after := heap()
	runtime.KeepAlive(svc)
	return (float64(after) - float64(before)) / float64(n), nil
}

// machineLoad says what else the machine was doing: uptime and the top of top.
func machineLoad(ctx context.Context) string {
	up, _ := exec.CommandContext(ctx, "uptime").Output()
	top, _ := exec.CommandContext(ctx, "top", "-bn1", "-w", "120").Output()
	lines := strings.Split(string(top), "\n")
	keep := []string{strings.TrimSpace(string(up))}
	for i, l := range lines {
		if i >= 6 && i < 14 || strings.HasPrefix(l, "%Cpu") {
			keep = append(keep, strings.TrimRight(l, " "))
		}
	}
	return strings.Join(keep, "\n")
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// profileShares splits a CPU profile's samples by what they were doing,
// from `go tool pprof -traces`: each stack goes to the first part whose
// frames it contains, in this order (an allocation made by JSON encoding is
// JSON's; a write to the Redis socket is Redis's).
func profileShares(ctx context.Context, path string, requests float64) ([]CostShare, error) {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-traces", path).Output()
	if err != nil {
		return nil, err
	}
	parts := []struct {
		name string
		has  []string
	}{
		{"JWT (identity)", []string{"golang-jwt", "httpapi.(*Identity)"}},
		{"Redis (go-redis, redisstore)", []string{"go-redis", "redisstore"}},
		{"JSON", []string{"encoding/json"}},
		{"metrics", []string{"prometheus"}},
		{"the line (internal/queue)", []string{"internal/queue."}},
		{"net/http and the handler's own code (routing, headers, request id, socket I/O)", []string{"net/http", "internal/poll", "net.(*", "syscall"}},
		{"runtime (GC, scheduler)", nil},
	}
	secs := make([]float64, len(parts))
	for _, stack := range parseTraces(string(out)) {
		for i, p := range parts {
			if p.has == nil || containsAny(stack.frames, p.has) {
				secs[i] += stack.seconds
				break
			}
		}
	}
	shares := make([]CostShare, len(parts))
	for i, p := range parts {
		shares[i] = CostShare{Part: p.name, Us: secs[i] * 1e6 / max(requests, 1)}
	}
	return shares, nil
}

type trace struct {
	seconds float64
	frames  []string
}

// parseTraces reads `go tool pprof -traces` output: stacks between lines
// of dashes, the first line of each carrying the sample's time.
func parseTraces(out string) []trace {
	var traces []trace
	var cur *trace
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-----------+") {
			cur = nil
			continue
		}
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if cur == nil {
			d, err := time.ParseDuration(strings.Replace(f[0], "µs", "us", 1))
			if err != nil || len(f) < 2 {
				continue // the header, or a label line
			}
			traces = append(traces, trace{seconds: d.Seconds(), frames: []string{f[1]}})
			cur = &traces[len(traces)-1] // appended to only until the next trace starts
			continue
		}
		cur.frames = append(cur.frames, f[0])
	}
	return traces
}

func containsAny(frames, subs []string) bool {
	for _, f := range frames {
		for _, s := range subs {
			if strings.Contains(f, s) {
				return true
			}
		}
	}
	return false
}
