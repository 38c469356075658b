package apptest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Recorder stands between a front (nginx, Caddy) and the program it
// forwards to, and keeps the headers of every request that passed it: what
// reached the program, which the program itself does not tell.
type Recorder struct {
	// Addr is the host:port to give the front as the program's address.
	Addr string
	mu   sync.Mutex
	seen []RecordedCall
}

// RecordedCall is one request that passed a Recorder.
type RecordedCall struct {
	Method, Path string
	Header       http.Header
}

// NewRecorder starts a Recorder forwarding to target (host:port), closed
// when the test ends.
func NewRecorder(t testing.TB, target string) *Recorder {
	t.Helper()
	rec := &Recorder{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, RecordedCall{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()})
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.Addr = strings.TrimPrefix(srv.URL, "http://")
	return rec
}

// Seen is every request that passed, in order.
func (rec *Recorder) Seen() []RecordedCall {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]RecordedCall(nil), rec.seen...)
}
