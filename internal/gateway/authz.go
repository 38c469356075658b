package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/waitroom/waitroom/internal/identity"
)

// The decision: waitroom behind the shop's own proxy (nginx auth_request,
// ingress-nginx's auth-url, Caddy forward_auth, Traefik ForwardAuth, Envoy
// ext_authz in HTTP mode). The proxy asks {prefix}/authz/{proxy} whether
// the request it holds may pass, and forwards it itself. The request is
// judged by judge, the one place `waitroom proxy` judges too: the same
// routes, reading and refusals, the same entry, session, bypass,
// degraded-mode and release rules. What differs is only what "let on"
// means: the proxy forwards (forwarder), the decision answers 2xx with
// what the upstream is to be told (decider).
//
// A proxy in front forwards the request as it received it, not as the
// gateway read it, so a decision lets on only a request whose form is its
// reading already (asForwarded); any other is answered as one the gateway
// would refuse, and nginx's error_page hands it to `waitroom proxy`, which
// forwards the reading.

// Errors of a decision.
var (
	// ErrUntrustedAsker: the decision was asked by a peer outside
	// --trusted-proxies, whose word on the original request counts for
	// nothing (403).
	ErrUntrustedAsker = errors.New("a decision is given only to a proxy in --trusted-proxies")
	// ErrNotAsJudged: the request, forwarded as the proxy holds it, would
	// not be the request the gateway judged (400).
	ErrNotAsJudged = errors.New("the proxy would forward another request than the one judged")
	// ErrDecisionRequest: the proxy did not say which request it holds
	// (400): its configuration sets none of the headers it should.
	ErrDecisionRequest = errors.New("the decision request does not name the original request")
)

// The reasons of ErrNotAsJudged.
const (
	reasonNotCanonical   = "not_canonical"
	reasonOverrideHeader = "override_header"
	reasonWaitroomHeader = "waitroom_header"
	reasonOtherSpelling  = "other_spelling"
)

// AuthzPath is where the decision is asked, under the prefix:
// {prefix}/authz/{proxy}, and for Envoy {prefix}/authz/envoy/{original path}.
const AuthzPath = "/authz/"

// asker is how one kind of proxy asks for a decision: where it carries the
// original request, and which answers it understands.
type asker struct {
	// original reads the method, request target and host of the request
	// the proxy holds from the decision request (raw: RequestURI after
	// the prefix).
	original func(r *http.Request, raw string) (method, target, host string)
	// own are the headers that carry them, which the original lacked.
	own []string
	// deniesWith401: the proxy takes 2xx, 401 and 403 only (nginx
	// auth_request): every denial is 401, with the waiting page's address
	// in X-Waitroom-Location for error_page to redirect to, or without,
	// and error_page hands the request to `waitroom proxy`, which answers
	// it itself. Other proxies pass a denial to the client as it is.
	deniesWith401 bool
}

// forwardedAsker is Caddy's forward_auth and Traefik's ForwardAuth: the
// original method, URI and host in X-Forwarded-Method, -Uri and -Host,
// which both set over any a client sent.
var forwardedAsker = &asker{
	original: func(r *http.Request, _ string) (string, string, string) {
		return r.Header.Get("X-Forwarded-Method"), r.Header.Get("X-Forwarded-Uri"), r.Header.Get("X-Forwarded-Host")
	},
	own: []string{"X-Forwarded-Method", "X-Forwarded-Uri"},
}

// askers are the proxies by the name in the decision's path. Each reads its
// own headers only: a header another proxy would set is, through this one,
// a client's.
var askers = map[string]*asker{
	// nginx auth_request: X-Original-Method, X-Original-URI
	// ($request_uri) and X-Original-Host ($host) set by the auth location,
	// which asks with DecisionHost (nginxHost).
	"nginx": {
		original: func(r *http.Request, _ string) (string, string, string) {
			return r.Header.Get("X-Original-Method"), r.Header.Get("X-Original-URI"), nginxHost(r)
		},
		own:           []string{"X-Original-Method", "X-Original-URI", HeaderOriginalHost},
		deniesWith401: true,
	},
	// ingress-nginx's auth-url: X-Original-Method and X-Original-URL
	// ($scheme://$http_host$request_uri).
	"ingress-nginx": {
		original: func(r *http.Request, _ string) (string, string, string) {
			host, target := splitOriginalURL(r.Header.Get("X-Original-URL"))
			return r.Header.Get("X-Original-Method"), target, host
		},
		own:           []string{"X-Original-Method", "X-Original-URL"},
		deniesWith401: true,
	},
	"caddy":   forwardedAsker,
	"traefik": forwardedAsker,
	// Envoy's ext_authz in HTTP mode: the original method and headers, the
	// original path after the service's path_prefix, {prefix}/authz/envoy.
	"envoy": {
		original: func(r *http.Request, raw string) (string, string, string) {
			target, ok := strings.CutPrefix(raw, AuthzPath+"envoy")
			if !ok {
				return r.Method, "", r.Host // the path spelt otherwise than it was routed by
			}
			return r.Method, target, r.Host
		},
	},
}

