// Package app wires waitroom together: config → stores → services →
// admission → HTTP, and takes it apart again in order. cmd/waitroom is a
// thin shell around it, and end-to-end tests boot the real program through
// it on port :0.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/breaker"
	"github.com/waitroom/waitroom/internal/bypass"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/gateway"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/order/postgres"
	"github.com/waitroom/waitroom/internal/order/sqlite"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/front"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/queue/watch"
	"github.com/waitroom/waitroom/internal/queuefile"
	"github.com/waitroom/waitroom/internal/ratelimit"
	"github.com/waitroom/waitroom/internal/spend"
	"github.com/waitroom/waitroom/internal/telemetry"
	"github.com/waitroom/waitroom/internal/web"
	"github.com/waitroom/waitroom/internal/webhook"
)

// Main is one running waitroom.
type Main struct {
	Config Config
	Logger *slog.Logger
	// Stdout receives the start banner (URL, admin token on the embedded default).
	Stdout io.Writer
	// Command is how the banner tells people to run this program again
	// (`waitroom token …`); "waitroom" when empty.
	Command string
	// Registry receives the metrics (a fresh one with Go and process
	// collectors when nil).
	Registry *prometheus.Registry
	// Clock is this instance's wall clock (time.Now when nil): sessions,
	// challenges, the per-address limits and, on the embedded line,
	// admission ticks and token expiry read it. On Redis the line's order
	// and expiry come from Redis TIME. Tests step it (internal/fairness).
	Clock func() time.Time

	Queue  *queue.Service
	Orders *order.Service // nil in gateway mode
	API    *httpapi.Server
	// Gateway is the handler of `waitroom proxy` (nil for serve).
	Gateway *gateway.Gateway

	// What the start makes, in the order it makes it (Run).
	newQueues queue.Config // the default and new queues' config
	// queuesFile is --queues as last read whole (nil without it);
	// reloadMu keeps two reloads from interleaving.
	queuesFile atomic.Pointer[queuefile.File]
	reloadMu   sync.Mutex
	devSecret  bool // the auth secret is the one kept in the data dir
	store      queue.Store
	embedded   *memstore.Store // the embedded line (closed last); nil on Redis
	telemetry  *telemetry.Metrics
	// pending is what this instance observed for the sale's rows (admitted
	// users' waits, orders) until the detector's next pass writes it.
	pending    rollup.Pending
	rates      *admission.RateController
	admitter   *admission.Admitter // started with the loops; enters wake it
	guard      *spend.Guard
	bypass     *bypass.Rules // --bypass
	history    *watch.History
	redis      redis.UniversalClient
	orderStore order.Store
	listener   net.Listener
	server     *http.Server
	metrics    *http.Server // --metrics-addr; nil when /metrics is on the public listener
	metricsLn  net.Listener
	readyStore queue.Inspector // readiness reads, never queued behind the auto-pipeline
	// loopStore is the store the admission and adaptive-rate loops call:
	// on Redis, without the auto-pipeline. A loop makes one call at a time,
	// which a pipeline cannot share, and its hops through the pipeline's
	// goroutines cost an idle instance about a third more CPU a call
	// (docs/benchmarks.md §6); its ticks then never queue behind requests.
	loopStore queue.Store
	breaker   *breaker.Breaker // the store's, per queue (the requests' calls go through it)
	degraded  *degraded.Policy // --on-store-error
	health    *watch.HealthCheck
	eviction  *evictionCheck // nil on the embedded line
	stopLoops context.CancelFunc
	loopsDone sync.WaitGroup
	serveDone chan struct{}
	serveErr  error
	closeOnce sync.Once
	closeErr  error

	// The shop's events (webhooks.go); instance names this process in its
	// breakers' events.
	webhookSecret []byte
	webhooks      *webhook.Sender
	detector      *events.Detector
	instance      string
}

// NewLogger builds the logger the config asks for.
func NewLogger(c Config, w io.Writer) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(c.LogLevel)) // validated already
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationAsText}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// durationAsText writes every time.Duration as Go writes it ("100ms"):
// the JSON handler would write nanoseconds (100000000), which nobody reads
// right at a glance.
func durationAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// Run starts waitroom, step by step: the config made final, the line's
// store and the default queue, what guards the protected calls, the shop's
// events, HTTP, the listener, the loops, the banner. It returns once the
// listener is open; Close stops everything.
func (m *Main) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			m.abandon()
		}
	}()
	if err := m.resolveConfig(); err != nil {
		return err
	}
	if err := m.openLine(ctx); err != nil {
		return err
	}
	if err := m.applyQueuesFile(ctx); err != nil {
		return err
	}
	if err := m.guardCalls(ctx); err != nil {
		return err
	}
	m.tellTheShop()
	if err := m.buildHTTP(); err != nil {
		return err
	}
	if err := m.listen(); err != nil {
		return err
	}
	m.startLoops(ctx)
	m.announce()
	return nil
}

