package web_test

// Signing in to the admin page through a real OpenID Connect provider
// (issue 56): Ory Hydra, which scripts/test.sh builds and starts, with the
// test's own login and consent screens (hydratest). The page's own script
// does the round trip in Chromium: sign in as a person whose groups make
// them an operator, see the queues, change what an operator may, be
// refused a change above the role in the page's words, sign out, and find
// the session gone from the server's store.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/adminsso"
	"github.com/waitroom/waitroom/internal/adminsso/hydratest"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/testenv"
)

func TestBrowserSignInThroughHydra(t *testing.T) {
	browser := apptest.StartBrowser(t)
	axe := testenv.Axe(t)
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			signInAsOperator(t, browser, b, axe)
		})
	}
}

// audit fails the test on the accessibility audit's findings (the page
// with sign-in is not among TestAccessibility's states).
func audit(t *testing.T, op *apptest.Visitor, axe, state string) {
	t.Helper()
	found, err := axeRun(op, axe)
	if err != nil {
		t.Fatalf("%s: %v", state, err)
	}
	if len(found) > 0 {
		t.Errorf("admin page, %s: %d violations:\n  %s", state, len(found), strings.Join(found, "\n  "))
	}
}

func signInAsOperator(t *testing.T, browser context.Context, b apptest.Backend, axe string) {
	who := hydratest.Person{Subject: "op-" + strings.ReplaceAll(b.Name, "+", "-"), Email: "night-ops@shop.example",
		Groups: []string{"everyone", "operator"}}
	client := hydratest.NewClient(t, who)
	secret := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secret, []byte(client.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := apptest.Boot(t, b, func(c *app.Config) {
		c.AdminOIDC = app.AdminOIDC{Issuer: client.Issuer, ClientID: client.ID, ClientSecretFile: secret, RolesClaim: "groups"}
	})
	client.AllowRedirect(t, in.Base+"/admin/sso/callback")
	const q = "sso-sale"
	in.PutQueue(q, map[string]any{"paused": true, "capacity": 500})

	op := apptest.NewVisitor(t, browser, in, "en")
	op.Open("/admin")
	op.WaitUntil("the sign-in button", `document.getElementById('sso-sign-in')?.offsetParent`, 10*time.Second)
	audit(t, op, axe, "sign-in with the provider's link")
	op.Click("#sso-sign-in")
	card := `[data-queue="` + q + `"]`
	op.WaitUntil("the dashboard after the round trip through Hydra", `!document.getElementById('dash').hidden && document.querySelector('`+card+`')`, 30*time.Second)
	if got := op.Text("#who"); got != "night-ops@shop.example · operator" {
		t.Errorf("who is signed in: %q", got)
	}
	session := sessionCookie(t, op, in.Base)
	op.Click(card + " .settings summary")
	audit(t, op, axe, "signed in as an operator, the settings open (those above the role disabled)")

	// An operator's lever: the page's change carries the session's CSRF
	// value, and the server takes it.
	op.Click(card + " .pause-button") // Resume
	op.WaitUntil("the badge to say Admitting", `document.querySelector('`+card+` .badge').textContent === 'Admitting'`, 10*time.Second)

	// Capacity needs the admin role: its field is disabled, saying so; a
	// page that sends it anyway (one built before the role changed) is
	// refused by the server, 403 forbidden_role, in the page's words.
	capacity := card + ` .settings-form [name="capacity"]`
	var state struct {
		Disabled bool   `json:"disabled"`
		Title    string `json:"title"`
	}
	op.MustEval(`(e => ({disabled: e.disabled, title: e.title}))(document.querySelector('`+capacity+`'))`, &state)
	if !state.Disabled || state.Title != "Needs the admin role" {
		t.Errorf("the capacity field for an operator: %+v, want disabled, titled Needs the admin role", state)
	}
	op.MustEval(`(e => { e.disabled = false; e.value = '900'; e.dispatchEvent(new Event('input', {bubbles: true})); return true; })(document.querySelector('`+capacity+`'))`, nil)
	op.MustEval(`document.querySelector('`+card+` .settings-form').requestSubmit(), true`, nil)
	const refused = "Your role (operator) may not change “Capacity”. Ask someone with the admin role."
	op.WaitUntil("the refusal in the page's words", `document.querySelector('`+card+` .qmessage').textContent === `+apptest.JSString(refused), 10*time.Second)
	if r := in.Do("GET", "/admin/v1/queues/"+q, in.AdminAuth(), nil); r.Num("capacity") != 500 {
		t.Errorf("capacity after the refused change: %s", r.Raw)
	}

	refusedInThePagesWords(t, op, in, card, session)

	// Sign out: the session is gone from the store, so even the cookie's
	// value, sent again, names nobody.
	op.Click("#sign-out")
	op.WaitUntil("the sign-in form again", `!document.getElementById('login').hidden && document.getElementById('dash').hidden`, 10*time.Second)
	r := in.Do("GET", "/admin/sso/session", "", nil, "Cookie", adminsso.SessionCookie+"="+session)
	if r.Status != 401 || r.ErrorCode() != "signed_out" {
		t.Errorf("the session after sign-out: %d %s, want 401 signed_out", r.Status, r.Raw)
	}
	if r := in.Do("GET", "/admin/v1/queues", "", nil, "Cookie", adminsso.SessionCookie+"="+session); r.Status != 401 {
		t.Errorf("the admin API with the signed-out session's cookie: %d %s, want 401", r.Status, r.Raw)
	}
	auditNamesThePerson(t, in, q, session)
}

// auditNamesThePerson: the audit log names the signed-in person (by their
// verified e-mail) for the resume they made and the capacity refused, and
// their session's cookie is nowhere in it, nor in /metrics.
func auditNamesThePerson(t *testing.T, in *apptest.Instance, q, session string) {
	t.Helper()
	r := in.Do("GET", "/admin/v1/audit?queue="+q, in.AdminAuth(), nil)
	var log struct{ Entries []staff.Entry }
	if err := json.Unmarshal([]byte(r.Raw), &log); r.Status != 200 || err != nil {
		t.Fatalf("GET /admin/v1/audit: %d %s (%v)", r.Status, r.Raw, err)
	}
	var resumed, refused bool
	for _, e := range log.Entries {
		if e.Actor.Kind != staff.KindSignIn || e.Actor.Email != "night-ops@shop.example" || e.Actor.Role != staff.Operator {
			continue
		}
		switch {
		case e.Outcome == staff.Done && len(e.Changes) == 1 && e.Changes[0].Field == "paused" && e.Changes[0].Before == true && e.Changes[0].After == false:
			resumed = true
		case e.Outcome == staff.Refused && strings.Contains(e.Detail, "capacity"):
			refused = true
		}
	}
	if !resumed || !refused {
		t.Errorf("the audit log of %s: resumed by the person %v, their capacity refused %v:\n%s", q, resumed, refused, r.Raw)
	}
	if strings.Contains(r.Raw, session) || strings.Contains(r.Raw, staff.HashToken(session)) {
		t.Error("the session's cookie (or its hash) is in the audit log")
	}
	if m := in.Do("GET", "/metrics", "", nil); strings.Contains(m.Raw, session) {
		t.Error("the session's cookie is in /metrics")
	}
}

// withFetch makes the page's fetch answer a request to a path ending in
// suffix with fake (a Response expression), or send it without the CSRF
// header when fake is "", until the page is loaded again.
func withFetch(op *apptest.Visitor, suffix, fake string) {
	if fake == "" {
		fake = `real(url, {...init, headers: Object.fromEntries(Object.entries(init.headers || {}).filter(([k]) => k !== 'X-Waitroom-CSRF'))})`
	}
	op.MustEval(`(() => { const real = window.__realFetch || window.fetch; window.__realFetch = real;
		window.fetch = (url, init) => String(url).endsWith(`+apptest.JSString(suffix)+`) ? `+fake+` : real(url, init); return true; })()`, nil)
}

// refusedInThePagesWords: a sign-out the server does not take (503, or
// 403 csrf_required) leaves the person signed in, saying so, the session
// alive; a change refused for its CSRF value says why, not that the
// admin API is off, and a reload picks the session up again.
func refusedInThePagesWords(t *testing.T, op *apptest.Visitor, in *apptest.Instance, card, session string) {
	t.Helper()
	withFetch(op, "/admin/sso/logout", `Promise.resolve(new Response('{"error":{"code":"unavailable","message":"the store does not answer"}}', {status: 503, headers: {'Content-Type': 'application/json'}}))`)
	for _, c := range []struct{ name, fake, said string }{
		{"503", "", "Sign-out failed (the store does not answer). You are still signed in: try again."},
		{"403 csrf_required", "strip", "Sign-out failed (this page's sign-in no longer matches your session; reload the page). You are still signed in: try again."},
	} {
		if c.fake == "strip" {
			withFetch(op, "/admin/sso/logout", "")
		}
		op.Click("#sign-out")
		op.WaitUntil("sign-out answered "+c.name+" in the page's words", `document.getElementById('sign-out-error').textContent === `+apptest.JSString(c.said)+
			` && !document.getElementById('sign-out-error').hidden && !document.getElementById('dash').hidden`, 10*time.Second)
		if r := in.Do("GET", "/admin/sso/session", "", nil, "Cookie", adminsso.SessionCookie+"="+session); r.Status != 200 {
			t.Errorf("the session after a sign-out answered %s: %d %s, want it alive", c.name, r.Status, r.Raw)
		}
	}
	withFetch(op, "/admin/v1/queues/sso-sale", "")
	op.Click(card + " .pause-button")
	const stale = "The change was refused: this page's sign-in no longer matches your session (did you sign in again in another tab?). Reload the page or sign in again."
	op.WaitUntil("a change without its CSRF value in the page's words", `document.getElementById('login-error').textContent === `+apptest.JSString(stale), 10*time.Second)
	op.Open("/admin")
	op.WaitUntil("the dashboard again after a reload", `!document.getElementById('dash').hidden && document.querySelector('`+card+`')`, 10*time.Second)
}

// sessionCookie is the session cookie the browser holds for the admin
// page (its value), checked for the attributes the sign-in promises.
func sessionCookie(t *testing.T, op *apptest.Visitor, base string) string {
	t.Helper()
	got, err := chromedp.Call(op.Ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/admin"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Cookies {
		if c.Name != adminsso.SessionCookie {
			continue
		}
		if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != "/admin" {
			t.Errorf("session cookie: HttpOnly %v, SameSite %q, Path %q; want HttpOnly, Strict, /admin", c.HTTPOnly, c.SameSite, c.Path)
		}
		return c.Value
	}
	t.Fatalf("no %s cookie after the round trip: %d cookies", adminsso.SessionCookie, len(got.Cookies))
	return ""
}
