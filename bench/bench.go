// Package bench is waitroom's benchmark harness: the seed's thundering-herd
// experiment, a stock sold out to a crowd, the hot paths under wrk, admission accuracy, Redis memory,
// the front document through nginx's cache (front.go), a queue's lanes
// and the access codes' upload (lanes.go, codes.go), and whether the
// estimates shown at joining come true (estimates.go),
// each against the real program booted in process (internal/app) on real
// Redis and PostgreSQL. bench/run.sh starts throwaway servers and runs it
// through cmd/bench, which writes docs/benchmarks.md and its SVG charts;
// TestHarnessShort runs the short mode as a smoke test.
//
// Every load is bounded in count and time and stops by itself; everything
// listens on loopback only.
package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
)

// Options says what to run and against what.
type Options struct {
	RedisURL    string
	DatabaseURL string
	// Short runs every section for seconds instead of minutes (the smoke test).
	Short bool
	// Sections to run: "herd", "degrade", "noshow", "soldout", "hot",
	// "accuracy", "memory", "gateway", "front", "million", "bots", "lanes",
	// "codes", "estimates", "ready"; empty = all but "million", "bots",
	// "lanes", "codes", "estimates" and "ready", which run only when named (the first two
	// take minutes: bench/run.sh --million, bench/run.sh -sections bots;
	// lanes and codes are issue 53's evidence: bench/run.sh -sections
	// lanes,codes; estimates issue 54's, about eight minutes; ready issue
	// 55's, about two).
	Sections []string
	// Wrk is the wrk binary; empty looks it up on PATH. Without one the hot
	// paths section is skipped (Report.Hot.Skipped says why).
	Wrk string
	// WrkScript is bench/wrk-users.lua.
	WrkScript string
	// Profile takes a CPU profile of the server during the wrk enter and
	// status runs.
	Profile bool
	// HerdRate runs the herd's three schedules at this many users/s instead
	// of the seed's 100 (0: 100).
	HerdRate float64
	// HerdClients is the herd's client model: HerdPage (""/default: as the
	// waiting page, with waitSeconds) or HerdPolling (no waitSeconds).
	HerdClients string
	// MillionUsers puts this many in line instead of the million section's
	// 1,000,000 (0: the default), to try the section out.
	MillionUsers int
	// HerdFixed runs the herd's schedules at a fixed rate instead of the
	// adaptive one.
	HerdFixed bool
	// HerdModes runs only the herd's schedules of these names (HerdModes'
	// Name; empty: all three). The ratio to the burst needs the burst.
	HerdModes []string
	// HerdCapacity skips the herd's capacity sweep and takes this rate
	// (users/s) as what the backend bears; HerdOwnLatency is then the
	// order's own latency (0: the order's work, 200 ms). HerdSweepOnly
	// runs the sweep and none of the modes.
	HerdCapacity   float64
	HerdOwnLatency time.Duration
	HerdSweepOnly  bool
	// GatewayProfiles: a directory where the gateway section writes a CPU
	// profile of the harness's process under each run of a Go proxy
	// (empty: none; the profiler's own cost is in those runs' figures).
	GatewayProfiles string
	// FrontProfiles: a directory where the front section writes a CPU
	// profile of each instance over each run's measured window
	// (front-idle-0.pprof, front-document-0.pprof, front-exact-1.pprof, ...; empty: none; the
	// profiler's own cost is then in those runs' figures).
	FrontProfiles string
	// BotsRuns runs only the bots section's runs of these names
	// ("signals", "before", "no bots"; empty: all three).
	BotsRuns []string
	// EstimatesBefore is the estimates section as a run on the code
	// before issue 54 measured it (cmd/bench -estimates-before, read from
	// that run's -json), set beside this run's (nil: none).
	EstimatesBefore *EstimatesReport
	// EstimatesRuns runs only the estimates section's runs of these names
	// (EstimatesScenario.Name; empty: all).
	EstimatesRuns []string
	// Log receives progress lines (nil: discarded).
	Log io.Writer
}

func (o Options) want(s string) bool {
	if s == "million" || s == "bots" || s == "lanes" || s == "codes" || s == "estimates" || s == "ready" || len(o.Sections) > 0 {
		return slices.Contains(o.Sections, s)
	}
	return true
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "bench: "+format+"\n", args...)
	}
}

