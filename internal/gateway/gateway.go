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
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/breaker"
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
		Rewrite:        g.rewrite,
		Transport:      g.upstream.track(transport),
		BufferPool:     bufferPool{},
		ErrorHandler:   g.upstreamFailed,
		ModifyResponse: g.command,
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
	g.judge(w, r)
}

// judge is the one place a request outside the prefix is read and judged,
// for `waitroom proxy` and for the decision a proxy in front asks for
// (authz.go) alike: refused, waitroom's own, protected or open. Where the
// judgment lets a request on, onward forwards it (proxy) or says so
// (decision).
func (g *Gateway) judge(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusRecorder{ResponseWriter: w}
	_, deciding := r.Context().Value(decisionKey{}).(*asker)
	route, label := "proxy", "" // a decision's labels start "authz "
	if deciding {
		route, label = "authz", "authz "
	}
	j, v, ref := g.routes.match(r)
	if ref == nil && deciding {
		ref = g.asForwarded(r, j)
	}
	if ref == nil && !deciding && !underPrefix(j.path, g.o.Prefix) { // a decision's is asForwarded's
		ref = g.adminTokenRefusal(r)
	}
	switch {
	case ref != nil:
		route = label + "refused"
		g.o.API.WriteError(sw, r, ref)
	case underPrefix(j.path, g.o.Prefix) && !deciding: // "/x/../_waitroom/…"
		g.api.ServeHTTP(w, asJudged(r, j))
		return
	default:
		if !deciding {
			r = asJudged(r, j)
			dropUpgrade(r.Header)
		}
		if v.protected {
			route = label + "protected " + v.route.Pattern
			g.protected(sw, r, v)
		} else {
			g.onward(sw, r)
		}
	}
	g.o.Metrics.ObserveHTTP(route, sw.final(r), time.Since(start))
}

// asJudged is r as the gateway read it: its method upper-cased, its path
// canonical, its query without the overrides the backend does not honour.
// A request already so (nearly all) is r itself.
func asJudged(r *http.Request, j judged) *http.Request {
	if r.Method == j.method && r.URL.RawQuery == j.rawQuery && (j.path == "*" || r.URL.EscapedPath() == j.path) {
		return r
	}
	out := new(http.Request)
	*out = *r
	u := *r.URL
	out.URL, out.Method = &u, j.method
	if j.path != "*" {
		u.Path, _ = url.PathUnescape(j.path) // the gateway's own escaping: it decodes
		u.RawPath = j.path
	}
	u.RawQuery = j.rawQuery
	out.RequestURI = u.RequestURI()
	return out
}

// dropUpgrade removes an Upgrade to anything but WebSocket (h2c, TLS…):
// the request goes on as a plain HTTP/1.1 one. Only a WebSocket handshake
// is a request the gateway has read; what follows it is the backend's.
func dropUpgrade(h http.Header) {
	up := h["Upgrade"]
	if len(up) == 0 || len(up) == 1 && strings.EqualFold(strings.TrimSpace(up[0]), "websocket") {
		return
	}
	delete(h, "Upgrade")
	delete(h, "Http2-Settings")
}

// absoluteForm reports a request whose target is a whole URL ("POST
// http://host/path"): Go's server has already dropped the Host header it
// came with, so the gateway cannot check which host a backend would take
// it for, and refuses it. Browsers send one only to a forward proxy, which
// this is not.
func absoluteForm(r *http.Request) bool { return r.URL.Scheme != "" || r.URL.Host != "" }

// entryKey carries a protected request's entry to rewrite.
type entryKey struct{}

type forwarded struct {
	user, header string
	// entry is the token the request is a use of.
	entry spend.Token
	// failure is what upstreamFailed saw, for the token's outcome.
	failure spend.Outcome
	failed  bool
}

// CommandHeader is what the upstream answers to tell waitroom something,
// on any answer, with any status; the gateway reads it and removes it, in
// every spelling, before the client sees it. Its commands, comma-separated:
//
//	release                         end this request's entry at once (a protected route)
//	sold-out [; queue=Q]            the queue has nothing left to sell
//	restock [; units=N] [; queue=Q] it has again: N units, or a count not known
//
// The queue is Q, else the protected route's the request took, else the
// one queue the routes name.
const CommandHeader = "X-Waitroom-Command"

