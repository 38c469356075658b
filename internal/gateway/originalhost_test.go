package gateway_test

import (
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/gateway"
)

// nginx asks with gateway.DecisionHost and the client's Host in
// X-Original-Host (issue 50): the decision judges that Host, refuses one
// Go's server would refuse (for nginx as 401, which error_page hands to
// waitroom proxy; for Caddy as its 400), and judges a request that had none
// (HTTP/1.0) as waitroom proxy does, with none.
func TestDecisionReadsTheOriginalHost(t *testing.T) {
	t.Parallel()
	s := apptest.NewUpstreamShop(t, 10)
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, s, func(c *app.Config) { c.TrustedProxies = "127.0.0.1" })
	authz := p.Base + apptest.GatewayPrefix + "/authz/"
	for _, c := range []struct {
		name, path, host string
		headers          []string
		status           int
	}{
		{"nginx: the client's Host, valid", "nginx", gateway.DecisionHost, []string{"X-Original-Host", "shop.example.com"}, 200},
		{"nginx: no Host at all (HTTP/1.0)", "nginx", gateway.DecisionHost, nil, 200},
		{"nginx: a Host Go's server refuses, 401 for waitroom proxy to answer", "nginx", gateway.DecisionHost, []string{"X-Original-Host", "a@shop.test"}, 401},
		{"nginx, a configuration from before X-Original-Host: the Host is the client's", "nginx", "shop.example.com", []string{"X-Original-Host", "a@shop.test"}, 200},
		// Through such a configuration a client may send "Host:
		// waitroom-decision" and an X-Original-Host: nginx lowercases $host,
		// DecisionHost has capitals, so the client's Host is the one judged.
		{"nginx, before X-Original-Host: a client's waitroom-decision and X-Original-Host", "nginx", "waitroom-decision", []string{"X-Original-Host", "a@shop.test"}, 200},
		{"ingress-nginx: a Host Go's server refuses, in X-Original-URL", "ingress-nginx", "waitroom.shop.svc", []string{"X-Original-URL", "https://a@shop.test/product"}, 401},
		{"caddy: a Host Go's server refuses, its 400", "caddy", "127.0.0.1", []string{"X-Forwarded-Host", "a@shop.test", "X-Forwarded-Uri", "/product", "X-Forwarded-Method", "GET"}, 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", authz+c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = c.host
			req.Header.Set("X-Original-Method", "GET")
			req.Header.Set("X-Original-URI", "/product")
			for i := 0; i+1 < len(c.headers); i += 2 {
				req.Header.Set(c.headers[i], c.headers[i+1])
			}
			res, err := apptest.NoRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != c.status {
				t.Errorf("%d, want %d", res.StatusCode, c.status)
			}
		})
	}
}
