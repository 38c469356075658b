package adminsso_test

import (
	"cmp"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/adminsso"
	"github.com/waitroom/waitroom/internal/adminsso/ssotest"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/staff"
)

type rig struct {
	t     *testing.T
	op    *ssotest.Provider
	store *memstore.Store
	sso   *adminsso.SignIn
	mu    sync.Mutex
	now   time.Time
}

func newRig(t *testing.T) *rig {
	x := &rig{t: t, op: ssotest.Start(t), store: memstore.New(nil), now: time.Now()}
	var err error
	x.sso, err = adminsso.New(adminsso.Options{Issuer: x.op.URL, ClientID: ssotest.ClientID, ClientSecret: ssotest.ClientSecret,
		RoleMap: map[string]staff.Role{"shop-ops": staff.Operator}, Sessions: x.store,
		Secure: func(r *http.Request) bool { return r.TLS != nil }, Now: x.clock})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (x *rig) clock() time.Time {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.now
}

// start begins a round trip: the state cookie and the provider's URL.
func (x *rig) start(host string) (*http.Cookie, *url.URL) {
	x.t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "http://"+host+"/admin/sso/login", nil)
	r.RemoteAddr = "127.0.0.1:50000" // a browser on this machine
	x.sso.Start(w, r)
	res := w.Result()
	if res.StatusCode != http.StatusSeeOther {
		x.t.Fatalf("login answered %d", res.StatusCode)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	cs := res.Cookies()
	if len(cs) != 1 {
		return nil, loc
	}
	return cs[0], loc
}

// atProvider signs in at the provider and answers where it sends the
// browser back to.
func (x *rig) atProvider(loc *url.URL) *url.URL {
	x.t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(loc.String())
	if err != nil {
		x.t.Fatal(err)
	}
	res.Body.Close()
	back, _ := url.Parse(res.Header.Get("Location"))
	return back
}

// callback ends the round trip with state's cookie; it answers where the
// browser goes and the session cookie set, if any.
func (x *rig) callback(back *url.URL, state *http.Cookie) (string, *http.Cookie) {
	x.t.Helper()
	r := httptest.NewRequest("GET", back.String(), nil)
	if state != nil {
		r.AddCookie(state)
	}
	w := httptest.NewRecorder()
	x.sso.Callback(w, r)
	var session *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == adminsso.SessionCookie {
			session = c
		}
	}
	return w.Result().Header.Get("Location"), session
}

// signIn does the whole round trip for who.
func (x *rig) signIn(who ssotest.Person) (string, *http.Cookie) {
	x.t.Helper()
	x.op.Next(who)
	state, loc := x.start("127.0.0.1:8080")
	return x.callback(x.atProvider(loc), state)
}

var operator = ssotest.Person{Subject: "u-ana", Email: "ana@shop.example", EmailVerified: true, Groups: []string{"staff", "shop-ops", "viewer"}}

func TestCookiesHaveTheirAttributes(t *testing.T) {
	x := newRig(t)
	x.op.Next(operator)
	state, loc := x.start("127.0.0.1:8080")
	if state.Name != adminsso.StateCookie || !state.HttpOnly || state.SameSite != http.SameSiteLaxMode ||
		state.Path != "/admin/sso/callback" || state.MaxAge <= 0 || state.MaxAge > 600 || state.Secure {
		t.Errorf("state cookie %+v: want HttpOnly, SameSite=Lax, path-scoped, short-lived, not Secure over plain HTTP", state)
	}
	q := loc.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || q.Get("state") == "" ||
		q.Get("redirect_uri") != "http://127.0.0.1:8080/admin/sso/callback" || strings.Contains(loc.String(), strings.Split(state.Value, ".")[2]) {
		t.Errorf("authorization URL %s", loc)
	}
	to, session := x.callback(x.atProvider(loc), state)
	if to != "/admin" || session == nil {
		t.Fatalf("callback went to %q with session %v", to, session)
	}
	if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/admin" ||
		session.MaxAge != int(adminsso.DefaultLife.Seconds()) || session.Secure {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, /admin, 8 h", session)
	}
	// Over TLS (the one cookie rule), both are Secure.
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "https://shop.example/admin/sso/login", nil)
	x.sso.Start(w, r)
	if cs := w.Result().Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Errorf("over TLS the state cookie is %+v", cs)
	}
	if loc := w.Result().Header.Get("Location"); !strings.Contains(loc, url.QueryEscape("https://shop.example/admin/sso/callback")) {
		t.Errorf("over TLS the redirect URL is not https: %s", loc)
	}
}

func TestSignInKeepsOnlyTheHash(t *testing.T) {
	x := newRig(t)
	_, session := x.signIn(operator)
	if _, ok, _ := x.store.Session(t.Context(), session.Value); ok {
		t.Error("the store finds the session by the cookie's value")
	}
	ss, ok, err := x.store.Session(t.Context(), staff.HashToken(session.Value))
	if err != nil || !ok || ss.Role != staff.Operator || ss.Email != operator.Email || ss.Subject != operator.Subject || ss.CSRF == "" {
		t.Fatalf("kept %+v %v %v", ss, ok, err)
	}
	if !ss.Expires.Equal(x.now.Add(adminsso.DefaultLife)) {
		t.Errorf("expires %v, want 8 h from now", ss.Expires)
	}
}

