// Package web owns waitroom's pages: the waiting room people stare at on
// sale night (GET / and GET /q/{queue}, and its twin that works without
// JavaScript) and the operators' admin page (GET /admin). Both are plain
// HTML, CSS and JavaScript embedded in the binary — no build step, no CDN,
// no request leaves the origin — and talk to the JSON API of package
// httpapi like any other client.
//
// The waiting page is a Go html/template: the built-in one, or the
// operator's own from --page-dir (a whole directory, with per-queue
// templates and static files), each placing waitroom's blocks — the live
// status, the head's scripts, the language switch — where it likes
// (templates.go, docs/page.md). Every template is parsed, checked and tried
// in every language when the site is built, so a broken one stops the
// start, naming its file and line.
//
// The server picks the language (languages.go) from ?lang= or else
// Accept-Language and writes it into the page together with that
// language's texts, so the page needs no second request and tests can
// choose the language with a header.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
)

//go:embed static templates messages
var files embed.FS

// contentSecurityPolicy allows the page nothing beyond its own origin: its
// scripts, styles and fonts are files under /static/ or the operator's
// /assets/custom/, it only fetches the API. With a human-check provider
// (Options.HumanCheckOrigin) the provider's origin alone is added, in
// script-src (its widget's script) and frame-src (the widget's iframe):
// the widget talks to its provider from that iframe, so connect-src gains
// nothing.
func contentSecurityPolicy(humanCheckOrigin string) string {
	script, frame := "'self'", ""
	if humanCheckOrigin != "" {
		script += " " + humanCheckOrigin
		frame = "frame-src " + humanCheckOrigin + "; "
	}
	return "default-src 'none'; script-src " + script + "; " + frame + "style-src 'self'; font-src 'self'; " +
		"img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}

// Options says where the pages live, what they are for and whose they are.
type Options struct {
	// Base is the path the pages and the API are served under: "" for
	// `waitroom serve`, the --prefix (/_waitroom) in gateway mode.
	Base string
	// Gateway: the page lets the user back into the shop once admitted (to
	// the ?return= path it was sent from) instead of offering the built-in
	// order form.
	Gateway bool
	// Dir is the operator's page directory (--page-dir): waiting.html,
	// queues/{queue}/waiting.html, templates/{phase template}/waiting.html
	// and assets/ (docs/page.md). Empty: the built-in page for every queue.
	Dir string
	// HumanCheckOrigin is the human-check provider's widget origin
	// (scheme://host[:port]), which the waiting page's
	// Content-Security-Policy allows, and no other page's ("": no
	// provider, nothing more allowed).
	HumanCheckOrigin string
	// SignInOrigin is the admin page's identity provider's origin (issue
	// 56, --admin-oidc-issuer's): the page offers its sign-in, a link (a
	// top-level navigation, which the page's Content-Security-Policy does
	// not restrict, unlike a form's redirects) ("": no sign-in, bearer
	// tokens only).
	SignInOrigin string
}

// Site serves the pages; built once by New, read-only afterwards.
type Site struct {
	o      Options
	page   *catalog // the waiting page's languages and texts
	admin  *catalog // the admin page's
	pages  *pageSet
	adminT *template.Template
	// handoffT is a handoff link's "Continue here" page (handoff.go).
	handoffT *template.Template
	static   http.Handler
	// version is a hash of the static files: it busts caches on change.
	version string
	statics map[string]bool
	custom  *assetSet // the operator's assets; empty without Dir
	mux     *http.ServeMux
	// csp is the waiting page's Content-Security-Policy, the provider's
	// widget allowed; plainCSP every other page's (admin, no script),
	// which shows no widget and so trusts no other origin.
	csp, plainCSP string
}

// New builds the site: the texts, the static files and every template,
// each checked (templates.go). An error names the file and line at fault.
func New(o Options) (*Site, error) {
	s := &Site{o: o, statics: map[string]bool{}, csp: contentSecurityPolicy(o.HumanCheckOrigin),
		plainCSP: contentSecurityPolicy("")}
	var err error
	if s.page, err = loadCatalog(files, "messages/page", pageCodes); err != nil {
		return nil, err
	}
	if s.admin, err = loadCatalog(files, "messages/admin", adminCodes); err != nil {
		return nil, err
	}
	if err := s.loadStatic(); err != nil {
		return nil, err
	}
	if s.custom, err = loadAssets(o.Dir); err != nil {
		return nil, err
	}
	if s.pages, err = s.loadPages(o.Dir); err != nil {
		return nil, err
	}
	s.adminT, err = template.New("admin.html").Funcs(s.funcs()).ParseFS(files,
		"templates/admin.html", "templates/layout.html", "templates/blocks.html")
	if err != nil {
		return nil, err
	}
	if s.handoffT, err = s.parseHandoff(); err != nil {
		return nil, err
	}

	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.serveWaiting)
	m.HandleFunc("GET /q/{queue}", s.serveWaiting)
	m.HandleFunc("GET /admin", s.serveAdmin)
	m.Handle("GET /static/", s.static)
	m.HandleFunc("GET /assets/custom/{path...}", s.custom.serve)
	s.mux = m
	return s, nil
}

