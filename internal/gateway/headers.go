package gateway

import (
	"net/http"
	"strings"
)

// Header names as backends read them (any case, "_" as "-"), and the
// Connection header, which may make a proxy drop one the gateway read.

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
