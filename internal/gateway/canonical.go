package gateway

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Backends do not agree on what a request line means. Tomcat, Jetty and
// Spring drop ";…" path parameters before routing; Flask and Symfony
// upper-case the method; Express and ASP.NET Core compare paths without
// case; Rails reads "/checkout.json" as /checkout; PHP runs
// "/checkout.php/x" as checkout.php; Rack and Symfony take the method from
// X-HTTP-Method-Override or a _method field; Express resolves no dot
// segments while nginx does; some decode %2F into a slash and some keep it
// in the segment. The gateway cannot know which backend it fronts, so it
// reads every request all of those ways and protects it when any reading
// names a protected route (DESIGN.md, "Gateway mode reads requests as
// backends do").

// canonical is a request as the gateway matches it: every method a
// backend may take it for, the host, and every path a backend may read.
type canonical struct {
	// methods: the request's own, upper-cased, first; then every method an
	// override header or _method query field names.
	methods []string
	// host: Host lower-cased (and case-folded), without port or trailing
	// dots.
	host string
	// paths: the readings of the path, the normalised one first.
	paths []reading
}

// reading is one way to read a path: its segments (decoded; a segment may
// hold a "/" that a backend keeps as data) and whether it ends in a slash.
type reading struct {
	segs     []string
	trailing bool
}

// String writes the reading as a path, each segment escaped as a request
// would carry it (an inner "/" as %2F, a dot segment kept as data as %2E).
func (p reading) String() string {
	var b strings.Builder
	for _, s := range p.segs {
		b.WriteByte('/')
		b.WriteString(escapeSegment(s))
	}
	if p.trailing || len(p.segs) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

func (p reading) key() string { return p.String() }

// escapeSegment escapes a decoded segment so that ServeMux, which splits an
// escaped path at "/" and unescapes each segment, sees it whole: "a/b" as
// a%2Fb, and "." and ".." (kept as data) as %2E so that its cleaning leaves
// them be.
func escapeSegment(s string) string {
	switch s {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	if plainSegment(s) {
		return s
	}
	return url.PathEscape(s)
}

// plainSegment: nothing in s needs escaping (the common case, no
// allocation).
func plainSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,=:@", c) >= 0) {
			return false
		}
	}
	return true
}

// maxDecodes bounds how many times a path is percent-decoded: enough for a
// double (and triple) encoding, which some backends and WAF-fronted stacks
// undo, but no loop on "%25252525…".
const maxDecodes = 3

// canonicalRequest reads r as the backends may: the method and its
// overrides from the headers and the query (not the body: overrides.go),
// the host, and the path readings. foldCase folds the case of paths.
func canonicalRequest(r *http.Request, foldCase bool) canonical {
	c := canonical{methods: []string{canonicalMethod(r.Method)}, host: canonicalHost(r.Host)}
	var pathOverrides []string
	for k, vs := range r.Header {
		switch {
		case isMethodOverrideHeader(k):
			for _, v := range vs {
				c.methods = addMethods(c.methods, v)
			}
		case sameHeader(k, "X-Original-URL"), sameHeader(k, "X-Rewrite-URL"):
			// IIS, Symfony (before 4.1.3) and Zend read the path from these
			// instead of the request line.
			for _, v := range vs {
				if p := overridePath(v); p != "" {
					pathOverrides = append(pathOverrides, p)
				}
			}
		}
	}
	for _, v := range formValues(r.URL.RawQuery, "_method") {
		c.methods = addMethods(c.methods, v)
	}
	c.paths = pathReadings(r.URL.EscapedPath(), foldCase)
	for _, p := range pathOverrides {
		c.paths = appendReadings(c.paths, pathReadings(p, foldCase)...)
	}
	return c
}

// canonicalMethod is the method as backends that upper-case it read it.
func canonicalMethod(m string) string {
	m = strings.TrimSpace(m)
	for i := 0; i < len(m); i++ {
		if c := m[i]; c >= 'a' && c <= 'z' {
			return strings.ToUpper(m)
		}
	}
	return m
}

