package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
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
