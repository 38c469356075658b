package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/gateway"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/testenv"
)

// upstreamShop is a small backend of its own, as a shop's checkout would be: it
// sells from its own stock at POST /buy, shows GET /checkout, echoes what
// it receives elsewhere, and can be told to fail or to stall.
type upstreamShop struct {
	srv   *httptest.Server
	mu    sync.Mutex
	stock int
	buys  []shopCall // every call that reached POST /buy
	seen  []shopCall // every other request, in order
	fail  atomic.Bool
	// stall, when set, holds POST /buy until it is closed.
	stall atomic.Pointer[chan struct{}]
}

// shopCall is what the backend saw of one request.
type shopCall struct {
	method, path, rawQuery string
	header                 http.Header
	bodySHA                string
	bodyLen                int64
}

func newUpstreamShop(t *testing.T, stock int) *upstreamShop {
	t.Helper()
	s := &upstreamShop{stock: stock}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /buy", func(w http.ResponseWriter, r *http.Request) {
		if ch := s.stall.Load(); ch != nil {
			<-*ch
		}
		s.mu.Lock()
		s.buys = append(s.buys, s.record(r))
		if s.fail.Load() {
			s.mu.Unlock()
			http.Error(w, `{"error":"the shop's database is down"}`, http.StatusInternalServerError)
			return
		}
		if s.stock == 0 {
			s.mu.Unlock()
			http.Error(w, `{"error":"sold out"}`, http.StatusConflict)
			return
		}
		s.stock--
		left := s.stock
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"bought":1,"left":%d}`, left)
	})
	mux.HandleFunc("GET /checkout", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, s.record(r))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Checkout</title><h1 id="checkout">Checkout for %s</h1>`, r.Header.Get("X-Waitroom-User"))
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo: "), msg...)); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		call := s.record(r) // reads the whole body as it streams, keeping only its hash
		s.mu.Lock()
		s.seen = append(s.seen, call)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Add("X-Shop-Echo", "one")
		w.Header().Add("X-Shop-Echo", "two")
		w.Header().Add("Set-Cookie", "shop_a=1; Path=/")
		w.Header().Add("Set-Cookie", "shop_b=2; Path=/")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, "%s %s?%s len=%d sha=%s\n", r.Method, r.URL.Path, r.URL.RawQuery, call.bodyLen, call.bodySHA)
		w.Write(blob) // the same bytes every time, to compare both ways
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// blob is what the upstreamShop's catch-all route answers after its echo line.
var blob = func() []byte {
	b := make([]byte, 256<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

func (s *upstreamShop) record(r *http.Request) shopCall {
	h := sha256.New()
	n, _ := io.Copy(h, r.Body)
	return shopCall{method: r.Method, path: r.URL.Path, rawQuery: r.URL.RawQuery, header: r.Header.Clone(),
		bodySHA: hex.EncodeToString(h.Sum(nil)), bodyLen: n}
}

func (s *upstreamShop) buyCalls() []shopCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]shopCall(nil), s.buys...)
}

func (s *upstreamShop) lastSeen() shopCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[len(s.seen)-1]
}

func (s *upstreamShop) left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stock
}

// proxied is a booted `waitroom proxy` in front of a upstreamShop.
type proxied struct {
	*instance
	upstreamShop *upstreamShop
	keyPEM       []byte
}

const gwPrefix = "/_waitroom"

// bootProxy starts `waitroom proxy` in front of the upstreamShop, protecting
// POST /buy (spent on 2xx) and GET /checkout (kept). edit may adjust the
// config before it starts.
func bootProxy(t *testing.T, b backend, s *upstreamShop, edit func(*app.Config)) *proxied {
	t.Helper()
	p := bootGateway(t, b, s.srv.URL, []string{"--protect", "POST /buy", "--protect-session", "GET /checkout"}, edit)
	p.upstreamShop = s
	return p
}

