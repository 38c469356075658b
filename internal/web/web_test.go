package web_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/web"
)

func TestChooseLanguage(t *testing.T) {
	tests := []struct {
		name, query, acceptLanguage, want string
	}{
		{"nothing asked", "", "", "en"},
		{"Korean", "", "ko", "ko"},
		{"Korean with region", "", "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7", "ko"},
		{"English first", "", "en-US,en;q=0.9,ko;q=0.8", "en"},
		{"higher q wins over order", "", "en;q=0.5, ko;q=0.9", "ko"},
		{"equal q: the earlier one", "", "ko;q=0.8,en;q=0.8", "ko"},
		{"unsupported only", "", "fr-FR,de;q=0.9", "en"},
		{"unsupported first", "", "ja,ko;q=0.5", "ko"},
		{"q=0 means not this", "", "ko;q=0,fr", "en"},
		{"bad q ignored", "", "ko;q=abc,en;q=0.1", "en"},
		{"case", "", "KO-kr", "ko"},
		{"query overrides", "lang=en", "ko-KR", "en"},
		{"query Korean", "lang=ko", "en", "ko"},
		{"unsupported query ignored", "lang=fr", "ko", "ko"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/?"+tt.query, nil)
			if tt.acceptLanguage != "" {
				r.Header.Set("Accept-Language", tt.acceptLanguage)
			}
			if got := web.ChooseLanguage(r); got != tt.want {
				t.Errorf("ChooseLanguage(?%s, %q) = %q, want %q", tt.query, tt.acceptLanguage, got, tt.want)
			}
		})
	}
}

// get asks h for path with an Accept-Language header.
func get(t *testing.T, h http.Handler, path, acceptLanguage string) (*http.Response, string) {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	if acceptLanguage != "" {
		r.Header.Set("Accept-Language", acceptLanguage)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var (
	langAttr     = regexp.MustCompile(`<html lang="([a-z]+)"[^>]*>`)
	messagesJSON = regexp.MustCompile(`(?s)<script id="messages" type="application/json">(.*?)</script>`)
	assetRef     = regexp.MustCompile(`(?:src|href)="(/static/[^"]+)"`)
)

func TestPages(t *testing.T) {
	h := web.Handler(web.Options{})
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
			if m := langAttr.FindStringSubmatch(body); m == nil || m[1] != tt.wantLang {
				t.Errorf("<html lang> = %v, want %q", m, tt.wantLang)
			}
			if !strings.Contains(body, tt.wantText) {
				t.Errorf("page lacks %q", tt.wantText)
			}
			if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
				t.Errorf("page refers to another origin")
			}
			m := messagesJSON.FindStringSubmatch(body)
			if m == nil {
				t.Fatal("no messages block")
			}
			var msgs map[string]string
			if err := json.Unmarshal([]byte(m[1]), &msgs); err != nil {
				t.Fatalf("messages block is not JSON: %v", err)
			}
			if msgs["languageName"] != map[string]string{"en": "English", "ko": "한국어"}[tt.wantLang] {
				t.Errorf("messages are not in %s: languageName %q", tt.wantLang, msgs["languageName"])
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
				if strings.Contains(ref[1], ".js?") {
					scripts = append(scripts, ref[1])
				}
			}
			if len(scripts) != 1 || !strings.Contains(scripts[0], "/"+tt.wantScript+"?v=") {
				t.Errorf("scripts %v, want only %s", scripts, tt.wantScript)
			}
		})
	}
}

func TestLanguageSwitchKeepsTheQuery(t *testing.T) {
	_, body := get(t, web.Handler(web.Options{}), "/q/spring-drop?product=tee", "en")
	want := `<a class="lang-switch" href="/q/spring-drop?lang=ko&amp;product=tee" lang="ko" hreflang="ko">한국어</a>`
	if !strings.Contains(body, want) {
		t.Errorf("page lacks the language switch %s", want)
	}
}

