package gateway

import (
	"net/url"
	"strings"
)

// maxReturnLen bounds a return target; a longer one is refused.
const maxReturnLen = 2048

// SafeReturn reports whether target is a path on this origin that a browser
// can be sent back to after waiting, and nothing else: no scheme, no host,
// no "//host" (scheme-relative), no backslash (browsers read "/\host" as
// "//host"), no control or space characters, and none of those smuggled in
// percent-encoded. Anything else would make the waiting room an open
// redirect.
func SafeReturn(target string) bool {
	if target == "" || len(target) > maxReturnLen || target[0] != '/' {
		return false
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	// Decoded, as a lenient server or browser might decode it before acting.
	decoded := target
	for range 3 {
		d, err := url.PathUnescape(decoded)
		if err != nil {
			return false
		}
		if d == decoded {
			break
		}
		decoded = d
	}
	if strings.ContainsAny(decoded, "\\\r\n\t\x00") {
		return false
	}
	path := decoded
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	// With its dot segments removed, as a browser resolves it
	// ("/.//evil.example" is "//evil.example").
	return !strings.HasPrefix(removeDotSegments(path), "//")
}

// removeDotSegments is RFC 3986 §5.2.4 on an absolute path: "." and ".."
// segments resolved, repeated slashes kept (unlike path.Clean).
func removeDotSegments(p string) string {
	segs := strings.Split(p, "/")[1:]
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}
