package gateway_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// staffKey is the bypass header's secret in these tests; its file ends in
// a newline, as an editor leaves it.
const staffKey = "staff-0123456789abcdef-key"

func staffKeyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "staff-key")
	if err := os.WriteFile(path, []byte(staffKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bypassCount is waitroom_bypassed_total for the rule labelled so (-1: no
// such series).
func bypassCount(t *testing.T, base, rule string) float64 {
	t.Helper()
	m := apptest.Metrics(t, base)
	v, ok := m[`waitroom_bypassed_total{rule="`+rule+`"}`]
	if !ok {
		return -1
	}
	return v
}

// anySpelling reports whether h carries the bypass header in any spelling
// a backend might read as it (X-Staff-Key, X_Staff_Key, …), and its values.
func anySpelling(h http.Header) []string {
	var found []string
	for k, vs := range h {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "X-Staff-Key") {
			found = append(found, vs...)
		}
	}
	return found
}

// stripStaffKey is the line deploy/'s configurations show for a --bypass
// header, written in as the operator is told to.
func stripStaffKey(t *testing.T) func(string) string {
	return func(conf string) string {
		for _, shown := range []string{`# proxy_set_header X-Staff-Key "";`, `# request_header -X-Staff-Key`} {
			if strings.Contains(conf, shown) {
				return strings.Replace(conf, shown, strings.TrimPrefix(shown, "# "), 1)
			}
		}
		t.Fatal("the configuration no longer shows where a --bypass header is stripped")
		return conf
	}
}

// refusedAsUnforwardable: the front answered r with the decision's refusal
// of a request it would forward otherwise than judged, sending nothing on.
func refusedAsUnforwardable(f apptest.Front, r apptest.Response) bool {
	return f.RefusesUnforwardable && r.Status == http.StatusBadRequest && r.ErrorCode() == "not_as_judged"
}

func TestGatewayBypass(t *testing.T) {
	eachFrontAndBackend(t, gatewayBypass)
}

func gatewayBypass(t *testing.T, f apptest.Front, b apptest.Backend) {
	s := apptest.NewUpstreamShop(t, 100)
	p := apptest.BootProxyBehindAs(t, f, b, s, func(c *app.Config) {
		c.TrustedProxies = "127.0.0.1"
		c.Bypass = []string{"header X-Staff-Key=@" + staffKeyFile(t), "cidr 10.0.0.0/8 queue=default"}
	}, stripStaffKey(t))
	p.SetPaused(true) // a busy night: nobody is let straight in
	// Read from waitroom itself: the shop's proxies keep the metrics off the public path.
	metrics := "http://" + p.Main.Addr() + apptest.GatewayPrefix
	if n := bypassCount(t, metrics, "header X-Staff-Key"); n != 0 {
		t.Fatalf("before anyone: header rule counted %v, want a series at 0", n)
	}

	t.Run("staff pass without a token, and the header never reaches the upstream", func(t *testing.T) {
		r := p.Do("POST", "/buy", "", nil, "X-Staff-Key", staffKey, "Accept", "application/json")
		if r.Status != http.StatusCreated {
			t.Fatalf("staff buy: %d %s", r.Status, r.Raw)
		}
		buys := s.BuyCalls()
		if len(buys) != 1 {
			t.Fatalf("the upstream saw %d buys, want 1", len(buys))
		}
		h := buys[0].Header
		if v := anySpelling(h); v != nil {
			t.Errorf("the upstream saw the bypass header: %q", v)
		}
		if got := h.Get("X-Waitroom-Bypass"); got != "header X-Staff-Key" {
			t.Errorf("X-Waitroom-Bypass = %q, want the rule's label", got)
		}
		if h.Get("X-Waitroom-Entry") != "" || h.Get("X-Waitroom-User") != "" {
			t.Errorf("a bypassed request carried an entry: %v", h)
		}
		if r := p.Do("GET", "/checkout", "", nil, "X-Staff-Key", staffKey); r.Status != http.StatusOK {
			t.Errorf("staff on the session route: %d %s", r.Status, r.Raw)
		}
		if v := anySpelling(s.LastSeen().Header); v != nil {
			t.Errorf("the upstream saw the bypass header on the session route: %q", v)
		}
		if n := bypassCount(t, metrics, "header X-Staff-Key"); n != 2 {
			t.Errorf("waitroom_bypassed_total{rule=\"header X-Staff-Key\"} = %v, want 2", n)
		}
		// The browser the waiting page sends back is let back without a cookie.
		res, _ := p.BrowserVisitWith(apptest.GatewayPrefix+"/return?queue=default&to=/checkout", "X-Staff-Key", staffKey)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/checkout" {
			t.Errorf("return for staff: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
	})

	t.Run("a wrong value gets the waiting room as before", func(t *testing.T) {
		before := len(s.BuyCalls())
		for _, wrong := range []string{staffKey + "x", staffKey[:len(staffKey)-1], strings.ToUpper(staffKey), ""} {
			r := p.Buy("guesser", "", "X-Staff-Key", wrong)
			if r.Status != http.StatusForbidden || r.ErrorCode() != "entry_token_invalid" {
				t.Errorf("wrong key %q: %d %s", wrong, r.Status, r.Raw)
			}
		}
		res, _ := p.BrowserVisitWith("/checkout", "X-Staff-Key", staffKey+"x")
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), apptest.GatewayPrefix+"/q/default") {
			t.Errorf("a browser with a wrong key: %d to %q, want the waiting page", res.StatusCode, res.Header.Get("Location"))
		}
		// Another spelling is not the header (and is stripped all the same,
		// or refused where the front would forward it as it is).
		if r := p.Buy("guesser", "", "X_Staff_Key", staffKey); r.Status != http.StatusForbidden && !refusedAsUnforwardable(f, r) {
			t.Errorf("X_Staff_Key: %d %s", r.Status, r.Raw)
		}
		if n := len(s.BuyCalls()); n != before {
			t.Errorf("%d buys reached the upstream with a wrong key", n-before)
		}
	})

	t.Run("the header is stripped from every request, bypassed or not", func(t *testing.T) {
		for _, h := range [][]string{{"X-Staff-Key", staffKey}, {"X-Staff-Key", "wrong"}, {"X_Staff_Key", staffKey}, {"x-staff-key", "wrong"}} {
			r := p.Do("GET", "/anything", "", nil, h...)
			if strings.Contains(h[0], "_") && refusedAsUnforwardable(f, r) {
				continue // answered by the decision: nothing went upstream
			}
			if r.Status != http.StatusAccepted {
				t.Fatalf("unprotected route with %s: %d %s", h[0], r.Status, r.Raw)
			}
			if v := anySpelling(s.LastSeen().Header); v != nil {
				t.Errorf("%s reached the upstream: %q", h[0], v)
			}
		}
	})

	t.Run("cidr through --trusted-proxies", func(t *testing.T) {
		before := len(s.BuyCalls())
		if f.ReplacesForwardedFor {
			// The front names its peer, the test's connection, whatever
			// the client said: no one is let past the line by a claim.
			if r := p.Do("POST", "/buy", "", nil, "X-Forwarded-For", "10.20.30.40", "Accept", "application/json"); r.Status == http.StatusCreated || len(s.BuyCalls()) != before {
				t.Fatalf("a client's own X-Forwarded-For behind %s: %d %s", f.Name, r.Status, r.Raw)
			}
			if n := bypassCount(t, metrics, "cidr 10.0.0.0/8 queue=default"); n != 0 {
				t.Errorf("cidr rule counted %v, want 0", n)
			}
			return
		}
		// The test's connection is the trusted proxy; the client it names is in 10/8.
		if r := p.Do("POST", "/buy", "", nil, "X-Forwarded-For", "10.20.30.40", "Accept", "application/json"); r.Status != http.StatusCreated {
			t.Fatalf("office address through the proxy: %d %s", r.Status, r.Raw)
		}
		if got := s.BuyCalls()[before].Header.Get("X-Waitroom-Bypass"); got != "cidr 10.0.0.0/8 queue=default" {
			t.Errorf("X-Waitroom-Bypass = %q", got)
		}
		// The proxy named an outside client after a 10/8 hop it does not trust.
		if r := p.Buy("outsider", "", "X-Forwarded-For", "10.20.30.40, 198.51.100.7"); r.Status != http.StatusForbidden {
			t.Errorf("an outside client: %d %s", r.Status, r.Raw)
		}
		if n := bypassCount(t, metrics, "cidr 10.0.0.0/8 queue=default"); n != 1 {
			t.Errorf("cidr rule counted %v, want 1", n)
		}
	})

	t.Run("never counted against admission", func(t *testing.T) {
		r := p.Do("GET", apptest.GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), nil)
		if r.Status != 200 {
			t.Fatalf("stats: %d %s", r.Status, r.Raw)
		}
		for _, f := range []string{"admittedTotal", "activeTokens", "length", "measuredRatePerSecond"} {
			if r.Num(f) != 0 {
				t.Errorf("%s = %v after bypassed requests alone, want 0", f, r.Num(f))
			}
		}
	})

	t.Run("the metric never shows the secret", func(t *testing.T) {
		res, err := http.Get(metrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(body), staffKey) {
			t.Error("/metrics shows the staff key")
		}
	})
}

// A forwarded address from a peer --trusted-proxies does not name is not
// believed: the cidr rule sees the connection's address.
func TestGatewayBypassIgnoresUntrustedForwarding(t *testing.T) {
	t.Parallel()
	s := apptest.NewUpstreamShop(t, 10)
	p := apptest.BootProxy(t, apptest.Backends[0], s, func(c *app.Config) {
		c.TrustedProxies = "192.0.2.1" // not the test's connection
		c.Bypass = []string{"cidr 10.0.0.0/8"}
	})
	p.SetPaused(true)
	if r := p.Buy("outsider", "", "X-Forwarded-For", "10.20.30.40"); r.Status != http.StatusForbidden {
		t.Fatalf("a forwarded 10/8 address from an untrusted peer: %d %s", r.Status, r.Raw)
	}
	if n := len(s.BuyCalls()); n != 0 {
		t.Fatalf("%d buys reached the upstream", n)
	}
}