// addMethods adds the methods an override value names ("PUT", or a list).
func addMethods(ms []string, v string) []string {
	for part := range strings.SplitSeq(v, ",") {
		if m := canonicalMethod(part); m != "" && !contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return ms
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// methodOverrideHeaders are the headers frameworks take the method from:
// Rack::MethodOverride's and Symfony's X-HTTP-Method-Override, OData's and
// Microsoft's X-HTTP-Method, Express method-override's X-Method-Override.
var methodOverrideHeaders = []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}

func isMethodOverrideHeader(k string) bool {
	for _, h := range methodOverrideHeaders {
		if sameHeader(k, h) {
			return true
		}
	}
	return false
}

// sameHeader reports whether the header named k is read as want by some
// backend: case-insensitively, and with "_" as "-", as CGI-style servers
// do (both become HTTP_X_…). It allocates nothing.
func sameHeader(k, want string) bool {
	if len(k) != len(want) {
		return false
	}
	for i := 0; i < len(k); i++ {
		a, b := k[i], want[i]
		if a == '_' {
			a = '-'
		}
		if a != b && lowerASCII(a) != lowerASCII(b) {
			return false
		}
	}
	return true
}

// hasHeaderPrefix is sameHeader for the start of a name.
func hasHeaderPrefix(k, prefix string) bool {
	return len(k) >= len(prefix) && sameHeader(k[:len(prefix)], prefix)
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// overridePath is the path of an X-Original-URL value (a path, or a URL).
func overridePath(v string) string {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") {
		u, err := url.Parse(v)
		if err != nil {
			return ""
		}
		return u.EscapedPath()
	}
	if i := strings.IndexAny(v, "?#"); i >= 0 {
		v = v[:i]
	}
	return v
}

// formValues returns the values of the field named key (compared without
// case or surrounding space) in an urlencoded string, splitting on "&" and
// on ";" as Rack 2 does. A field that cannot be decoded is read raw.
func formValues(q, key string) []string {
	if q == "" || strings.IndexByte(q, '%') < 0 && !containsFold(q, key[1:]) {
		return nil // neither the name nor an escape that could spell it
	}
	var vs []string
	for q != "" {
		var pair string
		if i := strings.IndexAny(q, "&;"); i >= 0 {
			pair, q = q[:i], q[i+1:]
		} else {
			pair, q = q, ""
		}
		k, v, _ := strings.Cut(pair, "=")
		if d, err := url.QueryUnescape(k); err == nil {
			k = d
		}
		if !strings.EqualFold(strings.TrimSpace(k), key) {
			continue
		}
		if d, err := url.QueryUnescape(v); err == nil {
			v = d
		}
		vs = append(vs, v)
	}
	return vs
}

// containsFold reports whether s holds sub (lower-case ASCII) in any case,
// without allocating.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lowerASCII(s[i+j]) == sub[j] {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// canonicalHost is the host as a backend compares it with a name it
// serves: without the port, lower-cased, without trailing dots.
func canonicalHost(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	return strings.TrimRight(foldCase(h), ".")
}

// pathReadings returns the readings of an escaped path, the normalised one
// first, without duplicates. Three things backends disagree on make up to
// eight readings, each combination of:
//   - decoding: the whole path until nothing changes (at most maxDecodes
//     times), backslashes and an encoded "/" as separators; or each
//     segment once, an encoded "/" kept in it (ServeMux, Express, Rails);
//   - ";…" parameters: removed from every segment (servlet containers,
//     Spring); or kept;
//   - dot segments: resolved (most); or kept as data (Express, Node).
//
// Repeated slashes are collapsed in all. Each reading is then case-folded
// (foldCase), and also read truncated where a backend written in C would
// stop (a NUL) or where a decoded "#" or "?" would end the path, and with
// trailing spaces and control characters trimmed, as several backends trim
// them.
func pathReadings(escaped string, fold bool) []reading {
	if escaped == "" || escaped[0] != '/' {
		return nil // "*" (OPTIONS) and the like: no path to protect
	}
	if plainPath(escaped) {
		// The common case: one reading, the path as sent.
		p := reading{segs: splitSegments(escaped[1:]), trailing: strings.HasSuffix(escaped, "/")}
		if fold {
			p = foldReading(p)
		}
		return []reading{p}
	}
	var decodings [][]string
	full := escaped
	for range maxDecodes {
		d, err := url.PathUnescape(full)
		if err != nil || d == full {
			break
		}
		full = d
	}
	full = strings.ReplaceAll(full, `\`, "/")
	decodings = append(decodings, splitSegments(full[1:]))
	trailing := []bool{strings.HasSuffix(full, "/")}
	var once []string
	for seg := range strings.SplitSeq(escaped[1:], "/") {
		if d, err := url.PathUnescape(seg); err == nil {
			seg = d
		}
		if seg != "" {
			once = append(once, seg)
		}
	}
	decodings = append(decodings, once)
	trailing = append(trailing, strings.HasSuffix(escaped, "/"))

	var out []reading
	for i, segs := range decodings {
		for _, strip := range []bool{true, false} {
			s := segs
			if strip {
				if s = stripParams(segs); s == nil {
					continue // no parameters: the same as kept
				}
			}
			for _, resolve := range []bool{true, false} {
				r := s
				if resolve {
					if r = resolveDots(s); r == nil {
						continue
					}
				}
				p := reading{segs: r, trailing: trailing[i]}
				if fold {
					p = foldReading(p)
				}
				out = appendReadings(out, p)
				if t, ok := truncated(p); ok {
					out = appendReadings(out, t)
					p = t
				}
				if t, ok := trimmed(p); ok {
					out = appendReadings(out, t)
				}
			}
		}
	}
	return out
}

// plainPath: no percent sign, no backslash, no ";", no dot segment and no
// repeated slash: every backend reads such a path the same way.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%', '\\', ';':
			return false
		case '/':
			rest := p[i+1:]
			if strings.HasPrefix(rest, "/") || rest == "." || rest == ".." ||
				strings.HasPrefix(rest, "./") || strings.HasPrefix(rest, "../") {
				return false
			}
		}
	}
	return true
}

// splitSegments splits a path (without its leading slash) into its
// non-empty segments.
func splitSegments(p string) []string {
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	return segs
}

// stripParams removes ";…" from every segment, dropping those left empty;
// nil when no segment has parameters.
func stripParams(segs []string) []string {
	found := false
	for _, s := range segs {
		found = found || strings.IndexByte(s, ';') >= 0
	}
	if !found {
		return nil
	}
	out := make([]string, 0, len(segs))
	for _, s := range segs {
		if i := strings.IndexByte(s, ';'); i >= 0 {
			s = s[:i]
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// resolveDots resolves "." and ".." segments (never above the root); nil
// when there are none.
func resolveDots(segs []string) []string {
	found := false
	for _, s := range segs {
		found = found || s == "." || s == ".."
	}
	if !found {
		return nil
	}
	out := make([]string, 0, len(segs))
	for _, s := range segs {
		switch s {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return out
}

// truncated is p cut before its first NUL, "#" or "?" (decoded: a raw one
// never gets this far): where a C string ends, or where a backend that
// decodes before it splits the query or fragment off would end the path.
func truncated(p reading) (reading, bool) {
	for i, s := range p.segs {
		if j := strings.IndexAny(s, "\x00#?"); j >= 0 {
			segs := append(append([]string(nil), p.segs[:i]...), s[:j])
			if s[:j] == "" {
				segs = segs[:i]
			}
			return reading{segs: segs, trailing: s[:j] == "" && i > 0}, true
		}
	}
	return reading{}, false
}

// trimmed is p without the spaces and control characters at its end, which
// several backends trim ("/checkout%20", "/checkout%09", "/checkout%00").
func trimmed(p reading) (reading, bool) {
	n := len(p.segs)
	if n == 0 {
		return reading{}, false
	}
	last := strings.TrimRightFunc(p.segs[n-1], isJunk)
	if last == p.segs[n-1] {
		return reading{}, false
	}
	segs := append([]string(nil), p.segs[:n-1]...)
	if last != "" {
		segs = append(segs, last)
	}
	return reading{segs: segs, trailing: p.trailing || last == ""}, true
}

func isJunk(r rune) bool { return r <= ' ' || r == 0x7f }

// appendReadings adds the readings not in ps yet.
func appendReadings(ps []reading, add ...reading) []reading {
	for _, p := range add {
		k := p.key()
		dup := false
		for _, q := range ps {
			dup = dup || q.key() == k
		}
		if !dup {
			ps = append(ps, p)
		}
	}
	return ps
}

func foldReading(p reading) reading {
	segs := make([]string, len(p.segs))
	for i, s := range p.segs {
		segs[i] = foldCase(s)
	}
	return reading{segs: segs, trailing: p.trailing}
}

// foldCase folds s so that any two strings some backend compares as equal
// without case fold to the same: ASCII lower case, and for other letters
// the lower case of the smallest rune of their case orbit, so "K" (the
// Kelvin sign, which Java's equalsIgnoreCase takes for k) and "ſ" (long s)
// fold to "k" and "s". Bytes that are not UTF-8 are kept.
func foldCase(s string) string {
	ascii := true
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		ascii = ascii && c < utf8.RuneSelf
		upper = upper || c >= 'A' && c <= 'Z'
	}
	if ascii {
		if !upper {
			return s
		}
		return strings.ToLower(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte(s[i])
			i++
			continue
		}
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(unicode.ToLower(least))
		i += n
	}
	return b.String()
}

// maxOverrideBody bounds the body the gateway reads to find a _method
// field: a form that carries one is small.
const maxOverrideBody = 16 << 10

// bodyKind is what a body may say about the method.
type bodyKind int

const (
	bodySilent     bodyKind = iota // none, or a type no framework reads fields from
	bodyForm                       // an urlencoded or untyped form the gateway reads
	bodyJSON                       // JSON the gateway reads (Laravel takes _method from it)
	bodyUnreadable                 // may name a method the gateway cannot read cheaply
)

// bodyKindOf tells, from the headers alone, whether r's body may name a
// method: a form (or an untyped body: Rack parses it as one) or JSON of a
// known length within maxOverrideBody is read; a multipart form, a longer
// or chunked one, or a Content-Type nobody can parse, is not.
func bodyKindOf(r *http.Request) bodyKind {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return bodySilent
	}
	kind := bodyForm
	if ct := r.Header.Get("Content-Type"); ct != "" {
		media, _, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			return bodyUnreadable
		case media == "multipart/form-data":
			return bodyUnreadable
		case media == "application/json" || strings.HasSuffix(media, "+json"):
			kind = bodyJSON
		case media != "application/x-www-form-urlencoded":
			return bodySilent
		}
	}
	if r.ContentLength < 0 || r.ContentLength > maxOverrideBody {
		return bodyUnreadable
	}
	return kind
}

// bodyOverride reads the body of a form or JSON (bodyKindOf) ahead and puts
// it back, so the upstream gets the same bytes, and returns the values of
// its _method fields; unknown when it may name any method (JSON that
// mentions _method, or a body that broke off).
func bodyOverride(r *http.Request, kind bodyKind) (methods []string, unknown bool) {
	buf := make([]byte, r.ContentLength)
	n, err := io.ReadFull(r.Body, buf)
	r.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(buf[:n]), r.Body), Closer: r.Body}
	switch {
	case err != nil:
		return nil, true
	case kind == bodyJSON:
		return nil, containsFold(string(buf), "_method")
	}
	return formValues(string(buf), "_method"), false
}

// replayBody is a body read ahead and put back in front of what is left.
type replayBody struct {
	io.Reader
	io.Closer
}
