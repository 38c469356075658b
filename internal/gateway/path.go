package gateway

import (
	"fmt"
	"net/url"
	"strings"

	"unicode/utf8"
)

// The path: read once into its canonical form (canonicalPath), with what
// in it backends read two ways, and the loosenings --path-allow lets stand.

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

// allowed reports whether a loosening lets f stand in the path p.
func (rd *reader) allowed(f pathFeature, p reading) bool {
	for _, a := range rd.allow {
		if a.covers(f, p) {
			return true
		}
	}
	return false
}