func TestRoundTripMismatchesRefused(t *testing.T) {
	for _, c := range []struct {
		name, why string
		who       ssotest.Person
		tamper    func(state *http.Cookie, back *url.URL)
	}{
		{"state", "state", operator, func(_ *http.Cookie, back *url.URL) {
			q := back.Query()
			q.Set("state", "another")
			back.RawQuery = q.Encode()
		}},
		{"PKCE verifier", "provider", operator, func(state *http.Cookie, _ *url.URL) {
			p := strings.Split(state.Value, ".")
			state.Value = p[0] + "." + p[1] + "." + strings.Repeat("A", 43)
		}},
		{"nonce", "token", ssotest.Person{Subject: "u", Email: "e@x", Groups: []string{"admin"}, Nonce: "another"}, nil},
		{"audience", "token", ssotest.Person{Subject: "u", Email: "e@x", Groups: []string{"admin"}, Audience: "someone-else"}, nil},
		{"no role", "norole", ssotest.Person{Subject: "u", Email: "e@x", Groups: []string{"staff", "Admin"}}, nil},
		{"no state cookie", "expired", operator, func(state *http.Cookie, _ *url.URL) { state.Name = "other" }},
		{"denied at the provider", "denied", operator, func(_ *http.Cookie, back *url.URL) {
			q := back.Query()
			q.Set("error", "access_denied")
			back.RawQuery = q.Encode()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newRig(t)
			x.op.Next(c.who)
			state, loc := x.start("localhost:8080")
			back := x.atProvider(loc)
			if c.tamper != nil {
				c.tamper(state, back)
			}
			to, session := x.callback(back, state)
			if to != "/admin?sso="+c.why || session != nil {
				t.Errorf("went to %q with session %v, want /admin?sso=%s and none", to, session, c.why)
			}
		})
	}
}

func TestPlainHTTPOffThisMachineRefused(t *testing.T) {
	x := newRig(t)
	w := httptest.NewRecorder()
	x.sso.Start(w, httptest.NewRequest("GET", "http://shop.example/admin/sso/login", nil))
	if to := w.Result().Header.Get("Location"); to != "/admin?sso=insecure" || len(w.Result().Cookies()) != 0 {
		t.Errorf("plain HTTP to shop.example went to %q", to)
	}
	for _, host := range []string{"localhost:8080", "127.0.0.1", "[::1]:8080"} {
		if state, _ := x.start(host); state == nil {
			t.Errorf("plain HTTP to %s: no state cookie", host)
		}
	}
}

// TestPlainHTTPOnlyFromThisMachine: the plain-HTTP exception needs the
// connection itself from loopback, with no proxy on the way; a Host
// rewritten to 127.0.0.1 proves nothing.
func TestPlainHTTPOnlyFromThisMachine(t *testing.T) {
	x := newRig(t)
	for _, c := range []struct {
		name, remote string
		header       []string
	}{
		{"from the network, Host 127.0.0.1", "203.0.113.7:40000", nil},
		{"from the network, Host localhost over IPv6", "[2001:db8::7]:40000", nil},
		{"from a proxy on this machine", "127.0.0.1:40000", []string{"X-Forwarded-For", "203.0.113.7"}},
		{"from a proxy saying Forwarded", "[::1]:40000", []string{"Forwarded", "for=203.0.113.7"}},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080/admin/sso/login", nil)
		if strings.Contains(c.name, "localhost") {
			r.Host = "localhost:8080"
		}
		r.RemoteAddr = c.remote
		if c.header != nil {
			r.Header.Set(c.header[0], c.header[1])
		}
		x.sso.Start(w, r)
		if to := w.Result().Header.Get("Location"); to != "/admin?sso=insecure" || len(w.Result().Cookies()) != 0 {
			t.Errorf("%s: went to %q with cookies %v, want /admin?sso=insecure and none", c.name, to, w.Result().Cookies())
		}
	}
}

// TestBehindTrustedProxyTheCookieRuleDecides: a trusted proxy on this
// machine is in front of a network; its X-Forwarded-Proto (the cookie
// rule) decides, never its Host.
func TestBehindTrustedProxyTheCookieRuleDecides(t *testing.T) {
	op := ssotest.Start(t)
	proxies, err := clientaddr.Parse("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	sso, err := adminsso.New(adminsso.Options{Issuer: op.URL, ClientID: ssotest.ClientID, ClientSecret: ssotest.ClientSecret,
		Sessions: memstore.New(nil), Secure: proxies.HTTPS, Proxies: proxies})
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"", "http", "https"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080/admin/sso/login", nil)
		r.RemoteAddr = "127.0.0.1:40000"
		if proto != "" {
			r.Header.Set("X-Forwarded-Proto", proto)
		}
		sso.Start(w, r)
		to, cs := w.Result().Header.Get("Location"), w.Result().Cookies()
		switch {
		case proto == "https" && (len(cs) != 1 || !cs[0].Secure || strings.HasPrefix(to, "/admin")):
			t.Errorf("X-Forwarded-Proto https: went to %q with cookies %+v, want the provider and a Secure state cookie", to, cs)
		case proto != "https" && (to != "/admin?sso=insecure" || len(cs) != 0):
			t.Errorf("X-Forwarded-Proto %q: went to %q with cookies %+v, want /admin?sso=insecure", proto, to, cs)
		}
	}
}

