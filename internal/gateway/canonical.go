package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The gateway reads each request one way, and what it forwards is that
// reading: the method upper-cased, the path decoded once with its dot
// segments removed and its slashes merged, the query without the method
// overrides the backend is not said to honour. A request it cannot read
// one way only (an encoded "/", a double encoding, a raw "#", a Connection
// header naming one of its end-to-end headers…) is refused with 400 before
// any backend sees it. So a backend cannot run a protected handler by
// reading the request differently: it is handed the reading that was
// judged (DESIGN.md, "Gateway mode forwards what it judged"; Envoy closed
// CVE-2019-9901 the same way).
//
// Two things no reading of the request line settles stay open, and the
// gateway takes the strict side of both: a body may name another method
// (Rails, Laravel, Spring, Express read _method from forms and JSON, in
// encodings no one can enumerate), so a request with a body is matched
// under every method the patterns name unless --method-override none says
// the backend honours no override; and routing conventions that read one
// path as another (an extension, a trailing slash, case) are matched as
// routes.readAs says.

// Errors of a request the gateway refuses to read (400). The answer names
// the check that refused it in "reason".
var (
	// ErrUnreadablePath: a path backends read in more than one way.
	ErrUnreadablePath = errors.New("the path can be read more than one way")
	// ErrUnreadableHeader: a Connection header that would make a proxy
	// drop what the gateway read the request with.
	ErrUnreadableHeader = errors.New("a header makes the request readable more than one way")
	// ErrMethodOverride: a method override the backend honours, spelt so
	// that backends may read it as different methods.
	ErrMethodOverride = errors.New("the method override can be read more than one way")
)

// refusal is a request refused before any matching: the sentinel it
// answers as, the check that refused it and why.
type refusal struct {
	err    error
	reason string
	detail string
}

func (r *refusal) Error() string              { return r.err.Error() + ": " + r.detail }
func (r *refusal) Unwrap() error              { return r.err }
func (r *refusal) Details() map[string]string { return map[string]string{"reason": r.reason} }

func refusePath(reason, format string, args ...any) *refusal {
	return &refusal{ErrUnreadablePath, reason, fmt.Sprintf(format, args...)}
}

func refuseHeader(reason, format string, args ...any) *refusal {
	return &refusal{ErrUnreadableHeader, reason, fmt.Sprintf(format, args...)}
}

func refuseOverride(format string, args ...any) *refusal {
	return &refusal{ErrMethodOverride, reasonMethodOverride, fmt.Sprintf(format, args...)}
}

// The reasons a refusal names (docs/gateway.md, "What the gateway refuses").
const (
	reasonFragment       = "fragment"
	reasonEncodedSlash   = "encoded_slash"
	reasonEncodedPercent = "encoded_percent"
	reasonControl        = "control_character"
	reasonUTF8           = "invalid_utf8"
	reasonAboveRoot      = "above_root"
	reasonPathParameter  = "path_parameter"
	reasonBadEscape      = "bad_escape"
	reasonConnection     = "connection"
	reasonMethodOverride = "method_override"
)

// judged is a request as the gateway reads it, and as it forwards it.
type judged struct {
	// method: the request's own, upper-cased; forwarded.
	method string
	// overrides: the methods the overrides the backend honours name
	// (--method-override), each read as backends read it.
	overrides []string
	// anyMethod: a body that may name another method (a _method field);
	// the request is matched under every method the patterns name.
	anyMethod bool
	// host: the Host as a backend compares it with a name it serves.
	host string
	// path is the canonical path as forwarded (escaped); rawQuery the
	// query as forwarded.
	path, rawQuery string
	// readings: the canonical path decoded (case-folded unless the
	// gateway compares case), then the readings a loosening (--path-allow)
	// lets stand beside it.
	readings []reading
	// found: what the path holds that a loosening covers.
	found pathFeature
}

// reading is a path as a router sees it: its decoded segments (a segment
// may hold a "/" under the encoded-slash loosening) and whether it ends in
// a slash.
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
		if !pathByte(s[i]) {
			return false
		}
	}
	return true
}

