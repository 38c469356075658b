package apptest

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/gateway"
)

// Proxied is a booted `waitroom proxy` in front of an upstream.
type Proxied struct {
	*Instance               // its prefixed API is under GatewayPrefix
	Upstream  *UpstreamShop // BootProxy's upstream (nil from BootGateway)
	KeyPEM    []byte        // the entry signing key (--entry-signing-key)
}

// GatewayPrefix is where the gateway serves its own pages and API (the
// default --prefix).
const GatewayPrefix = "/_waitroom"

// BootProxy starts `waitroom proxy` in front of the UpstreamShop s, protecting
// POST /buy (spent on 2xx) and GET /checkout (kept). edit may adjust the
// config before it starts.
func BootProxy(t *testing.T, b Backend, s *UpstreamShop, edit func(*app.Config)) *Proxied {
	t.Helper()
	p := BootGateway(t, b, s.Server.URL, []string{"--protect", "POST /buy", "--protect-session", "GET /checkout"}, edit)
	p.Upstream = s
	return p
}

// BootGateway starts `waitroom proxy` in front of upstream with the given
// protect flags (and a signing key of the test's own).
func BootGateway(t *testing.T, b Backend, upstream string, protect []string, edit func(*app.Config)) *Proxied {
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
	in := start(t, cfg, b, "wrgw", edit, nil)
	return &Proxied{Instance: in, KeyPEM: key}
}

// SetPaused pauses or resumes the default queue: paused, nobody is let
// straight in (the line is not quiet) and nobody is admitted.
func (p *Proxied) SetPaused(paused bool) {
	p.T.Helper()
	r := p.Do("PATCH", GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), map[string]any{"paused": paused})
	if r.Status != 200 {
		p.T.Fatalf("pause=%v: %d %s", paused, r.Status, r.Raw)
	}
}

// Admitted enters user in the paused default line, lets admission take them,
// pauses again, and returns their entry token.
func (p *Proxied) Admitted(user string) string {
	p.T.Helper()
	if r := p.Do("POST", GatewayPrefix+"/api/v1/queues/default/entries", p.As(user), nil); r.Status != 200 {
		p.T.Fatalf("enter: %d %s", r.Status, r.Raw)
	}
	p.SetPaused(false)
	defer p.SetPaused(true)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := p.Do("GET", GatewayPrefix+"/api/v1/queues/default/entries/me", p.As(user), nil)
		if r.Str("status") == "READY" {
			return r.Str("token")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.T.Fatalf("%s never became READY", user)
	return ""
}

// UserStatus is the user's state in the default line.
func (p *Proxied) UserStatus(user string) string {
	p.T.Helper()
	return p.Do("GET", GatewayPrefix+"/api/v1/queues/default/entries/me", p.As(user), nil).Str("status")
}

// Buy calls the protected route as an API client.
func (p *Proxied) Buy(user, token string, headers ...string) Response {
	p.T.Helper()
	if token != "" {
		headers = append(headers, "X-Entry-Token", token)
	}
	return p.Do("POST", "/buy", p.As(user), nil, append(headers, "Accept", "application/json")...)
}

// BrowserVisit is a browser's visit with no cookie: the answer, not
// following a redirect, and its body.
func (p *Proxied) BrowserVisit(path string) (*http.Response, []byte) {
	p.T.Helper()
	return p.BrowserVisitWith(path)
}

// NoRedirects is a client that shows redirects instead of following them.
var NoRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// BrowserVisitWith is BrowserVisit with extra request headers (name,
// value, …).
func (p *Proxied) BrowserVisitWith(path string, headers ...string) (*http.Response, []byte) {
	p.T.Helper()
	req, _ := http.NewRequest("GET", p.Base+path, nil)
	req.Header.Set("Accept", "text/html")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := NoRedirects.Do(req)
	if err != nil {
		p.T.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, body
}