// command reads and removes the upstream's CommandHeader from every
// response it forwards and carries out its commands before the answer goes
// on (the proxy calls it before it copies a byte of the answer to the
// client): a client that has read any of an answer carrying "release" can
// no longer use the entry it released, and one told of "sold-out" finds the
// queue sold out.
func (g *Gateway) command(resp *http.Response) error {
	f, _ := resp.Request.Context().Value(entryKey{}).(*forwarded)
	for k, vs := range resp.Header {
		if !sameHeader(k, CommandHeader) {
			continue
		}
		for _, v := range vs {
			for c := range strings.SplitSeq(v, ",") {
				g.run(resp.Request.Context(), parseCommand(c), f)
			}
		}
		delete(resp.Header, k)
	}
	return nil
}

// upstreamCommand is one command of CommandHeader.
type upstreamCommand struct {
	name, queue string
	units       int64
	hasUnits    bool
	bad         string // why it cannot be carried out
}

// parseCommand reads "name; key=value; …".
func parseCommand(s string) upstreamCommand {
	parts := strings.Split(s, ";")
	c := upstreamCommand{name: strings.ToLower(strings.TrimSpace(parts[0]))}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v); k {
		case "queue":
			c.queue = v
		case "units":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				c.bad = fmt.Sprintf("units=%q: want a whole number, 0 or more", v)
			}
			c.units, c.hasUnits = n, true
		default:
			c.bad = fmt.Sprintf("unknown parameter %q", k)
		}
	}
	return c
}

// run carries out one upstream command; f is the entry of the request it
// answered (nil: an unprotected route, or no entry). A command that cannot
// be carried out is logged: the answer goes on.
func (g *Gateway) run(ctx context.Context, c upstreamCommand, f *forwarded) {
	if c.name == "" {
		return
	}
	if c.name == "release" {
		if f == nil {
			return
		}
		// The in-flight lock of the use under way stays its own: the
		// use ends as it would have, with nothing left to spend.
		if err := g.o.Guard.Release(context.WithoutCancel(ctx), f.entry); err != nil {
			// The entry stays until it expires: the store is down.
			g.o.Logger.Warn("gateway: the upstream's release of an entry failed", "queue", f.entry.Queue, "err", err)
		}
		return
	}
	q := c.queue
	if q == "" && f != nil {
		q = f.entry.Queue
	}
	if q == "" {
		q = g.onlyQueue()
	}
	var st queue.Stock
	switch {
	case c.bad != "":
	case c.name == "sold-out" && !c.hasUnits:
		st = queue.Stock{Known: true}
	case c.name == "restock" && c.hasUnits:
		st = queue.Stock{Known: true, Units: c.units}
	case c.name == "restock":
		st = queue.Stock{}
	default:
		c.bad = "unknown command"
	}
	if c.bad == "" && q == "" {
		c.bad = "no queue: name one with ; queue=NAME (the request took no protected route, and the routes name several queues)"
	}
	if c.bad != "" {
		g.o.Logger.Warn("gateway: the upstream's "+CommandHeader+" cannot be carried out", "command", c.name, "why", c.bad)
		return
	}
	now, err := g.o.Operate.SetStock(context.WithoutCancel(ctx), q, st, false)
	if err != nil {
		g.o.Logger.Warn("gateway: the upstream's "+CommandHeader+" failed", "command", c.name, "queue", q, "err", err)
		return
	}
	g.logStockChanged(ctx, q, c.name, now)
}

// onlyQueue is the one queue the protected routes name, or "" when they
// name several (or none).
func (g *Gateway) onlyQueue() string {
	only := ""
	for _, rt := range g.o.Routes {
		if only != "" && rt.Queue != only {
			return ""
		}
		only = rt.Queue
	}
	return only
}

