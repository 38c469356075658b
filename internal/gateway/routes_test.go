package gateway

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/clientaddr"
)

// specRoutes are the patterns of the matching specification
// (TestRouteMatching, docs/gateway.md), as --protect (consumed) and
// --protect-session (kept) take them.
var specRoutes = []struct {
	pattern string
	consume bool
}{
	{"POST /checkout", true},
	{"POST /api/buy", true},
	{"PUT /items/{id}", true},
	{"POST /orders/{id}/pay", true},
	{"GET /drops/{id}/buy queue=drops", true},
	{"POST /basket/{id}", true},
	{"PUT /basket/{id}", false},
	{"shop.example.com/vip/", false},
	{"blog.example.com/drafts/", false},
}

// specDefaultHost is the Host of a specification row that names none.
const specDefaultHost = "www.example.com"

// routeCase is one row of the matching specification: a request and what
// the gateway makes of it.
type routeCase struct {
	method, target string
	host           string   // specDefaultHost when empty
	header         []string // name, value, …
	body, bodyType string   // bodyType "chunked": sent without a length
	// want: the pattern of the route it is for, "" when not protected, or
	// "400 code" for a request refused before any matching.
	want string
	// also: the pattern of a second route another reading matches (such a
	// request is refused with 400 ambiguous_route where it would be
	// forwarded).
	also string
	why  string
}

