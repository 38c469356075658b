package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/waitroom/waitroom/internal/queue"
)

// Route is one protected route of the upstream.
type Route struct {
	// Pattern is Go's ServeMux syntax: "[METHOD ][HOST]/[PATH]", e.g.
	// "POST /checkout" or "GET /drops/{id}/buy".
	Pattern string
	// Queue is the line that guards it (queue.DefaultQueue unless named).
	Queue string
	// Consume: a use spends the entry token when the upstream answers 2xx
	// (--protect). Otherwise a valid token is required but kept, for the
	// pages of a multi-step checkout (--protect-session).
	Consume bool
}

// ParseRoute reads one --protect or --protect-session value: a ServeMux
// pattern, optionally followed by " queue=NAME".
func ParseRoute(s string, consume bool) (Route, error) {
	r := Route{Pattern: strings.TrimSpace(s), Queue: queue.DefaultQueue, Consume: consume}
	if i := strings.LastIndex(r.Pattern, " queue="); i >= 0 {
		r.Queue = r.Pattern[i+len(" queue="):]
		r.Pattern = strings.TrimSpace(r.Pattern[:i])
		if err := queue.ValidateQueueName(r.Queue); err != nil {
			return Route{}, fmt.Errorf("%q: %v", s, err)
		}
	}
	if r.Pattern == "" {
		return Route{}, fmt.Errorf("%q: empty pattern (want e.g. 'POST /checkout')", s)
	}
	if _, err := newRoutes([]Route{r}, "", Reading{CaseSensitive: true, DistinctHosts: true}); err != nil {
		return Route{}, err
	}
	return r, nil
}

// CheckRoutes checks the routes together: as ServeMux would (two patterns
// that match the same requests with neither more specific are refused,
// comparing paths without case unless rd.CaseSensitive, and hosts only
// under rd.DistinctHosts), that none would take a path of waitroom's own
// under prefix, and rd itself.
func CheckRoutes(rs []Route, prefix string, rd Reading) error {
	_, err := newRoutes(rs, prefix, rd)
	return err
}

// routes finds the protected route a request is for.
type routes struct {
	mux *http.ServeMux
	// byPattern: each route by the pattern registered for it (its path
	// case-folded unless caseSensitive, its host dropped unless
	// distinctHosts).
	byPattern     map[string]Route
	caseSensitive bool
	// reader reads each request the one way it is forwarded.
	reader *reader
	// hosts: the hosts the patterns name (folded), as a set and in order;
	// empty unless the backend serves them apart (--hosts distinct).
	hosts    map[string]bool
	hostList []string
	// methods: the methods the patterns name, in order ("" for none).
	methods []string
	// depth: the most segments a pattern fixes (before a trailing slash
	// or a {name...}); literalEnds[i]: the lengths of the literal segments
	// patterns have at position i. Together they bound where a "." can end
	// a path that a backend reads as a protected one (routes.readAs).
	depth       int
	literalEnds []map[int]bool
	// firstLiterals: the first segments of the patterns; anyFirst: some
	// pattern's first segment is a wildcard or it has none. Most requests
	// are for none of those and are told so without a lookup.
	firstLiterals map[string]bool
	anyFirst      bool
}

// newRoutes builds the table, with CheckRoutes's checks.
func newRoutes(rs []Route, prefix string, rd Reading) (t *routes, err error) {
	caseSensitive := rd.CaseSensitive
	t = &routes{mux: http.NewServeMux(), byPattern: map[string]Route{}, caseSensitive: caseSensitive,
		hosts: map[string]bool{}, firstLiterals: map[string]bool{}}
	if t.reader, err = newReader(rd); err != nil {
		return nil, err
	}
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	given := map[string]bool{}
	for _, r := range rs {
		if given[r.Pattern] {
			return nil, fmt.Errorf("%q is given twice", r.Pattern)
		}
		given[r.Pattern] = true
		method, host, p := splitPattern(r.Pattern)
		if !caseSensitive {
			host, p = foldCase(host), foldPatternPath(p)
		}
		named := host != ""
		if !rd.DistinctHosts {
			host = "" // the path, on every host
		}
		registered := host + p
		if method != "" {
			registered = method + " " + registered
		}
		if err := register(t.mux, registered, noop); err != nil {
			switch {
			case !strings.Contains(err.Error(), "conflicts"):
			case named && !rd.DistinctHosts:
				err = fmt.Errorf("%w (a pattern's host is ignored: the backend may serve its path on any host; --hosts distinct if it really serves the hosts apart)", err)
			case !caseSensitive:
				err = fmt.Errorf("%w (paths are compared without case; --protect-case-sensitive compares them as written)", err)
			}
			return nil, fmt.Errorf("%q: %w", r.Pattern, err)
		}
		if prefix != "" && (underPrefix(p, prefix) || underPrefix(foldCase(p), foldCase(prefix))) {
			return nil, fmt.Errorf("%q: %s is waitroom's own (--prefix)", r.Pattern, prefix)
		}
		t.byPattern[registered] = r
		if host != "" && !t.hosts[host] {
			t.hosts[host] = true
			t.hostList = append(t.hostList, host)
		}
		if !contains(t.methods, method) {
			t.methods = append(t.methods, method)
		}
		t.addSegments(p)
	}
	return t, nil
}

