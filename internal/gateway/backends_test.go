package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/difffuzz"
	"github.com/waitroom/waitroom/internal/testenv"
)

// backendRoutes are what the gateway protects in front of every real
// backend: order handlers of the differential fuzzer's shops
// (internal/difffuzz), and a host's pages.
var backendRoutes = []string{
	"--protect", "POST /checkout", "--protect", "POST /api/buy", "--protect", "PUT /items/{id}",
	"--protect-session", "shop.example.com/vip/",
}

// attack is one way to spell a protected route that walked past the gateway
// before issue 19 or issue 35 (or a relative of one).
type attack struct {
	method, target string
	host           string   // the Host header; the backend's address when empty
	header         []string // name, value, … sent exactly so
	body, bodyType string   // bodyType "chunked": no Content-Type, no length
	// reaches: the real backends whose order handler runs when this is
	// sent to them directly (checked: the attack is real there).
	reaches []string
	// refused: the gateway answers 400 with this code before any matching;
	// forwarded: it goes on as an unprotected request, what made it a
	// protected one removed (an override the backend is not said to
	// honour); otherwise it is protected: 401, 403 or 303 without an entry.
	refused   string
	forwarded bool
}

var attacks = []attack{
	{method: "POST", target: "/checkout;jsessionid=x", reaches: []string{"jetty"}, refused: "invalid_path"},
	{method: "POST", target: "/api;x=1/buy", reaches: []string{"jetty"}, refused: "invalid_path"},
	{method: "post", target: "/checkout", reaches: []string{"flask"}},
	{method: "POST", target: "/%63heckout", reaches: []string{"jetty", "flask"}},
	{method: "POST", target: "/./checkout", reaches: []string{"jetty"}},
	{method: "POST", target: "/x/../checkout", reaches: []string{"jetty"}},
	{method: "POST", target: "//checkout", reaches: []string{"flask"}},
	{method: "POST", target: "/api%2Fbuy", reaches: []string{"jetty", "flask"}, refused: "invalid_path"},
	{method: "POST", target: "/api//../buy", reaches: []string{"jetty"}},
	{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "PUT"}, reaches: []string{"flask"}, forwarded: true},
	{method: "POST", target: "/items/7", header: []string{"X_HTTP_Method_Override", "put"}, reaches: []string{"flask"}, forwarded: true},
	{method: "POST", target: "/checkout.json"},
	{method: "POST", target: "/checkout.php/x"},
	{method: "POST", target: "/checkout."},
	{method: "POST", target: "/checkout%20"},
	{method: "POST", target: "/checkout%00", refused: "invalid_path"},
	{method: "POST", target: "/checkout%09", refused: "invalid_path"},
	{method: "POST", target: "/CHECKOUT"},
	{method: "POST", target: "/checkout%3Bjsessionid=x", refused: "invalid_path"},
	{method: "pOsT", target: "/CheckOut;jsessionid=x.json", refused: "invalid_path"},
	{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method", "PUT"}, forwarded: true},
	{method: "POST", target: "/items/7", header: []string{"X-Method-Override", "PUT"}, forwarded: true},
	{method: "POST", target: "/items/7?_method=PUT", forwarded: true},
	{method: "POST", target: "/items/7", bodyType: "application/x-www-form-urlencoded", body: "_method=PUT"},
	{method: "POST", target: "/items/7", bodyType: "multipart/form-data; boundary=b", body: "--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nPUT\r\n--b--\r\n"},
	{method: "POST", target: "/items/7", bodyType: "chunked", body: "_method=PUT"},
	{method: "POST", target: "/checkout", header: []string{"Connection", "close, Content-Type"}, bodyType: "text/plain", body: "x", refused: "invalid_header"},
	{method: "GET", target: "/vip/room", host: "shop.example.com"},
	{method: "GET", target: "/vip/room", host: "SHOP.example.com"},
	{method: "GET", target: "/vip/room", host: "shop.example.com."},
	{method: "GET", target: "/vip/room", host: "127.0.0.1"},
	{method: "GET", target: "http://other.example.com/vip/room", host: "shop.example.com", refused: "invalid_request_target"},
}

