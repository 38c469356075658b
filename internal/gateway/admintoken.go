package gateway

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom/internal/staff"
)

// waitroom's admin token is waitroom's alone: the admin API lives under the
// prefix, and a request outside it that carries the token was meant for
// waitroom and sent to the wrong address (an operator's --addr without the
// prefix, a script's base URL). Forwarded, it would hand the key to the
// whole line to the shop's backend and its logs (issue 49). So such a
// request is refused before anything else reads it, by `waitroom proxy` and
// by the decision alike: nginx and Caddy forward what they hold, so a
// decision's "let on" would forward the token too. A named token (issue
// 56: staff.LooksLikeToken, "wr_…") is refused alike, whether or not the
// admin API is on: it is waitroom's, never the backend's.

// ErrAdminTokenOutsidePrefix: a request outside the prefix carries
// waitroom's own admin token, which the gateway never forwards (400).
var ErrAdminTokenOutsidePrefix = errors.New("the request carries waitroom's admin token (or a named token, wr_…), which is never forwarded to the backend")

// reasonAdminToken is the refusal's reason.
const reasonAdminToken = "admin_token"

// adminTokenRefusal refuses r when any of its headers carries the admin
// token (carriesToken) or a named token (carriesNamedToken), naming the
// header, never its value, and where the admin API is.
func (g *Gateway) adminTokenRefusal(r *http.Request) *refusal {
	for k, vs := range r.Header {
		for _, v := range vs {
			if len(g.adminToken) > 0 && carriesToken(v, g.adminToken) || carriesNamedToken(v) {
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
	return anyCandidate(v, func(s string) bool { return sameToken(s, token) })
}

// namedTokenLen is a named token's length: a shorter value holds none.
var namedTokenLen = len(staff.NewToken())

// carriesNamedToken reports whether the header value v holds something
// shaped like a named token, in any form carriesToken looks at.
func carriesNamedToken(v string) bool {
	if len(v) < namedTokenLen {
		return false
	}
	return anyCandidate(v, func(s string) bool { return staff.LooksLikeToken(unquoted(s)) })
}

// anyCandidate reports whether match holds for a part of v a backend may
// take a token from: the whole value, the value after an auth scheme, or
// an item separated by spaces, commas or semicolons, alone or as an item's
// value ("name=…").
func anyCandidate(v string, match func(string) bool) bool {
	v = strings.TrimSpace(v)
	if match(v) {
		return true
	}
	if _, credentials, ok := strings.Cut(v, " "); ok && match(strings.TrimSpace(credentials)) {
		return true
	}
	for v != "" {
		end := strings.IndexAny(v, " \t,;")
		if end < 0 {
			end = len(v)
		}
		item := v[:end]
		v = v[min(end+1, len(v)):]
		if match(item) {
			return true
		}
		if _, value, ok := strings.Cut(item, "="); ok && match(value) {
			return true
		}
	}
	return false
}

// unquoted is s without the double quotes around it, if any.
func unquoted(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// sameToken compares s, its quotes removed, with token in constant time.
func sameToken(s string, token []byte) bool {
	s = unquoted(s)
	return len(s) == len(token) && subtle.ConstantTimeCompare([]byte(s), token) == 1
}