// rewrite prepares the outbound request: the upstream's address; the
// forwarding headers of one more hop; none of the client's X-Waitroom-*
// headers nor waitroom's own credentials (the entry token, the bypass
// rules' secret headers, the wr_entry_* and wr_session cookies); and on a
// protected route who the user is and the signed entry, or the bypass rule
// that let the request through.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.o.Upstream)
	pr.Out.Host = pr.In.Host // as the client sent it: the backend's links stay right
	out := pr.Out.Header
	trusted := g.o.Proxies.FromTrusted(pr.In)
	for k := range out {
		// Names are compared with "_" as "-": CGI-style servers read
		// X_Waitroom_User as HTTP_X_WAITROOM_USER.
		switch {
		case hasHeaderPrefix(k, "X-Waitroom-"), sameHeader(k, "X-Entry-Token"), g.secret(k):
			delete(out, k)
		case isForwardingHeader(k) && (!trusted || strings.IndexByte(k, '_') >= 0):
			delete(out, k) // only a trusted proxy's, and never a spelling no proxy writes
		case isMethodOverrideHeader(k) && !g.honoured(k), isPathOverrideHeader(k):
			delete(out, k) // the method and path are the ones the gateway judged
		}
	}
	g.forwardedFor(pr, trusted)
	stripOwnCookies(out)
	judgment(pr.In.Context(), out)
}

// judgment sets in h what the gateway tells the upstream of a request it
// let on, from what judge put in its context: on a protected route who the
// user is and the signed entry, or the bypass rule that let it through, or
// that it went without the line (degraded). The proxy sets them on the
// request it forwards; a decision sends them to the proxy that asked.
func judgment(ctx context.Context, h http.Header) {
	if f, ok := ctx.Value(entryKey{}).(*forwarded); ok {
		h.Set("X-Waitroom-User", f.user)
		h.Set("X-Waitroom-Entry", f.header)
	}
	if rule, ok := ctx.Value(bypassKey{}).(string); ok {
		h.Set("X-Waitroom-Bypass", rule)
	}
	if ctx.Value(degradedKey{}) != nil {
		h.Set(degraded.Header, degraded.HeaderValue)
	}
}

// secret reports one of the bypass rules' headers, in any spelling a
// backend may read as it.
func (g *Gateway) secret(k string) bool {
	for _, s := range g.secrets {
		if sameHeader(k, s) {
			return true
		}
	}
	return false
}

// bypassKey carries the label of the bypass rule that let a protected
// request through, for rewrite.
type bypassKey struct{}

// degradedKey marks a protected request forwarded without an entry because
// its queue's store is away (--on-store-error admit), for rewrite.
type degradedKey struct{}

// forwardingHeaders are the headers proxies and CDNs write to say where a
// request came from and how. Backends build absolute URLs (password-reset
// links included) from them, and trust the client address in them.
var forwardingHeaders = []string{
	"Forwarded", "X-Forwarded", "Forwarded-For", "X-Real-IP", "X-Client-IP", "Client-IP", "True-Client-IP",
	"CF-Connecting-IP", "Fastly-Client-IP", "X-Cluster-Client-IP", "X-Original-Forwarded-For", "X-Originating-IP",
	"X-Remote-IP", "X-Remote-Addr", "X-ProxyUser-Ip", "Front-End-Https", "X-Url-Scheme",
	"X-Host", "X-Original-Host", "X-HTTP-Host-Override",
}

// isForwardingHeader: one of forwardingHeaders or X-Forwarded-*, in any
// spelling a backend reads as it.
func isForwardingHeader(k string) bool {
	if hasHeaderPrefix(k, "X-Forwarded-") {
		return true
	}
	for _, h := range forwardingHeaders {
		if sameHeader(k, h) {
			return true
		}
	}
	return false
}

// isPathOverrideHeader: a header some backends take the path from instead
// of the request line (IIS's URL Rewrite, Symfony before 4.1.3, Zend): the
// path forwarded is the one the gateway judged, so these never pass.
func isPathOverrideHeader(k string) bool {
	return sameHeader(k, "X-Original-URL") || sameHeader(k, "X-Rewrite-URL")
}

