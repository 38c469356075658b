package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/language"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/web"
)

// newSite builds a site or fails the test.
func newSite(t *testing.T, o web.Options) *web.Site {
	t.Helper()
	s, err := web.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// get asks h for path with an Accept-Language header.
func get(t *testing.T, h http.Handler, path, acceptLanguage string) (*http.Response, string) {
	t.Helper()
	return getWith(t, h, path, map[string]string{"Accept-Language": acceptLanguage})
}

func getWith(t *testing.T, h http.Handler, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for k, v := range header {
		if v != "" {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var (
	htmlAttrs    = regexp.MustCompile(`<html lang="([A-Za-z-]+)" dir="(ltr|rtl)"[^>]*>`)
	messagesJSON = regexp.MustCompile(`(?s)<script id="(?:waitroom-texts|messages)" type="application/json">(.*?)</script>`)
	assetRef     = regexp.MustCompile(`(?:src|href)="(/(?:static|assets/custom)/[^"]+)"`)
)

func TestPages(t *testing.T) {
	h := newSite(t, web.Options{})
	tests := []struct {
		path, acceptLanguage, wantLang, wantText, wantScript string
	}{
		{"/", "", "en", "You&#39;re in line", "waiting.js"},
		{"/", "ko-KR,ko;q=0.9", "ko", "대기 중입니다", "waiting.js"},
		{"/q/spring-drop", "en", "en", "Place order", "waiting.js"},
		{"/q/spring-drop?lang=ko&product=tee", "en", "ko", "주문하기", "waiting.js"},
		{"/admin", "", "en", "Admin token", "admin.js"},
		{"/admin", "ko", "ko", "관리자 토큰", "admin.js"},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.acceptLanguage, func(t *testing.T) {
			res, body := get(t, h, tt.path, tt.acceptLanguage)
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			for k, want := range map[string]string{
				"Content-Type":     "text/html; charset=utf-8",
				"Content-Language": tt.wantLang,
				"Vary":             "Accept-Language",
				"Cache-Control":    "no-store",
			} {
				if got := res.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			// Nothing but the page's own origin: no CDN, no inline script.
			csp := res.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if m := htmlAttrs.FindStringSubmatch(body); m == nil || m[1] != tt.wantLang || m[2] != "ltr" {
				t.Errorf("<html lang dir> = %v, want %q ltr", m, tt.wantLang)
			}
			if !strings.Contains(body, tt.wantText) {
				t.Errorf("page lacks %q", tt.wantText)
			}
			if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
				t.Errorf("page refers to another origin")
			}
			m := messagesJSON.FindStringSubmatch(body)
			if m == nil {
				t.Fatal("no texts block")
			}
			var msgs map[string]string
			if err := json.Unmarshal([]byte(m[1]), &msgs); err != nil {
				t.Fatalf("texts block is not JSON: %v", err)
			}
			if msgs["languageName"] != map[string]string{"en": "English", "ko": "한국어"}[tt.wantLang] {
				t.Errorf("texts are not in %s: languageName %q", tt.wantLang, msgs["languageName"])
			}

			// Every file the page names is served, and may be kept.
			refs := assetRef.FindAllStringSubmatch(body, -1)
			var scripts []string
			for _, ref := range refs {
				res, _ := get(t, h, ref[1], "")
				if res.StatusCode != 200 {
					t.Errorf("%s: status %d", ref[1], res.StatusCode)
				}
				if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
					t.Errorf("%s: Cache-Control %q, want immutable (the URL carries the version)", ref[1], cc)
				}
				// handoff.js (issue 55) comes with waiting.js, its own file
				// beside it: counted apart.
				if strings.Contains(ref[1], ".js?") && !strings.Contains(ref[1], "challenge-worker") && !strings.Contains(ref[1], "/handoff.js?") {
					scripts = append(scripts, ref[1])
				}
			}
			if len(scripts) != 1 || !strings.Contains(scripts[0], "/"+tt.wantScript+"?v=") {
				t.Errorf("scripts %v, want only %s", scripts, tt.wantScript)
			}
			if handoff := strings.Contains(body, "/static/handoff.js?v="); handoff != (tt.wantScript == "waiting.js") {
				t.Errorf("handoff.js named: %v, want it beside waiting.js only", handoff)
			}
		})
	}
}

// The language switch lists every language, each by its own name, linking
// to the same page (query kept) in it.
func TestLanguageSwitch(t *testing.T) {
	s := newSite(t, web.Options{})
	_, body := get(t, s, "/q/spring-drop?product=tee", "en")
	for _, want := range []string{
		`<a href="/q/spring-drop?lang=ko&amp;product=tee" lang="ko" hreflang="ko">한국어</a>`,
		`<a href="/q/spring-drop?lang=en&amp;product=tee" lang="en" hreflang="en" aria-current="true">English</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks the language switch's %s", want)
		}
	}
	links := regexp.MustCompile(`<a href="[^"]*" lang="([^"]+)" hreflang="[^"]+"`).FindAllStringSubmatch(body, -1)
	var codes []string
	for _, l := range links {
		codes = append(codes, l[1])
	}
	if diff := cmp.Diff(web.PageLanguages(), codes); diff != "" {
		t.Errorf("the switch lists (-languages +switch):\n%s", diff)
	}
}

func TestStatic(t *testing.T) {
	h := newSite(t, web.Options{})
	tests := []struct {
		path        string
		status      int
		contentType string
		cache       string
	}{
		{"/static/waiting.js", 200, "text/javascript; charset=utf-8", "no-cache"},
		{"/static/admin.js", 200, "text/javascript; charset=utf-8", "no-cache"},
		{"/static/waitroom.css", 200, "text/css; charset=utf-8", "no-cache"},
		{"/static/status.css", 200, "text/css; charset=utf-8", "no-cache"},
		{"/static/favicon.svg", 200, "image/svg+xml", "no-cache"},
		{"/static/waiting.js?v=old", 200, "text/javascript; charset=utf-8", "no-cache"},
		{"/static/", 404, "", ""},
		{"/static/nope.js", 404, "", ""},
		{"/static/web.go", 404, "", ""},                // only static/ is served,
		{"/static/waiting.html", 404, "", ""},          // not the templates,
		{"/static/messages/page/en.json", 404, "", ""}, // nor the texts' files
		{"/assets/custom/brand.css", 404, "", ""},      // no --page-dir: no assets
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res, _ := get(t, h, tt.path, "")
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.status != 200 {
				return
			}
			if got := res.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type %q, want %q", got, tt.contentType)
			}
			if got := res.Header.Get("Cache-Control"); got != tt.cache {
				t.Errorf("Cache-Control %q, want %q", got, tt.cache)
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", got)
			}
		})
	}
}

