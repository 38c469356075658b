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

// specRoutes are the patterns of the reading specification
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
	{"PUT /drops/{id}/buy", true},
	{"POST /basket/{id}", true},
	{"PUT /basket/{id}", false},
	{"shop.example.com/vip/", false},
	{"blog.example.com/drafts/", false},
}

// specDefaultHost is the Host of a specification row that names none.
const specDefaultHost = "www.example.com"

// routeCase is one row of the reading specification: a request, what the
// gateway makes of it, and what it forwards.
type routeCase struct {
	method, target string
	host           string   // specDefaultHost when empty
	header         []string // name, value, …
	body, bodyType string   // bodyType "chunked": sent without a length
	// want: the pattern of the route it is for, "" when not protected, or
	// "400 code reason" for a request refused before any matching.
	want string
	// also: the pattern of a route of another queue the request also
	// matches (refused with 400 ambiguous_route where it would be
	// forwarded).
	also string
	// sent: what the upstream gets ("METHOD target") when it is not the
	// request as sent; and the row's route spends the entry (consume).
	sent string
	why  string
}

// routeSpec is the gateway's reading specification. docs/gateway.md prints
// it (TestRouteSpecInDocs keeps the two the same).
var routeSpec = []routeCase{
	{method: "POST", target: "/checkout", want: "POST /checkout", why: "as written"},
	{method: "POST", target: "/checkout?step=2", want: "POST /checkout", why: "the query is not the path"},
	{method: "GET", target: "/checkout", why: "another method"},
	{method: "POST", target: "/checkouts", why: "another path"},
	{method: "POST", target: "/check.out", why: "`/check` is no route"},
	{method: "POST", target: "/", why: "another path"},

	{method: "post", target: "/checkout", want: "POST /checkout", sent: "POST /checkout", why: "the method upper-cased, and forwarded so"},
	{method: "HEAD", target: "/drops/42/buy", want: "GET /drops/{id}/buy", why: "a GET pattern covers HEAD"},

	{method: "POST", target: "/./checkout", want: "POST /checkout", sent: "POST /checkout", why: "dot segments removed (RFC 3986 §5.2.4), and forwarded so"},
	{method: "POST", target: "/x/../checkout", want: "POST /checkout", sent: "POST /checkout", why: "likewise"},
	{method: "POST", target: "/api//../buy", want: "POST /api/buy", sent: "POST /api/buy", why: "the `..` removes the empty segment, as Jetty reads it"},
	{method: "POST", target: "//checkout", want: "POST /checkout", sent: "POST /checkout", why: "repeated slashes merged"},
	{method: "POST", target: "/checkout//", want: "POST /checkout", sent: "POST /checkout/", why: "merged; a trailing slash matches too"},
	{method: "POST", target: "/api/%62uy", want: "POST /api/buy", sent: "POST /api/buy", why: "an encoded letter decoded"},
	{method: "POST", target: "/%2e/checkout", want: "POST /checkout", sent: "POST /checkout", why: "an encoded dot segment"},
	{method: "POST", target: "/x/%2E%2E/checkout", want: "POST /checkout", sent: "POST /checkout", why: "an encoded dot segment"},
	{method: "POST", target: "/orders/../pay", sent: "POST /pay", why: "forwarded as `/pay`: no backend reads `{id}` as `..`"},
	{method: "POST", target: "/orders//pay", sent: "POST /orders/pay", why: "merged: no id"},
	{method: "GET", target: "/caf%c3%a9/%7euser", sent: "GET /caf%C3%A9/~user", why: "escapes decoded once and written one way"},
	{method: "POST", target: "/../checkout", want: "400 invalid_path above_root", why: "`..` above the root"},

	{method: "POST", target: "/api%2Fbuy", want: "400 invalid_path encoded_slash", why: "a separator to Jetty and Werkzeug, data to others"},
	{method: "POST", target: "/api%2fbuy", want: "400 invalid_path encoded_slash", why: "in lower case too"},
	{method: "PUT", target: "/items/%2F", want: "400 invalid_path encoded_slash", why: "likewise"},
	{method: "PUT", target: "/items%2F7%252F8", want: "400 invalid_path encoded_slash", why: "likewise"},
	{method: "POST", target: "/api%5Cbuy", want: "400 invalid_path encoded_slash", why: "an encoded backslash"},
	{method: "POST", target: `/api\buy`, want: "400 invalid_path encoded_slash", why: "a backslash, a separator to IIS and Tomcat"},
	{method: "POST", target: "/api%252Fbuy", want: "400 invalid_path encoded_percent", why: "a double encoding"},
	{method: "GET", target: "/100%25", want: "400 invalid_path encoded_percent", why: "an encoded `%`, whatever follows"},
	{method: "POST", target: "/checkout%00", want: "400 invalid_path control_character", why: "a decoded NUL"},
	{method: "POST", target: "/checkout%0D%0A", want: "400 invalid_path control_character", why: "a decoded CR LF"},
	{method: "GET", target: "/%C0%AE%C0%AE/checkout", want: "400 invalid_path invalid_utf8", why: "an overlong `.`: not UTF-8"},
	{method: "POST", target: "/items/7?_method=PUT#", want: "400 invalid_path fragment", why: "a raw `#`: backends end the target there"},

	{method: "POST", target: "/checkout;jsessionid=x", want: "400 invalid_path path_parameter", why: "`;…` on a protected path: cut by servlet containers, kept by others"},
	{method: "POST", target: "/api;x=1/buy", want: "400 invalid_path path_parameter", why: "in any segment"},
	{method: "POST", target: "/checkout%3Bjsessionid=x", want: "400 invalid_path path_parameter", why: "an encoded `;` too"},
	{method: "POST", target: "/;x/checkout", want: "400 invalid_path path_parameter", why: "a segment of parameters only"},
	{method: "POST", target: "/x/..;/checkout", want: "400 invalid_path path_parameter", why: "`..;` is `..` once `;` is cut (Tomcat)"},
	{method: "POST", target: "/orders/x;y/pay", want: "400 invalid_path path_parameter", why: "`{id}` is `x;y` or `x`: protected either way"},
	{method: "GET", target: "/shoes;color=red", why: "`;` on a path no route protects: forwarded"},

	{method: "POST", target: "/CHECKOUT", want: "POST /checkout", why: "case ignored, as Express and ASP.NET Core do"},
	{method: "POST", target: "/chec%E2%84%AAout", want: "POST /checkout", why: "the Kelvin sign is `k` to Java's `equalsIgnoreCase`"},
	{method: "PUT", target: "/ITEMS/AbC", want: "PUT /items/{id}", why: "case ignored"},
	{method: "POST", target: "/checkout.json", want: "POST /checkout", why: "a `.` extension, as Rails' `(.:format)`"},
	{method: "POST", target: "/checkout.php/x", want: "POST /checkout", why: "PHP runs `checkout.php` with the rest as PATH_INFO"},
	{method: "POST", target: "/checkout.", want: "POST /checkout", why: "an empty extension"},
	{method: "GET", target: "/drops/42/buy.json", want: "GET /drops/{id}/buy", why: "an extension after a wildcard's segment"},
	{method: "GET", target: "/drops/4.2/buy", want: "GET /drops/{id}/buy", why: "the wildcard takes `4.2`"},
	{method: "POST", target: "/api.json/buy", why: "an extension ends the path, not a segment before it"},
	{method: "POST", target: "/checkout%20", want: "POST /checkout", why: "a trailing space, which some backends trim"},
	{method: "POST", target: "/checkout%23frag", want: "POST /checkout", why: "a decoded `#` ends the path to a backend that decodes first"},
	{method: "POST", target: "/checkout%3Fx=1", want: "POST /checkout", why: "a decoded `?` likewise"},
	{method: "POST", target: "/checkout%20x", why: "a space inside the path is part of it"},

	{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "PUT"}, why: "an override the backend is not said to honour is removed (`--method-override`)"},
	{method: "POST", target: "/items/7", header: []string{"X_HTTP_Method", "put"}, why: "in any spelling"},
	{method: "POST", target: "/items/7?_method=PUT", sent: "POST /items/7", why: "a `_method` query field is removed"},
	{method: "POST", target: "/items/7?_METHOD=put&a=1", sent: "POST /items/7?a=1", why: "in any case"},
	{method: "POST", target: "/items/7?%5Fmethod=PUT", sent: "POST /items/7", why: "encoded"},
	{method: "POST", target: "/items/7?a=1;_method=PUT", sent: "POST /items/7?a=1", why: "after a `;`, as Rack 2 splits"},
	{method: "POST", target: "/items/7?_method[]=PUT", sent: "POST /items/7", why: "with qs's brackets"},
	{method: "POST", target: "/items/7?.method=PUT", sent: "POST /items/7", why: "as PHP mangles `.` into `_`"},
	{method: "POST", target: "/items/7?payment_method=card", why: "another field"},
	{method: "POST", target: "/items/7", bodyType: "application/x-www-form-urlencoded", body: "_method=put", want: "PUT /items/{id}", why: "a POST's body may name another method: matched under every method"},
	{method: "POST", target: "/items/7", bodyType: "application/json", body: `{"\u005fmethod":"PUT"}`, want: "PUT /items/{id}", why: "whatever its type or encoding"},
	{method: "POST", target: "/items/7", bodyType: "chunked", body: "x=1", want: "PUT /items/{id}", why: "of any length"},
	{method: "POST", target: "/items/7", why: "no body: the method is the request's"},
	{method: "GET", target: "/items/7", why: "another method"},
	{method: "POST", target: "/basket/1", bodyType: "application/x-www-form-urlencoded", body: "qty=2", want: "POST /basket/{id}", why: "and `PUT /basket/{id}`: the stricter rule, the entry spent"},
	{method: "PUT", target: "/basket/1", bodyType: "application/json", body: "{}", want: "PUT /basket/{id}", why: "only a POST's body names another method"},
	{method: "POST", target: "/drops/1/buy", bodyType: "application/x-www-form-urlencoded", body: "x=1", want: "PUT /drops/{id}/buy", also: "GET /drops/{id}/buy", why: "two routes of two queues"},
	{method: "POST", target: "/search", header: []string{"X-Original-URL", "/checkout"}, why: "removed: the path is the request line's"},
	{method: "POST", target: "/search", header: []string{"X-Rewrite-URL", "/api/buy"}, why: "likewise"},

	{method: "POST", target: "/checkout", header: []string{"Connection", "close, Content-Type"}, want: "400 invalid_header connection", why: "a proxy would drop `Content-Type` after the gateway read the request with it"},
	{method: "GET", target: "/", header: []string{"Connection", "keep-alive, Upgrade"}, why: "hop-by-hop options pass"},

	{method: "GET", target: "/vip/room", host: "shop.example.com", want: "shop.example.com/vip/", why: "the host the pattern names"},
	{method: "GET", target: "/vip/room", host: "blog.example.com", want: "shop.example.com/vip/", why: "a pattern's path on every host (`--hosts distinct` to tell hosts apart)"},
	{method: "GET", target: "/vip/room", host: "203.0.113.7", want: "shop.example.com/vip/", why: "an address too"},
	{method: "GET", target: "/drafts/1", host: "shop.example.com", want: "blog.example.com/drafts/", why: "likewise"},
	{method: "POST", target: "http://other.example.com/checkout", want: "400 invalid_request_target", why: "an absolute-form target is refused"},
}

