package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
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
	if _, err := newRoutes([]Route{r}, ""); err != nil {
		return Route{}, err
	}
	return r, nil
}

// CheckRoutes checks the routes together: as ServeMux would (two patterns
// that match the same requests with neither more specific are refused),
// and that none would take a path of waitroom's own under prefix.
func CheckRoutes(rs []Route, prefix string) error {
	_, err := newRoutes(rs, prefix)
	return err
}

// routes finds the protected route a request is for.
type routes struct {
	mux    *http.ServeMux
	byPath map[string]Route
}

// newRoutes builds the table, with CheckRoutes's checks.
func newRoutes(rs []Route, prefix string) (t *routes, err error) {
	t = &routes{mux: http.NewServeMux(), byPath: map[string]Route{}}
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, r := range rs {
		if _, dup := t.byPath[r.Pattern]; dup {
			return nil, fmt.Errorf("%q is given twice", r.Pattern)
		}
		if err := register(t.mux, r.Pattern, noop); err != nil {
			return nil, err
		}
		if prefix != "" && underPrefix(patternPath(r.Pattern), prefix) {
			return nil, fmt.Errorf("%q: %s is waitroom's own (--prefix)", r.Pattern, prefix)
		}
		t.byPath[r.Pattern] = r
	}
	return t, nil
}

// register is ServeMux.Handle, with its panic on a bad or conflicting
// pattern turned into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			// ServeMux says where each pattern was registered: here.
			msg := registeredAt.ReplaceAllString(fmt.Sprint(v), "")
			err = fmt.Errorf("%q: %s", pattern, strings.ReplaceAll(strings.TrimSpace(msg), "\n", " "))
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

var registeredAt = regexp.MustCompile(` \(registered at [^)]*\)`)

// patternPath is the path part of a pattern ("POST host/a/{b}" → "/a/{b}").
func patternPath(p string) string {
	if i := strings.IndexAny(p, " \t"); i >= 0 {
		p = strings.TrimSpace(p[i:])
	}
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[i:]
	}
	return p
}

// match returns the protected route r is for. A request is protected when
// its path as sent matches a pattern, or when its path read the most
// lenient way a backend might read it does: percent-decoded (so %2F is a
// slash), backslashes as slashes, dot segments, doubled slashes and a
// trailing slash removed. So "/api/./checkout", "/api//checkout",
// "/api%2Fcheckout", "/api\checkout" and "/api/checkout/" cannot slip past
// "POST /api/checkout" to a backend that reads them as that path. Paths are
// compared case-sensitively, as ServeMux does.
func (t *routes) match(r *http.Request) (Route, bool) {
	if len(t.byPath) == 0 {
		return Route{}, false
	}
	if rt, ok := t.lookup(r, r.URL.Path); ok {
		return rt, true
	}
	lenient := lenientPath(r.URL)
	if lenient != r.URL.Path {
		if rt, ok := t.lookup(r, lenient); ok {
			return rt, true
		}
	}
	// Many backends take "/checkout/" for "/checkout".
	if trimmed := strings.TrimSuffix(lenient, "/"); trimmed != lenient && trimmed != "" {
		return t.lookup(r, trimmed)
	}
	return Route{}, false
}

func (t *routes) lookup(r *http.Request, p string) (Route, bool) {
	probe := &http.Request{Method: r.Method, Host: r.Host, URL: &url.URL{Path: p}}
	_, pattern := t.mux.Handler(probe)
	rt, ok := t.byPath[pattern]
	return rt, ok
}

// lenientPath decodes the raw path fully (a double encoding too), reads
// backslashes as slashes and cleans the result, keeping a trailing slash.
func lenientPath(u *url.URL) string {
	p := u.EscapedPath()
	for range 3 {
		d, err := url.PathUnescape(p)
		if err != nil || d == p {
			break
		}
		p = d
	}
	p = strings.ReplaceAll(p, `\`, "/")
	clean := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean
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