// loadTexts reads messages/{dir}/{code}.json.
func loadTexts(t *testing.T, dir, code string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("messages", dir, code+".json"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s/%s: %v", dir, code, err)
	}
	return m
}

// TestTexts checks that every language has every text, with the same
// placeholders, and a plural text in every plural form its language uses
// (Arabic has six); and that every text the templates and scripts ask for
// exists.
func TestTexts(t *testing.T) {
	// The settings' names and choices are English in the settings table
	// (queue.Settings, served to the admin page), and only there; every
	// other admin language translates them, in its own file. What each
	// setting does is a text here in every language, English included
	// (settingHelp<Name>, served by the admin API as well).
	settingTexts := map[string]bool{}
	for _, set := range queue.Settings {
		name := strings.ToUpper(set.Name[:1]) + set.Name[1:]
		if web.SettingHelp(set.Name) == "" {
			t.Errorf("messages/admin/en.json lacks settingHelp%s: what %s does", name, set.Name)
		}
		if set.ReadOnly {
			continue
		}
		settingTexts["setting"+name] = true
		for _, c := range set.Choices {
			settingTexts["setting"+name+strings.ToUpper(c[:1])+c[1:]] = true
		}
	}
	for _, set := range []struct {
		dir   string
		codes []string
	}{{"page", web.PageLanguages()}, {"admin", web.AdminLanguages()}} {
		t.Run(set.dir, func(t *testing.T) {
			en := loadTexts(t, set.dir, "en")
			// The keys every language must have: plural texts by their base.
			want := map[string]string{} // key or plural base → English text
			for k, v := range en {
				if settingTexts[k] {
					t.Errorf("messages/%s/en.json has %q: English names the settings in queue.Settings alone", set.dir, k)
				}
				if base, _, ok := strings.Cut(k, "."); ok {
					want[base+".*"] = v
				} else {
					want[k] = v
				}
			}
			if set.dir == "admin" {
				for k := range settingTexts {
					want[k] = "" // every other language translates it
				}
			}
			for _, code := range set.codes {
				texts := loadTexts(t, set.dir, code)
				forms := web.PluralFormsNeeded(language.MustParse(code))
				got := map[string]bool{}
				for k, v := range texts {
					if strings.TrimSpace(v) == "" && k != "positionUnit" {
						t.Errorf("%s: %s is empty", code, k)
					}
					base, form, plural := strings.Cut(k, ".")
					if plural {
						got[base+".*"] = true
						// Intl's newer plural data may use a form x/text's does
						// not (many, for a million in Spanish): any of CLDR's.
						if !slices.Contains([]string{"zero", "one", "two", "few", "many", "other"}, form) {
							t.Errorf("%s: %s: %q is not a plural form", code, k, form)
						}
					} else {
						got[k] = true
					}
					// A placeholder missing in one language would print
					// "{n}" to people.
					if en, ok := want[k]; ok && !plural {
						if a, b := placeholders(en), placeholders(v); !slices.Equal(a, b) {
							t.Errorf("%s: %s: placeholders en %v, %s %v", code, k, a, code, b)
						}
					}
				}
				for k := range want {
					if !got[k] && !(code == "en" && settingTexts[k]) {
						t.Errorf("%s lacks %s", code, k)
					}
				}
				for k := range got {
					if _, ok := want[k]; !ok {
						t.Errorf("%s has %s, which English does not", code, k)
					}
				}
				for base := range want {
					b, ok := strings.CutSuffix(base, ".*")
					if !ok {
						continue
					}
					for _, f := range forms {
						if _, ok := texts[b+"."+f]; !ok {
							t.Errorf("%s: %s lacks the plural form %q", code, b, f)
						}
					}
				}
			}
		})
	}

	used := map[string][]string{} // key → where, by text set
	uses := []struct {
		glob string
		re   *regexp.Regexp
	}{
		{"templates/*.html", regexp.MustCompile(`\.T\.([A-Za-z]+)`)},
		{"static/*.js", regexp.MustCompile(`\bt\('([A-Za-z]+)'`)},
		{"static/*.js", regexp.MustCompile(`\btn\('([A-Za-z]+)'`)},
		{"static/*.js", regexp.MustCompile(`\bM\.([A-Za-z]+)`)},
		{"static/*.js", regexp.MustCompile(`\bsay\('([A-Za-z]+)'`)},
		{"static/*.js", regexp.MustCompile(`\bsignOut\('([A-Za-z]+)'`)},
		{"*.go", regexp.MustCompile(`\bt\("([A-Za-z]+)"`)},
		{"*.go", regexp.MustCompile(`pluralKey\([^,]+, "([A-Za-z]+)"`)},
	}
	for _, u := range uses {
		files, _ := filepath.Glob(u.glob)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range u.re.FindAllStringSubmatch(string(b), -1) {
				used[m[1]] = append(used[m[1]], f)
			}
		}
	}
	if len(used) < 40 {
		t.Fatalf("found only %d texts in use: the patterns no longer match the code", len(used))
	}
	page, admin := loadTexts(t, "page", "en"), loadTexts(t, "admin", "en")
	for k, files := range used {
		_, inPage := page[k]
		_, inAdmin := admin[k]
		_, pluralPage := page[k+".other"]
		if !inPage && !inAdmin && !pluralPage {
			t.Errorf("%v use text %q, which no messages/*/en.json has", slices.Compact(files), k)
		}
	}
}

var placeholder = regexp.MustCompile(`\{[a-z]+\}`)

func placeholders(s string) []string {
	p := placeholder.FindAllString(s, -1)
	slices.Sort(p)
	return p
}

// In gateway mode the page lives under the prefix and says so to its
// script, and its files are asked for there.
func TestGatewayPage(t *testing.T) {
	h := newSite(t, web.Options{Base: "/_waitroom", Gateway: true})
	res, body := get(t, h, "/q/default?return=%2Fcheckout", "en")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	for _, want := range []string{`data-base="/_waitroom"`, `data-mode="gateway"`, `src="/_waitroom/static/waiting.js?v=`,
		`href="/_waitroom/static/waitroom.css?v=`, `href="/_waitroom/q/default?lang=ko&amp;return=%2Fcheckout"`,
		`url=/_waitroom/q/default/noscript?lang=en&amp;return=%2Fcheckout`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	_, plain := get(t, newSite(t, web.Options{}), "/", "en")
	if !strings.Contains(plain, `data-mode="shop"`) || strings.Contains(plain, "/_waitroom") {
		t.Errorf("serve's page should be at the root in shop mode")
	}
}
