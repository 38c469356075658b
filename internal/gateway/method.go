package gateway

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The method: upper-cased, and the overrides that name another (headers,
// the _method field) read one way where the backend honours them, removed
// where it does not.

// methodOverrideHeaders are the headers frameworks take the method from:
// Rack::MethodOverride's and Symfony's X-HTTP-Method-Override, OData's and
// Microsoft's X-HTTP-Method, Express method-override's X-Method-Override.
var methodOverrideHeaders = []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}

// methodOverrideField is the form field frameworks take the method from.
const methodOverrideField = "_method"

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
