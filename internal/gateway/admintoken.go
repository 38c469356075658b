package gateway

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// waitroom's admin token is waitroom's alone: the admin API lives under the
// prefix, and a request outside it that carries the token was meant for
// waitroom and sent to the wrong address (an operator's --addr without the
// prefix, a script's base URL). Forwarded, it would hand the key to the
// whole line to the shop's backend and its logs (issue 49). So such a
// request is refused before anything else reads it, by `waitroom proxy` and
// by the decision alike: nginx and Caddy forward what they hold, so a
// decision's "let on" would forward the token too.

// ErrAdminTokenOutsidePrefix: a request outside the prefix carries
// waitroom's own admin token, which the gateway never forwards (400).
var ErrAdminTokenOutsidePrefix = errors.New("the request carries waitroom's admin token, which is never forwarded to the backend")

// reasonAdminToken is the refusal's reason.
const reasonAdminToken = "admin_token"

// adminTokenRefusal refuses r when any of its headers carries the admin
// token (carriesToken), naming the header, never its value, and where the
// admin API is.
func (g *Gateway) adminTokenRefusal(r *http.Request) *refusal {
	if len(g.adminToken) == 0 {
		return nil
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			if carriesToken(v, g.adminToken) {
				return &refusal{ErrAdminTokenOutsidePrefix, reasonAdminToken, fmt.Sprintf(
					"%s holds it; waitroom's admin API is under the prefix: %s/admin/v1/… (as a command's --addr: http://host:port%s)",
					k, g.o.Prefix, g.o.Prefix)}
			}
		}
	}
	return nil
}

// carriesToken reports whether the header value v holds token in any form
// a backend may take it from: the whole value, the value after an auth
// scheme ("Bearer …", "Token …"), or one of its items separated by spaces,
// commas or semicolons, alone or as an item's value ("name=…": a cookie, a
// parameter), quoted or not. Only a candidate of the token's length is
// compared, in constant time; a value shorter than the token costs one
// comparison of lengths (nearly every header of nearly every request).
func carriesToken(v string, token []byte) bool {
	if len(v) < len(token) {
		return false
	}
	v = strings.TrimSpace(v)
	if sameToken(v, token) {
		return true
	}
	if _, credentials, ok := strings.Cut(v, " "); ok && sameToken(strings.TrimSpace(credentials), token) {
		return true
	}
	for v != "" {
		end := strings.IndexAny(v, " \t,;")
		if end < 0 {
			end = len(v)
		}
		item := v[:end]
		v = v[min(end+1, len(v)):]
		if sameToken(item, token) {
			return true
		}
		if _, value, ok := strings.Cut(item, "="); ok && sameToken(value, token) {
			return true
		}
	}
	return false
}

// sameToken compares s, its quotes removed, with token in constant time.
func sameToken(s string, token []byte) bool {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return len(s) == len(token) && subtle.ConstantTimeCompare([]byte(s), token) == 1
}
