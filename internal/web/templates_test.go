package web_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/web"
)

// exampleDir is the repository's example of a shop's own page (a brand of
// its own, a per-queue template, assets), which docs/page.md describes.
const exampleDir = "../../examples/page"

func TestExampleTemplate(t *testing.T) {
	for _, base := range []string{"", "/_waitroom"} {
		t.Run("base "+base, func(t *testing.T) {
			s := newSite(t, web.Options{Dir: exampleDir, Base: base, Gateway: base != ""})
			res, body := get(t, s, "/q/spring-drop?lang=ko", "")
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			for _, want := range []string{
				`<title>Maru Goods · 대기실</title>`, `<p class="kicker"><span lang="en" dir="ltr">Spring drop · spring-drop</span></p>`,
				`href="` + base + `/assets/custom/brand.css?v=`, // the shop's files, versioned
				`id="waitroom"`, `src="` + base + `/static/waiting.js?v=`, // waitroom's blocks
				`lang="zh-Hant"`, // the language switch lists every language
				`<html lang="ko" dir="ltr">`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("the example page lacks %s", want)
				}
			}
			if strings.Contains(body, "waitroom.css") {
				t.Errorf("the example page uses waitroom's look")
			}

			// A queue with a template of its own gets it; others the site's.
			_, vip := get(t, s, "/q/vip", "en")
			if !strings.Contains(vip, `Members' early access`) || !strings.Contains(vip, `data-queue="vip"`) {
				t.Errorf("/q/vip is not the members' page: %.300s", vip)
			}
			_, def := get(t, s, "/", "en")
			if strings.Contains(def, "Members") || !strings.Contains(def, "Maru Goods") {
				t.Errorf("/ is not the site's page")
			}

			// The shop's files: versioned URLs kept a year, others
			// revalidated by ETag.
			ref := regexp.MustCompile(`href="(` + regexp.QuoteMeta(base) + `/assets/custom/brand\.css\?v=[0-9a-f]+)"`).FindStringSubmatch(body)
			if ref == nil {
				t.Fatal("no versioned brand.css link")
			}
			path := strings.TrimPrefix(ref[1], base) // the site is below the prefix
			res, css := get(t, s, path, "")
			if res.StatusCode != 200 || !strings.Contains(css, "--paper") {
				t.Fatalf("%s: %d %.80s", path, res.StatusCode, css)
			}
			etag := res.Header.Get("ETag")
			for k, want := range map[string]string{
				"Cache-Control": "public, max-age=31536000, immutable", "Content-Type": "text/css; charset=utf-8",
				"X-Content-Type-Options": "nosniff",
			} {
				if got := res.Header.Get(k); got != want {
					t.Errorf("%s: %s %q, want %q", path, k, got, want)
				}
			}
			if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
				t.Errorf("ETag %q", etag)
			}
			res, _ = get(t, s, "/assets/custom/brand.css", "")
			if got := res.Header.Get("Cache-Control"); got != "public, no-cache" || res.Header.Get("ETag") != etag {
				t.Errorf("unversioned: Cache-Control %q, ETag %q", got, res.Header.Get("ETag"))
			}
			res, _ = getWith(t, s, "/assets/custom/brand.css", map[string]string{"If-None-Match": etag})
			if res.StatusCode != 304 {
				t.Errorf("If-None-Match the ETag: %d, want 304", res.StatusCode)
			}
			res, _ = get(t, s, "/assets/custom/logo.svg", "")
			if res.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "sandbox") {
				t.Errorf("logo.svg: %q, CSP %q", res.Header.Get("Content-Type"), res.Header.Get("Content-Security-Policy"))
			}
			for _, p := range []string{"/assets/custom/nope.css", "/assets/custom/", "/assets/custom/../waiting.html"} {
				if res, _ := get(t, s, p, ""); res.StatusCode == 200 {
					t.Errorf("%s: served", p)
				}
			}
		})
	}
}

// pageDir writes files (path → content) into a new directory.
func pageDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// good is a minimal page that works.
const good = `<!doctype html>
<html lang="{{.Lang}}" dir="{{.Dir}}">
<head>
<title>Shop</title>
{{template "waitroom.head" .}}
</head>
<body>
{{template "waitroom.status" .}}
</body>
</html>
`

