// Package web owns waitroom's two pages: the waiting room people stare at
// on sale night (GET / and GET /q/{queue}) and the operators' admin page
// (GET /admin). Both are plain HTML, CSS and JavaScript embedded in the
// binary — no build step, no CDN, no request leaves the origin — and talk
// to the JSON API of package httpapi like any other client.
//
// The server picks the language (English or Korean) from ?lang= or else
// Accept-Language and writes it into the page together with that
// language's texts, so the page needs no second request and tests can
// choose the language with a header.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

//go:embed static templates messages
var files embed.FS

// Languages are the page languages, the first being the fallback.
var Languages = []string{"en", "ko"}

// contentSecurityPolicy allows the page nothing beyond its own origin: its
// scripts and styles are files under /static/, it only fetches the API.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// site is what Handler serves; built once, read-only afterwards.
type site struct {
	waiting, admin *template.Template
	messages       map[string]map[string]string // lang → key → text
	static         http.Handler
	version        string // hash of the static files, busts caches on change
	opts           Options
}

// Options says where the pages live and what they are for.
type Options struct {
	// Base is the path the pages and the API are served under: "" for
	// `waitroom serve`, the --prefix (/_waitroom) in gateway mode.
	Base string
	// Gateway: the page lets the user back into the shop once admitted (to
	// the ?return= path it was sent from) instead of offering the built-in
	// order form.
	Gateway bool
}

// Handler serves the waiting page for GET / and GET /q/{queue} (the page
// reads the queue name from the path; / is queue "default"), the admin page
// for GET /admin, and the pages' files under /static/, all below o.Base as
// the browser sees them. It sets no cookie and checks no identity: httpapi
// does that before it calls the page.
func Handler(o Options) http.Handler {
	s, err := newSite(o)
	if err != nil {
		// The files are embedded and covered by tests: a failure here is a
		// broken build, not a runtime condition.
		panic("web: " + err.Error())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page(s.waiting))
	mux.HandleFunc("GET /q/{queue}", s.page(s.waiting))
	mux.HandleFunc("GET /admin", s.page(s.admin))
	mux.Handle("GET /static/", s.static)
	return mux
}

func newSite(o Options) (*site, error) {
	s := &site{messages: map[string]map[string]string{}, opts: o}
	for _, lang := range Languages {
		raw, err := files.ReadFile("messages/" + lang + ".json")
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("messages/%s.json: %w", lang, err)
		}
		s.messages[lang] = m
	}

	static, err := fs.Sub(files, "static")
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	err = fs.WalkDir(static, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.version = hex.EncodeToString(h.Sum(nil))[:12]
	s.static = http.StripPrefix("/static/", s.cacheStatic(http.FileServerFS(static)))

	funcs := template.FuncMap{
		// asset names a static file with the version that lets browsers keep it.
		"asset": func(name string) string { return o.Base + "/static/" + name + "?v=" + s.version },
	}
	for _, p := range []struct {
		t    **template.Template
		file string
	}{{&s.waiting, "waiting.html"}, {&s.admin, "admin.html"}} {
		t, err := template.New(p.file).Funcs(funcs).ParseFS(files, "templates/"+p.file, "templates/layout.html")
		if err != nil {
			return nil, err
		}
		*p.t = t
	}
	return s, nil
}

// cacheStatic lets browsers keep a file for a year when it is asked for by
// the current version (the page always asks that way); anything else is
// revalidated, so a stale URL never pins an old file.
func (s *site) cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "" {
			http.NotFound(w, r) // no directory listings
			return
		}
		if r.URL.Query().Get("v") == s.version {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// pageData is what the templates see.
type pageData struct {
	Lang string
	// T holds the texts of Lang; the templates print some, and the page's
	// script reads them all from a JSON block.
	T map[string]string
	// OtherLang and OtherLangURL are the language switch: the same page in
	// the other language, keeping the rest of the query (?product=…).
	OtherLang, OtherLangName, OtherLangURL string
	// Base and Mode tell the page's script where the API is and what to do
	// once admitted ("shop": the order form; "gateway": back to ?return=).
	Base, Mode string
}

func (s *site) page(t *template.Template) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		lang := ChooseLanguage(r)
		other := Languages[0]
		if lang == other {
			other = Languages[1]
		}
		q := r.URL.Query()
		q.Set("lang", other)
		d := pageData{
			Lang: lang, T: s.messages[lang],
			OtherLang: other, OtherLangName: s.messages[other]["languageName"],
			OtherLangURL: (&url.URL{Path: s.opts.Base + r.URL.Path, RawQuery: q.Encode()}).String(),
			Base:         s.opts.Base, Mode: "shop",
		}
		if s.opts.Gateway {
			d.Mode = "gateway"
		}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, "layout", d); err != nil {
			http.Error(w, "page template: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Language", lang)
		h.Set("Vary", "Accept-Language")
		// The page carries live state and may set a session cookie: never cache it.
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		w.Write(buf.Bytes())
	}
}

// ChooseLanguage picks the page language: ?lang= when it names one of
// Languages, else the Accept-Language entry with the highest q that does
// (by primary subtag: "ko-KR" is Korean), else English.
func ChooseLanguage(r *http.Request) string {
	if l := strings.ToLower(r.URL.Query().Get("lang")); supported(l) {
		return l
	}
	best, bestQ := Languages[0], 0.0
	for part := range strings.SplitSeq(r.Header.Get("Accept-Language"), ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		// Strictly greater: among equal q the earlier entry wins, as the
		// header's order is the user's order of preference.
		if supported(primary) && q > bestQ {
			best, bestQ = primary, q
		}
	}
	return best
}

func supported(lang string) bool {
	for _, l := range Languages {
		if l == lang {
			return true
		}
	}
	return false
}
