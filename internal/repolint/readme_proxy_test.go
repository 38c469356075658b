package repolint_test

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/proxyfront"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestREADMEProxySnippets runs the README's "keep your proxy" snippets as
// written: real nginx and real Caddy on them, in front of a live waitroom
// (the README's routes, its line paused) and a backend. A protected route
// needs an entry, a browser without one goes to the waiting page, an entry
// lets the request through with the user named, anything else passes
// without a client's own bot score header, and waitroom's metrics are not
// served.
// Each snippet is also its file in deploy/ without the comments, so that
// the two never drift.
func TestREADMEProxySnippets(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ marker, fence, deploy, proxy string }{
		{"readme-test:nginx", "nginx", "nginx-auth-request.conf", "nginx"},
		{"readme-test:caddy", "caddy", "Caddyfile", "caddy"},
	} {
		t.Run(c.proxy, func(t *testing.T) {
			t.Parallel()
			snippet := fencedBlock(t, readme, c.marker, c.fence)
			file, err := os.ReadFile("../../deploy/" + c.deploy)
			if err != nil {
				t.Fatal(err)
			}
			if want := withoutComments(string(file)); snippet != want {
				t.Errorf("README's %s snippet is not deploy/%s without its comments:\n%s\nwant:\n%s", c.proxy, c.deploy, snippet, want)
			}
			if proxyfront.Binary(c.proxy) == "" {
				testenv.Missing(t, "%s (scripts/test.sh installs it)", c.proxy)
			}
			checkSnippet(t, c.proxy, snippet)
		})
	}
}

// checkSnippet puts the proxy, on snippet, in front of a waitroom protecting
// the README's routes and a backend, and holds it to the basics.
func checkSnippet(t *testing.T, proxy, snippet string) {
	shop := apptest.NewUpstreamShop(t, 0)
	p := apptest.BootGateway(t, apptest.Backend{Name: "embedded"}, shop.Server.URL,
		[]string{"--protect", "POST /checkout", "--protect-session", "GET /checkout/"},
		func(c *app.Config) { c.TrustedProxies = "127.0.0.1" })
	p.SetPaused(true)
	a := proxyfront.Addresses{Waitroom: p.Main.Addr(), Backend: shop.Server.Listener.Addr().String()}
	start := map[string]func() (*proxyfront.Front, error){
		"nginx": func() (*proxyfront.Front, error) { return proxyfront.Nginx(t.Context(), snippet, a, nil) },
		"caddy": func() (*proxyfront.Front, error) { return proxyfront.Caddy(t.Context(), snippet, a, nil) },
	}[proxy]
	front, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Stop)
	p.Base = "http://" + front.Addr

	if r := p.Do("POST", "/checkout", p.As("no-entry"), nil, "Accept", "application/json"); r.Status != 403 || r.ErrorCode() != "entry_token_invalid" {
		t.Errorf("POST /checkout without an entry: %d %s", r.Status, r.Raw)
	}
	if res, body := p.BrowserVisit("/checkout/2"); res.StatusCode != 303 || !strings.HasPrefix(res.Header.Get("Location"), apptest.GatewayPrefix+"/q/default?return=") {
		t.Errorf("a browser without an entry: %d %q %s", res.StatusCode, res.Header.Get("Location"), body)
	}
	tok := p.Admitted("holder")
	if r := p.Do("POST", "/checkout", p.As("holder"), nil, "X-Entry-Token", tok); r.Status != 202 || shop.LastSeen().Header.Get("X-Waitroom-User") != "holder" {
		t.Errorf("POST /checkout with an entry: %d %s, the backend saw X-Waitroom-User %q", r.Status, r.Raw, shop.LastSeen().Header.Get("X-Waitroom-User"))
	}
	if r := p.Do("GET", "/anything?x=1", "", nil, "X-Bot-Score", "99"); r.Status != 202 || shop.LastSeen().Path != "/anything" {
		t.Errorf("an unprotected route: %d %s", r.Status, r.Raw)
	}
	if v := shop.LastSeen().Header.Values("X-Bot-Score"); len(v) != 0 {
		t.Errorf("a client's own X-Bot-Score reached the backend: %q", v)
	}
	// The metrics are the operator's Prometheus's, not the public's.
	for _, path := range []string{"/metrics", "/metrics?x", "//metrics", "/./metrics"} {
		if r := p.Do("GET", apptest.GatewayPrefix+path, "", nil); r.Status != 404 {
			t.Errorf("GET %s%s through the proxy: %d, want 404", apptest.GatewayPrefix, path, r.Status)
		}
	}
	if r := p.Do("GET", apptest.GatewayPrefix+"/healthz", "", nil); r.Status != 200 {
		t.Errorf("GET %s/healthz through the proxy: %d %s, want waitroom's 200", apptest.GatewayPrefix, r.Status, r.Raw)
	}
}

// fencedBlock is the first ```fence block after marker in the README.
func fencedBlock(t *testing.T, readme []byte, marker, fence string) string {
	t.Helper()
	_, after, ok := bytes.Cut(readme, []byte(marker))
	if !ok {
		t.Fatalf("README.md has no %q marker", marker)
	}
	m := regexp.MustCompile("(?s)```" + fence + "\n(.*?)```").FindSubmatch(after)
	if m == nil {
		t.Fatalf("no ```%s block after %q in README.md", fence, marker)
	}
	return string(m[1])
}

// withoutComments is a configuration without its comment lines, its
// comments at the end of a line, and runs of blank lines.
func withoutComments(conf string) string {
	var out []string
	for _, line := range strings.Split(conf, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if i := strings.Index(line, " # "); i >= 0 {
			line = strings.TrimRight(line[:i], " \t")
		}
		out = append(out, line)
	}
	s := strings.Join(out, "\n")
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return strings.Trim(s, "\n") + "\n"
}