// Report is every section's figures.
type Report struct {
	Date    time.Time
	Machine string
	Short   bool

	Herd      *HerdReport
	Degrade   *DegradeReport
	NoShow    *NoShowReport
	SoldOut   *SoldOutReport
	Hot       *HotReport
	Accuracy  *AccuracyReport
	Memory    *MemoryReport
	Gateway   *GatewayReport
	Million   *MillionReport
	Front     *FrontReport
	Bots      *BotsReport
	Lanes     *LanesReport
	Codes     *CodesReport
	Estimates *EstimatesReport
	Ready     *ReadyReport
}

// Run runs the sections Options asks for, one after the other.
func Run(ctx context.Context, o Options) (*Report, error) {
	r := &Report{Date: time.Now().UTC(), Machine: machine(), Short: o.Short}
	var err error
	if o.Short && o.RedisURL != "" {
		if o.RedisURL, err = patientRedis(o.RedisURL); err != nil {
			return r, err
		}
	}
	if o.want("herd") {
		if r.Herd, err = runHerd(ctx, o); err != nil {
			return r, fmt.Errorf("herd: %w", err)
		}
	}
	if o.want("degrade") {
		if r.Degrade, err = runDegrade(ctx, o); err != nil {
			return r, fmt.Errorf("degrade: %w", err)
		}
	}
	if o.want("noshow") {
		if r.NoShow, err = runNoShow(ctx, o); err != nil {
			return r, fmt.Errorf("noshow: %w", err)
		}
	}
	if o.want("soldout") {
		if r.SoldOut, err = runSoldOut(ctx, o); err != nil {
			return r, fmt.Errorf("soldout: %w", err)
		}
	}
	if o.want("hot") {
		if r.Hot, err = runHot(ctx, o); err != nil {
			return r, fmt.Errorf("hot paths: %w", err)
		}
	}
	if o.want("accuracy") {
		if r.Accuracy, err = runAccuracy(ctx, o); err != nil {
			return r, fmt.Errorf("accuracy: %w", err)
		}
	}
	if o.want("memory") {
		if r.Memory, err = runMemory(ctx, o); err != nil {
			return r, fmt.Errorf("memory: %w", err)
		}
	}
	if o.want("gateway") {
		if r.Gateway, err = runGateway(ctx, o); err != nil {
			return r, fmt.Errorf("gateway: %w", err)
		}
	}
	if o.want("front") {
		if r.Front, err = runFront(ctx, o); err != nil {
			return r, fmt.Errorf("front: %w", err)
		}
	}
	if o.want("bots") {
		if r.Bots, err = runBots(ctx, o); err != nil {
			return r, fmt.Errorf("bots: %w", err)
		}
	}
	if o.want("lanes") {
		if r.Lanes, err = runLanes(ctx, o); err != nil {
			return r, fmt.Errorf("lanes: %w", err)
		}
	}
	if o.want("codes") {
		if r.Codes, err = runCodes(ctx, o); err != nil {
			return r, fmt.Errorf("codes: %w", err)
		}
	}
	if o.want("estimates") {
		if r.Estimates, err = runEstimates(ctx, o); err != nil {
			return r, fmt.Errorf("estimates: %w", err)
		}
	}
	if o.want("ready") {
		if r.Ready, err = runReady(ctx, o); err != nil {
			return r, fmt.Errorf("ready: %w", err)
		}
	}
	if o.want("million") {
		if r.Million, err = runMillion(ctx, o); err != nil {
			return r, fmt.Errorf("million: %w", err)
		}
	}
	return r, nil
}

// patientRedis is redisURL with a minute for each Redis call (dial, pool,
// read, write) where it names no time of its own, for the short mode: the
// test command's smoke test, on a machine that may be loaded, where the
// server's default of a second would answer 503 for a call that is only
// slow, and a slow answer is not a wrong one.
func patientRedis(redisURL string) (string, error) {
	u, err := url.Parse(redisURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	for _, k := range []string{"dial_timeout", "pool_timeout", "read_timeout", "write_timeout"} {
		if q.Get(k) == "" {
			q.Set(k, "1m")
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func machine() string {
	m := fmt.Sprintf("%d cores (GOMAXPROCS %d), %s/%s, %s", runtime.NumCPU(), runtime.GOMAXPROCS(0),
		runtime.GOOS, runtime.GOARCH, runtime.Version())
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					m += ", " + strings.TrimSpace(v)
				}
				break
			}
		}
	}
	return m
}