// bootGateway starts `waitroom proxy` in front of upstream with the given
// protect flags (and a signing key of the test's own).
func bootGateway(t *testing.T, b backend, upstream string, protect []string, edit func(*app.Config)) *proxied {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "entry.pem")
	key := gateway.GenerateKey()
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--upstream", upstream, "--entry-signing-key", keyFile, "--upstream-timeout", "20s"}, protect...)
	cfg, err := app.ParseProxy(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.AuthSecret = fmt.Sprintf("secret-%032x", rand.Uint64()) // ≥ 32 bytes, as on Redis
	cfg.AdminToken = fmt.Sprintf("admin-%032x", rand.Uint64())
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.DrainDelay = 0
	cfg.Queue.ChallengeCost = queue.MinChallengeCost // as boot: cheap for tests
	if b.redis {
		cfg.RedisURL = testenv.RedisURL(t)
		cfg.KeyPrefix = fmt.Sprintf("wrgw%d:", rand.Int64())
	}
	if edit != nil {
		edit(&cfg)
	}
	m := &app.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("boot: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	in := &instance{t: t, m: m, base: "http://" + m.Addr(), secret: cfg.AuthSecret, admin: cfg.AdminToken, prefix: cfg.KeyPrefix}
	return &proxied{instance: in, keyPEM: key}
}

// setPaused pauses or resumes the default queue: paused, nobody is let
// straight in (the line is not quiet) and nobody is admitted.
func (p *proxied) setPaused(paused bool) {
	p.t.Helper()
	r := p.do("PATCH", gwPrefix+"/admin/v1/queues/default", p.adminAuth(), map[string]any{"paused": paused})
	if r.status != 200 {
		p.t.Fatalf("pause=%v: %d %s", paused, r.status, r.raw)
	}
}

// admitted enters user in the paused default line, lets admission take them,
// pauses again, and returns their entry token.
func (p *proxied) admitted(user string) string {
	p.t.Helper()
	if r := p.do("POST", gwPrefix+"/api/v1/queues/default/entries", p.as(user), nil); r.status != 200 {
		p.t.Fatalf("enter: %d %s", r.status, r.raw)
	}
	p.setPaused(false)
	defer p.setPaused(true)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := p.do("GET", gwPrefix+"/api/v1/queues/default/entries/me", p.as(user), nil)
		if r.str("status") == "READY" {
			return r.str("token")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("%s never became READY", user)
	return ""
}

// status is the user's state in the default line.
func (p *proxied) status(user string) string {
	p.t.Helper()
	return p.do("GET", gwPrefix+"/api/v1/queues/default/entries/me", p.as(user), nil).str("status")
}

// buy calls the protected route as an API client.
func (p *proxied) buy(user, token string, headers ...string) response {
	p.t.Helper()
	if token != "" {
		headers = append(headers, "X-Entry-Token", token)
	}
	return p.do("POST", "/buy", p.as(user), nil, append(headers, "Accept", "application/json")...)
}

// browserVisit is a browser's visit with no cookie: the answer, not
// following a redirect, and its body.
func (p *proxied) browserVisit(path string) (*http.Response, []byte) {
	p.t.Helper()
	return p.browserVisitWith(path)
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestGatewayGuardsProtectedRoutes(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := newUpstreamShop(t, 100)
			p := bootProxy(t, b, s, nil)
			p.setPaused(true) // a busy night: nobody is let straight in

			t.Run("only entry holders reach protected routes", func(t *testing.T) {
				if r := p.do("POST", "/buy", "", nil, "Accept", "application/json"); r.status != 401 || r.errorCode() != "unauthenticated" {
					t.Errorf("no identity: %d %s", r.status, r.raw)
				}
				r := p.buy("no-entry", "")
				if r.status != 403 || r.errorCode() != "entry_token_invalid" {
					t.Fatalf("no entry: %d %s", r.status, r.raw)
				}
				e, _ := r.body["error"].(map[string]any)
				if e["entriesUrl"] != gwPrefix+"/api/v1/queues/default/entries" {
					t.Errorf("403 names %v, want the queue's entries URL", e["entriesUrl"])
				}
				if r := p.buy("no-entry", "made-up-token"); r.status != 403 {
					t.Errorf("made-up token: %d %s", r.status, r.raw)
				}
				tok := p.admitted("holder")
				if r := p.buy("thief", tok); r.status != 403 {
					t.Errorf("someone else's token: %d %s", r.status, r.raw)
				}
				if r := p.do("GET", "/checkout", p.as("no-entry"), nil, "Accept", "application/json"); r.status != 403 {
					t.Errorf("session route without entry: %d %s", r.status, r.raw)
				}
				if n := len(s.buyCalls()); n != 0 {
					t.Fatalf("%d calls reached POST /buy without a valid entry", n)
				}
				// With the entry: the session route keeps it, the protected one spends it.
				if r := p.do("GET", "/checkout", p.as("holder"), nil, "X-Entry-Token", tok); r.status != 200 || !strings.Contains(r.raw, "Checkout for holder") {
					t.Fatalf("session route with entry: %d %s", r.status, r.raw)
				}
				if st := p.status("holder"); st != "READY" {
					t.Fatalf("after the session route: %s, want READY (kept)", st)
				}
				if r := p.buy("holder", tok); r.status != 201 {
					t.Fatalf("protected route with entry: %d %s", r.status, r.raw)
				}
				if st := p.status("holder"); st != "NOT_IN_QUEUE" {
					t.Fatalf("after a 2xx: %s, want the token spent", st)
				}
				if r := p.buy("holder", tok); r.status != 403 {
					t.Fatalf("the spent token again: %d %s", r.status, r.raw)
				}
				if n, left := len(s.buyCalls()), s.left(); n != 1 || left != 99 {
					t.Fatalf("upstreamShop saw %d buys, stock %d; want 1 and 99", n, left)
				}
			})

			t.Run("an upstream failure keeps the token; a retry succeeds", func(t *testing.T) {
				tok := p.admitted("retrier")
				s.fail.Store(true)
				r := p.buy("retrier", tok)
				s.fail.Store(false)
				if r.status != 500 || !strings.Contains(r.raw, "database is down") {
					t.Fatalf("upstream 500: got %d %s, want it passed through", r.status, r.raw)
				}
				if st := p.status("retrier"); st != "READY" {
					t.Fatalf("after a 500: %s, want READY (token kept)", st)
				}
				if r := p.buy("retrier", tok); r.status != 201 {
					t.Fatalf("retry: %d %s", r.status, r.raw)
				}
				if st := p.status("retrier"); st != "NOT_IN_QUEUE" {
					t.Fatalf("after the retry's 2xx: %s", st)
				}
			})

			t.Run("an upstream that does not answer in time: 504, token kept", func(t *testing.T) {
				slow := newUpstreamShop(t, 1)
				q := bootProxy(t, b, slow, func(c *app.Config) { c.UpstreamTimeout = time.Second })
				q.setPaused(true)
				tok := q.admitted("patient")
				stall := make(chan struct{})
				slow.stall.Store(&stall)
				r := q.buy("patient", tok)
				slow.stall.Store(nil)
				close(stall)
				if r.status != 504 || r.errorCode() != "upstream_timeout" || r.header.Get("Retry-After") == "" {
					t.Fatalf("stalled upstream: %d %s", r.status, r.raw)
				}
				if st := q.status("patient"); st != "READY" {
					t.Fatalf("after a timeout: %s, want READY", st)
				}
			})

			t.Run("twenty concurrent uses of one token make one upstream call", func(t *testing.T) {
				tok := p.admitted("eager")
				before := len(s.buyCalls())
				stall := make(chan struct{})
				s.stall.Store(&stall)
				var wg sync.WaitGroup
				var mu sync.Mutex
				codes := map[int]int{}
				var refused atomic.Int32
				for range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						status, err := rawBuy(p.base, p.jwt("eager"), tok)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							codes[-1]++
							return
						}
						codes[status]++
						if status == 409 && refused.Add(1) == 19 {
							s.stall.Store(nil)
							close(stall) // every other use was refused: let the one through
						}
					}()
				}
				wg.Wait()
				if codes[201] != 1 || codes[409] != 19 {
					t.Fatalf("answers %v, want one 201 and nineteen 409", codes)
				}
				if n := len(s.buyCalls()) - before; n != 1 {
					t.Fatalf("%d calls reached the upstream, want exactly 1", n)
				}
			})

			t.Run("a spoofed X-Waitroom-User is replaced", func(t *testing.T) {
				tok := p.admitted("honest")
				if r := p.buy("honest", tok, "X-Waitroom-User", "mallory", "X-Waitroom-Entry", "forged"); r.status != 201 {
					t.Fatalf("buy: %d %s", r.status, r.raw)
				}
				calls := s.buyCalls()
				got := calls[len(calls)-1].header
				if v := got.Values("X-Waitroom-User"); len(v) != 1 || v[0] != "honest" {
					t.Fatalf("upstream saw X-Waitroom-User %q, want [honest]", v)
				}
				if v := got.Values("X-Waitroom-Entry"); len(v) != 1 || v[0] == "forged" {
					t.Fatalf("upstream saw X-Waitroom-Entry %q", v)
				}
				if got.Get("X-Entry-Token") != "" {
					t.Errorf("the entry token itself went upstream")
				}
				// Unprotected routes: no X-Waitroom-* at all.
				p.do("GET", "/anything", "", nil, "X-Waitroom-User", "mallory")
				for k := range s.lastSeen().header {
					if strings.HasPrefix(k, "X-Waitroom-") {
						t.Errorf("unprotected route: %s reached the upstream", k)
					}
				}
			})

			t.Run("the quiet line lets people straight through", func(t *testing.T) {
				p.setPaused(false)
				defer p.setPaused(true)
				r := p.buy("walk-in", "")
				if r.status != 201 {
					t.Fatalf("walk-in on a quiet line: %d %s", r.status, r.raw)
				}
				if !strings.Contains(strings.Join(r.header.Values("Set-Cookie"), "\n"), gateway.EntryCookiePrefix+"default=") {
					t.Errorf("no entry cookie set: %v", r.header.Values("Set-Cookie"))
				}
				// A browser's first visit, no cookie at all: under the default
				// policy (challenge) its fresh session is no walk-in: it goes
				// to the waiting page, which solves the challenge unseen.
				res, body := p.browserVisit("/checkout")
				if want := gwPrefix + "/q/default?return=%2Fcheckout"; res.StatusCode != 303 || res.Header.Get("Location") != want {
					t.Fatalf("first visit on a quiet line under challenge: %d %q %s, want 303 to %s", res.StatusCode, res.Header.Get("Location"), body, want)
				}
				if !strings.Contains(strings.Join(res.Header.Values("Set-Cookie"), "\n"), "wr_session=") {
					t.Errorf("no session for the waiting page: %v", res.Header.Values("Set-Cookie"))
				}
				// Where anyone may enter (entry: any), the page at once.
				if r := p.do("PATCH", gwPrefix+"/admin/v1/queues/default", p.adminAuth(), map[string]any{"entry": "any"}); r.status != 200 {
					t.Fatalf("entry any: %d %s", r.status, r.raw)
				}
				defer p.do("PATCH", gwPrefix+"/admin/v1/queues/default", p.adminAuth(), map[string]any{"entry": "challenge"})
				if res, body := p.browserVisit("/checkout"); res.StatusCode != 200 || !bytes.Contains(body, []byte("Checkout for anon-")) {
					t.Fatalf("first visit on a quiet line under any: %d %s", res.StatusCode, body)
				}
			})

			t.Run("a browser without an entry goes to the waiting page", func(t *testing.T) {
				req, _ := http.NewRequest("GET", p.base+"/checkout?step=2", nil)
				req.Header.Set("Accept", "text/html,application/xhtml+xml")
				res, err := noRedirects.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				want := gwPrefix + "/q/default?return=" + url.QueryEscape("/checkout?step=2")
				if res.StatusCode != 303 || res.Header.Get("Location") != want {
					t.Fatalf("%d Location %q, want 303 to %q", res.StatusCode, res.Header.Get("Location"), want)
				}
			})

			t.Run("returning after the wait: same-origin paths only", func(t *testing.T) {
				tok := p.admitted("returner")
				for _, bad := range []string{"https://evil.example/", "//evil.example", `/\evil.example`, `\\evil.example`,
					"/%2F%2Fevil.example", "/%5Cevil.example", "javascript:alert(1)", "evil.example", "",
					"/ok%0d%0aSet-Cookie:%20x=1", "http:/evil.example"} {
					r := p.do("GET", gwPrefix+"/return?to="+url.QueryEscape(bad), p.as("returner"), nil)
					if r.status != 400 || r.errorCode() != "invalid_return" || r.header.Get("Location") != "" {
						t.Errorf("return to %q: %d %s", bad, r.status, r.raw)
					}
				}
				req, _ := http.NewRequest("GET", p.base+gwPrefix+"/return?to="+url.QueryEscape("/checkout?step=2"), nil)
				req.Header.Set("Authorization", p.as("returner"))
				res, err := noRedirects.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != 303 || res.Header.Get("Location") != "/checkout?step=2" {
					t.Fatalf("good return: %d %q", res.StatusCode, res.Header.Get("Location"))
				}
				var cookie *http.Cookie
				for _, c := range res.Cookies() {
					if c.Name == gateway.EntryCookiePrefix+"default" {
						cookie = c
					}
				}
				if cookie == nil || cookie.Value != tok || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode {
					t.Fatalf("entry cookie %+v, want HttpOnly SameSite=Lax holding the token", cookie)
				}
				// The cookie alone (a browser) opens the session route.
				r := p.do("GET", "/checkout", p.as("returner"), nil, "Cookie", cookie.Name+"="+cookie.Value)
				if r.status != 200 {
					t.Fatalf("with the entry cookie: %d %s", r.status, r.raw)
				}
			})
		})
	}
}

