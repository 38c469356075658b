package apptest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/proxyfront"
	"github.com/waitroom/waitroom/internal/testenv"
)

// Front is what stands before the backend in a gateway test: waitroom
// proxy itself, or the shop's own proxy asking waitroom's decision.
type Front struct {
	Name string
	// Deploy is the configuration in deploy/ the proxy runs ("" for
	// waitroom proxy itself).
	Deploy string
	// RefusesUnforwardable: a request the decision would not let it
	// forward as it holds it (a client's X-Waitroom-* header, a dot
	// segment) is answered to the client as refused (400 not_as_judged),
	// where nginx's error_page hands it to waitroom proxy, which forwards
	// its own reading. Either way nothing of it reaches the backend
	// unjudged.
	RefusesUnforwardable bool
	// ReplacesForwardedFor: the front sets X-Forwarded-For to its peer's
	// address, believing no client's (Caddy without trusted_proxies),
	// where nginx appends its peer to the one it was sent.
	ReplacesForwardedFor bool
	// ClosesAfterUpload: over HTTP/1 the front ends the connection with
	// the answer to a forwarded request that may carry a body (the
	// Caddyfile's @upload lines: Caddy 2.6 could otherwise cut the answer
	// short, docs/gateway.md), where the others keep it.
	ClosesAfterUpload bool
	start             func(t *testing.T, conf string, a proxyfront.Addresses) *proxyfront.Front
}

// Fronts are the gateway's fronts its end-to-end cases run through.
var Fronts = []Front{
	{Name: "waitroom proxy"},
	{Name: "nginx auth_request", Deploy: "nginx-auth-request.conf", start: startNginx},
	{Name: "caddy forward_auth", Deploy: "Caddyfile", RefusesUnforwardable: true, ReplacesForwardedFor: true, ClosesAfterUpload: true, start: startCaddy},
}

// Decides reports whether the front asks waitroom's decision and forwards
// itself: a single-use entry is then spent when the decision lets its
// request on, since no answer of the backend passes waitroom.
func (f Front) Decides() bool { return f.Deploy != "" }

func startNginx(t *testing.T, conf string, a proxyfront.Addresses) *proxyfront.Front {
	if proxyfront.Binary("nginx") == "" {
		testenv.Missing(t, "nginx")
	}
	p, err := proxyfront.Nginx(t.Context(), conf, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func startCaddy(t *testing.T, conf string, a proxyfront.Addresses) *proxyfront.Front {
	if proxyfront.Binary("caddy") == "" {
		testenv.Missing(t, "caddy")
	}
	var log bytes.Buffer
	p, err := proxyfront.Caddy(t.Context(), conf, a, &log)
	if err != nil {
		t.Fatal(err)
	}
	// Caddy's log says why an answer came short ("aborting with incomplete
	// response"), which Caddy 2.6 does not tell the client; read once Caddy
	// has stopped (the cleanup that stops it runs first).
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Caddy's log:\n%s", log.String())
		}
	})
	return p
}

// RepoFile reads a file of the repository by its path from the root
// (found from the test's directory upward).
func RepoFile(t testing.TB, path string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			b, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test's directory to find %s from", path)
		}
		dir = parent
	}
}

// BootProxyBehind is BootProxy behind the front: waitroom proxy trusting
// the front's address, the front forwarding to s and asking waitroom; the
// Proxied's Base is the front's.
func BootProxyBehind(t *testing.T, f Front, b Backend, s *UpstreamShop, edit func(*app.Config)) *Proxied {
	t.Helper()
	return BootProxyBehindAs(t, f, b, s, edit, nil)
}

// BootProxyBehindAs is BootProxyBehind with the front's configuration as
// an operator would change it from deploy/'s (nil: as shipped).
func BootProxyBehindAs(t *testing.T, f Front, b Backend, s *UpstreamShop, edit func(*app.Config), conf func(string) string) *Proxied {
	t.Helper()
	if !f.Decides() {
		return BootProxy(t, b, s, edit)
	}
	p := BootProxy(t, b, s, func(c *app.Config) {
		c.TrustedProxies = "127.0.0.1"
		if edit != nil {
			edit(c)
		}
	})
	p.Base = f.StartBefore(t, p.Main.Addr(), s.Server.Listener.Addr().String(), conf)
	return p
}

// StartBefore starts the front on its configuration in deploy/ (as an
// operator would change it: conf, nil for as shipped), asking waitroom and
// forwarding to backend (host:port each), stopped when the test ends; it
// answers the front's base URL.
func (f Front) StartBefore(t *testing.T, waitroom, backend string, conf func(string) string) string {
	t.Helper()
	shipped := RepoFile(t, filepath.Join("deploy", f.Deploy))
	if conf != nil {
		shipped = conf(shipped)
	}
	front := f.start(t, shipped, proxyfront.Addresses{Waitroom: waitroom, Backend: backend})
	t.Cleanup(front.Stop)
	return "http://" + front.Addr
}
