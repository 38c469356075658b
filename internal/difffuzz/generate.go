package difffuzz

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Request is one generated request: written byte for byte as it is here,
// no client library cleaning its method, target or header names.
type Request struct {
	// Classes names the ways of spelling it uses (the operators applied;
	// "plain" for none): the report counts per class.
	Classes []string
	Method  string
	Target  string
	// Host is the Host header; empty: the address dialled.
	Host   string
	Header [][2]string
	Body   []byte
	// Chunked sends Body chunked, without a length.
	Chunked bool
	// HTTP10 sends it as HTTP/1.0, with no Host header unless Host names
	// one (HTTP/1.0 requires none).
	HTTP10 bool
}

// Bytes is the request on the wire, with X-Fuzz-Id: id and the Host it
// names (defaultHost when it names none).
func (r Request) Bytes(id, defaultHost string) []byte {
	var b bytes.Buffer
	if r.HTTP10 {
		fmt.Fprintf(&b, "%s %s HTTP/1.0\r\n", r.Method, r.Target)
		if r.Host != "" {
			fmt.Fprintf(&b, "Host: %s\r\n", r.Host)
		}
	} else {
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.Target, cmpOr(r.Host, defaultHost))
	}
	fmt.Fprintf(&b, "X-Fuzz-Id: %s\r\n", id)
	for _, h := range r.Header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	switch {
	case r.Chunked:
		fmt.Fprintf(&b, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(r.Body), r.Body)
	case len(r.Body) > 0:
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(r.Body), r.Body)
	default:
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// String is the request in a line, for reports.
func (r Request) String() string {
	s := r.Method + " " + r.Target
	if r.HTTP10 {
		s += " HTTP/1.0"
	}
	if r.Host != "" {
		s += " Host: " + r.Host
	}
	for _, h := range r.Header {
		s += " " + h[0] + ": " + h[1]
	}
	if len(r.Body) > 0 {
		body := string(r.Body)
		if len(body) > 60 {
			body = body[:60] + "…"
		}
		s += fmt.Sprintf(" body %q", body)
		if r.Chunked {
			s += " (chunked)"
		}
	}
	return fmt.Sprintf("%q", s)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// GatewayRoutes are the routes the gateway protects in front of every
// backend: the backends' protected handlers (backends.go's contract).
var GatewayRoutes = []string{
	"--protect", "POST /checkout", "--protect", "POST /api/buy", "--protect", "PUT /items/{id}",
	"--protect", "POST /orders/{id}/pay", "--protect-session", "GET /drops/{id}/buy",
}

// base is a request the operators start from: a protected route's (the
// attacker's aim) or an unprotected one's (where a refusal is a false
// protection).
type base struct {
	method, path string
	protected    bool
}

var bases = []base{
	{"POST", "/checkout", true},
	{"POST", "/api/buy", true},
	{"PUT", "/items/7", true},
	{"POST", "/orders/42/pay", true},
	{"GET", "/drops/9/buy", true},
	{"GET", "/checkout", false},
	{"GET", "/", false},
	{"GET", "/products/42", false},
	{"POST", "/search", false},
	{"GET", "/items/7", false},
	{"DELETE", "/items/7", false},
	{"POST", "/orders/42/refund", false},
	{"GET", "/drops/9", false},
	{"POST", "/api/basket", false},
	{"GET", "/api/buy", false},
}

// operator is one way to spell a request otherwise.
type operator struct {
	name  string
	apply func(g *rand.Rand, r *Request, b base)
}

// pick is one of xs at random.
func pick[T any](g *rand.Rand, xs ...T) T { return xs[g.IntN(len(xs))] }

// overrideMethod is the method an override asks for: the base's own when
// it is protected (the attacker's aim), else one of the routes'.
func overrideMethod(g *rand.Rand, b base) string {
	if b.protected && b.method != "POST" {
		return b.method
	}
	return pick(g, "PUT", "GET", "POST", "DELETE", "PATCH")
}

// spellMethod writes a method the ways backends may still read as it.
func spellMethod(g *rand.Rand, m string) string {
	switch g.IntN(6) {
	case 0:
		return strings.ToLower(m)
	case 1:
		return strings.ToUpper(m[:1]) + strings.ToLower(m[1:])
	case 2:
		return " " + m
	case 3:
		return "\xa0" + m
	case 4:
		return m + "\t"
	}
	return m
}

// segments splits a path into its segments' positions: the indices of
// its slashes.
func slashes(p string) []int {
	var at []int
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			at = append(at, i)
		}
	}
	return at
}

