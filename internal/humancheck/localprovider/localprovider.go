// Package localprovider is a local stand-in for a human-check provider, for
// tests and benchmarks: it is not Cloudflare Turnstile, nor any provider,
// and checks nothing about who clicks. It speaks the protocol as Turnstile
// documents it, so that waitroom's side of it is tried for real: a widget
// script (api.js: window.turnstile.render into the page's element, an
// iframe from this origin, a checkbox whose click hands the page's
// callback a token this server minted) and a siteverify endpoint that
// checks the secret, spends each token once (timeout-or-duplicate on
// reuse), lets it lapse after 300 s and refuses tokens it never minted
// (invalid-input-response). The widget can be told to hand out forged or
// already-spent tokens (SetWidget), and a program can mint tokens without
// a browser (Mint, Forge).
package localprovider

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// The provider's paths, Turnstile's own.
const (
	ScriptPath = "/turnstile/v0/api.js"
	VerifyPath = "/turnstile/v0/siteverify"
	widgetPath = "/turnstile/v0/widget"
)

// lifetime is how long a token is good for, as Turnstile documents.
const lifetime = 300 * time.Second

// Widget is what the widget hands the page when its box is ticked.
type Widget int32

const (
	// Honest: a fresh token this server minted.
	Honest Widget = iota
	// Forged: a token this server never minted (invalid-input-response).
	Forged
	// Replayed: the last token minted, spent or not (timeout-or-duplicate
	// once spent).
	Replayed
)

// Options configures a Provider.
type Options struct {
	// Secret is what siteverify must be sent; SiteKey what the widget is
	// rendered with (it is not checked: any key renders).
	Secret, SiteKey string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Provider is the stand-in; an http.Handler.
type Provider struct {
	o      Options
	widget atomic.Int32
	asked  atomic.Int64
	mux    *http.ServeMux

	mu     sync.Mutex
	tokens map[string]*minted
	last   string
	idem   map[string][]byte // idempotency_key → the answer it got
}

// minted is one token this server handed out.
type minted struct {
	at               time.Time
	hostname, action string
	spent            bool
}

// New returns a Provider.
func New(o Options) *Provider {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Provider{o: o, tokens: map[string]*minted{}, idem: map[string][]byte{}, mux: http.NewServeMux()}
	p.mux.HandleFunc("GET "+ScriptPath, p.serveScript)
	p.mux.HandleFunc("GET "+widgetPath, p.serveWidget)
	p.mux.HandleFunc("POST "+widgetPath, p.serveToken)
	p.mux.HandleFunc("POST "+VerifyPath, p.serveVerify)
	return p
}

func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// SetWidget says what the widget hands out from now on.
func (p *Provider) SetWidget(w Widget) { p.widget.Store(int32(w)) }

// Asked is how many siteverify calls were made.
func (p *Provider) Asked() int64 { return p.asked.Load() }

// Mint is a fresh token, as the widget would hand a person on hostname.
func (p *Provider) Mint(hostname, action string) string {
	token := "lp." + rand.Text()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens[token] = &minted{at: p.o.Now(), hostname: hostname, action: action}
	p.last = token
	return token
}

// Forge is a token that looks like one of this server's but is not.
func (p *Provider) Forge() string { return "lp." + rand.Text() }

// widgetToken is what the widget hands out now.
func (p *Provider) widgetToken(hostname, action string) string {
	switch Widget(p.widget.Load()) {
	case Forged:
		return p.Forge()
	case Replayed:
		p.mu.Lock()
		last := p.last
		p.mu.Unlock()
		if last != "" {
			return last
		}
	}
	return p.Mint(hostname, action)
}

// verifyAnswer is siteverify's JSON.
type verifyAnswer struct {
	Success     bool     `json:"success"`
	ErrorCodes  []string `json:"error-codes"`
	ChallengeTS string   `json:"challenge_ts,omitempty"`
	Hostname    string   `json:"hostname,omitempty"`
	Action      string   `json:"action,omitempty"`
}

// serveVerify is siteverify: a form (or JSON) of secret, response,
// remoteip and idempotency_key.
func (p *Provider) serveVerify(w http.ResponseWriter, r *http.Request) {
	p.asked.Add(1)
	f, err := verifyForm(r)
	if err != nil {
		writeAnswer(w, verifyAnswer{ErrorCodes: []string{"bad-request"}})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.idem[f.Get("idempotency_key")]; ok && f.Get("idempotency_key") != "" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	a := p.judge(f.Get("secret"), f.Get("response"))
	b := writeAnswer(w, a)
	if k := f.Get("idempotency_key"); k != "" {
		p.idem[k] = b
	}
}

// judge is siteverify's verdict on one token, under mu.
func (p *Provider) judge(secret, token string) verifyAnswer {
	switch {
	case secret == "":
		return verifyAnswer{ErrorCodes: []string{"missing-input-secret"}}
	case subtle.ConstantTimeCompare([]byte(secret), []byte(p.o.Secret)) != 1:
		return verifyAnswer{ErrorCodes: []string{"invalid-input-secret"}}
	case token == "":
		return verifyAnswer{ErrorCodes: []string{"missing-input-response"}}
	}
	m, ok := p.tokens[token]
	switch {
	case !ok || len(token) > 2048:
		return verifyAnswer{ErrorCodes: []string{"invalid-input-response"}}
	case m.spent || p.o.Now().Sub(m.at) > lifetime:
		return verifyAnswer{ErrorCodes: []string{"timeout-or-duplicate"}}
	}
	m.spent = true
	return verifyAnswer{Success: true, ErrorCodes: []string{}, ChallengeTS: m.at.UTC().Format(time.RFC3339Nano),
		Hostname: m.hostname, Action: m.action}
}

// verifyForm reads siteverify's parameters, which Turnstile takes as a
// form or as JSON.
func verifyForm(r *http.Request) (url.Values, error) {
	if r.Header.Get("Content-Type") == "application/json" {
		var j map[string]string
		if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 16<<10)).Decode(&j); err != nil {
			return nil, err
		}
		f := url.Values{}
		for k, v := range j {
			f.Set(k, v)
		}
		return f, nil
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 16<<10)
	return r.PostForm, r.ParseForm()
}

