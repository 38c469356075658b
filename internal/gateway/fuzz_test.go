package gateway

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
)

// FuzzParseRoute feeds arbitrary --protect values: an error, or a route
// whose pattern ServeMux takes, whose queue is a valid name, and which
// reads back the same from its own spelling.
func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{
		"POST /checkout", "GET /drops/{id}/buy queue=drops", "shop.example.com/vip/", "/", "POST",
		"POST /a/{b", "GET /x/{y}/{y}", "POST /{x...}", "GET /{$}", "POST /a queue=", "POST /a queue=bad name",
		" queue=x", "POST /a queue=a queue=b", "GET /a/{b}/c/{d...}", "POST /%2F", "HEAD /x", "\x00 /",
	} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, consume bool) {
		r, err := ParseRoute(s, consume)
		if err != nil {
			return
		}
		if r.Pattern == "" || r.Consume != consume {
			t.Fatalf("ParseRoute(%q) = %+v", s, r)
		}
		if err := queue.ValidateQueueName(r.Queue); err != nil {
			t.Fatalf("ParseRoute(%q) accepted queue %q: %v", s, r.Queue, err)
		}
		again, err := ParseRoute(r.Pattern+" queue="+r.Queue, consume)
		if err != nil || again != r {
			t.Fatalf("ParseRoute(%q) = %+v, but its own spelling reads %+v, %v", s, r, again, err)
		}
		CheckRoutes([]Route{r}, DefaultPrefix, Reading{}) // must not panic; may refuse
	})
}

// FuzzSafeReturn feeds arbitrary return targets. Whatever SafeReturn lets
// through, a browser resolving it against the shop's origin stays on that
// origin: no open redirect.
func FuzzSafeReturn(f *testing.F) {
	for _, s := range []string{
		"/", "/checkout?step=2&x=%2F", "/a/b#frag", "//evil.example", `/\evil.example`, "/%2F%2Fevil.example",
		"/%252F%252Fevil.example", "/%5C%5Cevil.example", "https://evil.example", "javascript:alert(1)",
		"/ok%0d%0aSet-Cookie:x=1", "/\t/evil.example", "/.//evil.example", "/%2e%2e//evil.example", "/@evil.example",
	} {
		f.Add(s)
	}
	shop, _ := url.Parse("https://shop.example/basket/")
	f.Fuzz(func(t *testing.T, target string) {
		if !SafeReturn(target) {
			return
		}
		if !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") || strings.ContainsAny(target, "\\\r\n\t\x00 ") {
			t.Fatalf("SafeReturn(%q) = true", target)
		}
		u, err := url.Parse(target)
		if err != nil {
			t.Fatalf("SafeReturn(%q) = true, but it does not parse: %v", target, err)
		}
		if got := shop.ResolveReference(u); got.Host != "shop.example" || got.Scheme != "https" || got.User != nil {
			t.Fatalf("SafeReturn(%q) = true, but a browser would go to %s", target, got)
		}
		// Decoded once more, as a lenient server might, it still names a
		// path on this origin.
		if d, err := url.PathUnescape(target); err == nil {
			p := d
			if i := strings.IndexAny(p, "?#"); i >= 0 {
				p = p[:i]
			}
			if strings.HasPrefix(p, "//") || strings.Contains(p, "\\") {
				t.Fatalf("SafeReturn(%q) = true, but decoded it reads %q", target, d)
			}
		}
	})
}

// FuzzRouteMatch feeds arbitrary request lines to the reading of the
// specification's routes. It never panics; what it forwards reads the same
// again (the same route, forwarded the same: what the backend gets is what
// was judged); and a request it protects stays protected for the same
// route, or is refused, when spelt as other backends also read it: the
// method in lower case, the path in upper case, ".json" after it, ";x"
// after its last segment, its first slash doubled.
func FuzzRouteMatch(f *testing.F) {
	for _, c := range routeSpec {
		f.Add(c.method, c.target)
	}
	table := specTable(f, Reading{})
	parse := func(method, target string) *http.Request {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: " + specDefaultHost + "\r\n\r\n")))
		if err != nil || absoluteForm(r) {
			return nil
		}
		return r
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		r := parse(method, target)
		if r == nil {
			return
		}
		j, v, ref := table.match(r)
		if ref != nil {
			return
		}
		out := asJudged(r, j)
		if again := parse(out.Method, out.URL.RequestURI()); again != nil {
			j2, v2, ref2 := table.match(again)
			if ref2 != nil || v2 != v || asJudged(again, j2).URL.RequestURI() != out.URL.RequestURI() {
				t.Fatalf("%s %s is forwarded as %s %s, which reads %+v (%v), not %+v", method, target, out.Method, out.URL.RequestURI(), v2, ref2, v)
			}
		}
		if !v.protected {
			return
		}
		path, query, hasQuery := strings.Cut(target, "?")
		if hasQuery {
			query = "?" + query
		}
		for _, spelt := range [][2]string{
			{strings.ToLower(method), target},
			{method, strings.ToUpper(path) + query},
			{method, path + ".json" + query},
			{method, path + ";x" + query},
			{method, "/" + path + query},
		} {
			r := parse(spelt[0], spelt[1])
			if r == nil {
				continue
			}
			if _, w, ref := table.match(r); ref == nil && (!w.protected || w.route.Pattern != v.route.Pattern && w.other != v.route.Pattern) {
				t.Fatalf("%s %s is %q, but %s %s is %q (also %q)", method, target, v.route.Pattern, spelt[0], spelt[1], w.route.Pattern, w.other)
			}
		}
	})
}