// A template waitroom cannot serve stops the start, naming the file and
// the line.
func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string // a regexp the error matches; FILE stands for the file
		file  string
	}{
		{"syntax error", map[string]string{"waiting.html": strings.Replace(good, "<title>Shop</title>", "<title>{{if .Lang}}Shop</title>", 1)},
			`FILE:\d+: unexpected EOF`, "waiting.html"},
		{"unknown function", map[string]string{"waiting.html": strings.Replace(good, "<title>Shop</title>", "<title>{{shout .Queue}}</title>", 1)},
			`FILE:4: function "shout" not defined`, "waiting.html"},
		{"no status block", map[string]string{"waiting.html": strings.Replace(good, `{{template "waitroom.status" .}}`, "", 1)},
			`FILE:9: the page never places \{\{template "waitroom.status" \.\}\}; put it inside <body>`, "waiting.html"},
		{"no head block", map[string]string{"waiting.html": strings.Replace(good, `{{template "waitroom.head" .}}`, "", 1)},
			`FILE:6: the page never places \{\{template "waitroom.head" \.\}\}`, "waiting.html"},
		{"takes a block's name", map[string]string{"waiting.html": good + `{{define "waitroom.status"}}mine{{end}}`},
			`FILE:11:\d+: defines "waitroom.status"`, "waiting.html"},
		{"a field that does not exist", map[string]string{"waiting.html": strings.Replace(good, "<title>Shop</title>", "\n<title>{{.Shop}}</title>", 1)},
			`FILE:5:\d+: executing .* can't evaluate field Shop`, "waiting.html"},
		{"an asset that is not there", map[string]string{"waiting.html": strings.Replace(good, "<title>Shop</title>", `<link rel="stylesheet" href="{{asset "shop.css"}}">`, 1)},
			`FILE:4:\d+: executing .*asset "shop.css": no such file in .*assets`, "waiting.html"},
		{"no lang on <html>", map[string]string{"waiting.html": strings.Replace(good, `<html lang="{{.Lang}}" dir="{{.Dir}}">`, `<html lang="en">`, 1)},
			`FILE:2: <html> must carry lang="\{\{\.Lang\}\}" dir="\{\{\.Dir\}\}"`, "waiting.html"},
		{"a queue's template is checked the same way", map[string]string{"waiting.html": good,
			"queues/vip/waiting.html": strings.Replace(good, `{{template "waitroom.status" .}}`, "", 1)},
			`FILE:9: the page never places \{\{template "waitroom.status" \.\}\}`, "queues/vip/waiting.html"},
		{"a queue's folder without a template", map[string]string{"waiting.html": good, "queues/vip/page.html": good},
			`FILE: missing`, "queues/vip/waiting.html"},
		{"a folder that is no queue's", map[string]string{"queues/no way/waiting.html": good},
			`FILE: "no way" is not a queue name`, "queues/no way"},
		{"a folder that is no phase template's", map[string]string{"waiting.html": good, "templates/Members/waiting.html": good},
			`FILE: "Members" is not a phase's template name`, "templates/Members"},
		{"nothing to serve", map[string]string{"assets/logo.svg": "<svg/>"},
			`FILE: neither waiting.html nor queues/\{queue\}/waiting.html`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := pageDir(t, tt.files)
			file := filepath.Join(dir, tt.file)
			if tt.file == "" {
				file = dir
			}
			want := regexp.MustCompile(strings.ReplaceAll(tt.want, "FILE", regexp.QuoteMeta(file)))
			_, err := web.New(web.Options{Dir: dir})
			if err == nil || !want.MatchString(err.Error()) {
				t.Errorf("error %v\nwant one matching %s", err, want)
			}
			// `waitroom page check` says the same.
			var out strings.Builder
			if err := web.Check(dir, &out); err == nil || !want.MatchString(err.Error()) {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

// The built-in page passes the checks an operator's does, trial runs
// included (New leaves those out for it: every start would pay for them).
func TestBuiltinTemplate(t *testing.T) {
	if err := web.CheckBuiltin(); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	var out strings.Builder
	if err := web.Check(exampleDir, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{exampleDir + ": ok", filepath.Join(exampleDir, "waiting.html"),
		filepath.Join(exampleDir, "queues", "vip", "waiting.html"), "2 assets"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check says %q, lacking %q", out.String(), want)
		}
	}
	// A template-only directory: the queues' own, the built-in for the rest.
	dir := pageDir(t, map[string]string{"queues/vip/waiting.html": good})
	s := newSite(t, web.Options{Dir: dir})
	if _, body := get(t, s, "/", "en"); !strings.Contains(body, "waitroom.css") {
		t.Errorf("/ is not the built-in page")
	}
	if _, body := get(t, s, "/q/vip", "en"); !strings.Contains(body, "<title>Shop</title>") {
		t.Errorf("/q/vip is not its own page")
	}
}

// TestPhaseTemplate: a visit during a phase with a page template of its
// own gets templates/{name}/waiting.html; a template the directory lacks
// gets the queue's page.
func TestPhaseTemplate(t *testing.T) {
	dir := pageDir(t, map[string]string{"waiting.html": good,
		"templates/members/waiting.html": strings.Replace(good, "<title>Shop</title>", "<title>Members</title>", 1)})
	s := newSite(t, web.Options{Dir: dir})
	for template, title := range map[string]string{"members": "<title>Members</title>", "": "<title>Shop</title>", "gone": "<title>Shop</title>"} {
		w := httptest.NewRecorder()
		s.Waiting(w, httptest.NewRequest("GET", "/q/sale", nil), web.Visit{Queue: "sale", Template: template})
		if !strings.Contains(w.Body.String(), title) {
			t.Errorf("template %q: the page lacks %s", template, title)
		}
	}
}
