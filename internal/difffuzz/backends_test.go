//go:build linux

package difffuzz_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/difffuzz"
	"github.com/waitroom/waitroom/internal/testenv"
)

// request is sent exactly as written: no client library cleans its
// method, target or header names.
type request struct {
	method, target string
	header         []string // name, value, …
	body           string   // sent with a Content-Length when not empty
}

// check is one request and what the backend must make of it.
type check struct {
	name string
	req  request
	want string // the answer's body (200)
	hit  string // the hit after the X-Fuzz-Id: "<method> <route>"; "" for none
}

func open(method, target, path string) check {
	return check{name: method + " " + target, req: request{method: method, target: target}, want: "OPEN " + method + " " + path}
}

func protected(method, target, route string) check {
	return check{
		name: method + " " + target,
		req:  request{method: method, target: target},
		want: "PROTECTED " + route,
		hit:  method + " " + route,
	}
}

// commonChecks hold on every backend: each protected route runs its
// handler, the same paths under other methods and other paths do not.
var commonChecks = []check{
	protected("POST", "/checkout", "POST /checkout"),
	protected("POST", "/api/buy", "POST /api/buy"),
	protected("PUT", "/items/7", "PUT /items/{id}"),
	protected("POST", "/orders/9/pay", "POST /orders/{id}/pay"),
	protected("GET", "/drops/3/buy", "GET /drops/{id}/buy"),
	// A HEAD reaches the GET handler, and the answer has no body.
	{name: "HEAD /drops/3/buy", req: request{method: "HEAD", target: "/drops/3/buy"}, hit: "HEAD GET /drops/{id}/buy"},
	open("GET", "/checkout", "/checkout"),
	open("PUT", "/api/buy", "/api/buy"),
	open("GET", "/items/7", "/items/7"),
	open("PUT", "/items/7/x", "/items/7/x"),
	open("GET", "/orders/9/pay", "/orders/9/pay"),
	open("POST", "/drops/3/buy", "/drops/3/buy"),
	open("GET", "/", "/"),
	open("DELETE", "/somewhere/else", "/somewhere/else"),
}

const form = "application/x-www-form-urlencoded"

// overrideChecks are each ecosystem's documented method overrides.
var overrideChecks = map[string][]check{
	// Spring's HiddenHttpMethodFilter: _method from getParameter (the
	// query or a form body, which GzipHandler inflates), in any case; PUT,
	// DELETE, PATCH only.
	"jetty": {
		{name: "form _method=put", req: request{method: "POST", target: "/items/7", header: []string{"Content-Type", form}, body: "_method=put"},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "query _method=put", req: request{method: "POST", target: "/items/7?_method=put"},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "gzipped form _method=PUT", req: request{method: "POST", target: "/items/7",
			header: []string{"Content-Type", form, "Content-Encoding", "gzip"}, body: gzipped("_method=PUT")},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "form _method=GET stays POST", req: request{method: "POST", target: "/checkout", header: []string{"Content-Type", form}, body: "_method=GET"},
			want: "PROTECTED POST /checkout", hit: "POST POST /checkout"},
	},
	// Flask's documented middleware: X-HTTP-Method-Override, on any method.
	"flask": {
		{name: "X-HTTP-Method-Override PUT", req: request{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "PUT"}},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "GET with X-HTTP-Method-Override POST", req: request{method: "GET", target: "/checkout", header: []string{"X-HTTP-Method-Override", "POST"}},
			want: "PROTECTED POST /checkout", hit: "POST POST /checkout"},
	},
	// method-override's README: three headers, the query's _method, and
	// the body's _method (urlencoded or JSON); from a POST only.
	"express": {
		{name: "query _method=PUT", req: request{method: "POST", target: "/items/7?_method=PUT"},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "X-HTTP-Method-Override PUT", req: request{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "PUT"}},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "X-HTTP-Method put", req: request{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method", "put"}},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "X-Method-Override PUT", req: request{method: "POST", target: "/items/7", header: []string{"X-Method-Override", "PUT"}},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "form _method=PUT", req: request{method: "POST", target: "/items/7", header: []string{"Content-Type", form}, body: "_method=PUT"},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "JSON _method PUT", req: request{method: "POST", target: "/items/7", header: []string{"Content-Type", "application/json"}, body: `{"_method":"PUT"}`},
			want: "PROTECTED PUT /items/{id}", hit: "PUT PUT /items/{id}"},
		{name: "GET with _method=PUT stays GET", req: request{method: "GET", target: "/items/7?_method=PUT"}, want: "OPEN GET /items/7"},
	},
}

// keepsAlive: whether the backend keeps a connection for the next request
// (Werkzeug's server closes each).
var keepsAlive = map[string]bool{"jetty": true, "flask": false, "express": true}

func gzipped(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	io.WriteString(w, s)
	w.Close()
	return b.String()
}