// rawBuy posts to /buy on its own connection and reports the status.
func rawBuy(base, jwt, token string) (int, error) {
	req, _ := http.NewRequest("POST", base+"/buy", nil)
	req.Header.Set("Authorization", "Bearer "+jwt)
	req.Header.Set("X-Entry-Token", token)
	req.Header.Set("Accept", "application/json")
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

// Unprotected routes pass untouched: method, path, query, headers and body
// bytes one way; status, headers and body bytes the other; and WebSockets.
func TestGatewayForwardsUntouched(t *testing.T) {
	t.Parallel()
	s := newUpstreamShop(t, 0)
	p := bootProxy(t, backend{name: "embedded"}, s, nil)

	body := bytes.Repeat([]byte("waitroom\x00\xff"), 10_000)
	send := func(base string) (*http.Response, []byte, shopCall) {
		req, _ := http.NewRequest("PATCH", base+"/some/where%20odd/?b=2&a=1&a=0", bytes.NewReader(body))
		req.Header.Set("X-Custom", "kept")
		req.Header.Add("X-Multi", "1")
		req.Header.Add("X-Multi", "2")
		req.Header.Set("Cookie", "shop_session=abc")
		req.Header.Set("Content-Type", "application/x-odd")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		got, err := io.ReadAll(res.Body)
		if err != nil { // a body cut short says why (seen once in CI: 163,840 of 262,259 bytes)
			t.Fatalf("%s: reading the answer: %v after %d bytes", base, err, len(got))
		}
		return res, got, s.lastSeen()
	}
	directRes, directBody, directCall := send(s.srv.URL)
	viaRes, viaBody, viaCall := send(p.base)

	if !bytes.Equal(directBody, viaBody) {
		t.Fatalf("response bodies differ: %d bytes direct, %d via the proxy", len(directBody), len(viaBody))
	}
	if directRes.StatusCode != viaRes.StatusCode {
		t.Errorf("status %d direct, %d via", directRes.StatusCode, viaRes.StatusCode)
	}
	for _, h := range []string{"Content-Type", "X-Shop-Echo", "Set-Cookie"} {
		if d, v := directRes.Header.Values(h), viaRes.Header.Values(h); strings.Join(d, "|") != strings.Join(v, "|") {
			t.Errorf("response header %s: %q direct, %q via", h, d, v)
		}
	}
	if directCall.method != viaCall.method || directCall.path != viaCall.path || directCall.rawQuery != viaCall.rawQuery ||
		directCall.bodySHA != viaCall.bodySHA || directCall.bodyLen != int64(len(body)) {
		t.Errorf("request differs: direct %+v via %+v", directCall, viaCall)
	}
	for _, h := range []string{"X-Custom", "X-Multi", "Cookie", "Content-Type", "Content-Length"} {
		if d, v := directCall.header.Values(h), viaCall.header.Values(h); strings.Join(d, "|") != strings.Join(v, "|") {
			t.Errorf("request header %s: %q direct, %q via", h, d, v)
		}
	}
	if viaCall.header.Get("X-Forwarded-For") == "" {
		t.Errorf("no X-Forwarded-For added")
	}

	t.Run("WebSocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws://"+p.m.Addr()+"/ws", nil)
		if err != nil {
			t.Fatalf("dial through the proxy: %v", err)
		}
		defer c.CloseNow()
		for _, msg := range []string{"hello", "again"} {
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			_, got, err := c.Read(ctx)
			if err != nil || string(got) != "echo: "+msg {
				t.Fatalf("echo of %q: %q, %v", msg, got, err)
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
	})

	t.Run("an upstream that is down: 502, nothing lost", func(t *testing.T) {
		down := newUpstreamShop(t, 1)
		q := bootProxy(t, backend{name: "embedded"}, down, nil)
		down.srv.Close()
		r := q.do("GET", "/anything", "", nil)
		if r.status != 502 || r.errorCode() != "upstream_unavailable" {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		r = q.buy("walk-in", "")
		if r.status != 502 {
			t.Fatalf("protected route to a dead upstream: %d %s", r.status, r.raw)
		}
		if st := q.status("walk-in"); st != "READY" {
			t.Fatalf("after a 502: %s, want READY (the token let in straight is kept)", st)
		}
	})
}

// A 50 MB upload goes through without the proxy holding it: the process's
// heap grows by a small part of it at most. Not parallel, so that nothing
// else moves the heap meanwhile.
func TestGatewayStreamsLargeUploads(t *testing.T) {
	s := newUpstreamShop(t, 0)
	p := bootProxy(t, backend{name: "embedded"}, s, nil)
	const size = 50 << 20
	peak := watchHeap(t)
	req, _ := http.NewRequest("POST", p.base+"/upload", io.LimitReader(&pattern{}, size))
	req.ContentLength = -1 // chunked: the proxy cannot know the size either
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	grew := peak()
	want := sha256.New()
	io.Copy(want, io.LimitReader(&pattern{}, size))
	got := s.lastSeen()
	if got.bodyLen != size || got.bodySHA != hex.EncodeToString(want.Sum(nil)) {
		t.Fatalf("upstream got %d bytes (sha %s)", got.bodyLen, got.bodySHA)
	}
	if grew > 16<<20 {
		t.Fatalf("the heap grew by %d MB while 50 MB streamed through", grew>>20)
	}
	t.Logf("heap grew by at most %.1f MB while 50 MB streamed through", float64(grew)/(1<<20))
}

// pattern is an endless stream of bytes that is the same every time.
type pattern struct{ n byte }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = p.n
		p.n = p.n*31 + 7
	}
	return len(b), nil
}

