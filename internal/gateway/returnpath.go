package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/waitroom/waitroom/internal/queue"
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

// returnTo is GET {prefix}/return?queue=&to=: where the waiting page sends
// an admitted browser. With the user READY it sets the entry cookie and
// redirects to `to`, a path on this site (anything else is refused: no
// open redirect); otherwise back to the waiting page.
func (g *Gateway) returnTo(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	to, name := q.Get("to"), q.Get("queue")
	if name == "" {
		name = queue.DefaultQueue
	}
	if !SafeReturn(to) {
		g.o.API.WriteError(w, r, fmt.Errorf("%w: %q", ErrUnsafeReturn, to))
		return
	}
	if _, ok := g.o.Bypass.Match(r, name); ok { // READY without a token: back without a cookie
		w.Header().Set("Location", to)
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	user, err := g.o.Identity.User(r)
	if err != nil {
		g.o.API.WriteError(w, r, err)
		return
	}
	v, err := g.o.Queue.Status(r.Context(), name, user)
	if err != nil && g.o.Degraded.Admits() && errors.Is(err, queue.ErrUnavailable) {
		// The store is away under --on-store-error admit: the protected
		// route lets the browser through without an entry.
		w.Header().Set("Location", to)
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	if err != nil {
		g.o.API.WriteError(w, r, err)
		return
	}
	if v.State != queue.Ready {
		http.Redirect(w, r, g.o.Prefix+"/q/"+name+"?return="+url.QueryEscape(to), http.StatusSeeOther)
		return
	}
	http.SetCookie(w, g.entryCookie(r, name, v.Token, v.ExpiresAt))
	// Location is written as checked: http.Redirect would clean the path
	// first ("/./%2fevil.com" to "/%2fevil.com"), and what is sent must be
	// what was checked.
	w.Header().Set("Location", to)
	w.WriteHeader(http.StatusSeeOther)
}
