package repolint_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/adminsso/ssotest"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// runOpenAPISignIn drives the admin page's sign-in routes (issue 56): off
// on k's instance, and a whole round trip on an instance of its own signed
// in through a stand-in provider (ssotest; the browser tests use Hydra).
func runOpenAPISignIn(t *testing.T, k *oaChecker, b apptest.Backend) {
	for _, c := range []struct{ method, path string }{
		{"GET", "/admin/sso/login"}, {"GET", "/admin/sso/callback"}, {"GET", "/admin/sso/session"}, {"POST", "/admin/sso/logout"},
	} {
		k.call(t, oaCase{method: c.method, path: c.path, status: 404, code: "sign_in_off"})
	}
	op := ssotest.Start(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(ssotest.ClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := apptest.Boot(t, b, func(c *app.Config) {
		c.AdminOIDC = app.AdminOIDC{Issuer: op.URL, ClientID: ssotest.ClientID, ClientSecretFile: secret, RolesClaim: "groups"}
	})
	s := &oaChecker{c: k.c, in: in, hit: k.hit}
	op.Next(ssotest.Person{Subject: "u-ops", Email: "ops@shop.example", EmailVerified: true, Groups: []string{"operator"}})
	r := s.call(t, oaCase{method: "GET", path: "/admin/sso/login", status: 303})
	state := r.Header.Get("Set-Cookie")
	res, err := apptest.NoRedirects.Get(r.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	back, _ := url.Parse(res.Header.Get("Location"))
	r = s.call(t, oaCase{method: "GET", path: "/admin/sso/callback?" + back.RawQuery, cookie: strings.Split(state, ";")[0], status: 303})
	var session string
	for _, c := range r.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "waitroom_admin=") {
			session = strings.Split(c, ";")[0]
		}
	}
	if r.Header.Get("Location") != "/admin" || session == "" {
		t.Fatalf("the callback went to %q with cookies %q", r.Header.Get("Location"), r.Header.Values("Set-Cookie"))
	}
	s.call(t, oaCase{method: "GET", path: "/admin/sso/callback?state=x&code=y", status: 303}) // no state cookie: back, told why
	me := s.call(t, oaCase{method: "GET", path: "/admin/sso/session", cookie: session, status: 200})
	if me.Str("role") != "operator" || me.Str("email") != "ops@shop.example" {
		t.Errorf("the session: %s", me.Raw)
	}
	s.call(t, oaCase{method: "GET", path: "/admin/sso/session", status: 401, code: "signed_out"})
	s.call(t, oaCase{method: "GET", path: "/admin/v1/queues", cookie: session, status: http.StatusOK})
	s.call(t, oaCase{method: "POST", path: "/admin/sso/logout", cookie: session, status: 403, code: "csrf_required"})
	s.call(t, oaCase{method: "POST", path: "/admin/sso/logout", cookie: session, headers: []string{"X-Waitroom-CSRF", me.Str("csrf")}, status: 204})
	s.call(t, oaCase{method: "POST", path: "/admin/sso/logout", cookie: session, headers: []string{"X-Waitroom-CSRF", me.Str("csrf")}, status: 401, code: "signed_out"})
	s.call(t, oaCase{method: "GET", path: "/admin/sso/session", cookie: session, status: 401, code: "signed_out"})
}