// honoured reports an override header the backend honours
// (--method-override): it is forwarded, read as the backend reads it.
func (g *Gateway) honoured(k string) bool {
	for _, h := range g.routes.reader.overrideHeaders {
		if sameHeader(k, h) {
			return true
		}
	}
	return false
}

// forwardedFor sets the forwarding headers of this hop. From a trusted
// proxy what it said is kept and this hop added (X-Forwarded-For and
// Forwarded grow by one; its X-Forwarded-Host and -Proto stand). From
// anyone else they are the gateway's own: the client's address, the Host
// it asked for, the scheme it came by.
func (g *Gateway) forwardedFor(pr *httputil.ProxyRequest, trusted bool) {
	in, out := pr.In.Header, pr.Out.Header
	ip := ""
	if host, _, err := net.SplitHostPort(pr.In.RemoteAddr); err == nil {
		ip = host
	}
	scheme := "http" // of this hop
	if pr.In.TLS != nil {
		scheme = "https"
	}
	xff, host, proto := []string{ip}, pr.In.Host, scheme
	if trusted {
		xff = append(in.Values("X-Forwarded-For"), ip)
		host = cmp.Or(in.Get("X-Forwarded-Host"), host)
		proto = cmp.Or(in.Get("X-Forwarded-Proto"), proto)
	}
	out.Set("X-Forwarded-For", strings.Join(xff, ", "))
	out.Set("X-Forwarded-Host", host)
	out.Set("X-Forwarded-Proto", proto)
	// Forwarded (RFC 7239): a trusted proxy's elements and this hop's; from
	// anyone else this hop's alone. A trusted proxy that sent none gets
	// none added, or a backend preferring Forwarded would read this hop's
	// plain http over the proxy's X-Forwarded-Proto.
	self := forwardedElement(ip, pr.In.Host, scheme)
	switch prior := in.Values("Forwarded"); {
	case !trusted:
		out.Set("Forwarded", self)
	case len(prior) > 0:
		out["Forwarded"] = []string{strings.Join(prior, ", ") + ", " + self}
	}
}

// forwardedElement is one hop of a Forwarded header.
func forwardedElement(ip, host, proto string) string {
	if strings.Contains(ip, ":") {
		ip = `"[` + ip + `]"`
	}
	return "for=" + ip + ";host=" + strconv.Quote(host) + ";proto=" + proto
}

// stripOwnCookies removes waitroom's cookies from the Cookie header: the
// backend gets the signed entry instead of the token, and has no use for
// the session. Cookie headers without them pass byte for byte.
func stripOwnCookies(h http.Header) {
	vs := h["Cookie"]
	var kept []string
	changed := false
	for _, v := range vs {
		if !containsFold(v, "wr_") {
			kept = append(kept, v)
			continue
		}
		var parts []string
		for part := range strings.SplitSeq(v, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			if strings.EqualFold(name, identity.CookieName) || hasFoldPrefix(name, EntryCookiePrefix) {
				changed = true
				continue
			}
			parts = append(parts, strings.TrimSpace(part))
		}
		if len(parts) > 0 {
			kept = append(kept, strings.Join(parts, "; "))
		}
	}
	switch {
	case !changed:
	case len(kept) == 0:
		delete(h, "Cookie")
	default:
		h["Cookie"] = kept
	}
}

func hasFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// upstreamFailed answers when the upstream could not be reached or did not
// answer in time: 502 or 504 JSON, and the token, if any, is kept.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	f, _ := r.Context().Value(entryKey{}).(*forwarded)
	var ne net.Error
	switch {
	case r.Context().Err() != nil: // the client left
		err = context.Canceled
		if f != nil {
			f.failure, f.failed = spend.Refused, true
		}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("%w: %v", ErrUpstreamTimeout, err)
		if f != nil {
			f.failure, f.failed = spend.TimedOut, true
		}
	default:
		err = fmt.Errorf("%w: %v", ErrUpstreamUnavailable, err)
		if f != nil {
			f.failure, f.failed = spend.Failed, true
		}
	}
	g.o.API.WriteError(w, r, err)
}