// pathByte: c stands for itself in a path as the gateway forwards it: an
// unreserved character, a sub-delimiter, ":" or "@" (RFC 3986 pchar).
func pathByte(c byte) bool {
	return unreserved(c) || strings.IndexByte("!$&'()*+,;=:@", c) >= 0
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// pathFeature is something in a path that backends read two ways, which
// the gateway refuses unless a loosening (--path-allow) lets it stand
// under a prefix.
type pathFeature uint8

const (
	// encodedSlash: %2F, %5C or a raw "\": a separator to some backends
	// (Werkzeug and Jetty decode the path, then split it; IIS and Tomcat
	// take "\" for "/"), data to others.
	encodedSlash pathFeature = 1 << iota
	// encodedPercent: %25, a double encoding a backend that decodes twice
	// reads as another path.
	encodedPercent
	// pathParams: ";", which servlet containers and Spring cut from every
	// segment and others keep (refused only where a protected route may
	// match either reading).
	pathParams
)

// pathFeatures names each loosening as --path-allow takes it.
var pathFeatures = []struct {
	name    string
	feature pathFeature
	reason  string
}{
	{"encoded-slash", encodedSlash, reasonEncodedSlash},
	{"encoded-percent", encodedPercent, reasonEncodedPercent},
	{"path-params", pathParams, reasonPathParameter},
}

// canonicalPath reads the escaped path of a request target the one way the
// gateway forwards it: each escape decoded once (an unreserved character
// written plainly, anything else escaped again as %XX in upper case), dot
// segments removed as RFC 3986 §5.2.4 does, repeated slashes merged. It
// returns that path escaped, its decoded reading, and what it found that
// only a loosening lets stand; or why it cannot read it one way.
func canonicalPath(raw string) (string, reading, pathFeature, *refusal) {
	if plainPath(raw) { // nearly every request: nothing to decode, remove or merge
		return raw, reading{segs: splitSegments(raw[1:]), trailing: strings.HasSuffix(raw, "/")}, 0, nil
	}
	segs, escs, found, ref := decodeSegments(raw)
	if ref != nil {
		return "", reading{}, 0, ref
	}
	// Dot segments first, empty ones kept (RFC 3986 §5.2.4: in
	// "/api//../buy" the ".." removes the empty segment, as Jetty reads
	// it), then the empty segments merged.
	var outSegs, outEscs []string
	trailing := false
	for i, s := range segs {
		if !utf8.ValidString(s) {
			return "", reading{}, 0, refusePath(reasonUTF8, "the path is not UTF-8 once decoded")
		}
		last := i == len(segs)-1
		switch s {
		case ".":
			trailing = trailing || last
		case "..":
			if len(outSegs) == 0 {
				return "", reading{}, 0, refusePath(reasonAboveRoot, "'..' above the root")
			}
			outSegs, outEscs = outSegs[:len(outSegs)-1], outEscs[:len(outEscs)-1]
			trailing = trailing || last
		default:
			outSegs, outEscs = append(outSegs, s), append(outEscs, escs[i])
			trailing = last && s == ""
		}
	}
	p := reading{trailing: trailing}
	var b strings.Builder
	for i, s := range outSegs {
		if s == "" {
			continue
		}
		p.segs = append(p.segs, s)
		b.WriteByte('/')
		b.WriteString(outEscs[i])
	}
	if p.trailing || len(p.segs) == 0 {
		b.WriteByte('/')
	}
	return b.String(), p, found, nil
}

// decodeSegments splits an escaped path at its raw slashes into segments,
// each decoded once (segs) and as it will be forwarded (escs), and notes
// what it holds that backends read two ways.
func decodeSegments(raw string) (segs, escs []string, found pathFeature, ref *refusal) {
	var seg, esc strings.Builder
	flush := func() {
		segs, escs = append(segs, seg.String()), append(escs, esc.String())
		seg.Reset()
		esc.Reset()
	}
	for i := 1; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '/':
			flush()
			continue
		case c == '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				return nil, nil, 0, refusePath(reasonBadEscape, "%q is not an escape", raw[i:min(i+3, len(raw))])
			}
			c = unhex(raw[i+1])<<4 | unhex(raw[i+2])
			i += 2
			switch c {
			case '/', '\\':
				found |= encodedSlash
			case '%':
				found |= encodedPercent
			case ';':
				found |= pathParams
			}
			if unreserved(c) {
				esc.WriteByte(c)
			} else {
				fmt.Fprintf(&esc, "%%%02X", c)
			}
		case c == '#':
			return nil, nil, 0, refusePath(reasonFragment, "a raw '#': backends end the target there, the gateway cannot")
		case c == '\\':
			found |= encodedSlash
			esc.WriteString("%5C")
		case c == ';':
			found |= pathParams
			esc.WriteByte(c)
		case pathByte(c):
			esc.WriteByte(c)
		default:
			fmt.Fprintf(&esc, "%%%02X", c)
		}
		if c < 0x20 || c == 0x7f {
			return nil, nil, 0, refusePath(reasonControl, "a control character (%#02x) in the path", c)
		}
		seg.WriteByte(c)
	}
	flush()
	return segs, escs, found, nil
}