// specTable builds the table of the specification's routes.
func specTable(t testing.TB, rd Reading) *routes {
	t.Helper()
	var rs []Route
	for _, p := range specRoutes {
		r, err := ParseRoute(p.pattern, p.consume)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	table, err := newRoutes(rs, DefaultPrefix, rd)
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

// judge is what the gateway makes of the row's request: the route it is
// for ("" none, "400 code reason" refused), the route of another queue
// it also matches, and what goes upstream.
func (c routeCase) judge(table *routes) (got, also, sent string, v verdict) {
	r := c.request()
	if absoluteForm(r) {
		return "400 invalid_request_target", "", "", v
	}
	j, v, ref := table.match(r)
	if ref != nil {
		return "400 " + refusalCode(ref) + " " + ref.reason, "", "", v
	}
	out := asJudged(r, j)
	sent = out.Method + " " + out.URL.RequestURI()
	if v.protected {
		got = v.route.Pattern
	}
	return got, v.other, sent, v
}

// refusalCode is the error code the API answers a refusal with.
func refusalCode(r *refusal) string {
	switch r.err {
	case ErrUnreadablePath:
		return "invalid_path"
	case ErrUnreadableHeader:
		return "invalid_header"
	}
	return "invalid_method_override"
}

func TestRouteMatching(t *testing.T) {
	table := specTable(t, Reading{})
	for _, c := range routeSpec {
		t.Run(c.describe(), func(t *testing.T) {
			got, also, sent, v := c.judge(table)
			if got != c.want || also != c.also {
				t.Fatalf("match = %q (also %q); want %q (also %q)", got, also, c.want, c.also)
			}
			if wantSent := cmp.Or(c.sent, c.method+" "+c.target); !strings.HasPrefix(got, "400 ") && sent != wantSent {
				t.Fatalf("forwarded as %q, want %q", sent, wantSent)
			}
			switch got {
			case "GET /drops/{id}/buy":
				if v.route.Queue != "drops" {
					t.Fatalf("queue %q, want drops", v.route.Queue)
				}
			case "POST /basket/{id}":
				if !v.route.Consume {
					t.Fatal("the entry is kept; want it spent, as POST /basket/{id} does")
				}
			case "PUT /basket/{id}":
				if v.route.Consume {
					t.Fatal("the entry is spent; want it kept, as PUT /basket/{id} does")
				}
			}
		})
	}
}

// What is forwarded reads the same again: the gateway's reading is a
// fixed point, so a backend behind a second gateway, or the same one
// twice, sees what the first judged.
func TestForwardedReadsTheSame(t *testing.T) {
	table := specTable(t, Reading{})
	for _, c := range routeSpec {
		got, also, sent, _ := c.judge(table)
		if strings.HasPrefix(got, "400 ") {
			continue
		}
		method, target, _ := strings.Cut(sent, " ")
		again := c
		again.method, again.target = method, target
		got2, also2, sent2, _ := again.judge(table)
		if got2 != got || also2 != also || sent2 != sent {
			t.Errorf("%s: %q (also %q) sent as %q, which reads %q (also %q) sent as %q", c.describe(), got, also, sent, got2, also2, sent2)
		}
	}
}

// With the overrides the backend honours named, they are read as backends
// read them, beside the request's own method, and refused where a backend
// may read them another way; with none, a POST's body names nothing.
func TestHonouredOverrides(t *testing.T) {
	honoured := specTable(t, Reading{MethodOverrides: []string{"X-HTTP-Method-Override", "_method"}})
	none := specTable(t, Reading{MethodOverrides: []string{"none"}})
	for _, c := range []struct {
		table *routes
		routeCase
	}{
		{honoured, routeCase{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "put"}, want: "PUT /items/{id}"}},
		{honoured, routeCase{method: "POST", target: "/items/7", header: []string{"X_HTTP_Method_Override", " PUT "}, want: "PUT /items/{id}"}},
		{honoured, routeCase{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "\xa0PUT"}, want: "400 invalid_method_override method_override"}},
		{honoured, routeCase{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "GET, PUT"}, want: "400 invalid_method_override method_override"}},
		{honoured, routeCase{method: "POST", target: "/items/7", header: []string{"X-HTTP-Method-Override", "PUT", "X-HTTP-Method-Override", "GET"}, want: "400 invalid_method_override method_override"}},
		{honoured, routeCase{method: "POST", target: "/items/7", header: []string{"X-Method-Override", "PUT"}}},
		{honoured, routeCase{method: "POST", target: "/items/7?_method=put", want: "PUT /items/{id}"}},
		{honoured, routeCase{method: "POST", target: "/items/7?_method[]=PUT", want: "400 invalid_method_override method_override"}},
		{honoured, routeCase{method: "POST", target: "/items/7?_method=PUT&_method=GET", want: "400 invalid_method_override method_override"}},
		{honoured, routeCase{method: "POST", target: "/checkout", header: []string{"X-HTTP-Method-Override", "GET"}, want: "POST /checkout"}},
		{none, routeCase{method: "POST", target: "/items/7", bodyType: "application/x-www-form-urlencoded", body: "_method=PUT"}},
		{none, routeCase{method: "POST", target: "/items/7?_method=PUT", sent: "POST /items/7"}},
	} {
		t.Run(c.describe(), func(t *testing.T) {
			got, _, sent, _ := c.judge(c.table)
			if got != c.want {
				t.Fatalf("match = %q, want %q", got, c.want)
			}
			if c.sent != "" && sent != c.sent {
				t.Fatalf("forwarded as %q, want %q", sent, c.sent)
			}
		})
	}
	for _, bad := range [][]string{{"X-Foo"}, {"none", "_method"}} {
		if _, err := newReader(Reading{MethodOverrides: bad}); err == nil {
			t.Errorf("--method-override %q accepted", bad)
		}
	}
}

