package gateway

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener counts the connections made to it.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// TestUpstreamHealthDialsAtMostOncePerFreshness: a hundred probes of an
// idle gateway cost the upstream one connection; while requests are
// forwarded, probes cost it none; an upstream whose port is closed is
// reported unreachable, by the forwarded request that failed to dial, at
// once.
func TestUpstreamHealthDialsAtMostOncePerFreshness(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &countingListener{Listener: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(l)
	defer srv.Close()
	u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	h := newUpstreamHealth(u)
	ctx := context.Background()

	for range 100 {
		if err := h.reachable(ctx); err != nil {
			t.Fatalf("a listening upstream: %v", err)
		}
	}
	// The server accepts the probe's connection after the dial returned.
	for deadline := time.Now().Add(10 * time.Second); l.accepted.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := l.accepted.Load(); n != 1 {
		t.Fatalf("100 probes of an idle gateway dialed %d times, want 1", n)
	}

	// Requests flowing: their answers keep the news fresh.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: h.track(tr)}
	h.okAt.Store(0) // forget the probe's dial
	if res, err := client.Get(u.String()); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	before := l.accepted.Load()
	for range 100 {
		if err := h.reachable(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.accepted.Load() - before; n != 0 {
		t.Fatalf("probes while requests flow dialed %d times, want 0", n)
	}

	srv.Close()
	tr.CloseIdleConnections()
	if _, err := client.Get(u.String()); err == nil {
		t.Fatal("a request to a closed port went through")
	}
	if err := h.reachable(ctx); err == nil {
		t.Fatal("reachable right after a forwarded request failed to dial")
	}
	// And with nothing forwarded since, its own dial finds the port shut.
	long := time.Now().Add(-2 * upstreamFresh).UnixNano()
	h.okAt.Store(long)
	h.failAt.Store(long)
	if err := h.reachable(ctx); err == nil {
		t.Fatal("a closed port is reachable")
	}
}
