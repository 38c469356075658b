package gateway

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

func TestRouteMatching(t *testing.T) {
	var rs []Route
	for _, p := range []string{"POST /api/checkout", "GET /drops/{id}/buy queue=drops", "shop.example.com/vip/"} {
		r, err := ParseRoute(p, true)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	table, err := newRoutes(rs, DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		method, target, host string
		want                 string // the pattern, or "" for not protected
	}{
		{"POST", "/api/checkout", "", "POST /api/checkout"},
		{"GET", "/api/checkout", "", ""},
		{"POST", "/api/checkout?x=1", "", "POST /api/checkout"},
		{"POST", "/api/checkouts", "", ""},
		{"POST", "/api", "", ""},
		// Ways to write the same path that a lenient backend would read as it.
		{"POST", "/api/./checkout", "", "POST /api/checkout"},
		{"POST", "/api//checkout", "", "POST /api/checkout"},
		{"POST", "//api/checkout", "", "POST /api/checkout"},
		{"POST", "/x/../api/checkout", "", "POST /api/checkout"},
		{"POST", "/api/checkout/", "", "POST /api/checkout"},
		{"POST", "/api%2Fcheckout", "", "POST /api/checkout"},
		{"POST", "/api%2fcheckout", "", "POST /api/checkout"},
		{"POST", "/api/%63heckout", "", "POST /api/checkout"},
		{"POST", "/api%252Fcheckout", "", "POST /api/checkout"},
		{"POST", "/api%5Ccheckout", "", "POST /api/checkout"},
		{"POST", "/api/check%2Fout", "", ""},
		{"GET", "/drops/42/buy", "", "GET /drops/{id}/buy"},
		{"HEAD", "/drops/42/buy", "", "GET /drops/{id}/buy"},
		{"GET", "/drops/42/buy/now", "", ""},
		{"GET", "/vip/room", "shop.example.com", "shop.example.com/vip/"},
		{"GET", "/vip/room", "other.example.com", ""},
		{"GET", "/", "", ""},
	} {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "http://placeholder"+tt.target, nil)
			if tt.host != "" {
				r.Host = tt.host
			} else {
				r.Host = "localhost"
			}
			got, ok := table.match(r)
			if ok != (tt.want != "") || got.Pattern != tt.want {
				t.Fatalf("match = %q, %v; want %q", got.Pattern, ok, tt.want)
			}
			if tt.want == "GET /drops/{id}/buy" && got.Queue != "drops" {
				t.Fatalf("queue %q, want drops", got.Queue)
			}
		})
	}
}

func TestParseRouteRefusals(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "empty pattern"},
		{"   ", "empty pattern"},
		{"checkout", "missing /"},
		{"POST checkout", "missing /"},
		{"POST /a queue=", "invalid queue name"},
		{"POST /a queue=no{pe}", "invalid queue name"},
		{"POST /a/{b", "bad wildcard"},
		{"POST /a/{b}/{b}", "duplicate wildcard"},
	} {
		if _, err := ParseRoute(tt.in, true); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseRoute(%q) = %v, want an error saying %q", tt.in, err, tt.want)
		}
	}
	for _, set := range [][]string{
		{"POST /a", "POST /a"},
		{"POST /{x}/b", "POST /a/{y}"},
		{"/_waitroom/x"},
		{"GET /_waitroom"},
	} {
		var rs []Route
		for _, p := range set {
			r, err := ParseRoute(p, true)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		if err := CheckRoutes(rs, DefaultPrefix); err == nil {
			t.Errorf("CheckRoutes(%q) accepted them", set)
		}
	}
}

func TestSafeReturn(t *testing.T) {
	for _, ok := range []string{"/", "/checkout", "/checkout?step=2&x=%2F", "/a/b#frag", "/%E2%9C%93"} {
		if !SafeReturn(ok) {
			t.Errorf("SafeReturn(%q) = false, want true", ok)
		}
	}
	for _, bad := range []string{
		"", "checkout", "https://evil.example", "//evil.example", "///evil.example", `/\evil.example`,
		`\\evil.example`, `/\/evil.example`, "/%2F%2Fevil.example", "/%2f/evil.example", "/%5Cevil.example",
		"/%252F%252Fevil.example", "javascript:alert(1)", "/ok\r\nSet-Cookie: x=1", "/ok%0d%0aSet-Cookie:x=1",
		"/a b", "/\x00", "http:/evil.example", " /checkout", "/" + strings.Repeat("a", 3000),
	} {
		if SafeReturn(bad) {
			t.Errorf("SafeReturn(%q) = true, want false", bad)
		}
	}
}

func TestValidPrefix(t *testing.T) {
	for _, ok := range []string{"/_waitroom", "/queue", "/a/b-c.d"} {
		if err := ValidPrefix(ok); err != nil {
			t.Errorf("ValidPrefix(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/", "_waitroom", "/_waitroom/", "/a//b", "/a/../b", "/a b", "/a%20b", "/a?b"} {
		if ValidPrefix(bad) == nil {
			t.Errorf("ValidPrefix(%q) accepted", bad)
		}
	}
}

// The X-Waitroom-* headers a client sends never reach the upstream; the
// others, and the Host, are kept.
func TestRewriteStripsWaitroomHeaders(t *testing.T) {
	up, _ := url.Parse("http://127.0.0.1:9/base")
	g := &Gateway{o: Options{Upstream: up}}
	in := httptest.NewRequest("GET", "http://shop.example/x?q=1", nil)
	in.Header.Set("X-Waitroom-User", "mallory")
	in.Header["x-waitroom-entry"] = []string{"forged"} // not canonical: still stripped
	in.Header.Set("X-Keep", "1")
	pr := &httputil.ProxyRequest{In: in, Out: in.Clone(in.Context())}
	g.rewrite(pr)
	for k := range pr.Out.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-waitroom-") {
			t.Errorf("%s reached the upstream", k)
		}
	}
	if pr.Out.Header.Get("X-Keep") != "1" || pr.Out.Host != "shop.example" || pr.Out.URL.String() != "http://127.0.0.1:9/base/x?q=1" {
		t.Errorf("not kept: headers %v, host %q, URL %s", pr.Out.Header, pr.Out.Host, pr.Out.URL)
	}
}