// plainPath: a path every byte of which stands for itself (no escape, no
// ";", nothing that needs one), with no dot segment and no repeated slash:
// already in its canonical form.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '/':
			rest := p[i+1:]
			if strings.HasPrefix(rest, "/") || rest == "." || rest == ".." ||
				strings.HasPrefix(rest, "./") || strings.HasPrefix(rest, "../") {
				return false
			}
		case c == ';' || !pathByte(c):
			return false
		}
	}
	return true
}

// splitSegments splits a path (without its leading slash) into its
// non-empty segments.
func splitSegments(p string) []string {
	n := strings.Count(p, "/") + 1
	segs := make([]string, 0, n)
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	return segs
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// pathAllowance is one --path-allow: a feature let stand in the paths under
// a prefix.
type pathAllowance struct {
	feature pathFeature
	prefix  reading // folded unless the gateway compares case
}

// parsePathAllow reads a --path-allow value: "KIND /prefix/", KIND one of
// encoded-slash, encoded-percent, path-params.
func parsePathAllow(v string, fold bool) (pathAllowance, error) {
	kind, prefix, _ := strings.Cut(strings.TrimSpace(v), " ")
	prefix = strings.TrimSpace(prefix)
	a := pathAllowance{}
	var names []string
	for _, f := range pathFeatures {
		names = append(names, f.name)
		if f.name == kind {
			a.feature = f.feature
		}
	}
	if a.feature == 0 {
		return a, fmt.Errorf("%q: the kind must be one of %s", v, strings.Join(names, ", "))
	}
	if !strings.HasPrefix(prefix, "/") {
		return a, fmt.Errorf("%q: want 'KIND /path/prefix/', e.g. 'encoded-slash /files/'", v)
	}
	_, p, found, err := canonicalPath(prefix)
	if err != nil || found != 0 {
		return a, fmt.Errorf("%q: the prefix must be a plain path", v)
	}
	if fold {
		p = foldReading(p)
	}
	a.prefix = p
	return a, nil
}

// covers reports whether the allowance lets f stand in the path p: p's
// first segments are the prefix's, whole.
func (a pathAllowance) covers(f pathFeature, p reading) bool {
	if a.feature != f || len(p.segs) < len(a.prefix.segs) {
		return false
	}
	for i, s := range a.prefix.segs {
		if p.segs[i] != s {
			return false
		}
	}
	return true
}

// A reader reads requests for the backend the gateway fronts, as the
// operator described it (Reading).
type reader struct {
	fold bool
	// overrideHeaders: the method-override headers the backend honours;
	// overrideQuery: it honours a _method field in the query;
	// bodyOverride: it may honour one in the body (unless "none").
	overrideHeaders []string
	overrideQuery   bool
	bodyOverride    bool
	allow           []pathAllowance
}

// Reading describes the backend the gateway fronts, as far as reading its
// requests goes (gateway mode's --protect-case-sensitive, --hosts,
// --method-override and --path-allow).
type Reading struct {
	// CaseSensitive compares paths with the patterns as written; by
	// default case is ignored, as Express and ASP.NET Core route.
	CaseSensitive bool
	// DistinctHosts: the backend really serves the hosts the patterns name
	// apart. By default a host-qualified pattern protects its path on every
	// host (Jetty, Flask and Express as usually set up ignore Host).
	DistinctHosts bool
	// MethodOverrides the backend honours: X-HTTP-Method-Override,
	// X-HTTP-Method, X-Method-Override, _method (the query field), or
	// "none" (no override at all, a body's included). Those not named are
	// removed before forwarding.
	MethodOverrides []string
	// PathAllow lets a feature the gateway refuses stand under a prefix:
	// "encoded-slash /files/", "encoded-percent /search/",
	// "path-params /shop/".
	PathAllow []string
}

// methodOverrideHeaders are the headers frameworks take the method from:
// Rack::MethodOverride's and Symfony's X-HTTP-Method-Override, OData's and
// Microsoft's X-HTTP-Method, Express method-override's X-Method-Override.
var methodOverrideHeaders = []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}