// Every attack of issues 19 and 35, through the gateway in front of a
// servlet container (Jetty 9.4) and Flask: each is refused (400), answered
// 401, 403 or 303, or forwarded without what made it protected, and
// nothing reaches an order handler. Sent to Jetty and Flask directly, the
// ones marked there do run the handler: the attacks are real. (The
// differential fuzzer, internal/difffuzz, sends many more.)
func TestGatewayAgainstRealBackends(t *testing.T) {
	for _, name := range difffuzz.BackendNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := startBackend(t, name)
			p := apptest.BootGateway(t, apptest.Backend{Name: "embedded"}, "http://"+b.addr, backendRoutes, nil)
			p.SetPaused(true) // a busy night: nobody is let straight in
			gw := strings.TrimPrefix(p.Base, "http://")

			for _, a := range attacks {
				t.Run(a.method+" "+a.target+" "+strings.Join(a.header, ": ")+a.host+a.body, func(t *testing.T) {
					if slices.Contains(a.reaches, b.name) {
						b.clear(t)
						status, _, body := rawHTTP(t, b.addr, a, nil)
						if got := b.hits(t); len(got) == 0 {
							t.Fatalf("sent directly, it did not reach the handler (%d %q): the case proves nothing here", status, body)
						}
					}
					b.clear(t)
					for _, as := range []struct {
						who    string
						header []string
						want   int
					}{
						{"an API client with no identity", []string{"Accept", "application/json"}, 401},
						{"a signed-in API client without an entry", []string{"Accept", "application/json", "Authorization", p.As("mallory")}, 403},
						{"a browser", []string{"Accept", "text/html"}, 303},
					} {
						status, _, body := rawHTTP(t, gw, a, as.header)
						switch {
						case a.refused != "":
							if status != 400 || !strings.Contains(body, a.refused) {
								t.Errorf("%s: %d %s; want 400 %s", as.who, status, body, a.refused)
							}
						case a.forwarded:
							if status == 401 || status == 403 || status == 303 {
								t.Errorf("%s: %d %s; want it forwarded as an unprotected request", as.who, status, body)
							}
						case status != as.want:
							t.Errorf("%s: %d %s; want %d", as.who, status, body, as.want)
						}
					}
					if got := b.hits(t); len(got) > 0 {
						t.Fatalf("reached the backend's handler through the gateway: %q", got)
					}
				})
			}
			t.Run("with an entry the order goes through, with who the user is", func(t *testing.T) {
				tok := p.Admitted("alice")
				b.clear(t)
				a := attack{method: "POST", target: "/checkout"}
				// A spoofed user spelt as CGI-style servers read it
				// (Werkzeug takes X_Waitroom_User as X-Waitroom-User).
				status, _, body := rawHTTP(t, gw, a, []string{"Authorization", p.As("alice"), "X-Entry-Token", tok, "X_Waitroom_User", "victim"})
				if status != 200 {
					t.Fatalf("%d %s", status, body)
				}
				if got := b.hits(t); len(got) != 1 || !strings.HasSuffix(got[0], "user=alice") {
					t.Fatalf("the backend saw %q, want one order for alice", got)
				}
			})
		})
	}
}

// rawHTTP sends a request exactly as a is written (no client library
// cleans its method, target or header names) plus extra headers, and
// returns the answer's status, headers and body.
func rawHTTP(t *testing.T, addr string, a attack, extra []string) (int, http.Header, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", a.method, a.target, cmpOr(a.host, addr))
	header := append(append([]string(nil), a.header...), extra...)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&req, "%s: %s\r\n", header[i], header[i+1])
	}
	switch {
	case a.bodyType == "chunked":
		fmt.Fprintf(&req, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(a.body), a.body)
	case a.body != "":
		if a.bodyType != "" {
			fmt.Fprintf(&req, "Content-Type: %s\r\n", a.bodyType)
		}
		fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n%s", len(a.body), a.body)
	default:
		req.WriteString("\r\n")
	}
	if _, err := io.WriteString(conn, req.String()); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", a.method, a.target, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(body)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// backend is one of the differential fuzzer's shops, its hits read
// without the request ids the fuzzer tags them with.
type backend struct {
	name, addr string
	b          *difffuzz.Backend
}

// startBackend starts a real backend for the test, with testenv.Missing's
// rule when its tools are not installed.
func startBackend(t *testing.T, name string) backend {
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
	t.Cleanup(func() { b.Close() })
	return backend{name: name, addr: b.Addr, b: b}
}

// hits lists the protected handler runs since the last clear, as
// "<id> <method> <route>[ user=<X-Waitroom-User>]".
func (b backend) hits(t *testing.T) []string {
	t.Helper()
	hits, err := b.b.Hits(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func (b backend) clear(t *testing.T) {
	t.Helper()
	if err := b.b.Clear(t.Context()); err != nil {
		t.Fatal(err)
	}
}
