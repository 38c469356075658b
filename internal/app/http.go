package app

// HTTP: the API, the gateway around it, the servers and the listeners (buildHTTP, listen).

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/bypass"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/gateway"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue/front"
	"github.com/waitroom/waitroom/internal/queue/watch"
	"github.com/waitroom/waitroom/internal/ratelimit"
	"github.com/waitroom/waitroom/internal/suspect"
	"github.com/waitroom/waitroom/internal/telemetry"
	"github.com/waitroom/waitroom/internal/web"
)

// buildHTTP builds the API (and, for proxy, the gateway around it) and the
// server that serves it, with every timeout set; /metrics goes on its own
// listener with --metrics-addr.
func (m *Main) buildHTTP() (s *served, err error) {
	s = &served{}
	c := m.Config
	metrics := promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
	publicMetrics := metrics
	if c.MetricsAddr != "" {
		publicMetrics = nil // only on the private listener
	}
	// The pages, the operator's templates among them: one that cannot work
	// stops the start here, naming its file and line.
	human, err := c.HumanChecker(m.Logger)
	if err != nil {
		return s, fmt.Errorf("--human-check-secret-file: %w", err)
	}
	site, err := web.New(web.Options{Base: c.prefix(), Gateway: c.Proxy, Dir: c.PageDir, HumanCheckOrigin: human.ScriptOrigin(),
		SignInOrigin: c.AdminOIDC.origin()})
	if err != nil {
		return s, fmt.Errorf("--page-dir: %w", err)
	}
	if c.PageDir != "" {
		m.Logger.Info("waiting page templates", "page_dir", c.PageDir, "templates", site.Templates())
	}
	s.history = watch.NewHistory(m.line.operate, c.HistoryInterval, historyKeep)
	proxies, _ := clientaddr.Parse(c.TrustedProxies) // validated with the config
	id := identity.NewWith([]byte(c.AuthSecret), identity.Options{SessionMaxAge: c.SessionMaxAge, SecureCookies: c.SecureCookies,
		Proxies: proxies, Audience: c.AuthAudience, Issuer: c.AuthIssuer, Now: m.Clock})
	signIn, err := m.adminSignIn(id, proxies)
	if err != nil {
		return s, err
	}
	if s.ranges, err = m.suspectRanges(); err != nil {
		return s, err
	}
	gate := m.newGatekeeper(proxies, s.ranges, human)
	// Read again: a value's file may have changed since Validate.
	if s.bypass, err = c.BypassRules(); err != nil {
		return s, fmt.Errorf("--bypass: %w", err)
	}
	m.sale.telemetry.BypassRules(s.bypass.Labels())
	drawnBy := participants(c)
	m.API = httpapi.New(httpapi.Options{
		Queue: m.Queue, Operate: m.line.operate, Orders: m.Orders, History: s.history, Identity: id, Gate: gate, Bypass: s.bypass, Degraded: m.line.degraded,
		// The key every instance shares already (sessions, challenges,
		// degraded tokens), under the tickets' own label: the gateway's
		// Ed25519 entry key may be random per process, and a page's ticket
		// must verify on whichever instance it reaches.
		Tickets:    front.NewTickets([]byte(c.AuthSecret)),
		AdminToken: c.AdminToken, Ready: m.ready, Logger: m.Logger,
		AdminSessions: sessionAuth(signIn), AdminSignIn: signInRoutes(signIn),
		Tokens: m.namedTokens(), Addresses: proxies, // issue 56: named tokens, and where an admin acted from
		NewQueueConfig: m.settings.newQueues, QueueConfigChanged: m.queueConfigChanged,
		Page: site,
		// The draws the admitter commits to and makes, as the store
		// keeps them, and the ids it draws people by.
		Draws: m.line.store, Participants: &drawnBy,
		// Handoff links' codes, kept by the line's store (issue 55).
		Handoffs: m.line.store,
		Audit:    m.line.audit, AuditLog: m.auditStore(m.line), // the audit log (issue 56)
		OpenAPI: waitroom.OpenAPI, Metrics: m.sale.telemetry, MetricsHandler: publicMetrics,
	})
	telemetry.RegisterHeld(m.Registry, m.API.Held)
	s.server = m.httpServer()
	if c.Proxy {
		if m.Gateway, err = m.newGateway(id, gate, proxies, s.bypass); err != nil {
			return s, err
		}
		s.server.Handler = m.Gateway
		// Uploads, downloads, streams and WebSockets pass through for as
		// long as they take; only a slow request head is cut off.
		s.server.ReadTimeout, s.server.WriteTimeout = 0, 0
	}
	if c.MetricsAddr != "" {
		return s, m.serveMetrics(s, metrics)
	}
	return s, nil
}

