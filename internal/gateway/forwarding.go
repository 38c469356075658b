package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"

	"github.com/waitroom/waitroom/internal/spend"
)

// forwarder is `waitroom proxy`'s onward step: it forwards the request as
// the gateway read it.
type forwarder struct{ g *Gateway }

func (forwarder) labels() (string, string) { return "proxy", "" }

// refuse refuses a request carrying the admin token outside the prefix; a
// path under it ("/x/../_waitroom/…") is waitroom's own.
func (f forwarder) refuse(r *http.Request, j judged) *refusal {
	if underPrefix(j.path, f.g.o.Prefix) {
		return nil
	}
	return f.g.adminTokenRefusal(r)
}

// take serves a path under the prefix itself, and goes on with the
// request as read: no Upgrade but WebSocket's.
func (f forwarder) take(w http.ResponseWriter, r *http.Request, j judged) (*http.Request, bool) {
	if underPrefix(j.path, f.g.o.Prefix) {
		f.g.api.ServeHTTP(w, asJudged(r, j))
		return nil, false
	}
	r = asJudged(r, j)
	dropUpgrade(r.Header)
	return r, true
}

// pass forwards r to the upstream, telling it the judgment.
func (f forwarder) pass(w http.ResponseWriter, r *http.Request, j judgment) {
	p := f.g.proxy
	if j != (judgment{}) {
		p = f.g.proxyFor(j)
	}
	if r.ContentLength != 0 && r.Body != http.NoBody {
		// Read the rest of the upload while the answer goes out: Go's
		// server would otherwise close the request body once the answer's
		// headers are written, and the proxy, still copying it upstream,
		// would cut the answer short (issue 35). Only a request forwarded
		// here: one answered without forwarding keeps Go's usual handling.
		http.NewResponseController(w).EnableFullDuplex()
		// In full duplex, Go's server no longer reads what is left of the
		// body before the next request (an upstream that answered without
		// reading it all): its close after the handler would, but only once
		// it has stopped watching the connection, and reads the next
		// request's first bytes concurrently with that, a panic ("invalid
		// concurrent Body.Read call") that drops the connection (issue 49).
		// Closed here, the rest is read (up to Go's 256 KB; beyond, the
		// connection closes after the answer) while the server still
		// watches. The answer goes out first: a client that sent Expect:
		// 100-continue to a backend that answered without reading is
		// waiting for it, not sending.
		defer func() {
			http.NewResponseController(w).Flush()
			r.Body.Close()
		}()
	}
	p.ServeHTTP(w, r)
}

// proxyFor is the proxy for a request whose judgment the upstream is told
// of: its entry's use is what the upstream's release ends and what a
// failure to reach the upstream is recorded in.
func (g *Gateway) proxyFor(j judgment) *httputil.ReverseProxy {
	p := *g.proxy
	p.Rewrite = func(pr *httputil.ProxyRequest) { g.rewrite(pr, j) }
	p.ModifyResponse = func(resp *http.Response) error { return g.command(resp, j.entry) }
	p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { g.upstreamFailed(w, r, err, j.entry) }
	return &p
}

// rewrite prepares the outbound request: the upstream's address; the
// forwarding headers of one more hop; the bot score header only as a
// trusted proxy set it; none of the client's X-Waitroom-* headers nor
// waitroom's own credentials (the entry token, the bypass rules' secret
// headers, the wr_entry_* and wr_session cookies); and on a protected
// route what the judgment tells it (j.tell).
func (g *Gateway) rewrite(pr *httputil.ProxyRequest, j judgment) {
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
		case (isForwardingHeader(k) || g.scoreHeader(k)) && (!trusted || strings.IndexByte(k, '_') >= 0):
			delete(out, k) // only a trusted proxy's, and never a spelling no proxy writes
		case isMethodOverrideHeader(k) && !g.honoured(k), isPathOverrideHeader(k):
			delete(out, k) // the method and path are the ones the gateway judged
		}
	}
	g.forwardedFor(pr, trusted)
	stripOwnCookies(out)
	j.tell(out)
}

// scoreHeader reports the edge's bot score header (Options.ScoreHeader),
// in any spelling a backend may read as it.
func (g *Gateway) scoreHeader(k string) bool {
	return g.o.ScoreHeader != "" && sameHeader(k, g.o.ScoreHeader)
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

// upstreamFailed answers when the upstream could not be reached or did not
// answer in time: 502 or 504 JSON, and the token of u, if any, is kept.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, err error, u *entryUse) {
	var ne net.Error
	switch {
	case r.Context().Err() != nil: // the client left
		err = context.Canceled
		if u != nil {
			u.failure, u.failed = spend.Refused, true
		}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("%w: %v", ErrUpstreamTimeout, err)
		if u != nil {
			u.failure, u.failed = spend.TimedOut, true
		}
	default:
		err = fmt.Errorf("%w: %v", ErrUpstreamUnavailable, err)
		if u != nil {
			u.failure, u.failed = spend.Failed, true
		}
	}
	g.o.API.WriteError(w, r, err)
}

// bufferPool lends the proxy its copy buffers, so a stream costs no garbage.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte { return *buffers.Get().(*[]byte) }

func (bufferPool) Put(b []byte) { buffers.Put(&b) }
