package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
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
	if _, err := newRoutes([]Route{r}, "", true); err != nil {
		return Route{}, err
	}
	return r, nil
}

// CheckRoutes checks the routes together: as ServeMux would (two patterns
// that match the same requests with neither more specific are refused,
// comparing paths without case unless caseSensitive), and that none would
// take a path of waitroom's own under prefix.
func CheckRoutes(rs []Route, prefix string, caseSensitive bool) error {
	_, err := newRoutes(rs, prefix, caseSensitive)
	return err
}

// routes finds the protected route a request is for.
type routes struct {
	mux *http.ServeMux
	// byPattern: each route by the pattern registered for it (its path
	// case-folded unless caseSensitive).
	byPattern     map[string]Route
	caseSensitive bool
	// hosts: the hosts the patterns name (folded), as a set and in order.
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
func newRoutes(rs []Route, prefix string, caseSensitive bool) (t *routes, err error) {
	t = &routes{mux: http.NewServeMux(), byPattern: map[string]Route{}, caseSensitive: caseSensitive,
		hosts: map[string]bool{}, firstLiterals: map[string]bool{}}
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
		registered := host + p
		if method != "" {
			registered = method + " " + registered
		}
		if err := register(t.mux, registered, noop); err != nil {
			if !caseSensitive && strings.Contains(err.Error(), "conflicts") {
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
	// route is the protected route the request is for: the first any
	// reading matched (the method as sent and the normalised path first).
	route     Route
	protected bool
	// other is the pattern of a second route another reading matched: a
	// backend may read the request as either, so it is not forwarded
	// (ErrAmbiguousRoute). Empty when every reading agrees.
	other string
}

func (v *verdict) add(rt Route) {
	switch {
	case !v.protected:
		v.route, v.protected = rt, true
	case v.other == "" && rt.Pattern != v.route.Pattern:
		v.other = rt.Pattern
	}
}

// match says which protected route r is for: r is protected when any way
// a backend may read it (canonicalRequest: every method, every path
// reading; bodyOverride: a _method field in the body) matches a pattern.
// It may read a form body ahead, and then puts it back.
func (t *routes) match(r *http.Request) verdict {
	var v verdict
	if len(t.byPattern) == 0 {
		return v
	}
	c := canonicalRequest(r, !t.caseSensitive)
	t.find(&v, c, c.methods)
	// A _method field in the body matters only where a pattern for another
	// method matches the path: look there first, read the body only then.
	kind := bodyKindOf(r)
	if kind == bodySilent {
		return v
	}
	var others []string
	for _, m := range t.methods {
		if m != "" && !contains(c.methods, m) {
			others = append(others, m)
		}
	}
	var there verdict
	if t.find(&there, c, others); !there.protected {
		return v
	}
	if kind == bodyUnreadable {
		t.find(&v, c, others)
		return v
	}
	named, unknown := bodyOverride(r, kind)
	if unknown {
		named = others
	}
	t.find(&v, c, named)
	return v
}

// find adds to v the routes the request matches under methods.
func (t *routes) find(v *verdict, c canonical, methods []string) {
	hosts := t.hostList
	if t.hosts[c.host] {
		hosts = []string{c.host}
	} else if len(hosts) == 0 {
		hosts = []string{""}
	}
	// Any Host but one the patterns name may be any of them: a backend
	// serves its default site for a name (or an address) it does not
	// know, and many ignore Host altogether.
	probe := &http.Request{URL: &url.URL{}}
	for _, m := range methods {
		probe.Method = m
		for _, p := range c.paths {
			if !t.mayMatch(p) {
				continue
			}
			for _, h := range hosts {
				probe.Host = h
				t.readAs(p, func(q reading) bool {
					if rt, ok := t.lookup(probe, q); ok {
						v.add(rt)
					}
					return v.other == "" // two routes: nothing more to learn
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