// A loosening lets a form stand under its prefix only, and the path is
// then protected when any reading of it is.
func TestPathAllow(t *testing.T) {
	table := specTable(t, Reading{PathAllow: []string{"encoded-slash /files/", "encoded-percent /search", "path-params /checkout"}})
	for _, c := range []routeCase{
		{method: "GET", target: "/files/a%2Fb", sent: "GET /files/a%2Fb"},
		{method: "GET", target: `/files/a\b`, sent: "GET /files/a%5Cb"},
		{method: "POST", target: "/files/..%2F..%2Fcheckout", want: "POST /checkout"},
		{method: "POST", target: "/api%2Fbuy", want: "400 invalid_path encoded_slash"},
		{method: "GET", target: "/search/100%25", sent: "GET /search/100%25"},
		{method: "POST", target: "/search/..%252F..%252Fapi%252Fbuy", want: "POST /api/buy"},
		{method: "POST", target: "/checkout;jsessionid=x", want: "POST /checkout"},
		{method: "POST", target: "/api/buy;x", want: "400 invalid_path path_parameter"},
	} {
		t.Run(c.describe(), func(t *testing.T) {
			got, _, sent, _ := c.judge(table)
			if got != c.want {
				t.Fatalf("match = %q, want %q", got, c.want)
			}
			if c.sent != "" && sent != c.sent {
				t.Fatalf("forwarded as %q, want %q", sent, c.sent)
			}
		})
	}
	for _, bad := range []string{"encoded-slash", "slash /x/", "encoded-slash x", "encoded-slash /a%2Fb/"} {
		if _, err := newReader(Reading{PathAllow: []string{bad}}); err == nil {
			t.Errorf("--path-allow %q accepted", bad)
		}
	}
}

