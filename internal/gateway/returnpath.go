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
	return !strings.HasPrefix(path, "//")
}