// methodOverrideField is the form field frameworks take the method from.
const methodOverrideField = "_method"

// newReader checks a Reading.
func newReader(rd Reading) (*reader, error) {
	r := &reader{fold: !rd.CaseSensitive, bodyOverride: true}
	for _, o := range rd.MethodOverrides {
		switch o = strings.TrimSpace(o); {
		case o == "none":
			if len(rd.MethodOverrides) > 1 {
				return nil, errors.New("--method-override none: the backend honours no override, so name no other")
			}
			r.bodyOverride = false
		case o == methodOverrideField:
			r.overrideQuery = true
		default:
			known := false
			for _, h := range methodOverrideHeaders {
				if strings.EqualFold(o, h) {
					r.overrideHeaders, known = append(r.overrideHeaders, h), true
				}
			}
			if !known {
				return nil, fmt.Errorf("--method-override %q: want none, _method or one of %s", o, strings.Join(methodOverrideHeaders, ", "))
			}
		}
	}
	for _, v := range rd.PathAllow {
		a, err := parsePathAllow(v, r.fold)
		if err != nil {
			return nil, fmt.Errorf("--path-allow %w", err)
		}
		r.allow = append(r.allow, a)
	}
	return r, nil
}

// allowed reports whether a loosening lets f stand in the path p.
func (rd *reader) allowed(f pathFeature, p reading) bool {
	for _, a := range rd.allow {
		if a.covers(f, p) {
			return true
		}
	}
	return false
}

// read reads r one way, or says why it cannot. The ";" check needs the
// routes and is the table's (routes.match).
func (rd *reader) read(r *http.Request) (judged, *refusal) {
	j := judged{method: canonicalMethod(r.Method), host: canonicalHost(r.Host)}
	target := r.RequestURI
	if target == "" { // a request made in process, not read off the wire
		target = r.URL.RequestURI()
	}
	if target == "*" { // OPTIONS *: no path, nothing to protect
		j.path = target
		return j, nil
	}
	if strings.IndexByte(target, '#') >= 0 {
		return j, refusePath(reasonFragment, "a raw '#': backends end the target there, the gateway cannot")
	}
	rawPath, rawQuery, _ := strings.Cut(target, "?")
	path, p, found, ref := canonicalPath(rawPath)
	if ref != nil {
		return j, ref
	}
	if rd.fold {
		p = foldReading(p)
	}
	j.path, j.readings, j.found = path, []reading{p}, found
	for _, f := range pathFeatures[:2] { // path-params: routes.match, where it knows the routes
		if found&f.feature == 0 {
			continue
		}
		if !rd.allowed(f.feature, p) {
			return j, refusePath(f.reason, "%s: read as a separator by some backends, as data by others (--path-allow %s PREFIX lets it stand)", what(f.feature), f.name)
		}
		j.readings = appendReadings(j.readings, rd.alternatives(f.feature, j.readings)...)
	}
	if ref := rd.headers(r, &j); ref != nil {
		return j, ref
	}
	if ref := rd.query(rawQuery, &j); ref != nil {
		return j, ref
	}
	// Every framework that takes the method from a body (Rack, Symfony and
	// Laravel, Spring's HiddenHttpMethodFilter, ASP.NET Core, Express's
	// method-override) does so on a POST only.
	j.anyMethod = rd.bodyOverride && j.method == http.MethodPost && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
	return j, nil
}

