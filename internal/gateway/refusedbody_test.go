package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestGatewayRefusedUploadsKeepTheConnection (issue 49): refused POSTs with
// bodies of every size Go's server reads after an answer (up to 256 KB), to
// a protected route, one after another on one kept-alive connection, with
// and without a user: every answer arrives whole, the connection is reused
// for the next, and the program logs no panic. So does a forwarded upload
// the backend answers without reading. Through waitroom proxy and through
// the shop's nginx and Caddy asking the decision (nginx hands a refused
// request, body and all, to waitroom proxy for its answer).
func TestGatewayRefusedUploadsKeepTheConnection(t *testing.T) {
	for _, f := range apptest.Fronts {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			refusedUploadsKeepTheConnection(t, f)
		})
	}
}

func refusedUploadsKeepTheConnection(t *testing.T, f apptest.Front) {
	mux := http.NewServeMux()
	var bought atomic.Int32
	mux.HandleFunc("POST /buy", func(w http.ResponseWriter, r *http.Request) { bought.Add(1); w.WriteHeader(http.StatusCreated) })
	// A backend that answers an upload without reading it (a size limit, a
	// refusal of its own).
	mux.HandleFunc("POST /too-large", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})
	shop := &apptest.UpstreamShop{Server: httptest.NewServer(mux)}
	t.Cleanup(shop.Server.Close)
	p := apptest.BootProxyBehind(t, f, apptest.Backend{Name: "embedded"}, shop, nil)
	p.SetPaused(true) // nobody is let straight in: every POST /buy is refused

	// One connection at a time, kept alive: a dropped one shows as a new
	// connection (or an error) on the next request.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}}
	t.Cleanup(client.CloseIdleConnections)
	send := func(path, auth string, size int) (status int, reused bool, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", p.Base+path, bytes.NewReader(bytes.Repeat([]byte("x"), size)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
		}))
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %s with %d bytes: %v", path, size, err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("POST %s with %d bytes: the answer broke off: %v", path, size, err)
		}
		return res.StatusCode, reused, string(b)
	}

	sizes := []int{10, 1 << 10, 64 << 10, 200 << 10, 0, 10}
	first := true
	for _, size := range sizes {
		for _, who := range []struct{ auth, code string }{{"", "unauthenticated"}, {p.As("buyer"), "entry_token_invalid"}} {
			status, reused, body := send("/buy", who.auth, size)
			if status != http.StatusUnauthorized && status != http.StatusForbidden || !strings.Contains(body, who.code) {
				t.Errorf("refused POST /buy with %d bytes (%s): %d %s", size, who.code, status, body)
			}
			if !reused && !first {
				t.Errorf("refused POST /buy with %d bytes (%s): a new connection, want the last one reused", size, who.code)
			}
			first = false
		}
	}
	// An upload the backend answers without reading it is forwarded, and
	// the connection still serves the next request (Caddy's ends with a
	// forwarded upload's answer, by its configuration: a new one serves it).
	if status, _, body := send("/too-large", "", 100<<10); status != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /too-large: %d %s, want the backend's 413", status, body)
	}
	if status, reused, body := send("/buy", "", 10); status != http.StatusUnauthorized || reused == f.ClosesAfterUpload {
		t.Errorf("after the backend's 413: %d (reused %v) %s, want 401 on the same connection (a new one if the front closes after an upload: %v)",
			status, reused, body, f.ClosesAfterUpload)
	}
	if !f.Decides() { // nginx and Caddy answer Expect: 100-continue themselves
		expectContinueAnswered(t, p.Base)
	}
	if n := bought.Load(); n != 0 {
		t.Errorf("%d refused POSTs reached the backend", n)
	}
	if panic := apptest.Panics(p.Logs.String()); panic != "" {
		t.Errorf("waitroom logged a panic: %s", panic)
	}
	t.Logf("%d refused uploads of up to 200 KB on one connection, one forwarded the backend did not read", 2*len(sizes))
}

// expectContinueAnswered: a client that sends Expect: 100-continue, and
// waits for the 100 before its upload, to a backend that answers without
// reading (413) gets that answer at once; it is not left waiting while the
// gateway waits for the upload it never asked for (issue 49's review).
func expectContinueAnswered(t *testing.T, base string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /too-large HTTP/1.1\r\nHost: shop\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n")
	// Well within the server's ReadTimeout (10 s), which would end the wait.
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("Expect: 100-continue to a backend that answers at once: no answer: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("Expect: 100-continue: %d, want the backend's 413", res.StatusCode)
	}
}
