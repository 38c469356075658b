package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// realBackend is a shop's checkout the gateway is put in front of.
type realBackend struct {
	name string
	addr string // host:port it listens on
	// hits lists the requests that reached an order handler (for the Go
	// echo: every request that reached it at all), as "METHOD URI
	// user=X-Waitroom-User".
	hits  func(t *testing.T) []string
	clear func(t *testing.T)
}

// backendRoutes are what the gateway protects in front of every real
// backend: the order handlers of Shop.java and shop.py, and a host's pages.
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
// differential fuzzer, internal/gateway/difffuzz, sends many more.)
func TestGatewayAgainstRealBackends(t *testing.T) {
	starts := []struct {
		name  string
		start func(t *testing.T) realBackend
	}{{"jetty", startJetty}, {"flask", startFlask}}
	for _, s := range starts {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			b := s.start(t)
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

// startJetty compiles testdata/backends/Shop.java (a servlet at /checkout
// and /api/buy) and runs it on an embedded Jetty 9.4.
func startJetty(t *testing.T) realBackend {
	java := testenv.Jetty(t)
	dir := t.TempDir()
	src, err := filepath.Abs("testdata/backends/Shop.java")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(java.Javac, "-nowarn", "-cp", java.Classpath, "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.Command(java.Java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", java.Classpath+string(os.PathListSeparator)+dir, "Shop")
	return startProcess(t, "jetty", cmd)
}

// startFlask runs testdata/backends/shop.py on Werkzeug, with Debian's
// python3 (a pyenv or venv python3 first on PATH would not see
// python3-flask).
func startFlask(t *testing.T) realBackend {
	python := testenv.Python(t, "flask")
	return startProcess(t, "flask", exec.Command(python, "testdata/backends/shop.py"))
}

var portLine = regexp.MustCompile(`^PORT (\d+)$`)

// startProcess starts a backend that prints "PORT n" once it listens and
// serves GET and DELETE /__hits; it is killed when the test ends.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) realBackend {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr apptest.SyncWriter
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	port := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := portLine.FindStringSubmatch(sc.Text()); m != nil {
				n, _ := strconv.Atoi(m[1])
				port <- n
			}
		}
	}()
	var addr string
	select {
	case n := <-port:
		addr = fmt.Sprintf("127.0.0.1:%d", n)
	case <-time.After(2 * time.Minute): // a JVM on a loaded 2-core machine
		t.Fatalf("%s did not start within 2 minutes:\n%s", name, stderr.String())
	}
	hitsURL := "http://" + addr + "/__hits"
	return realBackend{
		name: name,
		addr: addr,
		hits: func(t *testing.T) []string {
			t.Helper()
			res, err := http.Get(hitsURL)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 {
				t.Fatalf("GET /__hits: %d %s", res.StatusCode, b)
			}
			var hits []string // one a line
			for line := range strings.Lines(string(b)) {
				if line = strings.TrimSpace(line); line != "" {
					hits = append(hits, line)
				}
			}
			return hits
		},
		clear: func(t *testing.T) {
			t.Helper()
			req, _ := http.NewRequest("DELETE", hitsURL, nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		},
	}
}
