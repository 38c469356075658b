package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// upstreamHealth tells readiness whether the gateway can forward: whether
// the upstream's address takes connections. While requests flow, the last
// forwarded request says it (a response, or a failed dial); when none came
// within upstreamFresh, a TCP dial of its own does, at most one at a time,
// its answer kept as long. So a probe under load costs nothing, and an
// idle gateway dials the upstream at most once per upstreamFresh.
//
// Only reaching the address counts: an upstream that answers 500, or too
// slowly, is reachable (its health is its own, and the line protects it).
type upstreamHealth struct {
	addr string // host:port

	okAt, failAt atomic.Int64 // unix nanoseconds of the last success, failure
	failure      atomic.Pointer[error]

	dialing sync.Mutex
}

// upstreamFresh is how long one answer about the upstream is trusted.
const upstreamFresh = 2 * time.Second

// upstreamDialTimeout bounds readiness's own dial.
const upstreamDialTimeout = time.Second

func newUpstreamHealth(u *url.URL) *upstreamHealth {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return &upstreamHealth{addr: net.JoinHostPort(u.Hostname(), port)}
}

// record notes one attempt to reach the upstream.
func (h *upstreamHealth) record(now time.Time, err error) {
	if err == nil {
		// Written only when it moves by a millisecond: under load, most
		// requests only read it.
		if t := now.UnixNano(); t-h.okAt.Load() > int64(time.Millisecond) {
			h.okAt.Store(t)
		}
		return
	}
	h.failure.Store(&err)
	h.failAt.Store(now.UnixNano())
}

// reachable answers from the last attempt if it is fresh, else dials.
func (h *upstreamHealth) reachable(ctx context.Context) error {
	if err, fresh := h.known(time.Now()); fresh {
		return err
	}
	h.dialing.Lock()
	defer h.dialing.Unlock()
	if err, fresh := h.known(time.Now()); fresh { // another probe just dialed
		return err
	}
	d := net.Dialer{Timeout: upstreamDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", h.addr)
	if err == nil {
		conn.Close()
	} else if ctx.Err() != nil {
		return ctx.Err() // the probe gave up: that says nothing of the upstream
	}
	h.record(time.Now(), err)
	if err != nil {
		return fmt.Errorf("upstream %s: %w", h.addr, err)
	}
	return nil
}

// known is the last attempt's result, and whether it is fresh.
func (h *upstreamHealth) known(now time.Time) (error, bool) {
	ok, fail := h.okAt.Load(), h.failAt.Load()
	if now.UnixNano()-max(ok, fail) > int64(upstreamFresh) {
		return nil, false
	}
	if fail > ok {
		return fmt.Errorf("upstream %s: %w", h.addr, *h.failure.Load()), true
	}
	return nil, true
}

// track wraps the proxy's transport so every forwarded request records
// whether the upstream could be reached.
func (h *upstreamHealth) track(rt http.RoundTripper) http.RoundTripper {
	return trackedTransport{rt, h}
}

type trackedTransport struct {
	http.RoundTripper
	h *upstreamHealth
}

func (t trackedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(r)
	var op *net.OpError
	switch {
	case err == nil:
		t.h.record(time.Now(), nil)
	case errors.As(err, &op) && op.Op == "dial":
		t.h.record(time.Now(), err)
	}
	// Anything else (the client left, the upstream slow or breaking off)
	// says nothing of whether its address takes connections.
	return resp, err
}

// UpstreamReachable reports whether the upstream's address takes
// connections (for readiness: a gateway that cannot reach it can forward
// nothing, whatever the line's store does).
func (g *Gateway) UpstreamReachable(ctx context.Context) error { return g.upstream.reachable(ctx) }