func TestGatewayEntryVerifiesWithJWKS(t *testing.T) {
	t.Parallel()
	s := newUpstreamShop(t, 10)
	p := bootProxy(t, backend{name: "embedded"}, s, nil)
	if r := p.buy("verified", ""); r.status != 201 {
		t.Fatalf("buy: %d %s", r.status, r.raw)
	}
	entry := s.buyCalls()[0].header.Get("X-Waitroom-Entry")

	fetchJWKS := func(p *proxied) jose.JSONWebKeySet {
		t.Helper()
		r := p.do("GET", gwPrefix+"/.well-known/jwks.json", "", nil)
		var set jose.JSONWebKeySet
		if r.status != 200 || json.Unmarshal([]byte(r.raw), &set) != nil || len(set.Keys) == 0 {
			t.Fatalf("JWKS: %d %s", r.status, r.raw)
		}
		return set
	}
	verify := func(raw string, set jose.JSONWebKeySet) (josejwt.Claims, map[string]any, error) {
		tok, err := josejwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			return josejwt.Claims{}, nil, err
		}
		var std josejwt.Claims
		var extra map[string]any
		if err := tok.Claims(set, &std, &extra); err != nil {
			return std, nil, err
		}
		return std, extra, std.ValidateWithLeeway(josejwt.Expected{Time: time.Now()}, 0)
	}

	std, extra, err := verify(entry, fetchJWKS(p))
	if err != nil {
		t.Fatalf("X-Waitroom-Entry does not verify against the served JWKS: %v", err)
	}
	if std.Subject != "verified" || extra["queue"] != "default" || extra["route"] != "POST /buy" || std.ID == "" || std.IssuedAt == nil || std.Expiry == nil {
		t.Fatalf("claims %+v %v", std, extra)
	}
	// Named for this backend by this gateway (the defaults: the upstream's
	// URL and the prefix), and by the settings when given.
	if err := std.Validate(josejwt.Expected{Issuer: gwPrefix, AnyAudience: josejwt.Audience{s.srv.URL}, Time: time.Now()}); err != nil {
		t.Errorf("iss %q, aud %q: %v", std.Issuer, std.Audience, err)
	}
	named := bootProxy(t, backend{name: "embedded"}, s, func(c *app.Config) {
		c.EntryIssuer, c.EntryAudience = "https://shop.example/_waitroom", "orders-service"
	})
	if r := named.buy("named", ""); r.status != 201 {
		t.Fatalf("buy: %d %s", r.status, r.raw)
	}
	calls := s.buyCalls()
	namedStd, _, err := verify(calls[len(calls)-1].header.Get("X-Waitroom-Entry"), fetchJWKS(named))
	if err != nil {
		t.Fatal(err)
	}
	if err := namedStd.Validate(josejwt.Expected{Issuer: "https://shop.example/_waitroom", AnyAudience: josejwt.Audience{"orders-service"}, Time: time.Now()}); err != nil {
		t.Errorf("--entry-issuer, --entry-audience: iss %q, aud %q: %v", namedStd.Issuer, namedStd.Audience, err)
	}

	// Rotation: a new key first, the old one kept after it: both verify.
	oldKey := p.keyPEM
	newKey := gateway.GenerateKey()
	rotated := bootProxy(t, backend{name: "embedded"}, s, func(c *app.Config) {
		f := filepath.Join(t.TempDir(), "rotating.pem")
		os.WriteFile(f, append(append([]byte{}, newKey...), oldKey...), 0o600)
		c.EntrySigningKey = f
	})
	if r := rotated.buy("after-rotation", ""); r.status != 201 {
		t.Fatalf("buy: %d %s", r.status, r.raw)
	}
	calls = s.buyCalls()
	fresh := calls[len(calls)-1].header.Get("X-Waitroom-Entry")
	set := fetchJWKS(rotated)
	if len(set.Keys) != 2 {
		t.Fatalf("JWKS during rotation has %d keys, want 2", len(set.Keys))
	}
	if _, _, err := verify(entry, set); err != nil {
		t.Errorf("an entry signed with the old key stopped verifying during rotation: %v", err)
	}
	if _, _, err := verify(fresh, set); err != nil {
		t.Errorf("an entry signed with the new key: %v", err)
	}
	// The old key rotated out: its entries fail, the new ones verify.
	done := bootProxy(t, backend{name: "embedded"}, s, func(c *app.Config) {
		f := filepath.Join(t.TempDir(), "new.pem")
		os.WriteFile(f, newKey, 0o600)
		c.EntrySigningKey = f
	})
	set = fetchJWKS(done)
	if _, _, err := verify(entry, set); err == nil {
		t.Errorf("an entry signed with a key rotated out still verifies")
	}
	if _, _, err := verify(fresh, set); err != nil {
		t.Errorf("an entry signed with the current key: %v", err)
	}
}

