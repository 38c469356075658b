package gateway

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The other readings of a path: what some backend makes of it (a second
// decoding, a cut at ";" or "#", trimmed spaces, case folded), so that a
// protected route matches whichever of them the backend takes.

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