// TestBackends starts each backend once, the three side by side, and
// checks the contract of package difffuzz on it with raw requests.
func TestBackends(t *testing.T) {
	for _, name := range difffuzz.BackendNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := startBackend(t, name)
			for i, c := range append(slices.Clone(commonChecks), overrideChecks[name]...) {
				t.Run(c.name, func(t *testing.T) {
					clearHits(t, b)
					id := fmt.Sprintf("%s-%d", name, i)
					req := c.req
					req.header = append(slices.Clone(req.header), "X-Fuzz-Id", id)
					status, body, err := (&rawConn{addr: b.Addr}).do(req)
					if err != nil {
						t.Fatal(err)
					}
					if status != 200 || body != c.want {
						t.Errorf("%s %s: %d %q, want 200 %q", req.method, req.target, status, body, c.want)
					}
					var want []string
					if c.hit != "" {
						want = []string{id + " " + c.hit}
					}
					if got := hits(t, b); !slices.Equal(got, want) {
						t.Errorf("hits %q, want %q", got, want)
					}
				})
			}
			t.Run("keep-alive", func(t *testing.T) {
				c := &rawConn{addr: b.Addr}
				defer c.close()
				for _, target := range []string{"/checkout", "/api/buy", "/checkout"} {
					status, body, err := c.do(request{method: "POST", target: target})
					if err != nil {
						t.Fatal(err)
					}
					if status != 200 || !strings.HasPrefix(body, "PROTECTED") {
						t.Errorf("POST %s: %d %q", target, status, body)
					}
				}
				if want := map[bool]int{true: 1, false: 3}[keepsAlive[name]]; c.dials != want {
					t.Errorf("three requests took %d connections, want %d", c.dials, want)
				}
			})
			t.Run("concurrent", func(t *testing.T) {
				clearHits(t, b)
				const workers, each = 8, 25
				var want []string
				var wg sync.WaitGroup
				for w := range workers {
					c := &rawConn{addr: b.Addr}
					defer c.close()
					for i := range each {
						want = append(want, fmt.Sprintf("c%d.%d PUT PUT /items/{id}", w, i))
					}
					wg.Go(func() {
						for i := range each {
							req := request{method: "PUT", target: fmt.Sprintf("/items/%d", i), header: []string{"X-Fuzz-Id", fmt.Sprintf("c%d.%d", w, i)}}
							status, body, err := c.do(req)
							if err != nil {
								t.Error(err)
								return
							}
							if status != 200 || body != "PROTECTED PUT /items/{id}" {
								t.Errorf("PUT %s: %d %q", req.target, status, body)
							}
						}
					})
				}
				wg.Wait()
				got := hits(t, b)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%d hits, want the %d requests':\n%q", len(got), len(want), got)
				}
			})
			t.Run("through the gateway", func(t *testing.T) { fuzzThroughGateway(t, b) })
			t.Run("through nginx and the decision", func(t *testing.T) { fuzzThroughNginx(t, b) })
		})
	}
}

// startBackend starts a backend for the test, with testenv.Missing's rule
// when its tools are not installed, and checks that Close stops it.
func startBackend(t *testing.T, name string) *difffuzz.Backend {
	t.Helper()
	env, missing := difffuzz.LookupEnv(name)
	if len(missing) > 0 {
		testenv.Missing(t, "%s", strings.Join(missing, "; "))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	b, err := difffuzz.StartBackend(ctx, name, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if c, err := net.Dial("tcp", b.Addr); err == nil {
			c.Close()
			t.Errorf("%s still listens on %s after Close", name, b.Addr)
		}
	})
	return b
}

func hits(t *testing.T, b *difffuzz.Backend) []string {
	t.Helper()
	hits, err := b.Hits(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func clearHits(t *testing.T, b *difffuzz.Backend) {
	t.Helper()
	if err := b.Clear(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// rawConn sends requests exactly as written over one connection, and
// dials again after an answer that closed it.
type rawConn struct {
	addr  string
	conn  net.Conn
	br    *bufio.Reader
	dials int
}

func (c *rawConn) do(r request) (status int, body string, err error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
		if err != nil {
			return 0, "", err
		}
		c.conn, c.br = conn, bufio.NewReader(conn)
		c.dials++
	}
	c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.method, r.target, c.addr)
	for i := 0; i+1 < len(r.header); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", r.header[i], r.header[i+1])
	}
	if r.body != "" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(r.body))
	}
	b.WriteString("\r\n" + r.body)
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return 0, "", err
	}
	// The request's method tells ReadResponse whether a body follows (not
	// after HEAD).
	res, err := http.ReadResponse(c.br, &http.Request{Method: r.method})
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", r.method, r.target, err)
	}
	got, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", r.method, r.target, err)
	}
	if res.Close {
		c.close()
	}
	return res.StatusCode, string(got), nil
}

func (c *rawConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