// watchHeap samples the heap until the returned func is called, which
// reports how far it rose above where it stood at the start.
func watchHeap(t *testing.T) func() uint64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// What reaches the backend besides the request, and what the browser is
// given: forwarding headers only from a trusted proxy, no X-Waitroom-*
// header in any spelling, none of waitroom's cookies, one Secure rule for
// every cookie, and a return Location that is what was checked.
func TestGatewayHeadersAndCookies(t *testing.T) {
	t.Parallel()
	s := newUpstreamShop(t, 10)
	p := bootProxy(t, backend{name: "embedded"}, s, nil)
	trusting := bootProxy(t, backend{name: "embedded"}, s, func(c *app.Config) { c.TrustedProxies = "127.0.0.1" })
	for _, q := range []*proxied{p, trusting} {
		q.setPaused(true)
	}
	spoof := []string{"X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https", "X-Forwarded-For", "6.6.6.6",
		"Forwarded", "for=6.6.6.6;host=evil.example", "X-Real-IP", "6.6.6.6"}

	t.Run("forwarding headers: the gateway's own unless from a trusted proxy", func(t *testing.T) {
		p.do("GET", "/anything", "", nil, spoof...)
		got := s.lastSeen().header
		host := strings.TrimPrefix(p.base, "http://")
		for h, want := range map[string]string{"X-Forwarded-Host": host, "X-Forwarded-Proto": "http", "X-Forwarded-For": "127.0.0.1",
			"Forwarded": `for=127.0.0.1;host="` + host + `";proto=http`, "X-Real-Ip": ""} {
			if v := strings.Join(got.Values(h), ", "); v != want {
				t.Errorf("untrusted peer: %s %q reached the backend, want %q", h, v, want)
			}
		}
		trusting.do("GET", "/anything", "", nil, spoof...)
		got = s.lastSeen().header
		for h, want := range map[string]string{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https", "X-Forwarded-For": "6.6.6.6, 127.0.0.1",
			"X-Real-Ip": "6.6.6.6"} {
			if v := strings.Join(got.Values(h), ", "); v != want {
				t.Errorf("trusted peer: %s %q reached the backend, want %q", h, v, want)
			}
		}
	})

	t.Run("X-Waitroom-* in any spelling never reaches the backend", func(t *testing.T) {
		tok := p.admitted("honest")
		spelt := []string{"X_Waitroom_User", "victim", "x_waitroom_entry", "forged", "X-Waitroom_User", "victim"}
		status, _, body := rawHTTP(t, strings.TrimPrefix(p.base, "http://"), attack{method: "POST", target: "/buy", header: spelt},
			[]string{"Authorization", p.as("honest"), "X-Entry-Token", tok, "Accept", "application/json"})
		if status != 201 {
			t.Fatalf("buy: %d %s", status, body)
		}
		calls := s.buyCalls()
		for k, v := range calls[len(calls)-1].header {
			if strings.HasPrefix(strings.ReplaceAll(strings.ToLower(k), "_", "-"), "x-waitroom-") && (k != "X-Waitroom-User" && k != "X-Waitroom-Entry" || v[0] == "victim") {
				t.Errorf("%s: %q reached the backend", k, v)
			}
		}
		if u := calls[len(calls)-1].header.Values("X-Waitroom-User"); len(u) != 1 || u[0] != "honest" {
			t.Errorf("X-Waitroom-User %q, want [honest]", u)
		}
	})

	t.Run("waitroom's cookies never reach the backend", func(t *testing.T) {
		tok := p.admitted("cookied")
		cookie := "shop_cart=3; " + identity.CookieName + "=whatever; " + gateway.EntryCookiePrefix + "default=" + tok + "; theme=dark"
		if r := p.do("GET", "/checkout", p.as("cookied"), nil, "Cookie", cookie); r.status != 200 {
			t.Fatalf("session route with the entry cookie: %d %s", r.status, r.raw)
		}
		checkout := s.lastSeen()
		p.do("GET", "/anything", "", nil, "Cookie", cookie)
		for _, call := range []shopCall{checkout, s.lastSeen()} {
			if got := call.header.Values("Cookie"); len(got) != 1 || got[0] != "shop_cart=3; theme=dark" {
				t.Errorf("%s %s: Cookie %q reached the backend, want the shop's own only", call.method, call.path, got)
			}
			if call.header.Get("X-Entry-Token") != "" {
				t.Errorf("%s %s: the entry token reached the backend", call.method, call.path)
			}
		}
	})

	t.Run("one Secure rule for the page's session and the entry cookie", func(t *testing.T) {
		for i, tt := range []struct {
			name  string
			q     *proxied
			proto string
			want  bool
		}{
			{"plain HTTP", p, "", false},
			{"a client's own X-Forwarded-Proto", p, "https", false},
			{"a trusted proxy's X-Forwarded-Proto", trusting, "https", true},
		} {
			var headers []string
			if tt.proto != "" {
				headers = []string{"X-Forwarded-Proto", tt.proto}
			}
			page := tt.q.do("GET", gwPrefix+"/", "", nil, headers...)
			first, _ := tt.q.browserVisitWith("/checkout", headers...)
			for what, res := range map[string][]string{"the waiting page": page.header.Values("Set-Cookie"), "the gateway's first visit": first.Header.Values("Set-Cookie")} {
				c := findCookie(res, identity.CookieName)
				if c == nil || c.Secure != tt.want {
					t.Errorf("%s: %s's session cookie %+v, want Secure %v", tt.name, what, c, tt.want)
				}
			}
			user := fmt.Sprintf("secure-%d", i)
			tt.q.admitted(user)
			req, _ := http.NewRequest("GET", tt.q.base+gwPrefix+"/return?to=%2Fcheckout", nil)
			req.Header.Set("Authorization", tt.q.as(user))
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			res, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if c := findCookie(res.Header.Values("Set-Cookie"), gateway.EntryCookiePrefix+"default"); c == nil || c.Secure != tt.want {
				t.Errorf("%s: entry cookie %+v, want Secure %v", tt.name, c, tt.want)
			}
		}
	})

	t.Run("the return Location is what was checked", func(t *testing.T) {
		p.admitted("returner")
		for _, bad := range []string{"/./%2fevil.com", "/.//evil.com", "/a/..//evil.com", "/%2e/%2fevil.com"} {
			r := p.do("GET", gwPrefix+"/return?to="+url.QueryEscape(bad), p.as("returner"), nil)
			if r.status != 400 || r.errorCode() != "invalid_return" || r.header.Get("Location") != "" {
				t.Errorf("return to %q: %d %q %s", bad, r.status, r.header.Get("Location"), r.raw)
			}
		}
		for _, good := range []string{"/checkout?step=2", "/a/./b", "/shop/../checkout"} {
			req, _ := http.NewRequest("GET", p.base+gwPrefix+"/return?to="+url.QueryEscape(good), nil)
			req.Header.Set("Authorization", p.as("returner"))
			res, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 303 || res.Header.Get("Location") != good {
				t.Errorf("return to %q: %d Location %q, want 303 to exactly it", good, res.StatusCode, res.Header.Get("Location"))
			}
		}
	})
}

