package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/spend"
)

// judge is the one place a request outside the prefix is read and judged,
// for `waitroom proxy` and for the decision a proxy in front asks for
// (authz.go) alike: refused, waitroom's own, protected or open. Where the
// judgment lets a request on, it hands it to on: the proxy forwards it
// (forwarder), the decision says so (decider).
func (g *Gateway) judge(w http.ResponseWriter, r *http.Request, on onward) {
	start := time.Now()
	sw := &statusRecorder{ResponseWriter: w}
	route, label := on.labels()
	j, v, ref := g.routes.match(r)
	if ref == nil {
		ref = on.refuse(r, j)
	}
	if ref != nil {
		g.o.API.WriteError(sw, r, ref)
		g.o.Metrics.ObserveHTTP(label+"refused", sw.final(r), time.Since(start))
		return
	}
	r, ok := on.take(w, r, j)
	if !ok {
		return
	}
	if v.protected {
		route = label + "protected " + v.route.Pattern
		g.protected(sw, r, v, on)
	} else {
		on.pass(sw, r, judgment{})
	}
	g.o.Metrics.ObserveHTTP(route, sw.final(r), time.Since(start))
}

// onward is what follows a judgment, the one thing `waitroom proxy` and
// the decision do differently: the proxy forwards the request it judged
// (forwarder); the decision tells the proxy in front, which forwards what
// it holds itself (decider).
type onward interface {
	// labels are the metrics route of an open request, and the start of
	// the others' ("refused", "protected /checkout").
	labels() (open, prefix string)
	// refuse is what this step refuses beyond what the reading does.
	refuse(r *http.Request, j judged) *refusal
	// take is the request as it goes on, or false when the step served it
	// itself.
	take(w http.ResponseWriter, r *http.Request, j judged) (*http.Request, bool)
	// pass lets a judged request on.
	pass(w http.ResponseWriter, r *http.Request, j judgment)
}

// judgment is what judge hands the onward step of a request it lets on,
// and what the upstream is told of it: on a protected route the entry the
// request is a use of, or the bypass rule that let it through, or that it
// went without the line (degraded); on an open route, nothing.
type judgment struct {
	// entry is the use of an entry token the request is (nil: none).
	entry *entryUse
	// bypass is the label of the --bypass rule that let it through.
	bypass string
	// degraded: let through without an entry, its queue's store away
	// (--on-store-error admit).
	degraded bool
}

// entryUse is a protected request's use of an entry token.
type entryUse struct {
	// user and header are X-Waitroom-User and X-Waitroom-Entry.
	user, header string
	// token is the token the request is a use of.
	token spend.Token
	// failure is what upstreamFailed saw, for the token's outcome.
	failure spend.Outcome
	failed  bool
}

// tell sets in h what the gateway tells the upstream of a request it let
// on: on a protected route who the user is and the signed entry, or the
// bypass rule that let it through, or that it went without the line. The
// proxy sets them on the request it forwards; a decision sends them to the
// proxy that asked.
func (j judgment) tell(h http.Header) {
	if j.entry != nil {
		h.Set("X-Waitroom-User", j.entry.user)
		h.Set("X-Waitroom-Entry", j.entry.header)
	}
	if j.bypass != "" {
		h.Set("X-Waitroom-Bypass", j.bypass)
	}
	if j.degraded {
		h.Set(degraded.Header, degraded.HeaderValue)
	}
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