// addSegments notes how deep a pattern path goes and where its literal
// segments end.
func (t *routes) addSegments(p string) {
	segs := strings.Split(p[1:], "/")
	if first := segs[0]; first == "" || strings.HasPrefix(first, "{") {
		t.anyFirst = true
	} else {
		if u, err := url.PathUnescape(first); err == nil {
			first = u
		}
		t.firstLiterals[first] = true
	}
	for i, seg := range segs {
		if seg == "" || seg == "{$}" || strings.HasSuffix(seg, "...}") {
			break
		}
		t.depth = max(t.depth, i+1)
		for len(t.literalEnds) <= i {
			t.literalEnds = append(t.literalEnds, map[int]bool{})
		}
		if !strings.HasPrefix(seg, "{") {
			if u, err := url.PathUnescape(seg); err == nil {
				seg = u
			}
			t.literalEnds[i][len(seg)] = true
		}
	}
}

// splitPattern splits "[METHOD ][HOST]/PATH" as ServeMux does.
func splitPattern(p string) (method, host, path string) {
	p = strings.TrimSpace(p)
	if i := strings.IndexAny(p, " \t"); i >= 0 {
		method, p = p[:i], strings.TrimLeft(p[i:], " \t")
	}
	i := strings.IndexByte(p, '/')
	if i < 0 {
		return method, "", p
	}
	return method, p[:i], p[i:]
}

// foldPatternPath folds the case of a pattern path's literals, keeping
// its wildcards' names.
func foldPatternPath(p string) string {
	var b strings.Builder
	for p != "" {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			b.WriteString(foldCase(p))
			break
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			b.WriteString(foldCase(p))
			break
		}
		b.WriteString(foldCase(p[:i]))
		b.WriteString(p[i : i+j+1])
		p = p[i+j+1:]
	}
	return b.String()
}

// register is ServeMux.Handle, with its panic on a bad or conflicting
// pattern turned into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			// ServeMux says where each pattern was registered: here.
			msg := registeredAt.ReplaceAllString(fmt.Sprint(v), "")
			err = errors.New(strings.ReplaceAll(strings.TrimSpace(msg), "\n", " "))
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

var registeredAt = regexp.MustCompile(` \(registered at [^)]*\)`)

// verdict is what the table says of a request.
type verdict struct {
	// route is the protected route the request is for: the first matched,
	// under the request's own method first. Its Consume is set when any
	// route the request matched spends the entry: the strictest applies.
	route     Route
	protected bool
	// other is the pattern of a route of another queue the request also
	// matched (say under the method a body may name): its entry would be
	// checked for one queue while the backend may run the other's route,
	// so it is not forwarded (ErrAmbiguousRoute).
	other string
}

func (v *verdict) add(rt Route) {
	switch {
	case !v.protected:
		v.route, v.protected = rt, true
	case rt.Queue != v.route.Queue && v.other == "":
		v.other = rt.Pattern
	}
	v.route.Consume = v.route.Consume || rt.Consume
}

// match reads r the one way it is forwarded (reader.read) and says which
// protected route it is for: under its own method, the method an honoured
// override names, and, for a POST with a body (which may name a method
// the gateway does not read), every method a pattern names. A ";" where a
// protected route may match either way a backend reads it is refused
// unless --path-allow path-params lets it stand.
func (t *routes) match(r *http.Request) (judged, verdict, *refusal) {
	j, ref := t.reader.read(r)
	var v verdict
	if ref != nil || len(t.byPattern) == 0 || len(j.readings) == 0 {
		return j, v, ref
	}
	if j.found&pathParams != 0 {
		cut := t.reader.alternatives(pathParams, j.readings)
		stripped := appendReadings(j.readings, cut...)
		if !t.reader.allowed(pathParams, j.readings[0]) && !t.reader.allowed(pathParams, cut[0]) {
			var any verdict
			if t.find(&any, j.host, stripped, t.methods); any.protected {
				return j, v, refusePath(reasonPathParameter, "%s: servlet containers cut ';…' from a segment, others keep it (--path-allow path-params PREFIX lets it stand)", what(pathParams))
			}
			return j, v, nil // neither reading is protected
		}
		j.readings = stripped
	}
	var buf [8]string
	methods := append(append(buf[:0], j.method), j.overrides...)
	if j.anyMethod {
		methods = append(methods, t.methods...)
	}
	t.find(&v, j.host, j.readings, methods)
	return j, v, nil
}