// adminCodes are the admin page's languages: operators read English or
// Korean.
var adminCodes = []string{"en", "ko"}

// ServeHTTP serves the admin page, the static files, the operator's assets
// and, for a request that comes without a Visit (tests, a page without the
// API), the waiting page. httpapi calls Waiting itself.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Site) loadStatic() error {
	static, err := fs.Sub(files, "static")
	if err != nil {
		return err
	}
	h := sha256.New()
	err = fs.WalkDir(static, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, path)
		h.Write([]byte(path))
		h.Write(b)
		s.statics[path] = true
		return err
	})
	if err != nil {
		return err
	}
	s.version = hex.EncodeToString(h.Sum(nil))[:12]
	s.static = http.StripPrefix("/static/", s.cacheStatic(http.FileServerFS(static)))
	return nil
}

// funcs are the functions every template may call (docs/page.md).
func (s *Site) funcs() template.FuncMap {
	return template.FuncMap{
		// static names one of waitroom's own files (/static/), with the
		// version that lets browsers keep it.
		"static": func(name string) (string, error) {
			if !s.statics[name] {
				return "", fmt.Errorf("static %q: waitroom has no such file", name)
			}
			return s.o.Base + "/static/" + name + "?v=" + s.version, nil
		},
		// asset names one of the operator's files (DIR/assets/), likewise.
		"asset": func(name string) (string, error) { return s.custom.url(s.o.Base, name) },
	}
}

