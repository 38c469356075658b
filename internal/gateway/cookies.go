package gateway

import (
	"net/http"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/identity"
)

// stripOwnCookies removes waitroom's cookies from the Cookie header: the
// backend gets the signed entry instead of the token, and has no use for
// the session. Cookie headers without them pass byte for byte.
func stripOwnCookies(h http.Header) {
	vs := h["Cookie"]
	var kept []string
	changed := false
	for _, v := range vs {
		if !containsFold(v, "wr_") {
			kept = append(kept, v)
			continue
		}
		var parts []string
		for part := range strings.SplitSeq(v, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			if strings.EqualFold(name, identity.CookieName) || hasFoldPrefix(name, EntryCookiePrefix) {
				changed = true
				continue
			}
			parts = append(parts, strings.TrimSpace(part))
		}
		if len(parts) > 0 {
			kept = append(kept, strings.Join(parts, "; "))
		}
	}
	switch {
	case !changed:
	case len(kept) == 0:
		delete(h, "Cookie")
	default:
		h["Cookie"] = kept
	}
}

func hasFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// entryToken is the entry token the request carries: the X-Entry-Token
// header (API clients), else the queue's entry cookie (browsers).
func entryToken(r *http.Request, queueName string) string {
	if t := r.Header.Get("X-Entry-Token"); t != "" {
		return t
	}
	if c, err := r.Cookie(EntryCookiePrefix + queueName); err == nil {
		return c.Value
	}
	return ""
}

// entryCookie carries token, whose expiry is expires, for the queue. Under
// sliding sessions (sessionMaxSeconds) the token may live on past it, so
// the cookie lasts until the session's end: a token expired by then is
// answered as none.
func (g *Gateway) entryCookie(r *http.Request, queueName, token string, expires time.Time) *http.Cookie {
	if c, err := g.o.Queue.ConfigInForce(r.Context(), queueName); err == nil && c.SessionMax > 0 {
		expires = expires.Add(c.SessionMax - c.TokenTTL)
	}
	return &http.Cookie{
		Name:     EntryCookiePrefix + queueName,
		Value:    token,
		Path:     "/",
		Expires:  expires,
		MaxAge:   max(int(time.Until(expires).Seconds()), 1),
		HttpOnly: true,
		Secure:   g.o.Identity.Secure(r),
		SameSite: http.SameSiteLaxMode,
	}
}