func writeAnswer(w http.ResponseWriter, a verifyAnswer) []byte {
	b, _ := json.Marshal(a)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
	return b
}

// serveScript is the widget's script: window.turnstile, whose render puts
// an iframe of this origin into the page's element and calls the page's
// callback with the token the iframe posts back.
func (p *Provider) serveScript(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, script)
}

// serveWidget is the iframe: a checkbox; ticking it has this server mint
// a token (serveToken) for the embedding page's host, posted to that page
// (and to no other origin).
func (p *Provider) serveWidget(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	parent, err := url.Parse(q.Get("origin"))
	if err != nil || parent.Scheme == "" || parent.Host == "" {
		http.Error(w, "origin: want the embedding page's origin", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	widgetPage.Execute(w, map[string]string{"Widget": q.Get("id"), "Action": q.Get("action"), "Origin": parent.Scheme + "://" + parent.Host})
}

// serveToken is the widget's ticked box: a token for the page at origin,
// as SetWidget says (minted, forged or replayed).
func (p *Provider) serveToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	parent, err := url.Parse(r.FormValue("origin"))
	if err != nil || parent.Host == "" {
		http.Error(w, "origin: want the embedding page's origin", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, p.widgetToken(parent.Hostname(), r.FormValue("action")))
}

var widgetPage = template.Must(template.New("widget").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Local human check (a stand-in)</title>
<style>body{margin:0;font:14px system-ui,sans-serif}label{display:flex;gap:.5em;align-items:center;padding:1em;border:1px solid #999;border-radius:4px}</style>
</head><body>
<label><input type="checkbox" id="box"> I am human <small>(local stand-in)</small></label>
<script>
parent.postMessage({ widget: {{.Widget}}, ready: true }, {{.Origin}});
document.getElementById('box').addEventListener('change', async function (e) {
  if (!e.target.checked) return;
  e.target.disabled = true;
  const res = await fetch(location.pathname, { method: 'POST', body: new URLSearchParams({ origin: {{.Origin}}, action: {{.Action}} }) });
  parent.postMessage({ widget: {{.Widget}}, token: await res.text() }, {{.Origin}});
});
</script>
</body></html>
`))

// script is api.js: the part of Turnstile's client API a page uses
// (render, reset, remove, getResponse), explicit rendering only.
const script = `(() => {
  'use strict';
  const src = new URL(document.currentScript.src);
  const origin = src.origin;
  const widgets = new Map();
  let n = 0;
  function frameURL(id, params) {
    return origin + '` + widgetPath + `?' + new URLSearchParams({ id, sitekey: params.sitekey || '', action: params.action || '', origin: location.origin });
  }
  function render(container, params) {
    const el = typeof container === 'string' ? document.querySelector(container) : container;
    if (!el) throw new Error('turnstile.render: no such element');
    const id = 'lp-' + (++n);
    const frame = document.createElement('iframe');
    frame.src = frameURL(id, params || {});
    frame.title = 'Human check';
    frame.width = '300';
    frame.height = '70';
    frame.style.border = '0';
    el.appendChild(frame);
    widgets.set(id, { el, frame, params: params || {}, token: '' });
    return id;
  }
  addEventListener('message', (e) => {
    if (e.origin !== origin || !e.data || !widgets.has(e.data.widget)) return;
    const w = widgets.get(e.data.widget);
    if (e.data.ready) {
      // Shown and ready for a click (the tests wait for this mark).
      w.frame.dataset.ready = '1';
      return;
    }
    w.token = String(e.data.token);
    if (typeof w.params.callback === 'function') w.params.callback(w.token);
  });
  function each(id, fn) {
    for (const [k, w] of [...widgets]) if (id === undefined || k === id) fn(k, w);
  }
  window.turnstile = {
    render,
    reset(id) { each(id, (k, w) => { w.token = ''; w.frame.src = frameURL(k, w.params); }); },
    remove(id) { each(id, (k, w) => { w.frame.remove(); widgets.delete(k); }); },
    getResponse(id) { const w = widgets.get(id); return w ? w.token : undefined; },
    ready(fn) { fn(); },
  };
  const onload = src.searchParams.get('onload');
  if (onload && typeof window[onload] === 'function') window[onload]();
})();
`