// resolveConfig makes the config final before anything reads it: the
// logger and output, the queues' defaults and the queues file, and the
// secrets not given (the
// embedded default keeps its auth secret in the data dir, so JWTs and
// sessions survive a restart and `waitroom token` finds it, and its admin
// token, so a restart does not lock the operator out).
func (m *Main) resolveConfig() (err error) {
	c := &m.Config
	if m.Logger == nil {
		m.Logger = NewLogger(*c, os.Stderr)
	}
	if m.Clock == nil {
		m.Clock = time.Now
	}
	if m.Stdout == nil {
		m.Stdout = os.Stdout
	}
	if m.newQueues, err = c.QueueConfig(); err != nil {
		return err
	}
	if c.QueuesFile != "" {
		f, err := m.readQueuesFile()
		if err != nil {
			return err
		}
		m.queuesFile.Store(f)
	}
	if err := m.readWebhookSecret(m.queuesFile.Load()); err != nil {
		return err
	}
	switch {
	case c.AuthSecret != "":
	case c.Embedded():
		m.devSecret = true
		if c.AuthSecret, err = DevSecret(c.DataDir); err != nil {
			return fmt.Errorf("--data-dir: the dev auth secret: %w", err)
		}
	default:
		c.AuthSecret = randomHex(32)
		m.Logger.Warn("no --auth-secret: using a random one; session cookies and JWTs will not work across instances or restarts")
	}
	if c.AdminToken == "" && c.Embedded() {
		if c.AdminToken, err = AdminToken(c.DataDir); err != nil {
			return fmt.Errorf("--data-dir: the admin token: %w", err)
		}
	}
	return nil
}

// openLine opens the line's store — in this process, or on Redis behind an
// auto-pipeline when calls are concurrent (they share round trips: the HTTP
// layer's wait on Redis, not Redis, is the ceiling, docs/benchmarks.md;
// redisstore.PipelineWhenBusy) — checks
// Redis's eviction policy, and makes sure the default queue exists.
func (m *Main) openLine(ctx context.Context) error {
	c := m.Config
	if c.Embedded() {
		if err := m.openEmbedded(); err != nil {
			return err
		}
	} else {
		rdb, where, err := openRedis(ctx, c.RedisMode, c.RedisURL, m.Logger)
		if err != nil {
			return err
		}
		m.redis = rdb
		m.Logger.Info("redis connected", "mode", c.RedisMode, "at", where)
		ap, err := rdb.AutoPipeline()
		if err != nil {
			return fmt.Errorf("redis auto-pipeline: %w", err)
		}
		direct := redisstore.New(rdb, c.KeyPrefix)
		m.store, m.loopStore, m.readyStore = redisstore.New(redisstore.PipelineWhenBusy(rdb, ap), c.KeyPrefix), direct, direct
		m.eviction = &evictionCheck{rdb: rdb}
		if problem := m.eviction.Problem(ctx); problem != "" {
			if c.RedisStrictEviction {
				return fmt.Errorf("--redis-strict-eviction: %s", problem)
			}
			m.Logger.Error(problem + " (refused with --redis-strict-eviction)")
		}
		// Not a reason to stop: a Cluster node that does not answer now
		// leaves its queues' counters where they were, and a restart folds them.
		switch n, err := direct.Upgrade(ctx); {
		case err != nil:
			m.Logger.Error("bringing Redis's keys to this version's layout (docs/operations.md#upgrading)", "err", err)
		case n > 0:
			m.Logger.Info("redis layout upgraded", "queues", n, "see", "docs/operations.md#upgrading")
		}
	}
	m.store, m.loopStore = withHistoryBug(m.store), withHistoryBug(m.loopStore)
	m.guardStore()
	// The line's signals, one value both halves of the loop are made on:
	// the service tells who joined, which wakes the admitter; the admitter
	// tells what each tick moved or read, which the service's snapshots
	// and held requests hear, and so do the sale's metrics (admitted).
	line := signals.New()
	m.Queue = queue.NewService(m.store, c.StatusSnapshotAge, line)
	m.admitter = admission.NewAdmitter(m.loopStore, m.Logger, line, m.ensureDefaultQueue)
	line.Listen(signals.Listener{Moved: m.admitted})
	m.watchHealth()
	switch _, err := m.Queue.EnsureQueue(ctx, queue.DefaultQueue, m.newQueues); {
	case errors.Is(err, queue.ErrUnavailable):
		// Redis answered openRedis, so this is a Redis Cluster whose node
		// holding the default queue is down: serve the other queues; the
		// admission loop creates the default queue once it is back.
		m.Logger.Warn("the default queue's store does not answer; serving the other queues meanwhile", "err", err)
	case err != nil:
		return fmt.Errorf("creating the default queue: %w", err)
	}
	m.health.Check(ctx) // readiness has an answer from the first probe on
	return nil
}

