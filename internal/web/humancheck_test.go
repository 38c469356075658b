package web_test

import (
	"html"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/web"
)

// The page's Content-Security-Policy allows the human-check provider's
// origin, and only it, where its widget needs it (its script, its iframe),
// and nothing more without a provider. The pages that cannot show the
// widget (admin, the page without JavaScript) never allow it.
func TestHumanCheckContentSecurityPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, origin string
		want, absent []string
	}{
		{"no provider", "", []string{"script-src 'self';", "connect-src 'self';"}, []string{"frame-src", "challenges"}},
		{"Turnstile", "https://challenges.cloudflare.com",
			[]string{"script-src 'self' https://challenges.cloudflare.com;", "frame-src https://challenges.cloudflare.com;", "connect-src 'self';", "default-src 'none'"},
			[]string{"connect-src 'self' https"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := newSite(t, web.Options{HumanCheckOrigin: tc.origin})
			res, _ := get(t, site, "/q/sale", "en")
			csp := res.Header.Get("Content-Security-Policy")
			admin, _ := get(t, site, "/admin", "en")
			noScript := httptest.NewRecorder()
			site.Waiting(noScript, httptest.NewRequest("GET", "/q/sale/noscript?lang=en", nil),
				web.Visit{Queue: "sale", NoScript: &web.Standing{State: web.HumanCheck}})
			for name, other := range map[string]string{"admin": admin.Header.Get("Content-Security-Policy"),
				"no script": noScript.Header().Get("Content-Security-Policy")} {
				if other == "" || strings.Contains(other, "frame-src") || strings.Contains(other, "challenges") {
					t.Errorf("the %s page's policy %q allows the widget it cannot show", name, other)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(csp, w) {
					t.Errorf("%q lacks %q", csp, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(csp, a) {
					t.Errorf("%q has %q", csp, a)
				}
			}
		})
	}
}

// Without JavaScript the page cannot show the provider's widget, and says
// so, in every language.
func TestNoScriptHumanCheck(t *testing.T) {
	s := newSite(t, web.Options{})
	for _, lang := range web.PageLanguages() {
		w := httptest.NewRecorder()
		s.Waiting(w, httptest.NewRequest("GET", "/q/sale/noscript?lang="+lang, nil),
			web.Visit{Queue: "sale", NoScript: &web.Standing{State: web.HumanCheck}})
		page, texts := w.Body.String(), pageTexts(t, lang)
		if w.Code != 200 || !strings.Contains(page, `data-state="humancheck"`) ||
			!strings.Contains(page, html.EscapeString(texts["noscriptHumanCheckHeading"])) || !strings.Contains(page, html.EscapeString(texts["noscriptHumanCheckText"])) {
			t.Errorf("%s: %d, %.600s", lang, w.Code, page)
		}
	}
}
