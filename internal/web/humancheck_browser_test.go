package web_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/humancheck/localprovider"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestBrowserHumanCheck: under entry turnstile, against the local stand-in
// provider (package localprovider: a widget and siteverify as Turnstile
// documents them, not Turnstile), the page loads the widget's script only
// when the line asks for the check, shows the widget, and enters with the
// token it hands out: a good token takes a place (WAITING); a spent one
// (the provider's timeout-or-duplicate) has the page ask again, saying
// why, and the next good one takes a place; a forged one makes a suspect,
// refused here (the queue's suspects: refuse) with 403 suspected_bot.
func TestBrowserHumanCheck(t *testing.T) {
	browser := apptest.StartBrowser(t)
	p := localprovider.New(localprovider.Options{Secret: "local-secret", SiteKey: "local-site-key"})
	provider := httptest.NewServer(p)
	t.Cleanup(provider.Close)
	secret := filepath.Join(t.TempDir(), "human-check-secret")
	if err := os.WriteFile(secret, []byte("local-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) {
		c.HumanCheckSecretFile, c.HumanCheckSiteKey = secret, "local-site-key"
		c.HumanCheckVerifyURL = provider.URL + localprovider.VerifyPath
		c.HumanCheckScriptURL = provider.URL + localprovider.ScriptPath
	})
	for _, q := range []string{"human", "human-too"} {
		in.PutQueue(q, map[string]any{"paused": true, "entry": "turnstile", "suspects": "refuse"})
	}

	// The page of a line that asks for no check loads no provider's script.
	in.PutQueue("open", map[string]any{"paused": true, "entry": "any"})
	plain := apptest.NewVisitor(t, browser, in, "en")
	plain.Open("/q/open")
	plain.WaitState("waiting", apptest.JoinWithin)
	var scripts int
	plain.MustEval(`document.querySelectorAll('script[src^="`+provider.URL+`"]').length`, &scripts)
	if scripts != 0 {
		t.Errorf("a line without the check loaded the provider's script")
	}

	csp := in.Do("GET", "/q/human", "", nil).Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self' " + provider.URL + ";", "frame-src " + provider.URL + ";", "connect-src 'self';"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}

	t.Run("a good token takes a place", func(t *testing.T) {
		v := apptest.NewVisitor(t, browser, in, "en")
		v.Open("/q/human")
		v.WaitState("humancheck", apptest.JoinWithin)
		// The card with the widget in it, as a screen reader meets it.
		if found, err := axeRun(v, testenv.Axe(t)); err != nil || len(found) > 0 {
			t.Errorf("axe-core on the human check: %v %v", found, err)
		}
		tick(t, v)
		v.WaitState("waiting", apptest.JoinWithin)
		wantCodes(t, v, "403 human_check_required", "200 WAITING")
		var rec struct{ Loads, Renders, Tokens int }
		v.MustEval(`window.__humanCheck`, &rec)
		if rec.Loads != 1 || rec.Renders != 1 || rec.Tokens != 1 {
			t.Errorf("human check record %+v, want the script loaded once, the widget shown once, one token", rec)
		}
	})

	t.Run("a spent token is refused and the page asks again", func(t *testing.T) {
		// The widget hands out the token the first visitor spent, in
		// another line: the store has not seen it there, the provider
		// answers timeout-or-duplicate.
		p.SetWidget(localprovider.Replayed)
		asked := p.Asked()
		v := apptest.NewVisitor(t, browser, in, "ko")
		v.Open("/q/human-too")
		tick(t, v)
		v.WaitUntil("asked again", `!document.getElementById('humancheck-again').hidden && window.__polls.length === 2`, apptest.JoinWithin)
		if got, want := v.Text("#humancheck-again"), pageTexts(t, "ko")["humanCheckAgain"]; got != want {
			t.Errorf("the page said %q, want %q", got, want)
		}
		if p.Asked() != asked+1 {
			t.Errorf("the provider was asked %d times, want once", p.Asked()-asked)
		}
		p.SetWidget(localprovider.Honest)
		tick(t, v)
		v.WaitState("waiting", apptest.JoinWithin)
		wantCodes(t, v, "403 human_check_required", "403 human_check_required", "200 WAITING")
	})

	t.Run("a forged token makes a suspect", func(t *testing.T) {
		p.SetWidget(localprovider.Forged)
		defer p.SetWidget(localprovider.Honest)
		v := apptest.NewVisitor(t, browser, in, "en")
		v.Open("/q/human")
		tick(t, v)
		v.WaitState("unsupported", apptest.JoinWithin)
		wantCodes(t, v, "403 human_check_required", "403 suspected_bot")
	})

	if st := in.Do("GET", "/admin/v1/queues/human", in.AdminAuth(), nil); st.Num("length") != 1 {
		t.Errorf("line human holds %v places, want the one good token's", st.Num("length"))
	}
}

// tick waits for the widget to be shown and ready, and ticks its box: a
// click of the mouse where it is, inside the provider's iframe.
func tick(t *testing.T, v *apptest.Visitor) {
	t.Helper()
	v.WaitState("humancheck", apptest.JoinWithin)
	v.WaitUntil("the widget ready", `document.querySelector('#human-check-widget iframe[data-ready]')`, apptest.JoinWithin)
	var at struct{ X, Y float64 }
	v.MustEval(`(() => { const r = document.querySelector('#human-check-widget iframe').getBoundingClientRect(); return {x: r.left + 40, y: r.top + 25}; })()`, &at)
	if err := chromedp.Do(v.Ctx, chromedp.MouseClickXY(at.X, at.Y)); err != nil {
		t.Fatalf("clicking the widget: %v", err)
	}
}

// wantCodes checks the page's requests to the line: each answer's status
// and its error code or state.
func wantCodes(t *testing.T, v *apptest.Visitor, want ...string) {
	t.Helper()
	var polls []struct {
		Status      int
		Code, State string
	}
	v.MustEval(`window.__polls`, &polls)
	var got []string
	for _, p := range polls {
		got = append(got, strings.TrimSpace(strings.Join([]string{strconv.Itoa(p.Status), p.Code + p.State}, " ")))
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("the page's requests were answered %v, want %v", got, want)
	}
}
