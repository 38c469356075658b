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
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/breaker"
	"github.com/waitroom/waitroom/internal/bypass"
	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/gateway"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/queue/watch"
	"github.com/waitroom/waitroom/internal/queuefile"
	"github.com/waitroom/waitroom/internal/spend"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/suspect"
	"github.com/waitroom/waitroom/internal/telemetry"
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

	// What the start's steps built, each a step's own (Run), kept for
	// what Close stops, what a reload changes and what /readyz reads.
	settings settled // resolveConfig
	line     *line   // openLine
	sale     *sale   // guardCalls and tellTheShop
	served   *served // buildHTTP and listen
	run      running // listen and startLoops; Close
}

// settled is what resolveConfig made final beside Config, and what a
// reload of the queues file changes.
type settled struct {
	newQueues queue.Config // the default and new queues' config
	// queuesFile is --queues as last read whole (nil without it);
	// reloadMu keeps two reloads from interleaving.
	queuesFile    atomic.Pointer[queuefile.File]
	reloadMu      sync.Mutex
	devSecret     bool   // the auth secret is the one kept in the data dir
	webhookSecret []byte // --webhook-secret-file
}

// line is what openLine built: the line's store and what guards and
// watches it.
type line struct {
	store    queue.Store
	embedded *memstore.Store // the embedded line (closed last); nil on Redis
	redis    redis.UniversalClient
	// readyStore: readiness reads, never queued behind the auto-pipeline.
	readyStore queue.Inspector
	// loopStore is the store the admission and adaptive-rate loops call:
	// on Redis, without the auto-pipeline. A loop makes one call at a time,
	// which a pipeline cannot share, and its hops through the pipeline's
	// goroutines cost an idle instance about a third more CPU a call
	// (docs/benchmarks.md §6); its ticks then never queue behind requests.
	loopStore queue.Store
	breaker   *breaker.Breaker // the store's, per queue (the requests' calls go through it)
	degraded  *degraded.Policy // --on-store-error
	health    *watch.HealthCheck
	eviction  *evictionCheck      // nil on the embedded line
	admitter  *admission.Admitter // started with the loops; enters wake it
	signals   *signals.Line       // the service's and the admitter's, and the sale's metrics'
	operate   *operate.Operator   // the operator's calls, on the same signals
	audit     *staff.Auditor      // the audit log (staff_audit.go)
}

// Operator is the operator's calls on the line (configs, stats, stock,
// rollups, the list of queues), as the admin API makes them; nil before
// Run.
func (m *Main) Operator() *operate.Operator {
	if m.line == nil {
		return nil
	}
	return m.line.operate
}

// lineReader is the line read whole, the user's path and the operator's
// calls: the metrics and the shop's events read both.
type lineReader struct {
	*queue.Service
	*operate.Operator
}

// sale is what guardCalls and tellTheShop built: what watches the
// protected calls and the sale, and tells the shop.
type sale struct {
	telemetry *telemetry.Metrics
	// pending is what this instance observed for the sale's rows (admitted
	// users' waits, orders) until the detector's next pass writes it.
	pending    rollup.Pending
	rates      *admission.RateController
	guard      *spend.Guard
	orderStore order.Store // nil in gateway mode
	shop       shop
}

// shop is the shop's events (webhooks.go); instance names this process in
// its breakers' events.
type shop struct {
	webhooks *webhook.Sender
	direct   *events.Direct // what this instance alone tells (its breakers, whom it lets in)
	detector *events.Detector
	instance string
}

// served is what buildHTTP and listen built: the servers and what the
// pages read.
type served struct {
	bypass    *bypass.Rules   // --bypass
	ranges    *suspect.Ranges // --suspect-ranges; nil: none
	history   *watch.History
	server    *http.Server
	listener  net.Listener
	metrics   *http.Server // --metrics-addr; nil when /metrics is on the public listener
	metricsLn net.Listener
}

// running is what runs until Close: the server's goroutine, the loops, and
// Close's own once.
type running struct {
	serveDone chan struct{}
	serveErr  error
	stopLoops context.CancelFunc
	loopsDone sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
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
	if m.line, err = m.openLine(ctx); err != nil {
		return err
	}
	if err := m.applyQueuesFile(ctx); err != nil {
		return err
	}
	if m.sale, err = m.guardCalls(ctx); err != nil {
		return err
	}
	m.sale.shop = m.tellTheShop()
	if m.served, err = m.buildHTTP(); err != nil {
		return err
	}
	if err := m.listen(); err != nil {
		return err
	}
	m.startLoops(ctx)
	m.announce()
	return nil
}

// abandon undoes a start that failed half-way.
func (m *Main) abandon() {
	if m.served != nil && m.served.metrics != nil {
		m.served.metrics.Close()
	}
	m.closeStores()
}

// Close shuts down in order: stop admitting (nobody gets a token a draining
// instance can't serve), readiness false for the drain delay while still
// serving, then let in-flight requests finish within the shutdown timeout,
// wait for the admission loops, close stores.
func (m *Main) Close() error {
	m.run.closeOnce.Do(func() { m.run.closeErr = m.close() })
	return m.run.closeErr
}

func (m *Main) close() error {
	if m.run.stopLoops != nil {
		m.run.stopLoops()
	}
	if m.API != nil {
		m.API.SetDraining(true)
		// Keep serving while /readyz fails, long enough for load balancers
		// to notice and stop sending new requests here.
		time.Sleep(m.Config.DrainDelay)
	}
	var errs []error
	if m.served != nil && m.served.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
		defer cancel()
		if err := m.served.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if m.run.serveDone != nil { // nil when listening failed: nothing was served
			<-m.run.serveDone
		}
		if err := m.run.serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		m.API.FlushErrorLog()
	}
	if m.served != nil && m.served.metrics != nil {
		// Scraped to the end, then closed: nothing is in flight worth waiting for.
		errs = append(errs, m.served.metrics.Close())
	}
	m.run.loopsDone.Wait()
	errs = append(errs, m.closeStores())
	return errors.Join(errs...)
}

func (m *Main) closeStores() error {
	var errs []error
	if m.sale != nil && m.sale.orderStore != nil {
		errs = append(errs, m.sale.orderStore.Close())
		m.sale.orderStore = nil
	}
	if m.line != nil && m.line.redis != nil {
		errs = append(errs, m.line.redis.Close())
		m.line.redis = nil
	}
	if m.line != nil && m.line.embedded != nil {
		errs = append(errs, m.line.embedded.Close())
		m.line.embedded = nil
	}
	return errors.Join(errs...)
}