// protected serves a protected route: with a valid entry, forward it under
// the token rules; without one, let the user straight in if the line is
// quiet and the queue's join policy allows it, or send them to the line.
// A request that backends may read as two different protected routes is
// answered as any other without an entry, and refused where it would be
// forwarded: the entry was checked for one route, the backend may run the
// other.
func (g *Gateway) protected(w *statusRecorder, r *http.Request, v verdict) {
	rt := v.route
	if g.passes(w, r, rt) {
		return
	}
	ambiguous := func() bool {
		if v.other == "" {
			return false
		}
		g.o.API.WriteError(w, r, fmt.Errorf("%w: %q and %q; send the plain path and method of the one you mean", ErrAmbiguousRoute, rt.Pattern, v.other))
		return true
	}
	caller, err := g.o.Identity.Caller(r)
	if err != nil {
		if !errors.Is(err, identity.ErrUnauthenticated) || !wantsHTML(r) {
			g.o.API.WriteError(w, r, err)
			return
		}
		// A browser's first visit: the anonymous session the waiting page
		// would give it (within the address's share of new sessions), so a
		// quiet line can let it straight through where the policy allows.
		if err := g.o.Gate.NewSession(g.o.Gate.Address(r)); err != nil {
			g.o.API.WriteError(w, r, err)
			return
		}
		var value string
		caller.User, value = g.o.Identity.NewSession()
		http.SetCookie(w, g.o.Identity.Cookie(r, value))
	}
	user := caller.User
	if token := entryToken(r, rt.Queue); token != "" {
		if ambiguous() {
			return
		}
		err := g.forward(w, r, rt, user, token)
		if err == nil {
			return
		}
		if !errors.Is(err, queue.ErrTokenInvalid) {
			g.storeFailed(w, r, err)
			return
		}
	}
	// No valid entry. A quiet line lets the user straight in, if the
	// queue's policy lets them in without the waiting page (an anonymous
	// session under "challenge" solves its challenge there).
	may, err := g.o.Gate.MayAdmitNow(r.Context(), rt.Queue, caller, g.o.Gate.Address(r))
	if err != nil {
		g.storeFailed(w, r, err)
		return
	}
	if !may {
		g.sendToLine(w, r, rt)
		return
	}
	if ambiguous() {
		return
	}
	admitted, err := g.o.Queue.AdmitNow(r.Context(), rt.Queue, user)
	if err != nil {
		g.storeFailed(w, r, err)
		return
	}
	if admitted.State == queue.Ready {
		http.SetCookie(w, g.entryCookie(r, rt.Queue, admitted.Token, admitted.ExpiresAt))
		if err := g.forward(w, r, rt, user, admitted.Token); err != nil {
			g.o.API.WriteError(w, r, err)
		}
		return
	}
	g.sendToLine(w, r, rt)
}

// passes forwards a protected request that needs no entry, and reports
// whether it did: one a --bypass rule lets through (staff, a monitor:
// no entry, no token spent, nothing the admission rate follows), or under
// --on-store-error admit one whose queue's store is away (its breaker
// open: no call to it would answer before its timeout, so nothing is
// asked of it); under wait such a request is answered 503 at once.
func (g *Gateway) passes(w *statusRecorder, r *http.Request, rt Route) bool {
	if rule, ok := g.o.Bypass.Match(r, rt.Queue); ok {
		g.o.Metrics.Bypassed(rule)
		g.onward(w, r.WithContext(context.WithValue(r.Context(), bypassKey{}, rule)))
		return true
	}
	if g.o.Degraded.AdmitNow(rt.Queue) {
		g.forwardDegraded(w, r)
		return true
	}
	if g.o.Degraded.RefuseNow(rt.Queue) {
		g.o.API.WriteError(w, r, breaker.ErrOpen)
		return true
	}
	return false
}

// storeFailed answers a protected request that was not forwarded because
// of err: when the store failed under --on-store-error admit it is
// forwarded degraded after all, else err is the answer (the store's
// failure: 503 + Retry-After).
func (g *Gateway) storeFailed(w *statusRecorder, r *http.Request, err error) {
	if g.o.Degraded.Admits() && errors.Is(err, queue.ErrUnavailable) {
		g.forwardDegraded(w, r)
		return
	}
	g.o.API.WriteError(w, r, err)
}