func what(f pathFeature) string {
	switch f {
	case encodedSlash:
		return "an encoded '/' or a backslash"
	case encodedPercent:
		return "an encoded '%' (a double encoding)"
	}
	return "a ';' where a protected route may match"
}

// alternatives are the other readings of each path in ps that feature f,
// let stand, makes: "%2F" and "\" as separators; a second decoding; ";…"
// cut from every segment. Dot segments are resolved again in each (never
// above the root).
func (rd *reader) alternatives(f pathFeature, ps []reading) []reading {
	var out []reading
	for _, p := range ps {
		var segs []string
		for _, s := range p.segs {
			switch f {
			case encodedSlash:
				segs = append(segs, strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' })...)
			case encodedPercent:
				if d, err := url.PathUnescape(s); err == nil {
					s = d
				}
				segs = append(segs, strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' })...)
			case pathParams:
				if i := strings.IndexByte(s, ';'); i >= 0 {
					s = s[:i]
				}
				if s != "" {
					segs = append(segs, s)
				}
			}
		}
		q := reading{segs: resolveDots(segs), trailing: p.trailing}
		if rd.fold {
			q = foldReading(q)
		}
		out = append(out, q)
	}
	return out
}

// resolveDots resolves "." and ".." segments, never above the root.
func resolveDots(segs []string) []string {
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

// hopByHop are the Connection options a request may name: what browsers,
// curl and proxies send. A Connection naming anything else makes a proxy
// drop that header after the gateway judged the request with it
// (Connection: close, Content-Type turns a text body into a form for
// Rack), so it is refused.
var hopByHop = []string{"keep-alive", "close", "upgrade", "te", "http2-settings", "proxy-connection"}

// headers checks Connection and reads the honoured method overrides.
func (rd *reader) headers(r *http.Request, j *judged) *refusal {
	for _, v := range r.Header["Connection"] {
		for opt := range strings.SplitSeq(v, ",") {
			opt = strings.TrimSpace(opt)
			ok := opt == ""
			for _, h := range hopByHop {
				ok = ok || strings.EqualFold(opt, h)
			}
			if !ok {
				return refuseHeader(reasonConnection, "Connection names %q: a proxy would drop it after the gateway read the request with it", opt)
			}
		}
	}
	if len(rd.overrideHeaders) == 0 {
		return nil
	}
	var named []string
	for k, vs := range r.Header {
		for _, h := range rd.overrideHeaders {
			if sameHeader(k, h) {
				named = append(named, vs...)
			}
		}
	}
	if len(named) == 0 {
		return nil
	}
	m, ok := overrideMethod(named)
	if !ok {
		return refuseOverride("a method override must name one method, once, in letters")
	}
	j.overrides = append(j.overrides, m)
	return nil
}

// overrideMethod is the one method an honoured override names: a single
// value of ASCII letters, space around it trimmed; anything else (two
// values, a list, a byte a backend trims or folds its own way, as Node
// trims a no-break space) cannot be read one way.
func overrideMethod(vs []string) (string, bool) {
	if len(vs) != 1 {
		return "", false
	}
	m := strings.Trim(vs[0], " \t")
	if m == "" {
		return "", false
	}
	for i := 0; i < len(m); i++ {
		if c := m[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false
		}
	}
	return strings.ToUpper(m), true
}

// query removes from the query every field a backend may read as
// _method, unless the backend honours it; then it must be spelt plainly,
// once.
func (rd *reader) query(raw string, j *judged) *refusal {
	j.rawQuery = raw
	if raw == "" || !containsFold(raw, "method") && strings.IndexByte(raw, '%') < 0 {
		return nil // no field can be named _method
	}
	var kept []string
	var named []string
	changed := false
	for field := range strings.SplitSeq(raw, "&") {
		// Rack 2 also splits at ";": a part after one is a field of its own.
		var keep []string
		for part := range strings.SplitSeq(field, ";") {
			name, value, _ := strings.Cut(part, "=")
			if !overrideField(name) {
				keep = append(keep, part)
				continue
			}
			if rd.overrideQuery && name == methodOverrideField {
				named = append(named, unescapeQuery(value))
				keep = append(keep, part)
				continue
			}
			if rd.overrideQuery {
				return refuseOverride("%q in the query: _method spelt another way", name)
			}
			changed = true
		}
		if len(keep) > 0 {
			kept = append(kept, strings.Join(keep, ";"))
		}
	}
	if len(named) > 0 {
		m, ok := overrideMethod(named)
		if !ok {
			return refuseOverride("_method must name one method, once, in letters")
		}
		j.overrides = append(j.overrides, m)
	}
	if changed {
		j.rawQuery = strings.Join(kept, "&")
	}
	return nil
}

// overrideField reports whether a backend may read the query field named
// raw as _method: decoded (up to three times, "+" as a space), trimmed,
// without case, with PHP's mangling (" ", "." and "[" read as "_") and
// qs's brackets ("_method[]", "_method[x]").
func overrideField(raw string) bool {
	if !containsFold(raw, "method") && strings.IndexByte(raw, '%') < 0 {
		return false
	}
	name := raw
	for range 3 {
		d := unescapeQuery(name)
		if d == name {
			break
		}
		name = d
	}
	if i := strings.IndexByte(name, 0); i >= 0 {
		name = name[:i] // a C string ends there
	}
	name = strings.ToLower(strings.TrimFunc(name, func(r rune) bool { return unicode.IsSpace(r) || r < 0x20 || r == utf8.RuneError }))
	if i := strings.IndexByte(name, '['); i > 0 && strings.IndexByte(name[i:], ']') > 0 {
		name = name[:i] // qs and PHP read "_method[]" as the field _method
	}
	name = strings.Map(func(r rune) rune {
		if r == ' ' || r == '.' || r == '[' || r == '+' {
			return '_'
		}
		return r
	}, name)
	return name == methodOverrideField
}

// unescapeQuery decodes a query name or value as form decoders do ("+" a
// space); one that does not decode is read as it is.
func unescapeQuery(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// canonicalMethod is the method as backends that upper-case it read it.
func canonicalMethod(m string) string {
	for i := 0; i < len(m); i++ {
		if c := m[i]; c >= 'a' && c <= 'z' {
			return strings.ToUpper(m)
		}
	}
	return m
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// isMethodOverrideHeader: one of methodOverrideHeaders, in any spelling a
// backend reads as it.
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

// truncated is p cut before its first decoded "#" or "?": where a backend
// that decodes the target before it splits the query or fragment off
// would end the path.
func truncated(p reading) (reading, bool) {
	for i, s := range p.segs {
		if j := strings.IndexAny(s, "#?"); j >= 0 {
			segs := append(append([]string(nil), p.segs[:i]...), s[:j])
			if s[:j] == "" {
				segs = segs[:i]
			}
			return reading{segs: segs, trailing: s[:j] == "" && i > 0}, true
		}
	}
	return reading{}, false
}

// trimmed is p without the spaces at its end, which several backends trim
// ("/checkout%20").
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
	segs := p.segs
	for i, s := range p.segs {
		if f := foldCase(s); f != s {
			if &segs[0] == &p.segs[0] {
				segs = append([]string(nil), p.segs...)
			}
			segs[i] = f
		}
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
