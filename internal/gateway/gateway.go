// Package gateway is `waitroom proxy`: the waiting line in front of any
// HTTP backend, so a shop whose checkout is Spring, Rails, Node or PHP can
// adopt it without rewriting anything.
//
// Every request is forwarded to the upstream untouched (streamed, WebSocket
// upgrades included) except three kinds:
//   - waitroom's own API, pages, admin, metrics and probes, served under a
//     prefix (/_waitroom);
//   - protected routes (--protect), which need a valid entry token and
//     spend it when the upstream answers 2xx, with the same rules as the
//     built-in order API (package spend): one use at a time, kept on any
//     failure;
//   - session-protected routes (--protect-session), which need a valid
//     entry token and keep it, for the pages of a multi-step checkout.
//
// A request a --bypass rule lets through (staff, a monitor) reaches either
// kind of protected route without an entry; the rules' secret headers are
// stripped from every request forwarded.
//
// Under --on-store-error admit, a protected request whose queue's store
// does not answer (its breaker is open, or the call just failed) is
// forwarded without an entry, marked X-Waitroom-Degraded:
// store-unavailable; under wait it answers 503 + Retry-After. Only the
// gateway writes that header: a client's is stripped with every other
// X-Waitroom-* header.
//
// A protected request carries upstream who the user is (X-Waitroom-User)
// and an entry the backend can verify offline (X-Waitroom-Entry, an EdDSA
// JWT whose keys are served at {prefix}/.well-known/jwks.json, naming the
// gateway, the backend and the route it was checked for). A request
// without a valid entry is let straight in while the line is quiet; else a
// browser is sent to the waiting page and back once admitted, and an API
// client is told where to join.
//
// The files follow a request: gateway.go builds the Gateway and routes a
// request; canonical.go reads it one way (path.go, readings.go, method.go,
// headers.go) and routes.go matches it; judge.go judges it and hands what
// it lets on to an onward step, forwarding.go's (`waitroom proxy`) or
// authz.go's (the decision); protected.go is a protected route's flow,
// with cookies.go, returnpath.go and entryjwt.go; commands.go carries out
// what the upstream answers in X-Waitroom-Command.
package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/bypass"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/spend"
	"github.com/waitroom/waitroom/internal/telemetry"
)

// DefaultPrefix is where waitroom's own routes live in gateway mode.
const DefaultPrefix = "/_waitroom"

// Errors of gateway mode; the API answers them from its one table, as it
// answers every error.
var (
	// ErrUpstreamUnavailable: the backend could not be reached or broke
	// the connection (502).
	ErrUpstreamUnavailable = errors.New("upstream unavailable")
	// ErrUpstreamTimeout: the backend did not answer in time (504).
	ErrUpstreamTimeout = errors.New("upstream did not answer in time")
	// ErrUnsafeReturn: a return target that is not a path on this origin.
	ErrUnsafeReturn = errors.New("return target must be a path on this site")
	// ErrAmbiguousRoute: backends may read the request as two different
	// protected routes, so it is not forwarded with an entry for one.
	ErrAmbiguousRoute = errors.New("the request may be read as either of two protected routes")
	// ErrRequestTarget: a request target the gateway does not forward (an
	// absolute URL, which only forward proxies take).
	ErrRequestTarget = errors.New("request target not accepted")
)

// API is what the gateway needs of waitroom's own HTTP API (httpapi.Server):
// it serves the API, pages and admin under the prefix, takes the gateway's
// own routes there, and answers every error.
type API interface {
	http.Handler
	Handle(pattern string, h http.HandlerFunc)
	WriteError(w http.ResponseWriter, r *http.Request, err error)
}

// Options configures a Gateway.
type Options struct {
	// Upstream is the backend: an absolute http or https URL. A path in it
	// is put before every forwarded request's path.
	Upstream *url.URL
	// Routes are the protected routes.
	Routes []Route
	// Reading describes how the backend reads requests: case, hosts, the
	// method overrides it honours, the loosenings of the path checks.
	Reading Reading
	// Prefix is where waitroom's own routes are served (DefaultPrefix).
	Prefix string
	// UpstreamTimeout bounds the wait for the upstream's response headers.
	UpstreamTimeout time.Duration
	// API is waitroom's own HTTP API, pages and admin, served under Prefix
	// (gateway adds its routes to it); it also answers every error.
	API      API
	Identity *identity.Identity
	// Metrics records the forwarded requests (nil records nothing).
	Metrics *telemetry.Metrics
	// Gate applies the queues' join policies and per-address limits to
	// the sessions the gateway hands out and the users it lets straight in.
	Gate  *gatekeeper.Gatekeeper
	Queue *queue.Service
	// Operate tells the queue what it has left to sell (the sold-out and
	// restock commands).
	Operate *operate.Operator
	Guard   *spend.Guard
	Signer  *Signer
	// EntryIssuer and EntryAudience are X-Waitroom-Entry's iss and aud
	// (--entry-issuer, --entry-audience); by default the prefix and the
	// upstream's URL.
	EntryIssuer, EntryAudience string
	// Proxies are the trusted proxies (--trusted-proxies): only what they
	// say in Forwarded and X-Forwarded-* is passed on.
	Proxies clientaddr.Resolver
	// ScoreHeader names the header in which the edge gives its bot score
	// (--bot-score-header; empty: none). It is believed only from Proxies,
	// so only theirs is forwarded: a client's own copy is removed, and the
	// backend sees the score waitroom judged the request by, or none.
	ScoreHeader string
	// Bypass lets staff and monitors through protected routes without an
	// entry (--bypass; nil: nobody); its headers never reach the upstream.
	Bypass *bypass.Rules
	// Degraded is --on-store-error (nil: wait): under admit, protected
	// requests whose queue's store is away are forwarded without an entry.
	Degraded *degraded.Policy
	// AdminToken is waitroom's admin token (--admin-token; empty: admin
	// disabled): a request outside the prefix that carries it in any
	// header is refused, never forwarded (admintoken.go).
	AdminToken string
	Logger     *slog.Logger
}