// browserVisitWith is browserVisit with extra request headers (name,
// value, …).
func (p *proxied) browserVisitWith(path string, headers ...string) (*http.Response, []byte) {
	p.t.Helper()
	req, _ := http.NewRequest("GET", p.base+path, nil)
	req.Header.Set("Accept", "text/html")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, body
}

// findCookie parses Set-Cookie values and returns the one named name.
func findCookie(setCookies []string, name string) *http.Cookie {
	for _, v := range setCookies {
		if c, err := http.ParseSetCookie(v); err == nil && c.Name == name {
			return c
		}
	}
	return nil
}

// With --auth-audience and --auth-issuer, a user JWT the shop's login made
// for another service (or another login made) is 401 on a protected route,
// and the right one walks in on a quiet line.
func TestGatewayUserJWTAudience(t *testing.T) {
	t.Parallel()
	s := newUpstreamShop(t, 10)
	p := bootProxy(t, backend{name: "embedded"}, s, func(c *app.Config) {
		c.AuthAudience, c.AuthIssuer = "waitroom", "https://login.shop.example"
	})
	jwtFor := func(audience, issuer string) string {
		return "Bearer " + identity.NewWith([]byte(p.secret), identity.Options{Audience: audience, Issuer: issuer}).SignJWT("alice", time.Hour)
	}
	for _, tt := range []struct{ name, audience, issuer string }{
		{"another audience", "orders", "https://login.shop.example"},
		{"no audience", "", "https://login.shop.example"},
		{"another issuer", "waitroom", "https://evil.example"},
	} {
		if r := p.do("POST", "/buy", jwtFor(tt.audience, tt.issuer), nil, "Accept", "application/json"); r.status != 401 || r.errorCode() != "unauthenticated" {
			t.Errorf("%s: %d %s, want 401 unauthenticated", tt.name, r.status, r.raw)
		}
	}
	if n := len(s.buyCalls()); n != 0 {
		t.Fatalf("%d calls reached the backend", n)
	}
	if r := p.do("POST", "/buy", jwtFor("waitroom", "https://login.shop.example"), nil, "Accept", "application/json"); r.status != 201 {
		t.Fatalf("the right audience and issuer on a quiet line: %d %s", r.status, r.raw)
	}
}

// An answer that breaks off after a 2xx status went out did not reach the
// client whole: the entry is kept, and the user can try again (issue 35).
func TestGatewayKeepsTheEntryOfACutAnswer(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 100<<10))
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-answer
	}))
	t.Cleanup(upstream.Close)
	p := bootGateway(t, backend{name: "embedded"}, upstream.URL, []string{"--protect", "POST /buy"}, nil)
	p.setPaused(true)
	tok := p.admitted("alice")
	for attempt := 1; attempt <= 2; attempt++ {
		req, _ := http.NewRequest("POST", p.base+"/buy", nil)
		req.Header.Set("Authorization", p.as("alice"))
		req.Header.Set("X-Entry-Token", tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || err == nil {
			t.Fatalf("attempt %d: %d, %d bytes, %v: want a 200 cut short", attempt, res.StatusCode, got, err)
		}
		if st := p.status("alice"); st != "READY" {
			t.Fatalf("after attempt %d cut short: %s, want READY (the entry kept)", attempt, st)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("the upstream was called %d times, want 2: the kept entry let the user try again", n)
	}
}