// splitOriginalURL splits "scheme://host/target" into host and target as
// sent, without the decoding or cleaning a URL parser may do.
func splitOriginalURL(s string) (host, target string) {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", ""
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return rest, ""
	}
	return rest[:i], rest[i:]
}

// askerOf finds the proxy a decision path names ("nginx", "envoy/…").
func askerOf(path string) (*asker, bool) {
	name, _, _ := strings.Cut(path, "/")
	a, ok := askers[name]
	if ok && name != "envoy" && name != path {
		return nil, false // only Envoy puts the original path after its name
	}
	return a, ok
}

// decide answers a proxy's question about the request it holds; name is
// the decision path's after {prefix}/authz/ ("nginx", "envoy/checkout").
func (g *Gateway) decide(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := askerOf(name)
	if !ok {
		g.api.ServeHTTP(w, r) // the API's own 404
		return
	}
	if !g.o.Proxies.FromTrusted(r) {
		g.o.API.WriteError(w, r, ErrUntrustedAsker)
		return
	}
	rec := &decisionRecorder{header: http.Header{}}
	orig, err := g.originalRequest(r, a)
	if err != nil {
		g.o.API.WriteError(rec, r, err)
	} else {
		g.judge(rec, orig, decider{g})
	}
	a.answer(w, rec, orig)
}

// originalRequest is the request the proxy holds, as the asker carries it:
// its method, target and host, the decision request's headers (taken
// over, not copied) but the asker's own, and the proxy's address (so --trusted-proxies reads the
// client's from X-Forwarded-For). Its body is not sent: a POST is taken to
// carry one, the strict side (a body may name another method).
func (g *Gateway) originalRequest(r *http.Request, a *asker) (*http.Request, error) {
	raw := strings.TrimPrefix(r.RequestURI, g.o.Prefix)
	method, target, host := a.original(r, raw)
	switch {
	case method == "" || target == "":
		return nil, fmt.Errorf("%w: no method or target (see deploy/ for each proxy's configuration)", ErrDecisionRequest)
	case !strings.HasPrefix(target, "/") && target != "*":
		return nil, fmt.Errorf("%w: %q is not a path", ErrRequestTarget, target)
	case !token(method):
		return nil, fmt.Errorf("%w: method %q", ErrDecisionRequest, method)
	case !validHost(host):
		// The client's, not the proxy's: refused as waitroom proxy's server
		// refuses it (400 invalid_header; nginx's 401 has waitroom proxy say so).
		return nil, refuseHeader("host", "Host %q is not one a server reads", host)
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrRequestTarget, target)
	}
	h := r.Header // the decision request's, which nothing reads after: no copy
	for _, k := range a.own {
		h.Del(k)
	}
	h.Del("Content-Length")
	orig := &http.Request{Method: method, URL: u, RequestURI: target, Host: host, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: r.RemoteAddr, TLS: r.TLS, Body: http.NoBody}
	if canonicalMethod(method) == http.MethodPost {
		orig.ContentLength, orig.Body = -1, io.NopCloser(strings.NewReader(""))
	}
	return orig.WithContext(r.Context()), nil
}

// token: a method as HTTP spells one (letters, digits and the few marks
// tchar allows that methods use).
func token(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(unreserved(c) || c == '!' || c == '#' || c == '$' || c == '&' || c == '\'' || c == '*' || c == '+' || c == '^' || c == '`' || c == '|') {
			return false
		}
	}
	return s != ""
}

// asForwarded refuses, for a decision, a request the proxy in front would
// forward otherwise than the gateway read it (`waitroom proxy` forwards its
// reading; a proxy forwards what it holds): a form that is not its reading
// (a dot segment, a lower-case method, a removed _method field), a method
// or path override the backend is not said to honour, a client's
// X-Waitroom-* header, waitroom's admin token in any header
// (adminTokenRefusal), or a header `waitroom proxy` would remove in a
// spelling no proxy in front removes (X_Entry_Token, X_Staff_Key for a
// --bypass header, X_Forwarded_For: CGI-style backends read "_" as "-";
// nginx drops such names, Caddy forwards them). nginx hands such a request
// to `waitroom proxy`.
func (g *Gateway) asForwarded(r *http.Request, j judged) *refusal {
	if ref := g.adminTokenRefusal(r); ref != nil {
		return ref // whatever the path: the proxy would forward it to the backend
	}
	if asJudged(r, j) != r {
		return &refusal{ErrNotAsJudged, reasonNotCanonical,
			fmt.Sprintf("send it as %s %s", j.method, (&url.URL{Path: "/", RawPath: j.path, RawQuery: j.rawQuery}).RequestURI())}
	}
	for k := range r.Header {
		switch {
		case isMethodOverrideHeader(k) && !g.honoured(k), isPathOverrideHeader(k):
			return &refusal{ErrNotAsJudged, reasonOverrideHeader, fmt.Sprintf("%s: the backend would read the method or path from it", k)}
		case hasHeaderPrefix(k, "X-Waitroom-"):
			return &refusal{ErrNotAsJudged, reasonWaitroomHeader, fmt.Sprintf("%s: only waitroom sets it", k)}
		case strings.IndexByte(k, '_') >= 0 && (sameHeader(k, "X-Entry-Token") || g.secret(k) || isForwardingHeader(k)):
			return &refusal{ErrNotAsJudged, reasonOtherSpelling, fmt.Sprintf("%s: a backend may read it as a header waitroom keeps from it", k)}
		}
	}
	return nil
}