// httpServer is the server of m.API, with every timeout set.
func (m *Main) httpServer() *http.Server {
	return &http.Server{
		Handler:           m.API,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
}

// suspectRanges reads --suspect-ranges' files again (one may have changed
// since Validate); nil without any.
func (m *Main) suspectRanges() (*suspect.Ranges, error) {
	c := m.Config
	if len(c.SuspectRanges) == 0 {
		return nil, nil
	}
	ranges, err := suspect.NewRanges(c.SuspectRanges)
	if err != nil {
		return nil, fmt.Errorf("--suspect-ranges: %w", err)
	}
	m.Logger.Info("suspect address ranges", "files", c.SuspectRanges, "ranges", ranges.Len())
	return ranges, nil
}

// listen opens --addr and serves on it.
func (m *Main) listen() (err error) {
	if m.served.listener, err = net.Listen("tcp", m.Config.Addr); err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	m.run.serveDone = make(chan struct{})
	go func() {
		defer close(m.run.serveDone)
		m.run.serveErr = m.served.server.Serve(m.served.listener)
	}()
	return nil
}

// newGatekeeper builds who may take a place from the config (its auth secret made
// up already): challenges signed with the auth secret, the per-address
// limits (reported in the metrics), the client address behind the trusted
// proxies.
func (m *Main) newGatekeeper(addrs clientaddr.Resolver, ranges *suspect.Ranges, human *humancheck.Checker) *gatekeeper.Gatekeeper {
	c := m.Config
	entries := ratelimit.New(ratelimit.Limit{Rate: c.AddressEntryRate, Burst: c.AddressEntryBurst}, m.Clock)
	sessions := ratelimit.New(ratelimit.Limit{Rate: c.AddressSessionRate, Burst: c.AddressSessionBurst}, m.Clock)
	telemetry.RegisterAddressLimits(m.Registry, map[string]telemetry.AddressLimit{"entries": entries, "sessions": sessions})
	base := c.prefix()
	tally := events.NewSuspectTally(&m.sale.pending) // the sale's rows: its Likely bots
	return gatekeeper.New(gatekeeper.Options{
		Queue:          m.Queue,
		Claims:         m.line.operate,
		Challenges:     challenge.NewIssuer([]byte(c.AuthSecret), m.Clock),
		Entries:        entries,
		Sessions:       sessions,
		Addresses:      addrs,
		ChallengeURL:   func(q string) string { return base + "/api/v1/queues/" + q + "/challenge" },
		BotScoreHeader: c.BotScoreHeader, BotScoreBelow: c.BotScoreBelow, Ranges: suspectRanges(ranges),
		PollRate: pollRate(c.SuspectPollFactor), MarkKey: markKey(c.AuthSecret),
		Metrics: m.sale.telemetry, Logger: m.Logger, Clock: m.Clock,
		Tally: func(q string, signals []string, action string) { tally.Count(q, signals, suspect.Action(action)) },
		Human: human,
	})
}

// suspectRanges is the ranges as the gatekeeper takes them: none when nil
// (a nil *suspect.Ranges in the interface would be called).
func suspectRanges(r *suspect.Ranges) gatekeeper.Ranges {
	if r == nil {
		return nil
	}
	return r
}

// markKey keys the hash a suspect's address is kept and logged by: the
// auth secret every instance shares, under a label of its own.
func markKey(secret string) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte("waitroom-suspect-address"))
	return h.Sum(nil)
}

// newGateway builds gateway mode around the API: the upstream, its
// protected routes and the key that signs X-Waitroom-Entry.
func (m *Main) newGateway(id *identity.Identity, gate *gatekeeper.Gatekeeper, proxies clientaddr.Resolver, bp *bypass.Rules) (*gateway.Gateway, error) {
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
		API: m.API, Identity: id, Gate: gate, Queue: m.Queue, Operate: m.line.operate, Guard: m.sale.guard, Signer: signer, Metrics: m.sale.telemetry,
		EntryIssuer: c.EntryIssuer, EntryAudience: c.EntryAudience,
		Proxies: proxies, ScoreHeader: c.BotScoreHeader, Bypass: bp, Degraded: m.line.degraded, AdminToken: c.AdminToken, Logger: m.Logger,
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
func (m *Main) serveMetrics(s *served, metrics http.Handler) error {
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
	s.metricsLn = ln
	s.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn)}
	go s.metrics.Serve(ln)
	return nil
}

// MetricsAddr is the address /metrics is served on apart from the API
// (--metrics-addr; "" when it is served on the API's listener).
func (m *Main) MetricsAddr() string {
	if m.served == nil || m.served.metricsLn == nil {
		return ""
	}
	return m.served.metricsLn.Addr().String()
}

// historyKeep is how much of the admin chart's history each instance keeps
// (the chart shows 5 minutes).
const historyKeep = 10 * time.Minute

// Addr is the address the server listens on (useful with :0).
func (m *Main) Addr() string {
	if m.served == nil || m.served.listener == nil {
		return ""
	}
	a := m.served.listener.Addr().(*net.TCPAddr)
	if a.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", a.Port)
	}
	return a.String()
}

// Done is closed when the server stops serving, by Close or by itself.
func (m *Main) Done() <-chan struct{} { return m.run.serveDone }

// pollRate watches the sessions' polling for --suspect-poll-factor (nil,
// not a nil *suspect.PollRates in the interface, when it is off).
func pollRate(factor float64) gatekeeper.PollRate {
	if factor == 0 {
		return nil
	}
	return suspect.NewPollRate(suspect.DefaultPollWindow, factor)
}