// TestEmailOnlyWhenVerified: the audit log names a person by an e-mail
// only when the provider says it verified it; else by the subject.
func TestEmailOnlyWhenVerified(t *testing.T) {
	for _, c := range []struct {
		verified any
		email    string
	}{{true, "eve@shop.example"}, {"true", "eve@shop.example"}, {false, ""}, {"false", ""}, {nil, ""}, {1, ""}} {
		x := newRig(t)
		_, session := x.signIn(ssotest.Person{Subject: "u-eve", Email: "eve@shop.example", EmailVerified: c.verified, Groups: []string{"admin"}})
		if session == nil {
			t.Fatalf("email_verified %v: no session", c.verified)
		}
		a, ok, err := x.sso.Actor(request("GET", session, ""))
		if err != nil || !ok || a.Email != c.email {
			t.Errorf("email_verified %v: actor %+v %v %v, want e-mail %q", c.verified, a, ok, err, c.email)
		}
		if want := "oidc " + cmp.Or(c.email, "u-eve"); a.Label() != want {
			t.Errorf("email_verified %v: the audit log's label %q, want %q", c.verified, a.Label(), want)
		}
	}
}

func request(method string, session *http.Cookie, csrf string) *http.Request {
	r := httptest.NewRequest(method, "http://127.0.0.1:8080/admin/v1/queues/default", nil)
	if session != nil {
		r.AddCookie(session)
	}
	if csrf != "" {
		r.Header.Set(adminsso.CSRFHeader, csrf)
	}
	return r
}

func TestSessionActsWithItsGuard(t *testing.T) {
	x := newRig(t)
	_, session := x.signIn(operator)
	if _, ok, err := x.sso.Actor(request("GET", nil, "")); ok || err != nil {
		t.Errorf("no cookie: %v %v", ok, err)
	}
	a, ok, err := x.sso.Actor(request("GET", session, ""))
	if err != nil || !ok || a.Kind != staff.KindSignIn || a.Role != staff.Operator || a.Email != operator.Email {
		t.Fatalf("GET: %+v %v %v", a, ok, err)
	}
	ss, err := x.sso.Current(request("GET", session, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, csrf := range []string{"", "wrong", ss.CSRF + "x"} {
		if _, _, err := x.sso.Actor(request("PATCH", session, csrf)); !errors.Is(err, adminsso.ErrCSRF) {
			t.Errorf("PATCH with CSRF %q: %v, want ErrCSRF", csrf, err)
		}
	}
	if _, _, err := x.sso.Actor(request("PATCH", session, ss.CSRF)); err != nil {
		t.Errorf("PATCH with its CSRF: %v", err)
	}
	forged := &http.Cookie{Name: adminsso.SessionCookie, Value: "forged"}
	if _, ok, err := x.sso.Actor(request("GET", forged, "")); !ok || !errors.Is(err, adminsso.ErrNoSession) {
		t.Errorf("a forged cookie: %v %v", ok, err)
	}
}

func TestExpiredSessionRefused(t *testing.T) {
	x := newRig(t)
	_, session := x.signIn(operator)
	x.mu.Lock()
	x.now = x.now.Add(adminsso.DefaultLife)
	x.mu.Unlock()
	if _, ok, err := x.sso.Actor(request("GET", session, "")); !ok || !errors.Is(err, adminsso.ErrNoSession) {
		t.Errorf("after 8 h: %v %v, want ErrNoSession", ok, err)
	}
}

func TestSignOutEndsTheSessionInTheStore(t *testing.T) {
	x := newRig(t)
	_, session := x.signIn(operator)
	ss, _ := x.sso.Current(request("GET", session, ""))
	if err := x.sso.SignOut(httptest.NewRecorder(), request("POST", session, "")); !errors.Is(err, adminsso.ErrCSRF) {
		t.Fatalf("sign-out without CSRF: %v", err)
	}
	w := httptest.NewRecorder()
	if err := x.sso.SignOut(w, request("POST", session, ss.CSRF)); err != nil {
		t.Fatal(err)
	}
	if cs := w.Result().Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("sign-out's cookies %+v, want the session's removed", cs)
	}
	if _, ok, _ := x.store.Session(t.Context(), staff.HashToken(session.Value)); ok {
		t.Error("the session is still in the store")
	}
	if _, _, err := x.sso.Actor(request("GET", session, "")); !errors.Is(err, adminsso.ErrNoSession) {
		t.Errorf("the old cookie after sign-out: %v", err)
	}
}