// Compared as written, only the case changes; under --hosts distinct a
// pattern's host counts.
func TestRouteMatchingOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		rd   Reading
		rows []routeCase
	}{
		{"case-sensitive", Reading{CaseSensitive: true}, []routeCase{
			{method: "POST", target: "/CHECKOUT"},
			{method: "POST", target: "/chec%E2%84%AAout"},
			{method: "PUT", target: "/ITEMS/AbC"},
			{method: "PUT", target: "/items/AbC", want: "PUT /items/{id}"},
			{method: "post", target: "/checkout.json", want: "POST /checkout"},
			{method: "GET", target: "/vip/room", host: "SHOP.example.com.", want: "shop.example.com/vip/"},
		}},
		{"distinct hosts", Reading{DistinctHosts: true}, []routeCase{
			{method: "GET", target: "/vip/room", host: "shop.example.com", want: "shop.example.com/vip/"},
			{method: "GET", target: "/vip/room", host: "SHOP.example.com.", want: "shop.example.com/vip/"},
			{method: "GET", target: "/vip/room", host: "shop.example.com:8443", want: "shop.example.com/vip/"},
			{method: "GET", target: "/vip/room", host: "[2001:db8::1]:80", want: "shop.example.com/vip/"},
			{method: "GET", target: "/vip/room", host: "other.example.com", want: "shop.example.com/vip/"},
			{method: "GET", target: "/vip/room", host: "blog.example.com"},
			{method: "GET", target: "/drafts/1", host: "Blog.Example.Com", want: "blog.example.com/drafts/"},
			{method: "GET", target: "/drafts/1", host: "shop.example.com"},
		}},
	} {
		table := specTable(t, tt.rd)
		for _, c := range tt.rows {
			t.Run(tt.name+" "+c.describe(), func(t *testing.T) {
				if got, _, _, _ := c.judge(table); got != c.want {
					t.Fatalf("match = %q; want %q", got, c.want)
				}
			})
		}
	}
	var rs []Route
	for _, p := range []string{"POST /checkout", "POST /Checkout"} {
		r, _ := ParseRoute(p, true)
		rs = append(rs, r)
	}
	if err := CheckRoutes(rs, DefaultPrefix, Reading{CaseSensitive: true}); err != nil {
		t.Errorf("two spellings, case-sensitive: %v", err)
	}
	if err := CheckRoutes(rs, DefaultPrefix, Reading{}); err == nil || !strings.Contains(err.Error(), "--protect-case-sensitive") {
		t.Errorf("two spellings compared without case: %v, want a conflict naming --protect-case-sensitive", err)
	}
	rs = nil
	for _, p := range []string{"a.example.com/sale/ queue=a", "b.example.com/sale/ queue=b"} {
		r, _ := ParseRoute(p, true)
		rs = append(rs, r)
	}
	if err := CheckRoutes(rs, DefaultPrefix, Reading{}); err == nil || !strings.Contains(err.Error(), "--hosts distinct") {
		t.Errorf("one path on two hosts, hosts shared: %v, want a conflict naming --hosts distinct", err)
	}
	if err := CheckRoutes(rs, DefaultPrefix, Reading{DistinctHosts: true}); err != nil {
		t.Errorf("one path on two hosts, hosts distinct: %v", err)
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
	b.WriteString("| request | protected by | forwarded as | because |\n|---|---|---|---|\n")
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
			body := strings.ReplaceAll(strings.ReplaceAll(c.body, "\r\n", `\r\n`), "`", "'")
			kind := c.bodyType
			if kind == "" {
				kind = "no Content-Type"
			}
			req += ", body " + code(body) + " (" + kind + ")"
		}
		by, sent := "—", "as sent"
		switch {
		case strings.HasPrefix(c.want, "400 "):
			f := strings.Fields(c.want)
			by, sent = "refused: 400 "+code(f[1]), "—"
			if len(f) > 2 {
				by += ", reason " + code(f[2])
			}
		case c.want != "":
			by = code(c.want)
		}
		if c.also != "" {
			by += " and " + code(c.also) + ": 400 `ambiguous_route` once it would be forwarded"
		}
		if c.sent != "" {
			sent = code(c.sent)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", req, by, sent, c.why)
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
		if err := CheckRoutes(rs, DefaultPrefix, Reading{}); err == nil {
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
// a client sends never (in any spelling), the forwarding headers and the
// bot score header (--bot-score-header) of a client never or the gateway's
// own, of a trusted proxy kept and one hop added, waitroom's cookies
// never; the rest, and the Host, as sent.
func TestRewrite(t *testing.T) {
	up, _ := url.Parse("http://127.0.0.1:9/base")
	proxies, _ := clientaddr.Parse("10.0.0.0/8")
	table, err := newRoutes(nil, DefaultPrefix, Reading{})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{o: Options{Upstream: up, Proxies: proxies, ScoreHeader: "X-Bot-Score"}, routes: table}
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
		g.rewrite(pr, judgment{})
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
		"CF-Connecting-IP", "6.6.6.6", "Fastly-Client-IP", "6.6.6.6", "Client-IP", "6.6.6.6", "X-Original-Forwarded-For", "6.6.6.6",
		"X-Host", "evil.example", "X-Original-Host", "evil.example", "X-HTTP-Host-Override", "evil.example",
		"X-Original-URL", "/checkout", "X-Rewrite-URL", "/checkout", "X-HTTP-Method-Override", "PUT", "X_Method_Override", "PUT",
		"Cookie", "shop=1; wr_session=anon-1.2.3; wr_entry_default=tok; x=2", "Cookie", "WR_ENTRY_drops=tok",
		"x-bot-score", "99", "X_Bot_Score", "98",
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
			"X-Keep":                   {"1"},
			"X-Forwarded-For":          {"6.6.6.6, 10.1.2.3"},
			"X-Forwarded-Host":         {"evil.example"},
			"X-Forwarded-Proto":        {"https"},
			"Forwarded":                {`for=6.6.6.6;host=evil.example;proto=https, for=10.1.2.3;host="shop.example";proto=http`},
			"X-Forwarded-Port":         {"443"},
			"X-Forwarded-Prefix":       {"/evil"},
			"X-Real-Ip":                {"6.6.6.6"},
			"True-Client-Ip":           {"6.6.6.6"},
			"Cf-Connecting-Ip":         {"6.6.6.6"},
			"Fastly-Client-Ip":         {"6.6.6.6"},
			"Client-Ip":                {"6.6.6.6"},
			"X-Original-Forwarded-For": {"6.6.6.6"},
			"X-Host":                   {"evil.example"},
			"X-Original-Host":          {"evil.example"},
			"X-Http-Host-Override":     {"evil.example"},
			"X-Bot-Score":              {"99"}, // the edge's score, as waitroom judged it: never a spelling no proxy writes
			"Cookie":                   {"shop=1; x=2"},
		}
		if diff := headerDiff(want, h); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("no score header named: a header like any other", func(t *testing.T) {
		g.o.ScoreHeader = ""
		defer func() { g.o.ScoreHeader = "X-Bot-Score" }()
		if h := rewrite("203.0.113.9:5555", "X-Bot-Score", "99"); h.Get("X-Bot-Score") != "99" {
			t.Errorf("X-Bot-Score %q, want the client's, as before --bot-score-header", h.Get("X-Bot-Score"))
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
	table := specTable(b, Reading{})
	for _, c := range []routeCase{
		{method: "GET", target: "/static/app.3f2a9c.js"},
		{method: "GET", target: "/products/42?ref=home"},
		{method: "POST", target: "/checkout"},
		{method: "GET", target: "/drops/42/buy"},
		{method: "POST", target: "/x/../CHECKOUT.json?_method=PUT"},
	} {
		r := c.request()
		b.Run(c.method+" "+c.target, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				j, _, _ := table.match(r)
				asJudged(r, j)
			}
		})
	}
}

// Only a WebSocket handshake goes on as an upgrade: any other Upgrade (h2c
// with its settings, TLS) is dropped and the request is plain HTTP/1.1.
func TestDropUpgrade(t *testing.T) {
	for _, tt := range []struct {
		up   []string
		kept bool
	}{
		{[]string{"websocket"}, true},
		{[]string{"WebSocket"}, true},
		{nil, true},
		{[]string{"h2c"}, false},
		{[]string{"TLS/1.2"}, false},
		{[]string{"websocket", "h2c"}, false},
	} {
		h := http.Header{"Connection": {"Upgrade, HTTP2-Settings"}, "Http2-Settings": {"AAMAAABkAARAAAAAAAIAAAAA"}}
		if tt.up != nil {
			h["Upgrade"] = tt.up
		}
		dropUpgrade(h)
		if kept := len(h["Upgrade"]) > 0 || tt.up == nil; kept != tt.kept {
			t.Errorf("Upgrade %q: kept %v, want %v", tt.up, kept, tt.kept)
		}
		if !tt.kept && h.Get("HTTP2-Settings") != "" {
			t.Errorf("Upgrade %q dropped, but HTTP2-Settings kept", tt.up)
		}
	}
}
