package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/degraded"
)

// The decision as each proxy asks for it. nginx and Caddy run for real in
// TestGatewayGuardsProtectedRoutes, the README's and the fuzzer's tests;
// Traefik, Envoy and ingress-nginx cannot be installed here (not in
// Debian), so their requests are built as their documentation describes
// them, and named so:
//   - Traefik's ForwardAuth (doc.traefik.io, middlewares/http/forwardauth):
//     a GET to the address with the original's headers and X-Forwarded-Method,
//     -Proto, -Host, -Uri and -For; a 2xx lets the request on with the
//     authResponseHeaders copied onto it, any other answer is the client's.
//   - Envoy's ext_authz filter in HTTP mode (envoyproxy.io, ext_authz
//     filter, HttpService): the original method, its path (and query) after
//     path_prefix, its :authority, the allowed headers, no body; a 200 lets it
//     on with allowed_upstream_headers, any other answer goes to the client.
//   - ingress-nginx's auth-url (kubernetes.github.io/ingress-nginx,
//     annotations): a GET with X-Original-URL ($scheme://$host$request_uri)
//     and X-Original-Method; 2xx, 401 and 403 only, as nginx's auth_request.

// decisionShape is one proxy's question about one original request.
type decisionShape struct {
	name         string
	method, path string   // the decision request
	headers      []string // name, value, …
	status       int
	// location: the answer's Location (the proxy's own redirect) or, for
	// nginx, X-Waitroom-Location; code: the error's code in the body.
	location, code string
	// passed: a header the allowing answer must carry (name, value).
	passed [2]string
}