// decider is the decision's onward step: it tells the proxy that asked
// that the request may pass, with what the upstream is to be told
// (judgment.tell); answer puts it in the proxy's form.
type decider struct{ g *Gateway }

func (decider) labels() (string, string) { return "authz", "authz " }

// refuse refuses a request the proxy in front would forward otherwise
// than the gateway read it.
func (d decider) refuse(r *http.Request, j judged) *refusal { return d.g.asForwarded(r, j) }

// take goes on with the request as the proxy holds it, which asForwarded
// found to be the reading: the proxy, not the gateway, forwards it.
func (decider) take(_ http.ResponseWriter, r *http.Request, _ judged) (*http.Request, bool) {
	return r, true
}

func (decider) pass(w http.ResponseWriter, _ *http.Request, j judgment) {
	j.tell(w.Header())
	w.WriteHeader(http.StatusOK)
}

// The headers of a decision's answer beside judgment's, for a proxy that
// cannot pass Set-Cookie on or strip cookies itself (nginx: one variable
// per header, the first of several): each cookie to set on the client, the
// waiting page's address, and the Cookie header to forward without
// waitroom's own cookies (the backend never sees the entry token).
const (
	HeaderSetSession = "X-Waitroom-Set-Session"
	HeaderSetEntry   = "X-Waitroom-Set-Entry"
	HeaderLocation   = "X-Waitroom-Location"
	HeaderCookie     = "X-Waitroom-Cookie"
)

// passedOn are the headers of an allowing answer a proxy copies onto the
// request it forwards (X-Waitroom-User, -Entry, -Bypass, -Degraded).
var passedOn = []string{"X-Waitroom-User", "X-Waitroom-Entry", "X-Waitroom-Bypass", "X-Waitroom-Degraded"}

// answer writes the decision rec holds in the form a proxies understands:
// 200 with judgment's headers and the cookies; a denial as the gateway
// wrote it, or for nginx as 401.
func (a *asker) answer(w http.ResponseWriter, rec *decisionRecorder, orig *http.Request) {
	h := w.Header()
	cookies := rec.header.Values("Set-Cookie")
	for _, c := range cookies {
		name, _, _ := strings.Cut(c, "=")
		if name == identity.CookieName {
			h.Set(HeaderSetSession, c)
		} else if strings.HasPrefix(name, EntryCookiePrefix) {
			h.Set(HeaderSetEntry, c)
		}
	}
	allowed := orig != nil && rec.status >= 200 && rec.status < 300
	// A decision is about one request at one moment: a single-use entry
	// let on once must not be let on again from a cache.
	h.Set("Cache-Control", "no-store")
	switch {
	case allowed:
		// Every header is sent, empty for none: a proxy whose placeholder
		// for a header not sent is the placeholder itself (Caddy 2.6) can
		// then tell "none" from a value.
		for _, k := range passedOn {
			h[k] = []string{rec.header.Get(k)}
		}
		for _, k := range []string{HeaderSetSession, HeaderSetEntry} {
			h[k] = []string{h.Get(k)}
		}
		h[HeaderCookie] = []string{forwardedCookie(orig.Header)}
		h["Set-Cookie"] = cookies
		w.WriteHeader(http.StatusOK)
	case a.deniesWith401:
		if loc := rec.header.Get("Location"); rec.status == http.StatusSeeOther && loc != "" {
			h.Set(HeaderLocation, loc)
		}
		w.WriteHeader(http.StatusUnauthorized)
	default:
		for k, vs := range rec.header {
			h[k] = vs
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
	}
}

// forwardedCookie is the Cookie header the backend gets: the original's
// without waitroom's cookies, "" when none is left.
func forwardedCookie(h http.Header) string {
	if len(h["Cookie"]) == 0 {
		return ""
	}
	c := http.Header{"Cookie": h["Cookie"]}
	stripOwnCookies(c)
	return strings.Join(c["Cookie"], "; ")
}

// decisionRecorder holds what judge wrote for a decision, for the asker to
// answer in its proxy's form.
type decisionRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (d *decisionRecorder) Header() http.Header { return d.header }

func (d *decisionRecorder) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}

func (d *decisionRecorder) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return d.body.Write(b)
}

// Flush is there for forward, which flushes the answer to learn whether
// it reached the client: a decision's answer is whole once judged.
func (d *decisionRecorder) Flush() {}