// forwardDegraded forwards a protected request without an entry, marked
// X-Waitroom-Degraded (--on-store-error admit): no token is asked for or
// spent, and the backend gets neither X-Waitroom-User nor
// X-Waitroom-Entry. It is counted, not logged: the breaker logs the
// outage once.
func (g *Gateway) forwardDegraded(w *statusRecorder, r *http.Request) {
	g.o.Metrics.Degraded("gateway")
	g.onward(w, r.WithContext(context.WithValue(r.Context(), degradedKey{}, true)))
}

// forward sends a request with a valid entry upstream: as a use of the
// token (consumed on 2xx, kept otherwise) on a --protect route, as a mere
// check on a --protect-session route; an upstream answering
// X-Waitroom-Command: release ends the entry at once, whatever its status.
// It returns an error only when the request was not forwarded (the token
// invalid or in use, the store down).
func (g *Gateway) forward(w *statusRecorder, r *http.Request, rt Route, user, token string) error {
	header, err := g.o.Signer.Sign(Entry{Issuer: g.o.EntryIssuer, Audience: g.o.EntryAudience, User: user,
		Queue: rt.Queue, Route: rt.Pattern, ID: EntryID(rt.Queue, user, token)}, time.Now())
	if err != nil {
		return err
	}
	t := spend.Token{Queue: rt.Queue, User: user, Value: token}
	f := &forwarded{user: user, header: header, entry: t}
	r = r.WithContext(context.WithValue(r.Context(), entryKey{}, f))
	var aborted any
	call := func(context.Context) (o spend.Outcome) {
		// The proxy aborts the connection with a panic when the answer
		// breaks off after its status went out: the client did not get it
		// whole, so the token is kept whatever the status said; then the
		// panic goes on.
		defer func() {
			if v := recover(); v != nil {
				aborted, o = v, spend.Failed
			}
		}()
		g.onward(w, r)
		if r.Header.Get("Upgrade") == "" { // an upgraded connection is the backend's
			if err := http.NewResponseController(w).Flush(); err != nil {
				return spend.Failed // the end of the answer did not reach the client
			}
		}
		return outcomeOf(f, w.status)
	}
	if rt.Consume {
		err = g.o.Guard.Use(r.Context(), t, call)
	} else {
		err = g.o.Guard.Check(r.Context(), t, call)
	}
	if aborted != nil {
		panic(aborted)
	}
	return err
}

// outcomeOf reads how a forwarded call ended: the failure the proxy met,
// else the upstream's status (2xx succeeded, 5xx failed, else refused).
func outcomeOf(f *forwarded, status int) spend.Outcome {
	switch {
	case f.failed:
		return f.failure
	case status >= 200 && status < 300:
		return spend.Succeeded
	case status >= 500:
		return spend.Failed
	}
	return spend.Refused
}

// sendToLine answers a request without an entry while the line is busy: a
// browser goes to the waiting page (and comes back here once admitted), an
// API client is told where to join.
func (g *Gateway) sendToLine(w http.ResponseWriter, r *http.Request, rt Route) {
	if wantsHTML(r) {
		page := g.o.Prefix + "/q/" + rt.Queue + "?return=" + url.QueryEscape(r.URL.RequestURI())
		http.Redirect(w, r, page, http.StatusSeeOther)
		return
	}
	g.o.API.WriteError(w, r, entryRequired{entries: g.o.Prefix + "/api/v1/queues/" + rt.Queue + "/entries"})
}

// entryRequired is the 403 of a protected route: no valid entry, and where
// to get one.
type entryRequired struct{ entries string }

func (e entryRequired) Error() string {
	return "this route needs an entry: join the line at POST " + e.entries + ", then send the token as X-Entry-Token"
}
func (e entryRequired) Unwrap() error              { return queue.ErrTokenInvalid }
func (e entryRequired) Details() map[string]string { return map[string]string{"entriesUrl": e.entries} }