// cacheStatic lets browsers keep a file for a year when it is asked for by
// the current version (the page always asks that way); anything else is
// revalidated, so a stale URL never pins an old file.
func (s *Site) cacheStatic(next http.Handler) http.Handler {
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

// ChooseLanguage is the waiting page's language for r (its code: "en",
// "zh-Hant").
func (s *Site) ChooseLanguage(r *http.Request) string { return s.page.choose(r).Code }

// Visit is one request for the waiting page: which queue, what its
// operator says, and, for the page that works without JavaScript, where
// the visitor stands.
type Visit struct {
	Queue string
	// Message is the operator's message for the page's language ("": none).
	Message func(lang string) string
	// Template names the page template of the queue's phase in force
	// (--page-dir's templates/{name}/waiting.html; "", or one the
	// directory lacks: the queue's own).
	Template string
	// NoScript, when set, renders the page that works without JavaScript
	// for this standing.
	NoScript *Standing
	// Codes: a lane of the queue in force takes access codes, so the page
	// offers a field to type one (issue 53).
	Codes bool
}

// pageData is what a waiting-page template sees (docs/page.md).
type pageData struct {
	// Lang is the page's language (a BCP 47 tag) and Dir its direction:
	// <html lang="{{.Lang}}" dir="{{.Dir}}">.
	Lang, Dir string
	// T holds the texts of Lang, by key; the blocks print them, and the
	// page's script reads them all from a JSON block.
	T map[string]string
	// Queue is the queue's name.
	Queue string
	// Languages is the language switch: every language, its name in
	// itself, the URL of this page in it, the current one marked.
	Languages []link
	// Message is the operator's message in Lang as the page was served.
	Message string
	// Base, Mode and NoScriptURL are for waitroom's blocks.
	Base, Mode, NoScriptURL string
	NoScript                *noScriptView
	// Codes, when the queue takes access codes, is the page's code form
	// (waitroom.status; the script shows it where a code can help).
	Codes *codeForm
	// PageLanguages are the waiting page's languages (the admin page's
	// message fields).
	PageLanguages []pageLanguage
	// Handoff is a handoff link's page (handoff.go; nil on every other).
	Handoff *handoffView
	// SignIn: the admin page offers sign-in through the shop's identity
	// provider.
	SignIn bool
}

// pageLanguage is a language as the admin page's script reads it.
type pageLanguage struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

// serveWaiting serves GET / and /q/{queue} without the API's knowledge.
func (s *Site) serveWaiting(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	if q == "" {
		q = "default"
	}
	s.Waiting(w, r, Visit{Queue: q})
}

// Waiting serves the waiting page of v.Queue (its own template, or the
// site's), or the page without JavaScript when v.NoScript is set.
func (s *Site) Waiting(w http.ResponseWriter, r *http.Request, v Visit) {
	lang := s.page.choose(r)
	d := s.pageData(r, lang, v)
	status := http.StatusOK
	if v.NoScript != nil {
		switch v.NoScript.State {
		case NotFound:
			status = http.StatusNotFound
		case Unsupported:
			status = http.StatusForbidden
		case Trouble:
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", fmt.Sprint(seconds(v.NoScript.PollAfter)))
		}
	}
	csp := s.csp
	if v.NoScript != nil {
		csp = s.plainCSP
	}
	s.render(w, s.pages.forVisit(v), "", d, lang, status, csp)
}

func (s *Site) pageData(r *http.Request, lang Language, v Visit) pageData {
	d := pageData{
		Lang: lang.Code, Dir: lang.Dir(), T: s.page.texts[lang.Code], Queue: v.Queue,
		Languages: s.page.links(r, s.o.Base, lang),
		Base:      s.o.Base, Mode: "shop",
		NoScriptURL: s.noScriptURL(v.Queue, lang.Code, r.URL.Query().Get("return"), false),
	}
	if s.o.Gateway {
		d.Mode = "gateway"
	}
	if v.Message != nil {
		d.Message = v.Message(lang.Code)
	}
	if v.NoScript != nil {
		d.NoScript = s.noScriptView(r, lang, v)
	} else if v.Codes {
		d.Codes = &codeForm{Action: s.codeAction(v.Queue, lang.Code, r.URL.Query().Get("return"))}
	}
	return d
}

// codeForm is a form that posts an access code (accessCode, in the body:
// a code is never put in a URL, which access logs, history and Referer
// keep) to Action, the page without JavaScript; Refused says why the last
// code posted was turned down ("": it was not).
type codeForm struct {
	Action, Refused string
}

// codeAction is where a code form posts: the page without JavaScript,
// which enters with the code and answers with where the visitor then
// stands (a POST is an entry, so no joined=1).
func (s *Site) codeAction(queue, lang, ret string) string {
	return s.noScriptURL(queue, lang, ret, false)
}

// noScriptURL is the page without JavaScript for the queue; joined says
// the visitor is in line (a refresh that finds them out of it says so
// rather than enter again).
func (s *Site) noScriptURL(queue, lang, ret string, joined bool) string {
	q := url.Values{"lang": {lang}}
	if ret != "" {
		q.Set("return", ret)
	}
	if joined {
		q.Set("joined", "1")
	}
	return s.o.Base + "/q/" + url.PathEscape(queue) + "/noscript?" + q.Encode()
}

// serveAdmin serves the admin page.
func (s *Site) serveAdmin(w http.ResponseWriter, r *http.Request) {
	lang := s.admin.choose(r)
	d := pageData{Lang: lang.Code, Dir: lang.Dir(), T: s.admin.texts[lang.Code],
		Languages: s.admin.links(r, s.o.Base, lang), Base: s.o.Base, Mode: "shop", SignIn: s.o.SignInOrigin != ""}
	for _, l := range s.page.langs {
		d.PageLanguages = append(d.PageLanguages, pageLanguage{Code: l.Code, Name: l.Name})
	}
	if s.o.Gateway {
		d.Mode = "gateway"
	}
	s.render(w, s.adminT, "layout", d, lang, http.StatusOK, s.plainCSP)
}

// render runs the template (its named one, or itself) into a buffer first,
// so that a failure is a clean 500 rather than half a page.
func (s *Site) render(w http.ResponseWriter, t *template.Template, name string, d pageData, lang Language, status int, csp string) {
	var buf bytes.Buffer
	var err error
	if name != "" {
		err = t.ExecuteTemplate(&buf, name, d)
	} else {
		err = t.Execute(&buf, d)
	}
	if err != nil {
		// Every template ran in every language at start (check): this is
		// a bug, not the operator's.
		http.Error(w, "page template: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Language", lang.Code)
	h.Set("Vary", "Accept-Language")
	// The page carries live state and may set a session cookie: never cache it.
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