// boot starts the real program on a loopback port with a fresh key prefix.
// serverLog keeps the first warnings and errors a booted server logs, so a
// failed request in a report can be told apart by its cause (a Redis
// timeout and a database error both answer 503 "unavailable").
type serverLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
	tee io.Writer
	// panics counts the records that tell of a panic (Go's server's "http:
	// panic serving", a handler's recovered "panic: "): a section whose
	// server logged one reports it (issue 49).
	panics     int
	firstPanic string
}

const serverLogCap = 4 << 10

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tee != nil {
		l.tee.Write(p)
	}
	if bytes.Contains(p, []byte("http: panic serving")) || bytes.Contains(p, []byte("panic: ")) {
		if l.panics++; l.firstPanic == "" {
			l.firstPanic = string(p)
		}
	}
	if room := serverLogCap - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Panics is how many records so far told of a panic, and the first.
func (l *serverLog) Panics() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.panics, l.firstPanic
}

// First is the first line logged, or "".
func (l *serverLog) First() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	first, _, _ := strings.Cut(l.buf.String(), "\n")
	return first
}

// boot starts a waitroom on the test servers; its warnings go to logs.
func boot(ctx context.Context, o Options, logs *serverLog, edit func(*app.Config)) (*app.Main, error) {
	return bootArgs(ctx, nil, o, logs, edit)
}

// bootArgs is boot with `waitroom serve` flags read first, as the command
// reads them.
func bootArgs(ctx context.Context, args []string, o Options, logs *serverLog, edit func(*app.Config)) (*app.Main, error) {
	cfg, err := app.Parse(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		return nil, err
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = o.RedisURL
	cfg.KeyPrefix = fmt.Sprintf("wrbench%d:", rand.Int64())
	cfg.DatabaseURL = o.DatabaseURL
	cfg.AuthSecret = fmt.Sprintf("bench-secret-%032x", rand.Uint64()) // ≥ 32 bytes on Redis
	cfg.AdminToken = fmt.Sprintf("bench-admin-%032x", rand.Uint64())
	cfg.DrainDelay = 0
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.LogLevel = cmp.Or(os.Getenv("WAITROOM_BENCH_LOG_LEVEL"), "warn")
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var w io.Writer = io.Discard
	if logs != nil {
		w = logs
	}
	m := &app.Main{Config: cfg, Logger: app.NewLogger(cfg, w), Stdout: io.Discard}
	if err := m.Run(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// herdDatabaseURL tags a PostgreSQL URL so this run's connections can be
// told apart in pg_stat_activity from anyone else's on the same server, and
// warms its pool.
func herdDatabaseURL(dbURL, name string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("application_name", name)
	// Warm: the pool opens its connections before the crowd arrives, as an
	// operator does with pool_min_conns (docs/operations.md), so the first
	// orders do not pay for connecting.
	q.Set("pool_min_conns", strconv.Itoa(herdPool))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// newRedis is a plain client on the Redis URL.
func newRedis(redisURL string) (*redis.Client, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

// scratch is a key prefix of this section's own on the test Redis, with a
// client and the line's store on it; close deletes every key under it.
type scratch struct {
	rdb    *redis.Client
	prefix string
	store  *redisstore.Store
}

func newScratch(o Options) (*scratch, error) {
	rdb, err := newRedis(o.RedisURL)
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("wrbench%d:", rand.Int64())
	return &scratch{rdb: rdb, prefix: prefix, store: redisstore.New(rdb, prefix)}, nil
}

func (s *scratch) close(ctx context.Context) {
	dropPrefix(context.WithoutCancel(ctx), s.rdb, s.prefix)
	s.rdb.Close()
}

// dropPrefix deletes every key under prefix (UNLINK: big sets go in the background).
func dropPrefix(ctx context.Context, rdb *redis.Client, prefix string) {
	it := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == 500 {
			rdb.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		rdb.Unlink(ctx, batch...)
	}
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func httpClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 256, MaxIdleConnsPerHost: 256}}
}