// splitTarget and joinTarget keep a target's query apart from its path.
func splitTarget(t string) (path, query string) {
	if i := strings.IndexByte(t, '?'); i >= 0 {
		return t[:i], t[i:]
	}
	return t, ""
}

// editPath applies f to the path part of r's target.
func editPath(r *Request, f func(string) string) {
	p, q := splitTarget(r.Target)
	r.Target = f(p) + q
}

// addQuery appends a field to r's target's query.
func addQuery(r *Request, field, sep string) {
	p, q := splitTarget(r.Target)
	if q == "" {
		r.Target = p + "?" + field
		return
	}
	r.Target = p + q + sep + field
}

// overrideNames are the spellings of a _method field some backend reads.
var overrideNames = []string{"_method", "_METHOD", "_Method", "%5Fmethod", "%5fmethod", "_method[]", "_method[0]", ".method",
	"+method", "[method", " _method", "_method%00", "%255Fmethod", "_%6Dethod", "_method%20"}

var operators = []operator{
	{"method-case", func(g *rand.Rand, r *Request, b base) {
		r.Method = pick(g, strings.ToLower(r.Method), strings.ToUpper(r.Method[:1])+strings.ToLower(r.Method[1:]))
	}},
	{"override-header", func(g *rand.Rand, r *Request, b base) {
		name := pick(g, "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X_HTTP_Method_Override", "x-http-method-override", "X-Http-Method")
		m := overrideMethod(g, b)
		value := pick(g, spellMethod(g, m), "GET, "+m, m+", GET", m+","+m)
		r.Method = pick(g, "POST", "POST", "GET")
		r.Header = append(r.Header, [2]string{name, value})
	}},
	{"override-query", func(g *rand.Rand, r *Request, b base) {
		m := overrideMethod(g, b)
		r.Method = "POST"
		value := pick(g, m, strings.ToLower(m), "%"+fmt.Sprintf("%02X", m[0])+m[1:], m+"%20")
		addQuery(r, pick(g, overrideNames...)+"="+value, pick(g, "&", ";"))
	}},
	{"override-form", func(g *rand.Rand, r *Request, b base) {
		m := overrideMethod(g, b)
		r.Method = "POST"
		field := pick(g, overrideNames...) + "=" + pick(g, m, strings.ToLower(m))
		r.Body = []byte(pick(g, field, "a=1&"+field, field+"&a=1"))
		if ct := pick(g, "application/x-www-form-urlencoded", "application/x-www-form-urlencoded; charset=UTF-8", "", "text/plain", "application/x-www-form-urlencoded;charset=iso-8859-1"); ct != "" {
			r.Header = append(r.Header, [2]string{"Content-Type", ct})
		}
	}},
	{"override-json", func(g *rand.Rand, r *Request, b base) {
		m := overrideMethod(g, b)
		r.Method = "POST"
		key := pick(g, "_method", `\u005fmethod`, `_\u006dethod`, "_METHOD")
		r.Body = []byte(`{"` + key + `":"` + pick(g, m, strings.ToLower(m)) + `"}`)
		r.Header = append(r.Header, [2]string{"Content-Type", pick(g, "application/json", "application/json; charset=utf-8", "application/vnd.api+json")})
	}},
	{"override-multipart", func(g *rand.Rand, r *Request, b base) {
		r.Method = "POST"
		r.Body = []byte("--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\n" + overrideMethod(g, b) + "\r\n--b--\r\n")
		r.Header = append(r.Header, [2]string{"Content-Type", "multipart/form-data; boundary=b"})
	}},
	{"compressed-body", func(g *rand.Rand, r *Request, b base) {
		r.Method = "POST"
		form := "_method=" + overrideMethod(g, b)
		enc := pick(g, "gzip", "deflate")
		if r.Body = gzipped(form); enc == "deflate" {
			r.Body = deflated(form)
		}
		r.Header = append(r.Header, [2]string{"Content-Type", "application/x-www-form-urlencoded"}, [2]string{"Content-Encoding", enc})
	}},
	{"utf16-body", func(g *rand.Rand, r *Request, b base) {
		r.Method = "POST"
		m := overrideMethod(g, b)
		text, ct := "_method="+m, "application/x-www-form-urlencoded; charset=UTF-16LE"
		if g.IntN(2) == 0 {
			text, ct = `{"_method":"`+m+`"}`, "application/json; charset=utf-16le"
		}
		r.Body = utf16le(text)
		r.Header = append(r.Header, [2]string{"Content-Type", ct})
	}},
	{"chunked-body", func(g *rand.Rand, r *Request, b base) {
		if len(r.Body) == 0 {
			r.Method = "POST"
			r.Body = []byte("_method=" + overrideMethod(g, b))
		}
		r.Chunked = true
	}},
	{"dot-segment", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			at := pick(g, slashes(p)...)
			ins := pick(g, "/.", "/x/..", "/%2e", "/x/%2e%2e", "/x/.%2E", "/x/..;", "/./.", "/x/y/../..", "//..", "/x//..", "/.%2e")
			return p[:at] + ins + p[at:]
		})
	}},
	{"double-slash", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			at := pick(g, slashes(p)...)
			return p[:at] + pick(g, "/", "//") + p[at:]
		})
	}},
	{"path-param", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			ends := append(slashes(p)[1:], len(p))
			at := pick(g, ends...)
			return p[:at] + pick(g, ";jsessionid=x", ";", ";a=b;c", "%3Bx", "%3bjsessionid=1", ";.json") + p[at:]
		})
	}},
	{"percent-encode", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			var letters []int
			for i := 1; i < len(p); i++ {
				if p[i] != '/' && p[i] != '%' {
					letters = append(letters, i)
				}
			}
			if len(letters) == 0 {
				return p
			}
			i := pick(g, letters...)
			enc := fmt.Sprintf(pick(g, "%%%02X", "%%%02x"), p[i])
			return p[:i] + enc + p[i+1:]
		})
	}},
	{"encoded-slash", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			at := slashes(p)
			if len(at) < 2 {
				return p + pick(g, "%2F", "%2f", "%5C", `\`)
			}
			i := pick(g, at[1:]...)
			return p[:i] + pick(g, "%2F", "%2f", "%5C", "%5c", `\`, "%252F", "%255C") + p[i+1:]
		})
	}},
	{"double-encode", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			if len(p) < 3 {
				return p
			}
			i := 1 + g.IntN(len(p)-1)
			if p[i] == '/' || p[i] == '%' {
				return p
			}
			return p[:i] + fmt.Sprintf("%%25%02X", p[i]) + p[i+1:]
		})
	}},
	{"case", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			if g.IntN(2) == 0 {
				return strings.ToUpper(p)
			}
			bs := []byte(p)
			for i := range bs {
				if g.IntN(2) == 0 {
					bs[i] = byte(strings.ToUpper(string(bs[i]))[0])
				}
			}
			return string(bs)
		})
	}},
	{"unicode", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			p = strings.Replace(p, "k", pick(g, "%E2%84%AA", "\u212a"), 1)
			return strings.Replace(p, "s", pick(g, "%C5%BF", "\u017f"), 1)
		})
	}},
	{"extension", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string { return p + pick(g, ".json", ".php/x", ".", ".html", ".json/", "/.json") })
	}},
	{"trailing", func(g *rand.Rand, r *Request, b base) {
		editPath(r, func(p string) string {
			return p + pick(g, "/", "//", "%20", "%00", "%09", "%0d%0a", "%23x", "%3Fx=1", "%00.html", "%2e", ";", " ")
		})
	}},
	{"fragment", func(g *rand.Rand, r *Request, b base) {
		switch g.IntN(3) {
		case 0:
			r.Target += "#"
		case 1:
			editPath(r, func(p string) string { return p + "#x" })
		default:
			r.Method = "POST"
			addQuery(r, "_method="+overrideMethod(g, b)+"#", "&")
		}
	}},
	{"connection", func(g *rand.Rand, r *Request, b base) {
		r.Header = append(r.Header, [2]string{"Connection", pick(g, "close, Content-Type", "keep-alive, Content-Length", "X-HTTP-Method-Override", "Transfer-Encoding", "Host", "Cookie, Authorization", "close")})
		if len(r.Body) == 0 {
			r.Method = "POST"
			r.Body = []byte("_method=" + overrideMethod(g, b))
			r.Header = append(r.Header, [2]string{"Content-Type", "text/plain"})
		}
	}},
	{"host", func(g *rand.Rand, r *Request, b base) {
		// "": an HTTP/1.0 request with no Host at all; "a@shop.test": one
		// Go's server refuses (a front that passes it on must not turn
		// that refusal into its own 5xx).
		switch h := pick(g, "blog.example.com", "shop.example.com", "203.0.113.7", "SHOP.example.com.", "localhost:1", "a@shop.test", ""); h {
		case "":
			r.HTTP10 = true
		default:
			r.Host = h
		}
	}},
	{"upgrade", func(g *rand.Rand, r *Request, b base) {
		r.Header = append(r.Header, [2]string{"Connection", "Upgrade, HTTP2-Settings"}, [2]string{"Upgrade", pick(g, "h2c", "TLS/1.2", "foo")}, [2]string{"HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA"})
	}},
	{"path-header", func(g *rand.Rand, r *Request, b base) {
		r.Header = append(r.Header, [2]string{pick(g, "X-Original-URL", "X-Rewrite-URL", "X_Original_URL"), b.path})
		r.Target = "/search"
	}},
	{"absolute-form", func(g *rand.Rand, r *Request, b base) {
		r.Target = pick(g, "http://", "HTTP://", "https://") + pick(g, "shop.example.com", "127.0.0.1") + r.Target
	}},
}

// Generate is request n of the run seeded so: a base (protected ones
// three times as often: they are the aim) and up to three operators, each
// at most once. The same seed and n give the same request.
func Generate(seed uint64, n int) Request {
	g := rand.New(rand.NewPCG(seed, uint64(n)))
	b := bases[g.IntN(len(bases))]
	if g.IntN(4) > 0 {
		b = bases[g.IntN(5)]
	}
	r := Request{Method: b.method, Target: b.path}
	if g.IntN(3) == 0 {
		r.Target += pick(g, "?step=2", "?a=1&b=2", "?q=%E2%9C%93")
	}
	k := g.IntN(4)
	var used []int
	for len(used) < k {
		i := g.IntN(len(operators))
		if slices.Contains(used, i) {
			continue
		}
		used = append(used, i)
	}
	slices.Sort(used)
	for _, i := range used {
		operators[i].apply(g, &r, b)
		r.Classes = append(r.Classes, operators[i].name)
	}
	if len(r.Classes) == 0 {
		r.Classes = []string{"plain"}
	}
	r.Header = append(r.Header, [2]string{"Accept", pick(g, "application/json", "*/*")})
	return r
}