// openEmbedded opens the line kept in the data dir (memstore.Open): what
// the last run left is loaded, and the log says what was found and what a
// crash could have cost.
func (m *Main) openEmbedded() error {
	c := m.Config
	policy, _ := journal.ParsePolicy(c.EmbeddedFsync) // validated already
	dir := filepath.Join(c.DataDir, LineDir)
	s, rec, err := memstore.Open(dir, memstore.Options{Fsync: policy, Now: m.Clock, Logger: m.Logger})
	if err != nil {
		return fmt.Errorf("--data-dir: the embedded line: %w", err)
	}
	m.embedded, m.store, m.loopStore, m.readyStore = s, s, s, s
	m.Logger.Info(rec.Summary(policy), "dir", dir, "fsync", policy, "queues", rec.Queues, "places", rec.Places,
		"tokens", rec.Tokens, "snapshot", rec.Snapshot, "records", rec.Records, "torn_bytes", rec.Torn,
		"down", rec.Down, "took", rec.Took)
	return nil
}

// guardStore puts the line's store behind a breaker per queue, so that
// while a queue's store does not answer its protected requests are decided
// at once (--on-store-error), not each after the store's timeout; the
// breaker asks the readiness client, never queued behind the requests'
// auto-pipeline.
func (m *Main) guardStore() {
	m.breaker = breaker.New(breaker.Options{Logger: m.Logger, OnChange: m.breakerChanged, Probe: func(ctx context.Context, q string) error {
		_, err := m.readyStore.Config(ctx, q)
		return err
	}})
	mode, _ := degraded.ParseMode(m.Config.OnStoreError) // validated already
	// Under wait the API's calls still ask the store each (what it answers
	// stays exactly today's); the gateway refuses protected routes at once
	// itself (degraded.Policy.RefuseNow).
	m.store = breaker.Guard(m.store, m.breaker, mode == degraded.Admit)
	m.loopStore = breaker.Guard(m.loopStore, m.breaker, mode == degraded.Admit)
	m.degraded = degraded.New(mode, m.breaker, []byte(m.Config.AuthSecret), m.newQueues.TokenTTL, nil)
}

// LineDir is the directory in --data-dir that keeps the embedded line.
const LineDir = "line"

// watchHealth sets up the check of the line's store, queue by queue, that
// readiness, the metrics and the 503s of a queue whose store is away read.
func (m *Main) watchHealth() {
	m.health = watch.NewHealthCheck(m.Queue, m.readyStore, m.Logger)
	if m.redis != nil {
		m.health.Reach = reachAny(m.redis)
	}
	if cluster, ok := m.redis.(*redis.ClusterClient); ok {
		// go-redis learns a new map of the slots when a node answers MOVED,
		// or once a minute; a dead primary answers nothing. While queues
		// are down, ask again every check: a promoted replica serves them
		// within a second of its promotion, not up to a minute later.
		m.health.OnDown = func(ctx context.Context, _ []string) { cluster.ReloadState(ctx) }
	}
}