// routeSpec is the gateway's matching specification. docs/gateway.md
// prints it (TestRouteSpecInDocs keeps the two the same).
var routeSpec = []routeCase{
	{method: "POST", target: "/checkout", want: "POST /checkout", why: "as written"},
	{method: "POST", target: "/checkout?step=2", want: "POST /checkout", why: "the query is not the path"},
	{method: "GET", target: "/checkout", why: "another method"},
	{method: "POST", target: "/checkouts", why: "another path"},
	{method: "POST", target: "/check", why: "another path"},
	{method: "POST", target: "/checkoutjson", why: "no `.` boundary"},
	{method: "POST", target: "/check.out", why: "`/check` is no route"},
	{method: "POST", target: "/", why: "another path"},

	{method: "post", target: "/checkout", want: "POST /checkout", why: "method upper-cased, as Flask, Symfony and Laravel do"},
	{method: "Post", target: "/checkout", want: "POST /checkout", why: "method upper-cased"},
	{method: "HEAD", target: "/drops/42/buy", want: "GET /drops/{id}/buy", why: "a GET pattern covers HEAD"},

	{method: "POST", target: "/checkout;jsessionid=x", want: "POST /checkout", why: "`;…` removed, as Tomcat, Jetty and Spring do"},
	{method: "POST", target: "/api;x=1/buy", want: "POST /api/buy", why: "`;…` removed from every segment"},
	{method: "POST", target: "/api/buy;a=b;c=d", want: "POST /api/buy", why: "`;…` removed"},
	{method: "POST", target: "/checkout%3Bjsessionid=x", want: "POST /checkout", why: "an encoded `;` too"},
	{method: "POST", target: "/checkout%253Bx", want: "POST /checkout", why: "a double-encoded `;` too"},
	{method: "POST", target: "/;x/checkout", want: "POST /checkout", why: "a segment of parameters only is empty"},
	{method: "POST", target: "/x/..;/checkout", want: "POST /checkout", why: "`..;` is `..` once `;` is removed (Tomcat)"},

	{method: "POST", target: "/CHECKOUT", want: "POST /checkout", why: "case ignored, as Express and ASP.NET Core do"},
	{method: "POST", target: "/Api/Buy", want: "POST /api/buy", why: "case ignored"},
	{method: "POST", target: "/chec%E2%84%AAout", want: "POST /checkout", why: "the Kelvin sign is `k` to Java's `equalsIgnoreCase`"},
	{method: "PUT", target: "/ITEMS/AbC", want: "PUT /items/{id}", why: "case ignored"},

	{method: "POST", target: "/checkout.json", want: "POST /checkout", why: "a `.` extension, as Rails' `(.:format)`"},
	{method: "POST", target: "/checkout.php/x", want: "POST /checkout", why: "PHP runs `checkout.php` with the rest as PATH_INFO"},
	{method: "POST", target: "/checkout.", want: "POST /checkout", why: "an empty extension"},
	{method: "POST", target: "/checkout.json/", want: "POST /checkout", why: "an extension and a slash"},
	{method: "GET", target: "/drops/42/buy.json", want: "GET /drops/{id}/buy", why: "an extension after a wildcard's segment"},
	{method: "GET", target: "/drops/4.2/buy", want: "GET /drops/{id}/buy", why: "the wildcard takes `4.2`"},
	{method: "POST", target: "/api.json/buy", why: "an extension ends the path, not a segment before it"},

	{method: "POST", target: "/checkout%20", want: "POST /checkout", why: "trailing space trimmed, as some backends do"},
	{method: "POST", target: "/checkout%00", want: "POST /checkout", why: "trailing NUL trimmed"},
	{method: "POST", target: "/checkout%09", want: "POST /checkout", why: "trailing tab trimmed"},
	{method: "POST", target: "/checkout%0D%0A", want: "POST /checkout", why: "trailing CR LF trimmed"},
	{method: "POST", target: "/checkout%00.html", want: "POST /checkout", why: "a C string ends at NUL"},
	{method: "POST", target: "/checkout%23frag", want: "POST /checkout", why: "a decoded `#` ends the path"},
	{method: "POST", target: "/checkout%3Fx=1", want: "POST /checkout", why: "a decoded `?` ends the path"},
	{method: "POST", target: "/checkout%20x", why: "a space inside the path is part of it"},

	{method: "POST", target: "/./checkout", want: "POST /checkout", why: "dot segment resolved"},
	{method: "POST", target: "//checkout", want: "POST /checkout", why: "repeated slash collapsed"},
	{method: "POST", target: "/x/../checkout", want: "POST /checkout", why: "dot segment resolved"},
	{method: "POST", target: "/checkout/", want: "POST /checkout", why: "trailing slash"},
	{method: "POST", target: "/checkout//", want: "POST /checkout", why: "trailing slashes"},
	{method: "POST", target: "/%2Fcheckout", want: "POST /checkout", why: "an encoded `/` as a separator"},
	{method: "POST", target: "/api%2Fbuy", want: "POST /api/buy", why: "an encoded `/` as a separator"},
	{method: "POST", target: "/api%2fbuy", want: "POST /api/buy", why: "in lower case too"},
	{method: "POST", target: "/api%252Fbuy", want: "POST /api/buy", why: "double encoding undone"},
	{method: "POST", target: "/api%5Cbuy", want: "POST /api/buy", why: "an encoded backslash as a separator"},
	{method: "POST", target: `/api\buy`, want: "POST /api/buy", why: "a backslash as a separator"},
	{method: "POST", target: "/api/%62uy", want: "POST /api/buy", why: "an encoded letter"},
	{method: "POST", target: "/%2e/checkout", want: "POST /checkout", why: "an encoded dot segment"},
	{method: "POST", target: "/x/%2E%2E/checkout", want: "POST /checkout", why: "an encoded dot segment"},
	{method: "POST", target: "/api/check%2Fout", why: "`/api/check/out` is no route"},

	{method: "POST", target: "/orders/7/pay", want: "POST /orders/{id}/pay", why: "as written"},
	{method: "POST", target: "/orders/../pay", want: "POST /orders/{id}/pay", why: "Express resolves no dot segment: `{id}` is `..`"},
	{method: "POST", target: "/orders/a%2Fb/pay", want: "POST /orders/{id}/pay", why: "an encoded `/` kept in the segment: `{id}` is `a/b`"},
	{method: "POST", target: "/orders/x;y/pay", want: "POST /orders/{id}/pay", why: "with or without `;y`"},
	{method: "POST", target: "/orders//pay", why: "an empty segment is no id"},

	{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "PUT"}, want: "PUT /items/{id}", why: "method override (Rack, Symfony)"},
	{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method", "put"}, want: "PUT /items/{id}", why: "method override (OData), upper-cased"},
	{method: "POST", target: "/items/7", header: []string{"X-Method-Override", "PUT"}, want: "PUT /items/{id}", why: "method override (Express method-override)"},
	{method: "POST", target: "/items/7", header: []string{"X_HTTP_Method_Override", "PUT"}, want: "PUT /items/{id}", why: "`_` read as `-`, as CGI servers do"},
	{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "GET, PUT"}, want: "PUT /items/{id}", why: "every method a list names"},
	{method: "POST", target: "/items/7?_method=PUT", want: "PUT /items/{id}", why: "`_method` in the query"},
	{method: "POST", target: "/items/7?_METHOD=put", want: "PUT /items/{id}", why: "`_method` in any case"},
	{method: "POST", target: "/items/7?%5Fmethod=PUT", want: "PUT /items/{id}", why: "`_method` encoded"},
	{method: "POST", target: "/items/7?a=1;_method=PUT", want: "PUT /items/{id}", why: "`;` separates fields, as in Rack 2"},
	{method: "POST", target: "/items/7", bodyType: "application/x-www-form-urlencoded", body: "name=x&_method=PUT", want: "PUT /items/{id}", why: "`_method` in a form body (read, and put back)"},
	{method: "POST", target: "/items/7", bodyType: "application/x-www-form-urlencoded", body: "_method=DELETE", why: "the override names another method"},
	{method: "POST", target: "/items/7", body: "_method=PUT", want: "PUT /items/{id}", why: "an untyped body is a form to Rack"},
	{method: "POST", target: "/items/7", bodyType: "multipart/form-data; boundary=b", body: "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--b--\r\n", want: "PUT /items/{id}", why: "a multipart body is not read: any method"},
	{method: "POST", target: "/items/7", bodyType: "chunked", body: "_method=GET", want: "PUT /items/{id}", why: "a form of unknown length is not read: any method"},
	{method: "POST", target: "/items/7", bodyType: "application/x-www-form-urlencoded", body: "x=" + strings.Repeat("a", maxOverrideBody), want: "PUT /items/{id}", why: "a form over 16 KiB is not read: any method"},
	{method: "POST", target: "/items/7", bodyType: "application/json", body: `{"_method":"PUT"}`, want: "PUT /items/{id}", why: "JSON naming `_method` (Laravel reads it): any method"},
	{method: "POST", target: "/items/7", bodyType: "application/json", body: `{"name":"x"}`, why: "JSON without `_method`"},
	{method: "POST", target: "/items/7", bodyType: "text/plain", body: "_method=PUT", why: "no framework reads a text body as a form"},
	{method: "GET", target: "/items/7", why: "another method"},

	{method: "GET", target: "/vip/room", host: "shop.example.com", want: "shop.example.com/vip/", why: "the host the pattern names"},
	{method: "GET", target: "/vip/room", host: "SHOP.example.com", want: "shop.example.com/vip/", why: "host case ignored"},
	{method: "GET", target: "/vip/room", host: "shop.example.com.", want: "shop.example.com/vip/", why: "trailing dot removed"},
	{method: "GET", target: "/vip/room", host: "shop.example.com:8443", want: "shop.example.com/vip/", why: "port removed"},
	{method: "GET", target: "/vip/room", host: "203.0.113.7", want: "shop.example.com/vip/", why: "an address may reach any site"},
	{method: "GET", target: "/vip/room", host: "[2001:db8::1]:80", want: "shop.example.com/vip/", why: "an address may reach any site"},
	{method: "GET", target: "/vip/room", host: "other.example.com", want: "shop.example.com/vip/", why: "a name no pattern names may be the default site"},
	{method: "GET", target: "/vip/room", host: "blog.example.com", why: "another site a pattern names"},
	{method: "GET", target: "/drafts/1", host: "Blog.Example.Com", want: "blog.example.com/drafts/", why: "host case ignored"},
	{method: "GET", target: "/drafts/1", host: "shop.example.com", why: "another site a pattern names"},
	{method: "POST", target: "http://other.example.com/checkout", want: "400 invalid_request_target", why: "an absolute-form target is refused"},

	{method: "POST", target: "/search", header: []string{"X-Original-URL", "/checkout"}, want: "POST /checkout", why: "IIS and old Symfony take the path from it"},
	{method: "POST", target: "/search", header: []string{"X-Rewrite-URL", "/api/buy?x=1"}, want: "POST /api/buy", why: "likewise"},
	{method: "POST", target: "/checkout", header: []string{"X-Original-URL", "/api/buy"}, want: "POST /checkout", also: "POST /api/buy", why: "two routes: which one a backend runs depends on it"},
	{method: "POST", target: "/basket/1", header: []string{"X-HTTP-Method-Override", "PUT"}, want: "POST /basket/{id}", also: "PUT /basket/{id}", why: "two routes, a spent and a kept entry"},
	{method: "PUT", target: "/basket/1", want: "PUT /basket/{id}", why: "as written"},
}