// find adds to v the routes the path readings match under methods, on the
// host.
func (t *routes) find(v *verdict, host string, readings []reading, methods []string) {
	hosts := t.hostList
	if t.hosts[host] {
		hosts = []string{host}
	} else if len(hosts) == 0 {
		hosts = []string{""}
	}
	// Under --hosts distinct, any Host but one the patterns name may be
	// any of them: a backend serves its default site for a name (or an
	// address) it does not know.
	paths := readings
	for _, p := range readings {
		if q, ok := truncated(p); ok {
			paths, p = appendReadings(slices.Clip(paths), q), q
		}
		if q, ok := trimmed(p); ok {
			paths = appendReadings(slices.Clip(paths), q)
		}
	}
	var probe *http.Request // made once a path may match: most never do
	for i, m := range methods {
		if m == "" {
			m = http.MethodGet // a pattern without a method matches any
		}
		if slices.Contains(methods[:i], m) {
			continue
		}
		for _, p := range paths {
			if !t.mayMatch(p) {
				continue
			}
			if probe == nil {
				probe = &http.Request{URL: &url.URL{}}
			}
			probe.Method = m
			for _, h := range hosts {
				probe.Host = h
				t.readAs(p, func(q reading) bool {
					if rt, ok := t.lookup(probe, q); ok {
						v.add(rt)
					}
					return v.other == "" // another queue: nothing more to learn
				})
				if v.other != "" {
					return
				}
			}
		}
	}
}

// mayMatch reports whether any path readAs makes of p may match a pattern:
// whether its first segment, as it is, with trailing junk trimmed or cut
// at a ".", is one a pattern starts with. It allocates nothing.
func (t *routes) mayMatch(p reading) bool {
	if t.anyFirst {
		return true
	}
	if len(p.segs) == 0 {
		return false
	}
	s := p.segs[0]
	if t.firstLiterals[s] || t.firstLiterals[strings.TrimRightFunc(s, isJunk)] {
		return true
	}
	for j := 0; j < len(s); j++ {
		if s[j] == '.' && t.firstLiterals[strings.TrimRightFunc(s[:j], isJunk)] {
			return true
		}
	}
	return false
}

// readAs calls try with p and the paths a backend reads p as: without its
// trailing slash, and cut before a "." ("/checkout.json" and
// "/checkout.php/x" as /checkout, as Rails, Spring's suffix match and
// PHP's PATH_INFO do), trailing junk trimmed again after the cut. Only a
// cut that can change the answer is tried: in the first depth segments,
// at the first "." of a segment (where a wildcard may be) or where one of
// the patterns' literals there ends, and a segment just past them that
// starts with "." ("/drops/1/buy/.json" as /drops/1/buy/). It stops when
// try returns false.
func (t *routes) readAs(p reading, try func(reading) bool) {
	withSlash := func(q reading) bool {
		return try(q) && (!q.trailing || len(q.segs) == 0 || try(reading{segs: q.segs}))
	}
	if !withSlash(p) {
		return
	}
	for i := 0; i < len(p.segs) && i <= t.depth; i++ {
		s := p.segs[i]
		first := true
		for j := 0; j < len(s); j++ {
			if i == t.depth && j > 0 {
				break // past every pattern's literals only the cut before the segment matters
			}
			if s[j] != '.' || !first && !t.literalEnds[i][j] {
				continue
			}
			first = false
			cut := reading{segs: p.segs[:i], trailing: i > 0}
			if j > 0 {
				cut = reading{segs: append(append(make([]string, 0, i+1), p.segs[:i]...), s[:j])}
			}
			if trim, ok := trimmed(cut); ok {
				cut = trim
			}
			if !withSlash(cut) {
				return
			}
		}
	}
}

// lookup asks the mux which route the path p is, for probe's method and
// host.
func (t *routes) lookup(probe *http.Request, p reading) (Route, bool) {
	raw := p.String()
	probe.URL.Path, probe.URL.RawPath = raw, ""
	if strings.IndexByte(raw, '%') >= 0 {
		probe.URL.Path = "/" + strings.Join(p.segs, "/")
		if p.trailing && len(p.segs) > 0 {
			probe.URL.Path += "/"
		}
		probe.URL.RawPath = raw
	}
	_, pattern := t.mux.Handler(probe)
	rt, ok := t.byPattern[pattern]
	return rt, ok
}

// underPrefix reports whether p is the prefix or below it.
func underPrefix(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// ValidPrefix checks --prefix: an absolute path of plain segments, not "/".
func ValidPrefix(p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" || strings.HasSuffix(p, "/") {
		return errors.New("must be a path such as /_waitroom: a leading slash, no trailing slash")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		plain := seg != "" && seg != "." && seg != ".."
		for _, c := range seg {
			plain = plain && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.", c))
		}
		if !plain {
			return fmt.Errorf("segment %q: use letters, digits, '-', '_' and '.'", seg)
		}
	}
	return nil
}