// returnTo is GET {prefix}/return?queue=&to=: where the waiting page sends
// an admitted browser. With the user READY it sets the entry cookie and
// redirects to `to`, a path on this site (anything else is refused: no
// open redirect); otherwise back to the waiting page.
func (g *Gateway) returnTo(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	to, name := q.Get("to"), q.Get("queue")
	if name == "" {
		name = queue.DefaultQueue
	}
	if !SafeReturn(to) {
		g.o.API.WriteError(w, r, fmt.Errorf("%w: %q", ErrUnsafeReturn, to))
		return
	}
	if _, ok := g.o.Bypass.Match(r, name); ok { // READY without a token: back without a cookie
		w.Header().Set("Location", to)
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	user, err := g.o.Identity.User(r)
	if err != nil {
		g.o.API.WriteError(w, r, err)
		return
	}
	v, err := g.o.Queue.Status(r.Context(), name, user)
	if err != nil && g.o.Degraded.Admits() && errors.Is(err, queue.ErrUnavailable) {
		// The store is away under --on-store-error admit: the protected
		// route lets the browser through without an entry.
		w.Header().Set("Location", to)
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	if err != nil {
		g.o.API.WriteError(w, r, err)
		return
	}
	if v.State != queue.Ready {
		http.Redirect(w, r, g.o.Prefix+"/q/"+name+"?return="+url.QueryEscape(to), http.StatusSeeOther)
		return
	}
	http.SetCookie(w, g.entryCookie(r, name, v.Token, v.ExpiresAt))
	// Location is written as checked: http.Redirect would clean the path
	// first ("/./%2fevil.com" to "/%2fevil.com"), and what is sent must be
	// what was checked.
	w.Header().Set("Location", to)
	w.WriteHeader(http.StatusSeeOther)
}

// jwks serves the public keys of X-Waitroom-Entry (RFC 7517). Backends
// cache it for a minute; a kid they do not know makes them fetch it again.
func (g *Gateway) jwks(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=60")
	w.Write(g.o.Signer.JWKS())
}

// entryToken is the entry token the request carries: the X-Entry-Token
// header (API clients), else the queue's entry cookie (browsers).
func entryToken(r *http.Request, queueName string) string {
	if t := r.Header.Get("X-Entry-Token"); t != "" {
		return t
	}
	if c, err := r.Cookie(EntryCookiePrefix + queueName); err == nil {
		return c.Value
	}
	return ""
}

// entryCookie carries token, whose expiry is expires, for the queue. Under
// sliding sessions (sessionMaxSeconds) the token may live on past it, so
// the cookie lasts until the session's end: a token expired by then is
// answered as none.
func (g *Gateway) entryCookie(r *http.Request, queueName, token string, expires time.Time) *http.Cookie {
	if c, err := g.o.Queue.ConfigInForce(r.Context(), queueName); err == nil && c.SessionMax > 0 {
		expires = expires.Add(c.SessionMax - c.TokenTTL)
	}
	return &http.Cookie{
		Name:     EntryCookiePrefix + queueName,
		Value:    token,
		Path:     "/",
		Expires:  expires,
		MaxAge:   max(int(time.Until(expires).Seconds()), 1),
		HttpOnly: true,
		Secure:   g.o.Identity.Secure(r),
		SameSite: http.SameSiteLaxMode,
	}
}

// wantsHTML tells a browser navigating from an API client.
func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// statusRecorder remembers the status written, for metrics and the token.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 || w.status < 200 { // 1xx (as 101 Switching Protocols) come before the final one
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// final is the status the client got: an upgrade's 101 goes out on the
// hijacked connection, past WriteHeader.
func (w *statusRecorder) final(r *http.Request) int {
	if w.status == 0 && r.Header.Get("Upgrade") != "" {
		return http.StatusSwitchingProtocols
	}
	return w.status
}

// Unwrap lets http.ResponseController (and the proxy's upgrade) reach the
// connection.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// bufferPool lends the proxy its copy buffers, so a stream costs no garbage.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }
