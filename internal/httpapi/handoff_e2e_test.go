package httpapi_test

// Carrying a place to another session through the API and the link's
// page (issue 55): the link, its "Continue here" page that claims nothing,
// the claim's POST from the page's own origin only, MOVED for the old
// session, and the refusals: used or expired (410), a session in line
// already (409), signed users (409 handoff_not_needed), no place (404).

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// noRedirects is a client that shows a redirect instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestHandoff(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			q := apptest.UniqueID("handoff")
			in.PutQueue(q, map[string]any{"paused": true, "entry": "any"})
			t.Run("the link and its claim", func(t *testing.T) { handoffClaimed(t, in, q) })
			t.Run("refusals", func(t *testing.T) { handoffRefused(t, in, q) })
			t.Run("without JavaScript", func(t *testing.T) { handoffNoScript(t, in, q) })
		})
	}
	t.Run("through waitroom proxy", func(t *testing.T) {
		t.Parallel()
		handoffThroughProxy(t, apptest.BootProxy(t, apptest.Backends[0], apptest.NewUpstreamShop(t, 5), nil))
	})
}

// handoffThroughProxy: in gateway mode the link, its page and its claim
// live under the prefix, as every page of waitroom's does.
func handoffThroughProxy(t *testing.T, p *apptest.Proxied) {
	p.SetPaused(true)
	prefix := apptest.GatewayPrefix
	laptop := p.SessionCookie()
	if r := p.EnterAnonymously(prefix, "default", laptop); r.Status != http.StatusOK {
		t.Fatalf("entering through the proxy: %d %s", r.Status, r.Raw)
	}
	r := p.Do("POST", prefix+"/api/v1/queues/default/entries/me/handoff", "", nil, "Cookie", laptop)
	link := strings.TrimPrefix(r.Str("url"), p.Base)
	if r.Status != http.StatusOK || !strings.HasPrefix(link, prefix+"/q/default/handoff/") {
		t.Fatalf("handoff through the proxy: %d %s; want a link under %s", r.Status, r.Raw, prefix)
	}
	if page := p.Do("GET", link, "", nil); page.Status != http.StatusOK || !strings.Contains(page.Raw, `action="`+link+`"`) {
		t.Fatalf("the link's page through the proxy: %d %s", page.Status, page.Raw)
	}
	c := claimLink(t, p.Instance, link, p.SessionCookie())
	if c.Status != http.StatusSeeOther || c.Header.Get("Location") != prefix+"/q/default" {
		t.Fatalf("the claim through the proxy: %d %v", c.Status, c.Header)
	}
	if s := p.Do("GET", prefix+"/api/v1/queues/default/entries/me", "", nil, "Cookie", laptop); s.Str("status") != "MOVED" {
		t.Fatalf("the laptop through the proxy: %s, want MOVED", s.Raw)
	}
}

// handoffLink asks for a link to the place of the session cookie.
func handoffLink(t *testing.T, in *apptest.Instance, q, cookie string) string {
	t.Helper()
	r := in.Do("POST", "/api/v1/queues/"+q+"/entries/me/handoff", "", nil, "Cookie", cookie)
	if r.Status != http.StatusOK {
		t.Fatalf("handoff: %d %s", r.Status, r.Raw)
	}
	return strings.TrimPrefix(r.Str("url"), in.Base)
}

// claimLink posts the link's "Continue here" form as the page would, with
// the session cookie ("": none) and headers.
func claimLink(t *testing.T, in *apptest.Instance, path, cookie string, headers ...string) apptest.Response {
	t.Helper()
	if cookie != "" {
		headers = append(headers, "Cookie", cookie)
	}
	r, err := in.Send(noRedirects, apptest.Call{Method: "POST", Path: path, Headers: append(headers, "Origin", in.Base)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// statusOf is the session's answer.
func statusOf(in *apptest.Instance, q, cookie string) apptest.Response {
	return in.Do("GET", "/api/v1/queues/"+q+"/entries/me", "", nil, "Cookie", cookie)
}

func handoffClaimed(t *testing.T, in *apptest.Instance, q string) {
	laptop, behind := in.SessionCookie(), in.SessionCookie()
	in.EnterAnonymously("", q, laptop)
	in.EnterAnonymously("", q, behind)
	before := statusOf(in, q, laptop)
	r := in.Do("POST", "/api/v1/queues/"+q+"/entries/me/handoff", "", nil, "Cookie", laptop)
	expires, _ := time.Parse(time.RFC3339, r.Str("expiresAt"))
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Str("url"), in.Base+"/q/"+q+"/handoff/") ||
		!strings.HasPrefix(r.Str("qrSvg"), "<svg") || time.Until(expires) < 4*time.Minute || time.Until(expires) > 6*time.Minute {
		t.Fatalf("handoff: %d %s; want a link to this origin, an SVG and 5 minutes", r.Status, r.Raw)
	}
	link := strings.TrimPrefix(r.Str("url"), in.Base)
	page := in.Do("GET", link, "", nil)
	if page.Status != http.StatusOK || !strings.Contains(page.Raw, `method="post"`) || !strings.Contains(page.Raw, `action="`+link+`"`) {
		t.Fatalf("the link's page: %d %s; want the Continue here form", page.Status, page.Raw)
	}
	if s := statusOf(in, q, laptop); s.Num("position") != 1 {
		t.Fatalf("the laptop after the page was only shown: %s; want its place kept", s.Raw)
	}
	forged, err := in.Send(noRedirects, apptest.Call{Method: "POST", Path: link, Headers: []string{"Origin", "https://evil.example"}})
	if err != nil || forged.Status != http.StatusForbidden || forged.ErrorCode() != "cross_site_request" {
		t.Fatalf("a claim posted from another site: %d %s, %v; want 403", forged.Status, forged.Raw, err)
	}
	phone := in.SessionCookie()
	c := claimLink(t, in, link, phone, "Sec-Fetch-Site", "same-origin")
	if c.Status != http.StatusSeeOther || c.Header.Get("Location") != "/q/"+q {
		t.Fatalf("the claim: %d %v %s; want 303 to the waiting page", c.Status, c.Header, c.Raw)
	}
	now := statusOf(in, q, phone)
	if now.Str("status") != "WAITING" || now.Num("position") != 1 || now.Str("ticket") == "" || now.Num("position") != before.Num("position") {
		t.Fatalf("the phone after claiming: %s; want the laptop's place, %s", now.Raw, before.Raw)
	}
	if s := statusOf(in, q, laptop); s.Str("status") != "MOVED" || s.Body["position"] != nil || s.Body["pollAfterSeconds"] != nil {
		t.Fatalf("the laptop after the claim: %s; want MOVED, no position, no polling", s.Raw)
	}
	if again := claimLink(t, in, link, in.SessionCookie()); again.Status != http.StatusGone || !strings.Contains(again.Raw, `data-state="handoff-gone"`) {
		t.Fatalf("the link claimed again: %d %s; want the 410 page", again.Status, again.Raw)
	}
	// A browser with no session is given one, and the place.
	fresh := claimLink(t, in, handoffLink(t, in, q, phone), "")
	cookie := strings.Split(fresh.Header.Get("Set-Cookie"), ";")[0]
	if fresh.Status != http.StatusSeeOther || !strings.HasPrefix(cookie, "wr_session=") || statusOf(in, q, cookie).Num("position") != 1 {
		t.Fatalf("a claim by a browser with no session: %d %v", fresh.Status, fresh.Header)
	}
}

func handoffRefused(t *testing.T, in *apptest.Instance, q string) {
	holder, other := in.SessionCookie(), in.SessionCookie()
	in.EnterAnonymously("", q, holder)
	in.EnterAnonymously("", q, other)
	link := handoffLink(t, in, q, holder)
	if r := claimLink(t, in, link, other, "Accept-Language", "ko"); r.Status != http.StatusConflict ||
		!strings.Contains(r.Raw, `data-state="handoff-in_line"`) || r.Header.Get("Content-Language") != "ko" {
		t.Errorf("a claim into a session in line: %d %v %s; want the 409 page in Korean", r.Status, r.Header, r.Raw)
	}
	if r := claimLink(t, in, link, in.SessionCookie()); r.Status != http.StatusSeeOther {
		t.Errorf("the link after a refused claim: %d %s; want it still good", r.Status, r.Raw)
	}
	cases := []struct {
		what, path, auth, cookie string
		status                   int
		code                     string
	}{
		{"a signed user", "/api/v1/queues/" + q + "/entries/me/handoff", in.As("signed-1"), "", http.StatusConflict, "handoff_not_needed"},
		{"a session with no place", "/api/v1/queues/" + q + "/entries/me/handoff", "", in.SessionCookie(), http.StatusNotFound, "not_in_queue"},
		{"no identity", "/api/v1/queues/" + q + "/entries/me/handoff", "", "", http.StatusUnauthorized, "unauthenticated"},
		{"an unknown queue", "/api/v1/queues/no-such-queue/entries/me/handoff", "", holder, http.StatusNotFound, "queue_not_found"},
	}
	for _, c := range cases {
		var headers []string
		if c.cookie != "" {
			headers = []string{"Cookie", c.cookie}
		}
		if r := in.Do("POST", c.path, c.auth, nil, headers...); r.Status != c.status || r.ErrorCode() != c.code {
			t.Errorf("%s: %d %s; want %d %s", c.what, r.Status, r.Raw, c.status, c.code)
		}
	}
	for _, bad := range []string{"/q/" + q + "/handoff/not-a-code", "/q/" + q + "/handoff/" + strings.Repeat("a", 32)} {
		if r := claimLink(t, in, bad, in.SessionCookie()); r.Status != http.StatusGone {
			t.Errorf("claiming %s: %d, want 410", bad, r.Status)
		}
	}
	if r := in.Do("GET", "/q/no-such-queue/handoff/"+strings.Repeat("a", 32), "", nil); r.Status != http.StatusNotFound {
		t.Errorf("the page of a link to an unknown queue: %d, want 404", r.Status)
	}
}

// handoffNoScript: the page without JavaScript offers the handoff as a
// form button; its POST shows the link as text and as its QR code (a
// data: URL), and, once claimed, the page says MOVED.
func handoffNoScript(t *testing.T, in *apptest.Instance, q string) {
	laptop := in.SessionCookie()
	in.EnterAnonymously("", q, laptop)
	page := in.Do("GET", "/q/"+q+"/noscript?lang=en&joined=1", "", nil, "Cookie", laptop)
	action := "/q/" + q + "/noscript/handoff?lang=en"
	if page.Status != http.StatusOK || !strings.Contains(page.Raw, `id="handoff-form" method="post" action="`+strings.ReplaceAll(action, "&", "&amp;")+`"`) {
		t.Fatalf("the page without JavaScript: %d %s; want the handoff button", page.Status, page.Raw)
	}
	if r := in.Do("POST", action, "", nil, "Cookie", laptop, "Origin", "https://evil.example"); r.Status != http.StatusForbidden {
		t.Errorf("its button posted from another site: %d, want 403", r.Status)
	}
	made := in.Do("POST", action, "", nil, "Cookie", laptop, "Origin", in.Base)
	i := strings.Index(made.Raw, `value="`+in.Base+"/q/"+q+"/handoff/")
	if made.Status != http.StatusOK || i < 0 || !strings.Contains(made.Raw, `src="data:image/svg`) ||
		strings.Contains(made.Raw, `http-equiv="refresh"`) {
		t.Fatalf("the button's answer: %d %s; want the link, its QR code and no refresh", made.Status, made.Raw)
	}
	link := made.Raw[i+len(`value="`)+len(in.Base):]
	link = link[:strings.IndexByte(link, '"')]
	if c := claimLink(t, in, link, in.SessionCookie()); c.Status != http.StatusSeeOther {
		t.Fatalf("claiming the link shown without JavaScript: %d %s", c.Status, c.Raw)
	}
	if after := in.Do("GET", "/q/"+q+"/noscript?lang=en&joined=1", "", nil, "Cookie", laptop); !strings.Contains(after.Raw, `data-state="moved"`) {
		t.Fatalf("the laptop's page without JavaScript after the claim: %s; want MOVED", after.Raw)
	}
}
