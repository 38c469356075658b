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
// and nothing more without a provider.
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
			res, _ := get(t, newSite(t, web.Options{HumanCheckOrigin: tc.origin}), "/q/sale", "en")
			csp := res.Header.Get("Content-Security-Policy")
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