func TestDecisionShapes(t *testing.T) {
	t.Parallel()
	s := apptest.NewUpstreamShop(t, 10)
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, s, func(c *app.Config) {
		c.TrustedProxies = "127.0.0.1"
		c.Bypass = []string{"header X-Staff-Key=" + staffKey}
	})
	p.SetPaused(true)
	tok := p.Admitted("holder")
	authz := apptest.GatewayPrefix + "/authz/"
	browser := []string{"Accept", "text/html", "Authorization", p.As("no-entry")}
	waiting := apptest.GatewayPrefix + "/q/default?return=%2Fcheckout"
	holder := []string{"Authorization", p.As("holder"), "X-Entry-Token", tok}
	for _, c := range []decisionShape{
		{name: "traefik (from its docs): unprotected", method: "GET", path: authz + "traefik", status: 200,
			headers: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/product?x=1", "X-Forwarded-Host", "shop.example.com", "X-Forwarded-Proto", "https"}},
		{name: "traefik (from its docs): a browser without an entry, the waiting page itself", method: "GET", path: authz + "traefik", status: 303, location: waiting,
			headers: append([]string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/checkout", "X-Forwarded-Host", "shop.example.com"}, browser...)},
		{name: "traefik (from its docs): with an entry", method: "GET", path: authz + "traefik", status: 200,
			headers: append([]string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/checkout", "X-Forwarded-Host", "shop.example.com"}, holder...)},
		{name: "traefik (from its docs): a dot segment is not forwarded as judged", method: "GET", path: authz + "traefik", status: 400, code: "not_as_judged",
			headers: []string{"X-Forwarded-Method", "POST", "X-Forwarded-Uri", "/x/../buy", "X-Forwarded-Host", "shop.example.com"}},
		{name: "envoy (from its docs): the original method and path after path_prefix", method: "POST", path: authz + "envoy/buy", status: 401, code: "unauthenticated",
			headers: []string{"Accept", "application/json", "Content-Length", "0"}},
		{name: "envoy (from its docs): with an entry", method: "GET", path: authz + "envoy/checkout?step=2", status: 200, headers: holder},
		{name: "envoy (from its docs): an encoded slash refused", method: "POST", path: authz + "envoy/b%2Fuy", status: 400, code: "invalid_path"},
		{name: "ingress-nginx (from its docs): a browser without an entry, 401 and where to go", method: "GET", path: authz + "ingress-nginx", status: 401, location: waiting,
			headers: append([]string{"X-Original-URL", "https://shop.example.com/checkout", "X-Original-Method", "GET"}, browser...)},
		{name: "nginx: a method override it would pass on, 401 for waitroom proxy to answer", method: "GET", path: authz + "nginx", status: 401,
			headers: []string{"X-Original-URI", "/buy", "X-Original-Method", "GET", "X-HTTP-Method-Override", "POST"}},
		{name: "nginx: no original request named, 401 for waitroom proxy to answer", method: "GET", path: authz + "nginx", status: 401},
		{name: "caddy: another proxy's headers are a client's", method: "GET", path: authz + "caddy", status: 400, code: "invalid_decision_request",
			headers: []string{"X-Original-URI", "/buy", "X-Original-Method", "POST"}},
		{name: "an unknown proxy", method: "GET", path: authz + "haproxy", status: 404},
		{name: "caddy: the entry token spelt with _, which a CGI-style backend reads as it", method: "GET", path: authz + "caddy", status: 400, code: "not_as_judged",
			headers: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/product", "X-Forwarded-Host", "shop.example.com", "X_Entry_Token", tok}},
		{name: "caddy: a bypass header spelt with _", method: "GET", path: authz + "caddy", status: 400, code: "not_as_judged",
			headers: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/product", "X-Forwarded-Host", "shop.example.com", "X_Staff_Key", staffKey}},
		{name: "nginx: staff pass by the bypass rule, named", method: "GET", path: authz + "nginx", status: 200,
			headers: []string{"X-Original-URI", "/buy", "X-Original-Method", "POST", "X-Staff-Key", staffKey},
			passed:  [2]string{"X-Waitroom-Bypass", "header X-Staff-Key"}},
		{name: "nginx: with an entry, named; the Cookie without waitroom's", method: "GET", path: authz + "nginx", status: 200,
			headers: append([]string{"X-Original-URI", "/checkout", "X-Original-Method", "GET", "Cookie", "shop=1; wr_session=x"}, holder...),
			passed:  [2]string{"X-Waitroom-Cookie", "shop=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := p.Send(apptest.NoRedirects, apptest.Call{Method: c.method, Path: c.path, Headers: c.headers})
			if err != nil {
				t.Fatal(err)
			}
			loc := r.Header.Get("Location")
			if c.status == 401 {
				loc = r.Header.Get("X-Waitroom-Location")
			}
			if r.Status != c.status || loc != c.location || c.code != "" && r.ErrorCode() != c.code {
				t.Errorf("%d Location %q %s, want %d %q %s", r.Status, loc, r.Raw, c.status, c.location, c.code)
			}
			if c.passed[0] != "" && r.Header.Get(c.passed[0]) != c.passed[1] {
				t.Errorf("%s %q, want %q", c.passed[0], r.Header.Get(c.passed[0]), c.passed[1])
			}
			if r.Status == 200 && strings.Contains(c.path+strings.Join(c.headers, " "), "/checkout") && r.Header.Get("X-Waitroom-User") != "holder" {
				t.Errorf("allowed with an entry, X-Waitroom-User %q (headers %v)", r.Header.Get("X-Waitroom-User"), r.Header)
			}
		})
	}
	if n := len(s.BuyCalls()); n != 0 {
		t.Errorf("the backend saw %d requests: a decision forwards nothing", n)
	}
}

// A decision is given only to --trusted-proxies: anyone else could name
// any original request and be told it may pass.
func TestDecisionOnlyForTrustedProxies(t *testing.T) {
	t.Parallel()
	s := apptest.NewUpstreamShop(t, 10)
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, s, func(c *app.Config) { c.TrustedProxies = "10.9.9.9" })
	for _, name := range []string{"nginx", "caddy", "traefik", "ingress-nginx", "envoy/product"} {
		r := p.Do("GET", apptest.GatewayPrefix+"/authz/"+name, "", nil, "X-Original-URI", "/product", "X-Original-Method", "GET",
			"X-Forwarded-Uri", "/product", "X-Forwarded-Method", "GET")
		if r.Status != http.StatusForbidden || r.ErrorCode() != "untrusted_proxy" {
			t.Errorf("%s from an untrusted peer: %d %s", name, r.Status, r.Raw)
		}
	}
}

// --on-store-error through nginx asking the decision, with the line's
// Redis stopped: under admit the protected request reaches the backend
// marked X-Waitroom-Degraded and with no entry, under wait it is 503 with
// Retry-After and reaches nothing: the rules of waitroom proxy, decided.
func TestDecisionWhenTheStoreIsAway(t *testing.T) {
	t.Parallel()
	for _, mode := range []degraded.Mode{degraded.Admit, degraded.Wait} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			redis := persistentRedis(t)
			shop := apptest.NewUpstreamShop(t, 100)
			p := apptest.BootProxyBehind(t, apptest.Fronts[1], apptest.Backend{Name: "private redis"}, shop, func(c *app.Config) {
				c.RedisURL, c.KeyPrefix, c.OnStoreError = redis.URL(), "wr:", string(mode)
			})
			p.SetPaused(true)
			redis.Stop()
			r := p.Buy("during", "")
			calls := shop.BuyCalls()
			switch {
			case mode == degraded.Admit && (r.Status != http.StatusCreated || len(calls) != 1):
				t.Fatalf("admit, Redis down: %d %s, %d calls reached the shop", r.Status, r.Raw, len(calls))
			case mode == degraded.Admit:
				h := calls[0].Header
				if h.Get(degraded.Header) != degraded.HeaderValue || h.Get("X-Waitroom-User") != "" || h.Get("X-Waitroom-Entry") != "" {
					t.Errorf("admit: the shop saw %v", h)
				}
			case r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || len(calls) != 0:
				t.Fatalf("wait, Redis down: %d (Retry-After %q) %s, %d calls reached the shop", r.Status, r.Header.Get("Retry-After"), r.Raw, len(calls))
			}
		})
	}
}