// Gateway is the http.Handler of `waitroom proxy`.
type Gateway struct {
	o      Options
	routes *routes
	api    http.Handler
	proxy  *httputil.ReverseProxy
	// upstream tells readiness whether the upstream can be reached.
	upstream *upstreamHealth
	// secrets are the bypass rules' headers, stripped from every request
	// forwarded.
	secrets []string
	// adminToken is Options.AdminToken, as carriesToken compares it.
	adminToken []byte
	// stock is what the upstream's commands last told each queue, so that
	// a backend repeating a command on every answer is not logged each time.
	stock stockTold
}

// EntryCookiePrefix starts the name of the cookie that carries a browser's
// entry token for one queue (wr_entry_default).
const EntryCookiePrefix = "wr_entry_"

// New checks the options and builds the Gateway.
func New(o Options) (*Gateway, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := ValidPrefix(o.Prefix); err != nil {
		return nil, fmt.Errorf("--prefix %q: %w", o.Prefix, err)
	}
	if err := ValidUpstream(o.Upstream); err != nil {
		return nil, fmt.Errorf("--upstream: %w", err)
	}
	o.EntryIssuer = cmp.Or(o.EntryIssuer, o.Prefix)
	o.EntryAudience = cmp.Or(o.EntryAudience, o.Upstream.String())
	rt, err := newRoutes(o.Routes, o.Prefix, o.Reading)
	if err != nil {
		return nil, fmt.Errorf("--protect: %w", err)
	}
	g := &Gateway{o: o, routes: rt, api: http.StripPrefix(o.Prefix, o.API), upstream: newUpstreamHealth(o.Upstream),
		secrets: o.Bypass.Headers(), adminToken: []byte(o.AdminToken)}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = o.UpstreamTimeout
	// Bytes pass as they are: no gzip added and undone on the way.
	transport.DisableCompression = true
	// One upstream takes every request: keep enough connections warm.
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 1024, 1024
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { g.rewrite(pr, judgment{}) },
		Transport:      g.upstream.track(transport),
		BufferPool:     bufferPool{},
		ErrorHandler:   func(w http.ResponseWriter, r *http.Request, err error) { g.upstreamFailed(w, r, err, nil) },
		ModifyResponse: func(resp *http.Response) error { return g.command(resp, nil) },
		ErrorLog:       slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	o.API.Handle("GET /.well-known/jwks.json", g.jwks)
	o.API.Handle("GET /return", g.returnTo)
	return g, nil
}

// ValidUpstream checks --upstream: an absolute http(s) URL with a host and
// nothing a path prefix cannot carry.
func ValidUpstream(u *url.URL) error {
	switch {
	case u == nil:
		return errors.New("required: the backend's URL, e.g. http://127.0.0.1:3000")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: want an http:// or https:// URL", u.String())
	case u.Host == "":
		return fmt.Errorf("%q: no host", u.String())
	case u.User != nil, u.RawQuery != "", u.Fragment != "":
		return fmt.Errorf("%q: no user info, query or fragment", u.String())
	}
	return nil
}

// ServeHTTP routes a request: waitroom's own under the prefix, a protected
// route through the line, everything else straight to the upstream. What
// goes upstream is the request as the gateway read it (routes.match): one
// that cannot be read one way is refused first.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if absoluteForm(r) {
		g.o.API.WriteError(w, r, fmt.Errorf("%w: send the path (%s), not a whole URL", ErrRequestTarget, r.URL.RequestURI()))
		return
	}
	if underPrefix(r.URL.Path, g.o.Prefix) {
		if name, ok := strings.CutPrefix(r.URL.Path, g.o.Prefix+AuthzPath); ok {
			g.decide(w, r, name)
			return
		}
		g.api.ServeHTTP(w, r)
		return
	}
	g.judge(w, r, forwarder{g})
}