func TestStatic(t *testing.T) {
	h := web.Handler(web.Options{})
	tests := []struct {
		path        string
		status      int
		contentType string
		cache       string
	}{
		{"/static/waiting.js", 200, "text/javascript; charset=utf-8", "no-cache"},
		{"/static/admin.js", 200, "text/javascript; charset=utf-8", "no-cache"},
		{"/static/waitroom.css", 200, "text/css; charset=utf-8", "no-cache"},
		{"/static/favicon.svg", 200, "image/svg+xml", "no-cache"},
		{"/static/waiting.js?v=old", 200, "text/javascript; charset=utf-8", "no-cache"},
		{"/static/", 404, "", ""},
		{"/static/nope.js", 404, "", ""},
		{"/static/web.go", 404, "", ""},           // only static/ is served,
		{"/static/waiting.html", 404, "", ""},     // not the templates,
		{"/static/messages/en.json", 404, "", ""}, // nor the texts' files
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

// TestMessages checks that both languages have the same texts and that
// every text the templates and scripts ask for exists.
func TestMessages(t *testing.T) {
	load := func(lang string) map[string]string {
		b, err := os.ReadFile(filepath.Join("messages", lang+".json"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		return m
	}
	en, ko := load("en"), load("ko")
	// The settings' names, help and choices are English in the settings
	// table (queue.Settings, served to the admin page), and only there;
	// every other language translates all of them, in its own file.
	settingTexts := map[string]bool{}
	for _, set := range queue.Settings {
		if set.ReadOnly {
			continue
		}
		name := strings.ToUpper(set.Name[:1]) + set.Name[1:]
		settingTexts["setting"+name], settingTexts["settingHelp"+name] = true, true
		for _, c := range set.Choices {
			settingTexts["setting"+name+strings.ToUpper(c[:1])+c[1:]] = true
		}
	}
	for k := range settingTexts {
		if _, ok := en[k]; ok {
			t.Errorf("messages/en.json has %q: English names and explains the settings in queue.Settings alone", k)
		}
		if _, ok := ko[k]; !ok {
			t.Errorf("messages/ko.json lacks %q, the Korean of a setting's text", k)
		}
	}
	koPage := maps.Clone(ko)
	maps.DeleteFunc(koPage, func(k, _ string) bool { return settingTexts[k] })
	if diff := cmp.Diff(slices.Sorted(maps.Keys(en)), slices.Sorted(maps.Keys(koPage))); diff != "" {
		t.Errorf("en and ko differ in keys (-en +ko):\n%s", diff)
	}
	for k, v := range ko {
		// A placeholder missing in one language would print "{n}" to people.
		if a, b := placeholders(en[k]), placeholders(v); !slices.Equal(a, b) {
			t.Errorf("%s: placeholders en %v, ko %v", k, a, b)
		}
	}

	used := map[string][]string{}
	uses := []struct {
		glob string
		re   *regexp.Regexp
	}{
		{"templates/*.html", regexp.MustCompile(`\.T\.([A-Za-z]+)`)},
		{"static/*.js", regexp.MustCompile(`\bt\('([A-Za-z]+)'`)},
		{"static/*.js", regexp.MustCompile(`\bM\.([A-Za-z]+)`)},
		{"static/*.js", regexp.MustCompile(`\bsay\('([A-Za-z]+)'`)},
		{"static/*.js", regexp.MustCompile(`\bsignOut\('([A-Za-z]+)'`)},
	}
	for _, u := range uses {
		files, _ := filepath.Glob(u.glob)
		for _, f := range files {
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
	for k, files := range used {
		if _, ok := en[k]; !ok {
			t.Errorf("%v use text %q, which messages/en.json lacks", slices.Compact(files), k)
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
	h := web.Handler(web.Options{Base: "/_waitroom", Gateway: true})
	res, body := get(t, h, "/q/default?return=%2Fcheckout", "en")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	for _, want := range []string{`data-base="/_waitroom"`, `data-mode="gateway"`, `src="/_waitroom/static/waiting.js?v=`,
		`href="/_waitroom/static/waitroom.css?v=`, `href="/_waitroom/q/default?lang=ko&amp;return=%2Fcheckout"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	_, plain := get(t, web.Handler(web.Options{}), "/", "en")
	if !strings.Contains(plain, `data-mode="shop"`) || strings.Contains(plain, "/_waitroom") {
		t.Errorf("serve's page should be at the root in shop mode")
	}
}