// guardCalls sets up what watches the protected calls — an order, or a
// backend call through the gateway: the metrics, the adaptive rate that
// follows them, and the guard that spends tokens on them — and, for serve,
// the orders themselves.
func (m *Main) guardCalls(ctx context.Context) error {
	if m.Registry == nil {
		m.Registry = prometheus.NewRegistry()
		m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m.telemetry = telemetry.New(m.Registry, m.Queue)
	telemetry.RegisterStoreHealth(m.Registry, m.health.Last)
	telemetry.RegisterBreaker(m.Registry, m.breaker.OpenQueues)
	lockTTL := spend.DefaultLockTTL
	if m.Config.Proxy { // a use holds its lock for as long as the upstream may take
		lockTTL = max(lockTTL, m.Config.UpstreamTimeout+10*time.Second)
	}
	m.rates = admission.NewRateController(m.loopStore, m.Logger)
	m.guard = spend.NewGuard(m.store, lockTTL, func(q string, took time.Duration, o spend.Outcome) {
		m.telemetry.ProtectedCall(q, took, o)
		m.rates.Observe(q, took, o.Overloaded())
	})
	if m.Config.Proxy { // gateway mode sells nothing itself: the shop's backend does
		return nil
	}
	return m.openOrders(ctx)
}

// buildHTTP builds the API (and, for proxy, the gateway around it) and the
// server that serves it, with every timeout set; /metrics goes on its own
// listener with --metrics-addr.
func (m *Main) buildHTTP() (err error) {
	c := m.Config
	metrics := promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
	publicMetrics := metrics
	if c.MetricsAddr != "" {
		publicMetrics = nil // only on the private listener
	}
	// The pages, the operator's templates among them: one that cannot work
	// stops the start here, naming its file and line.
	site, err := web.New(web.Options{Base: c.prefix(), Gateway: c.Proxy, Dir: c.PageDir})
	if err != nil {
		return fmt.Errorf("--page-dir: %w", err)
	}
	if c.PageDir != "" {
		m.Logger.Info("waiting page templates", "page_dir", c.PageDir, "templates", site.Templates())
	}
	m.history = watch.NewHistory(m.Queue, c.HistoryInterval, historyKeep)
	proxies, _ := clientaddr.Parse(c.TrustedProxies) // validated with the config
	id := identity.NewWith([]byte(c.AuthSecret), identity.Options{SessionMaxAge: c.SessionMaxAge, SecureCookies: c.SecureCookies,
		Proxies: proxies, Audience: c.AuthAudience, Issuer: c.AuthIssuer, Now: m.Clock})
	gate := m.newGatekeeper(proxies)
	// Read again: a value's file may have changed since Validate.
	if m.bypass, err = c.BypassRules(); err != nil {
		return fmt.Errorf("--bypass: %w", err)
	}
	m.telemetry.BypassRules(m.bypass.Labels())
	m.API = httpapi.New(httpapi.Options{
		Queue: m.Queue, Orders: m.Orders, History: m.history, Identity: id, Gate: gate, Bypass: m.bypass, Degraded: m.degraded,
		// The key every instance shares already (sessions, challenges,
		// degraded tokens), under the tickets' own label: the gateway's
		// Ed25519 entry key may be random per process, and a page's ticket
		// must verify on whichever instance it reaches.
		Tickets:    front.NewTickets([]byte(c.AuthSecret)),
		AdminToken: c.AdminToken, Ready: m.ready, Logger: m.Logger,
		NewQueueConfig: m.newQueues, QueueConfigChanged: m.noteDrift,
		Page:    site,
		OpenAPI: waitroom.OpenAPI, Metrics: m.telemetry, MetricsHandler: publicMetrics,
	})
	telemetry.RegisterHeld(m.Registry, m.API.Held)
	m.server = &http.Server{
		Handler:           m.API,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
	if c.Proxy {
		if m.Gateway, err = m.newGateway(id, gate, proxies); err != nil {
			return err
		}
		m.server.Handler = m.Gateway
		// Uploads, downloads, streams and WebSockets pass through for as
		// long as they take; only a slow request head is cut off.
		m.server.ReadTimeout, m.server.WriteTimeout = 0, 0
	}
	if c.MetricsAddr != "" {
		return m.serveMetrics(metrics)
	}
	return nil
}

// listen opens --addr and serves on it.
func (m *Main) listen() (err error) {
	if m.listener, err = net.Listen("tcp", m.Config.Addr); err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	m.serveDone = make(chan struct{})
	go func() {
		defer close(m.serveDone)
		m.serveErr = m.server.Serve(m.listener)
	}()
	return nil
}

// startLoops starts what runs beside the requests until Close: admission
// (which also creates the default queue again if Redis lost its data),
// the admin chart's history, the adaptive rate, the no-shows' seen marks,
// and the shop's events: finding them, and sending them.
func (m *Main) startLoops(ctx context.Context) {
	loops, stop := context.WithCancel(context.WithoutCancel(ctx))
	m.stopLoops = stop
	admitter := m.admitter
	admitter.Jitter = m.Config.AdmissionJitter // --admission-jitter (bench/ turns it off)
	for _, run := range []func(context.Context){m.health.Run, m.breaker.Run, admitter.Run, m.history.Run, m.rates.Run,
		func(ctx context.Context) { m.Queue.RunPresence(ctx, m.Logger) }, m.detector.Run, m.webhooks.Run} {
		m.loopsDone.Go(func() { run(loops) })
	}
}

// ensureDefaultQueue creates the default queue again if it went: Redis
// that lost its data (a restart without AOF, FLUSHALL, a failover to an
// empty replica) lost the default queue too, and every request would
// answer 404 until someone created it again. The admitter runs it at
// every discovery.
func (m *Main) ensureDefaultQueue(ctx context.Context) {
	if created, err := m.Queue.EnsureQueue(ctx, queue.DefaultQueue, m.newQueues); created && err == nil {
		m.Logger.Error("the default queue was missing from the store (did Redis lose its data?): created again with the configured defaults; " +
			"everyone who was in line must enter again")
	}
}

// announce logs the start, and tells the embedded default's user where
// everything is.
func (m *Main) announce() {
	c, q := m.Config, m.newQueues
	m.Logger.Info("waitroom started", "addr", m.Addr(), "rate", q.RatePerSecond,
		"rate_derivation", q.RateDerivation, "batch", q.BatchSize, "interval", q.Interval,
		"capacity", q.Capacity, "token_ttl", q.TokenTTL, "embedded", c.Embedded())
	if labels := m.bypass.Labels(); len(labels) > 0 {
		m.Logger.Info("bypass rules: requests they match pass the line", "rules", labels)
	}
	if c.Proxy {
		m.Logger.Info("gateway", "upstream", c.Upstream, "protect", c.Protect, "protect_session", c.ProtectSession, "prefix", c.Prefix)
	}
	if c.Embedded() {
		m.banner()
	}
}

// abandon undoes a start that failed half-way.
func (m *Main) abandon() {
	if m.metrics != nil {
		m.metrics.Close()
	}
	m.closeStores()
}

// newGatekeeper builds who may take a place from the config (its auth secret made
// up already): challenges signed with the auth secret, the per-address
// limits (reported in the metrics), the client address behind the trusted
// proxies.
func (m *Main) newGatekeeper(addrs clientaddr.Resolver) *gatekeeper.Gatekeeper {
	c := m.Config
	entries := ratelimit.New(ratelimit.Limit{Rate: c.AddressEntryRate, Burst: c.AddressEntryBurst}, m.Clock)
	sessions := ratelimit.New(ratelimit.Limit{Rate: c.AddressSessionRate, Burst: c.AddressSessionBurst}, m.Clock)
	telemetry.RegisterAddressLimits(m.Registry, map[string]telemetry.AddressLimit{"entries": entries, "sessions": sessions})
	base := c.prefix()
	return gatekeeper.New(gatekeeper.Options{
		Queue:        m.Queue,
		Challenges:   challenge.NewIssuer([]byte(c.AuthSecret), m.Clock),
		Entries:      entries,
		Sessions:     sessions,
		Addresses:    addrs,
		ChallengeURL: func(q string) string { return base + "/api/v1/queues/" + q + "/challenge" },
	})
}

// banner tells the embedded default's user where everything is, and, for
// serve, hands them a user JWT to try the API with.
func (m *Main) banner() {
	c, w := m.Config, m.Stdout
	if c.Proxy {
		gatewayBanner(w, c, m.Addr(), m.newQueues.RateDerivation)
		return
	}
	command := m.Command
	if command == "" {
		command = "waitroom"
	}
	where := "SQLite in " + c.DataDir
	if c.DatabaseURL != "" {
		where = "PostgreSQL"
	}
	fmt.Fprintf(w, "waitroom is serving the line in process (no Redis) with %s\n", where)
	fmt.Fprintf(w, "  page:        http://%s/\n", m.Addr())
	fmt.Fprintf(w, "  admin:       http://%s/admin\n", m.Addr())
	fmt.Fprintf(w, "  admin token: %s\n", c.AdminToken)
	fmt.Fprintf(w, "  admission:   %s\n", m.newQueues.RateDerivation)
	token, why := command+" token --user alice", "given the same --auth-secret"
	if m.devSecret {
		why = "signed with the secret kept in " + filepath.Join(c.DataDir, DevSecretFile)
		if c.DataDir != DefaultDataDir {
			token += " --data-dir " + c.DataDir
		}
	}
	fmt.Fprintf(w, "  a user JWT:  %s   (%s)\n", token, why)
	fmt.Fprintf(w, "  try it:      curl -X POST %s/api/v1/queues/default/entries -H 'Authorization: Bearer %s'\n",
		m.Addr(), SignUserJWT(c.AuthSecret, c.AuthAudience, c.AuthIssuer, "alice", 24*time.Hour))
}

// gatewayBanner is banner for `waitroom proxy`, listening on addr. Where
// the shop is depends on what stands in front: waitroom's own address
// when nothing does; the public address when a setting names it
// (--entry-issuer, the gateway's public URL: Config.publicBase); and when
// a proxy stands in front (--trusted-proxies: nginx or Caddy asking for
// decisions, a load balancer) but no setting names its address, a plain
// word that the shop is at the proxy's address, never waitroom's own
// port given as the shop's, which would take people past the proxy. The
// admin page stays on waitroom's own address: the operator is beside it.
func gatewayBanner(w io.Writer, c Config, addr, derivation string) {
	fmt.Fprintf(w, "waitroom is guarding %s with the line in process (no Redis)\n", c.Upstream)
	switch public := c.publicBase(); {
	case public != "":
		fmt.Fprintf(w, "  shop:        %s   (its public address, from --entry-issuer)\n", public)
		fmt.Fprintf(w, "  line:        %s%s/\n", public, strings.TrimPrefix(c.Prefix, "/"))
	case c.TrustedProxies != "":
		fmt.Fprintf(w, "  shop:        behind your proxy: open the shop at your proxy's address, not waitroom's own http://%s/\n", addr)
		fmt.Fprintf(w, "               (--entry-issuer, the public URL such as https://shop.example.com%s, would name it here)\n", c.Prefix)
		fmt.Fprintf(w, "  line:        at your proxy's address, under %s/\n", c.Prefix)
	default:
		fmt.Fprintf(w, "  shop:        http://%s/\n", addr)
		fmt.Fprintf(w, "  line:        http://%s%s/\n", addr, c.Prefix)
	}
	fmt.Fprintf(w, "  admin:       http://%s%s/admin (token %s)\n", addr, c.Prefix, c.AdminToken)
	fmt.Fprintf(w, "  admission:   %s\n", derivation)
}

// openOrders opens the order database (PostgreSQL, or SQLite in the data
// directory) and the order service on it.
func (m *Main) openOrders(ctx context.Context) (err error) {
	c := m.Config
	// Each Open returns a nil *Store on failure: kept only on success, so
	// an order store that is not nil is one that opened (closeStores).
	var opened order.Store
	if c.DatabaseURL != "" {
		opened, err = postgres.Open(ctx, c.DatabaseURL, c.DBPoolSize)
	} else {
		if err := os.MkdirAll(c.DataDir, 0o750); err != nil {
			return fmt.Errorf("--data-dir: %w", err)
		}
		opened, err = sqlite.Open(ctx, filepath.Join(c.DataDir, "waitroom.db"))
	}
	if err != nil {
		return fmt.Errorf("order database: %w", err)
	}
	m.orderStore = opened
	payment := &order.FakePayment{FailureRate: c.PaymentFailureRate, Latency: c.PaymentLatency}
	m.Orders = order.NewService(m.orderStore, m.guard, payment, order.Config{Work: c.OrderWork,
		Degraded: func(q, user, token string) bool {
			ok := m.degraded.Accept(q, user, token)
			if ok {
				m.telemetry.Degraded("order")
			}
			return ok
		},
		TellStock: func(ctx context.Context, q string, st queue.Stock, onlyLower bool) error {
			_, err := m.Queue.SetStock(ctx, q, st, onlyLower)
			return err
		},
		Placed: func(q string) {
			m.telemetry.OrderPlaced(q)
			m.pending.Ordered(q)
		}})
	// What each queue has left to sell, as the database has it now: a
	// restart, or a change made while no instance ran, shows at once.
	for _, q := range m.Queue.KnownQueues(ctx) {
		m.Orders.TellStock(ctx, q, false)
	}
	return nil
}

// newGateway builds gateway mode around the API: the upstream, its
// protected routes and the key that signs X-Waitroom-Entry.
func (m *Main) newGateway(id *identity.Identity, gate *gatekeeper.Gatekeeper, proxies clientaddr.Resolver) (*gateway.Gateway, error) {
	c := m.Config
	upstream, err := c.UpstreamURL()
	if err != nil {
		return nil, fmt.Errorf("--upstream: %w", err)
	}
	routes, err := c.Routes()
	if err != nil {
		return nil, err
	}
	reading, err := c.Reading()
	if err != nil {
		return nil, err
	}
	m.Logger.Info(hostsLine(reading))
	signer, err := m.entrySigner()
	if err != nil {
		return nil, err
	}
	return gateway.New(gateway.Options{
		Upstream: upstream, Routes: routes, Reading: reading, Prefix: c.Prefix, UpstreamTimeout: c.UpstreamTimeout,
		API: m.API, Identity: id, Gate: gate, Queue: m.Queue, Guard: m.guard, Signer: signer, Metrics: m.telemetry,
		EntryIssuer: c.EntryIssuer, EntryAudience: c.EntryAudience,
		Proxies: proxies, Bypass: m.bypass, Degraded: m.degraded, AdminToken: c.AdminToken, Logger: m.Logger,
	})
}

// hostsLine says at start which reading of the patterns' hosts applies.
func hostsLine(rd gateway.Reading) string {
	if rd.DistinctHosts {
		return "gateway: --hosts distinct: a host-qualified pattern applies to its host and to hosts no pattern names"
	}
	return "gateway: --hosts shared: a pattern's host is ignored, its path is protected on every host (--hosts distinct if the backend serves the patterns' hosts apart)"
}

// entrySigner is --entry-signing-key; without it, the embedded default
// keeps a key of its own in the data directory (so entries survive a
// restart), and otherwise a random one serves this process only.
func (m *Main) entrySigner() (*gateway.Signer, error) {
	c := m.Config
	if c.EntrySigningKey != "" {
		return c.Signer()
	}
	if !c.Embedded() {
		m.Logger.Warn("no --entry-signing-key: X-Waitroom-Entry is signed with a random key; give every instance the same key file")
		return gateway.ParseSigner(gateway.GenerateKey())
	}
	path := filepath.Join(c.DataDir, "entry-signing-key.pem")
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		raw = gateway.GenerateKey()
		if err = os.MkdirAll(c.DataDir, 0o750); err == nil {
			err = os.WriteFile(path, raw, 0o600)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--data-dir: the entry signing key: %w", err)
	}
	s, err := gateway.ParseSigner(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// serveMetrics serves /metrics (and with --pprof the profiler) on
// --metrics-addr, a listener of its own for a private network.
func (m *Main) serveMetrics(metrics http.Handler) error {
	c := m.Config
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	if c.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ln, err := net.Listen("tcp", c.MetricsAddr)
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	// No write timeout: a CPU profile takes as long as it was asked to.
	m.metricsLn = ln
	m.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn)}
	go m.metrics.Serve(ln)
	return nil
}

// MetricsAddr is the address /metrics is served on apart from the API
// (--metrics-addr; "" when it is served on the API's listener).
func (m *Main) MetricsAddr() string {
	if m.metricsLn == nil {
		return ""
	}
	return m.metricsLn.Addr().String()
}

// historyKeep is how much of the admin chart's history each instance keeps
// (the chart shows 5 minutes).
const historyKeep = 10 * time.Minute

// Addr is the address the server listens on (useful with :0).
func (m *Main) Addr() string {
	if m.listener == nil {
		return ""
	}
	a := m.listener.Addr().(*net.TCPAddr)
	if a.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", a.Port)
	}
	return a.String()
}

// Done is closed when the server stops serving, by Close or by itself.
func (m *Main) Done() <-chan struct{} { return m.serveDone }

// ready is /readyz (httpapi.Options.Ready): whether this instance can do
// its job. A fault outside the instance limits only what it touches:
//
//   - gateway mode forwards every unprotected route whatever the line's
//     store does, so it is ready while it can reach the upstream's
//     address; the store's state is reported, not a reason (a protected
//     route answers 503 + Retry-After while its queue's store is away);
//   - serve mode can serve nothing without a store, so a store that does
//     not answer at all makes it unready; a Redis Cluster with some nodes
//     down does not (their queues answer 503, the others are served): the
//     queues are listed in degradedQueues. The default queue missing (Redis
//     lost its data: created again within a second), an order database
//     that does not answer, and under --redis-strict-eviction a Redis that
//     may evict waitroom's keys make it unready too. Under
//     --on-store-error admit a store that does not answer is reported, not
//     a reason: orders go on, on degraded tokens, and the instance must
//     stay in the load balancer for them.
//
// The store's breakers (open while a queue's store failed and no probe has
// found it back) are reported in storeBreaker and breakerOpenQueues.
//
// strict (?strict=1) is the all-or-nothing answer: every part whole.
// The store's state is the health check's, refreshed every second in the
// background: a probe costs the store no round trip.
func (m *Main) ready(ctx context.Context, strict bool) (httpapi.Readiness, error) {
	h := m.health.Last()
	r := httpapi.Readiness{Store: h.State(), OnStoreError: string(m.degraded.Mode()), StoreBreaker: "closed"}
	if open := m.breaker.OpenQueues(); len(open) > 0 {
		r.StoreBreaker, r.BreakerOpenQueues = "open", open
	}
	if h.Reachable { // else every queue is down: "store": "down" says it
		r.DegradedQueues = h.Down
	}
	// What keeps the store from being whole, worst first.
	var storeProblem error
	switch {
	case !h.Reachable && m.degraded.Admits() && !strict:
		r.Warnings = append(r.Warnings, "the line's store does not answer: protected requests are admitted degraded (--on-store-error admit)")
	case !h.Reachable:
		storeProblem = fmt.Errorf("%w: the line's store does not answer: %v", queue.ErrUnavailable, h.Err)
	case slices.Contains(h.Missing, queue.DefaultQueue):
		storeProblem = fmt.Errorf("%w: the default queue is missing from the store (did Redis lose its data?); "+
			"the admission loop creates it again within a second", httpapi.ErrNotReady)
		r.Warnings = append(r.Warnings, storeProblem.Error())
	case m.eviction != nil:
		if problem := m.eviction.Problem(ctx); problem != "" {
			if m.Config.RedisStrictEviction {
				storeProblem = fmt.Errorf("%w: --redis-strict-eviction: %s", httpapi.ErrNotReady, problem)
			}
			r.Warnings = append(r.Warnings, problem)
		}
	}
	if strict && storeProblem == nil && len(h.Down) > 0 {
		storeProblem = fmt.Errorf("%w: strict: the store does not answer for %s", httpapi.ErrNotReady, strings.Join(h.Down, ", "))
	}

	if m.Gateway != nil {
		if err := m.Gateway.UpstreamReachable(ctx); err != nil {
			r.Upstream = "unreachable"
			return r, fmt.Errorf("%w: cannot forward: %v", httpapi.ErrNotReady, err)
		}
		r.Upstream = "reachable"
		if strict {
			return r, storeProblem
		}
		return r, nil
	}
	if storeProblem != nil {
		return r, storeProblem
	}
	if m.orderStore != nil {
		return r, m.orderStore.Ping(ctx)
	}
	return r, nil
}

// Close shuts down in order: stop admitting (nobody gets a token a draining
// instance can't serve), readiness false for the drain delay while still
// serving, then let in-flight requests finish within the shutdown timeout,
// wait for the admission loops, close stores.
func (m *Main) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Main) close() error {
	if m.stopLoops != nil {
		m.stopLoops()
	}
	if m.API != nil {
		m.API.SetDraining(true)
		// Keep serving while /readyz fails, long enough for load balancers
		// to notice and stop sending new requests here.
		time.Sleep(m.Config.DrainDelay)
	}
	var errs []error
	if m.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
		defer cancel()
		if err := m.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		<-m.serveDone
		if err := m.serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		m.API.FlushErrorLog()
	}
	if m.metrics != nil {
		// Scraped to the end, then closed: nothing is in flight worth waiting for.
		errs = append(errs, m.metrics.Close())
	}
	m.loopsDone.Wait()
	errs = append(errs, m.closeStores())
	return errors.Join(errs...)
}

func (m *Main) closeStores() error {
	var errs []error
	if m.orderStore != nil {
		errs = append(errs, m.orderStore.Close())
		m.orderStore = nil
	}
	if m.redis != nil {
		errs = append(errs, m.redis.Close())
		m.redis = nil
	}
	if m.embedded != nil {
		errs = append(errs, m.embedded.Close())
		m.embedded = nil
	}
	return errors.Join(errs...)
}