// specTable builds the table of the specification's routes.
func specTable(t testing.TB, caseSensitive bool) *routes {
	t.Helper()
	var rs []Route
	for _, p := range specRoutes {
		r, err := ParseRoute(p.pattern, p.consume)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	table, err := newRoutes(rs, DefaultPrefix, caseSensitive)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// request builds the row's request as the server would hand it over.
func (c routeCase) request() *http.Request {
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	r := httptest.NewRequest(c.method, c.target, body)
	r.Host = cmp.Or(c.host, specDefaultHost)
	if strings.HasPrefix(c.target, "http") {
		r.Host = r.URL.Host
	}
	switch c.bodyType {
	case "":
	case "chunked":
		r.ContentLength = -1
		r.Body = io.NopCloser(r.Body)
	default:
		r.Header.Set("Content-Type", c.bodyType)
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		r.Header[c.header[i]] = append(r.Header[c.header[i]], c.header[i+1]) // as sent, not canonicalised
	}
	return r
}

func TestRouteMatching(t *testing.T) {
	table := specTable(t, false)
	if len(routeSpec) < 60 {
		t.Fatalf("the specification has %d rows, want at least 60", len(routeSpec))
	}
	for _, c := range routeSpec {
		t.Run(c.describe(), func(t *testing.T) {
			r := c.request()
			if absoluteForm(r) {
				if c.want != "400 invalid_request_target" {
					t.Fatalf("refused as absolute-form; want %q", c.want)
				}
				return
			}
			v := table.match(r)
			got := ""
			if v.protected {
				got = v.route.Pattern
			}
			if got != c.want || v.other != c.also {
				t.Fatalf("match = %q (also %q); want %q (also %q)", got, v.other, c.want, c.also)
			}
			if got == "GET /drops/{id}/buy" && v.route.Queue != "drops" {
				t.Fatalf("queue %q, want drops", v.route.Queue)
			}
			// Whatever was read ahead is put back: the upstream gets the
			// same bytes.
			if b, _ := io.ReadAll(r.Body); string(b) != c.body {
				t.Fatalf("body after matching: %d bytes, want the %d sent", len(b), len(c.body))
			}
		})
	}
}

// Compared as written, only the case changes.
func TestRouteMatchingCaseSensitive(t *testing.T) {
	table := specTable(t, true)
	for _, c := range []routeCase{
		{method: "POST", target: "/CHECKOUT"},
		{method: "POST", target: "/Api/Buy"},
		{method: "POST", target: "/chec%E2%84%AAout"},
		{method: "PUT", target: "/ITEMS/AbC"},
		{method: "PUT", target: "/items/AbC", want: "PUT /items/{id}"},
		{method: "POST", target: "/checkout;jsessionid=x", want: "POST /checkout"},
		{method: "post", target: "/checkout.json", want: "POST /checkout"},
		{method: "GET", target: "/vip/room", host: "SHOP.example.com.", want: "shop.example.com/vip/"},
	} {
		t.Run(c.describe(), func(t *testing.T) {
			v := table.match(c.request())
			got := ""
			if v.protected {
				got = v.route.Pattern
			}
			if got != c.want {
				t.Fatalf("match = %q; want %q", got, c.want)
			}
		})
	}
	var rs []Route
	for _, p := range []string{"POST /checkout", "POST /Checkout"} {
		r, _ := ParseRoute(p, true)
		rs = append(rs, r)
	}
	if err := CheckRoutes(rs, DefaultPrefix, true); err != nil {
		t.Errorf("two spellings, case-sensitive: %v", err)
	}
	if err := CheckRoutes(rs, DefaultPrefix, false); err == nil || !strings.Contains(err.Error(), "--protect-case-sensitive") {
		t.Errorf("two spellings compared without case: %v, want a conflict naming --protect-case-sensitive", err)
	}
}

// describe is the row's request in a line.
func (c routeCase) describe() string {
	s := c.method + " " + c.target
	if c.host != "" {
		s += " Host: " + c.host
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		s += " " + c.header[i] + ": " + c.header[i+1]
	}
	if c.body != "" {
		body := c.body
		if len(body) > 40 {
			body = body[:12] + fmt.Sprintf("…(%d bytes)", len(body))
		}
		s += fmt.Sprintf(" body %q", body)
		if c.bodyType != "" {
			s += " (" + c.bodyType + ")"
		}
	}
	return s
}

// specMarkdown renders the specification as docs/gateway.md prints it.
func specMarkdown() string {
	var b strings.Builder
	b.WriteString("| request | protected by | because |\n|---|---|---|\n")
	code := func(s string) string { return "`" + strings.ReplaceAll(s, "|", `\|`) + "`" }
	for _, c := range routeSpec {
		req := code(c.method + " " + c.target)
		if c.host != "" {
			req += ", " + code("Host: "+c.host)
		}
		for i := 0; i+1 < len(c.header); i += 2 {
			req += ", " + code(c.header[i]+": "+c.header[i+1])
		}
		if c.body != "" {
			body := c.body
			if len(body) > 40 {
				body = body[:2] + fmt.Sprintf("… (%d bytes)", len(body))
			}
			body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", `\r\n`), "`", "'")
			kind := c.bodyType
			if kind == "" {
				kind = "no Content-Type"
			}
			req += ", body " + code(body) + " (" + kind + ")"
		}
		by := "—"
		switch {
		case strings.HasPrefix(c.want, "400 "):
			by = "refused: 400 " + code(strings.TrimPrefix(c.want, "400 "))
		case c.want != "":
			by = code(c.want)
		}
		if c.also != "" {
			by += " and " + code(c.also) + ": 400 `ambiguous_route` once it would be forwarded"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", req, by, c.why)
	}
	return b.String()
}

// docsVar, when set to 1, makes TestRouteSpecInDocs write the table into
// docs/gateway.md instead of comparing.
const docsVar = "WAITROOM_WRITE_DOCS"

// The specification printed in docs/gateway.md is this file's: they never
// drift apart.
func TestRouteSpecInDocs(t *testing.T) {
	const file = "../../docs/gateway.md"
	const begin, end = "<!-- spec:routes -->\n", "<!-- /spec:routes -->"
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", file, begin, end)
	}
	var patterns strings.Builder
	patterns.WriteString("```\n")
	for _, p := range specRoutes {
		flag := "--protect-session"
		if p.consume {
			flag = "--protect"
		}
		fmt.Fprintf(&patterns, "%s '%s'\n", flag, p.pattern)
	}
	patterns.WriteString("```\n\nA request with no `Host` shown is for `" + specDefaultHost + "`.\n\n")
	want := patterns.String() + specMarkdown()
	got := string(doc[i+len(begin) : j])
	if got == want {
		return
	}
	if os.Getenv(docsVar) == "1" {
		out := append(append(append([]byte{}, doc[:i+len(begin)]...), want...), doc[j:]...)
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the specification into %s", file)
		return
	}
	t.Fatalf("%s's matching specification differs from routeSpec; %s=1 go test -run RouteSpecInDocs ./internal/gateway/ writes it. Want:\n%s", file, docsVar, want)
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
		if err := CheckRoutes(rs, DefaultPrefix, false); err == nil {
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
		"/./%2fevil.example", "/.//evil.example", "/a/..//evil.example", "/%2e/%2fevil.example", "/a/%2e%2e//evil.example",
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

// What the upstream is sent: the X-Waitroom-* headers and the entry token
// a client sends never (in any spelling), the forwarding headers of a
// client the gateway's own, of a trusted proxy kept and one hop added,
// waitroom's cookies never; the rest, and the Host, as sent.
func TestRewrite(t *testing.T) {
	up, _ := url.Parse("http://127.0.0.1:9/base")
	proxies, _ := clientaddr.Parse("10.0.0.0/8")
	g := &Gateway{o: Options{Upstream: up, Proxies: proxies}}
	rewrite := func(peer string, header ...string) http.Header {
		in := httptest.NewRequest("GET", "http://shop.example/x?q=1", nil)
		in.RemoteAddr = peer
		for i := 0; i+1 < len(header); i += 2 {
			in.Header[header[i]] = append(in.Header[header[i]], header[i+1]) // as sent, not canonicalised
		}
		pr := &httputil.ProxyRequest{In: in, Out: in.Clone(in.Context())}
		// As ReverseProxy does before Rewrite.
		for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
			pr.Out.Header.Del(h)
		}
		g.rewrite(pr)
		if pr.Out.Host != "shop.example" || pr.Out.URL.String() != "http://127.0.0.1:9/base/x?q=1" {
			t.Errorf("host %q, URL %s", pr.Out.Host, pr.Out.URL)
		}
		return pr.Out.Header
	}
	spoofed := []string{
		"X-Waitroom-User", "mallory", "x-waitroom-entry", "forged", "X_Waitroom_User", "victim", "X-Waitroom_Entry", "forged",
		"X-Entry-Token", "token", "X_Entry_Token", "token",
		"X-Forwarded-For", "6.6.6.6", "X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https",
		"Forwarded", "for=6.6.6.6;host=evil.example;proto=https", "X-Forwarded-Port", "443", "X-Forwarded-Prefix", "/evil",
		"X-Real-IP", "6.6.6.6", "X_Forwarded_Host", "evil.example", "True-Client-IP", "6.6.6.6",
		"Cookie", "shop=1; wr_session=anon-1.2.3; wr_entry_default=tok; x=2", "Cookie", "WR_ENTRY_drops=tok",
		"X-Keep", "1",
	}

	t.Run("from a client", func(t *testing.T) {
		h := rewrite("203.0.113.9:5555", spoofed...)
		want := http.Header{
			"X-Keep":            {"1"},
			"X-Forwarded-For":   {"203.0.113.9"},
			"X-Forwarded-Host":  {"shop.example"},
			"X-Forwarded-Proto": {"http"},
			"Forwarded":         {`for=203.0.113.9;host="shop.example";proto=http`},
			"Cookie":            {"shop=1; x=2"},
		}
		if diff := headerDiff(want, h); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("from a trusted proxy", func(t *testing.T) {
		h := rewrite("10.1.2.3:5555", spoofed...)
		want := http.Header{
			"X-Keep":             {"1"},
			"X-Forwarded-For":    {"6.6.6.6, 10.1.2.3"},
			"X-Forwarded-Host":   {"evil.example"},
			"X-Forwarded-Proto":  {"https"},
			"Forwarded":          {`for=6.6.6.6;host=evil.example;proto=https, for=10.1.2.3;host="shop.example";proto=http`},
			"X-Forwarded-Port":   {"443"},
			"X-Forwarded-Prefix": {"/evil"},
			"X-Real-Ip":          {"6.6.6.6"},
			"True-Client-Ip":     {"6.6.6.6"},
			"Cookie":             {"shop=1; x=2"},
		}
		if diff := headerDiff(want, h); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("a trusted proxy that sends no Forwarded gets none", func(t *testing.T) {
		h := rewrite("10.1.2.3:5555", "X-Forwarded-Proto", "https")
		if h.Get("Forwarded") != "" || h.Get("X-Forwarded-Proto") != "https" {
			t.Errorf("Forwarded %q, X-Forwarded-Proto %q", h.Get("Forwarded"), h.Get("X-Forwarded-Proto"))
		}
	})
	t.Run("cookies without waitroom's pass byte for byte", func(t *testing.T) {
		h := rewrite("203.0.113.9:5555", "Cookie", "a=1;b=2;  c=3")
		if got := h.Values("Cookie"); len(got) != 1 || got[0] != "a=1;b=2;  c=3" {
			t.Errorf("Cookie %q", got)
		}
		if h := rewrite("203.0.113.9:5555", "Cookie", "wr_session=x"); len(h.Values("Cookie")) != 0 {
			t.Errorf("Cookie %q, want none left", h.Values("Cookie"))
		}
	})
}

// headerDiff compares two headers by canonical name, "" when equal.
func headerDiff(want, got http.Header) string {
	canon := func(h http.Header) map[string]string {
		m := map[string]string{}
		for k, v := range h {
			m[http.CanonicalHeaderKey(k)] = strings.Join(v, " | ")
		}
		return m
	}
	w, g := canon(want), canon(got)
	var diff []string
	for k, v := range w {
		if g[k] != v {
			diff = append(diff, fmt.Sprintf("%s: got %q, want %q", k, g[k], v))
		}
	}
	for k, v := range g {
		if _, ok := w[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: %q, want none", k, v))
		}
	}
	slices.Sort(diff)
	return strings.Join(diff, "\n")
}

// BenchmarkRouteMatch is the matcher's cost per request, for requests as
// browsers send them and for an attacker's spelling.
//
//	go test -run '^$' -bench RouteMatch -benchmem ./internal/gateway/
func BenchmarkRouteMatch(b *testing.B) {
	table := specTable(b, false)
	for _, c := range []routeCase{
		{method: "GET", target: "/static/app.3f2a9c.js"},
		{method: "GET", target: "/products/42?ref=home"},
		{method: "POST", target: "/checkout"},
		{method: "GET", target: "/drops/42/buy"},
		{method: "POST", target: "/x/..;/CHECKOUT%3Bjsessionid=x.json"},
	} {
		r := c.request()
		b.Run(c.method+" "+c.target, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				table.match(r)
			}
		})
	}
}
