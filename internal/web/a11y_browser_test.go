package web_test

// The waiting page for everyone: every language (Arabic right to left),
// an axe-core audit of every state in English, Korean and Arabic and of the
// admin page, the admin's main flows by keyboard alone, the screen reader's
// announcements, and less motion for those who ask for it.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
	"github.com/waitroom/waitroom/internal/web"
)

// pageTexts reads the waiting page's texts in a language.
func pageTexts(t *testing.T, code string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "web", "messages", "page", code+".json"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// fontconfigLang is fontconfig's name for a page language's script.
func fontconfigLang(code string) string {
	switch code {
	case "zh-Hans":
		return "zh-cn"
	case "zh-Hant":
		return "zh-tw"
	case "pt-BR":
		return "pt"
	}
	return code
}

// Every language: its texts, its direction, its plural forms by Intl, a
// font that has its glyphs; Arabic laid out right to left.
func TestLanguagesBrowser(t *testing.T) {
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	for _, code := range web.PageLanguages() {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			in := in.ReportingTo(t)
			q := "l-" + code
			in.PutQueue(q, map[string]any{"paused": true, "entry": "any"})
			for _, u := range []string{"l-first", "l-second"} { // two ahead
				in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(u), nil)
			}
			texts := pageTexts(t, code)
			v := apptest.NewVisitor(t, browser, in, "")
			v.Open("/q/" + q + "?lang=" + code)
			v.WaitState("waiting", apptest.JoinWithin)
			var got struct {
				Lang, Dir, Heading, Ahead, Switch string
				Links                             []string
			}
			v.MustEval(`({lang: document.documentElement.lang, dir: document.documentElement.dir,
				heading: document.getElementById('waiting-heading').textContent.trim(),
				ahead: document.getElementById('ahead').textContent,
				links: [...document.querySelectorAll('.languages a')].map(a => a.lang)})`, &got)
			wantDir := "ltr"
			if code == "ar" {
				wantDir = "rtl"
			}
			if got.Lang != code || got.Dir != wantDir || got.Heading != texts["waitingHeading"] {
				t.Errorf("lang %q dir %q heading %q, want %s %s %q", got.Lang, got.Dir, got.Heading, code, wantDir, texts["waitingHeading"])
			}
			if !slices.Equal(got.Links, web.PageLanguages()) {
				t.Errorf("the language switch lists %v", got.Links)
			}
			// Two ahead (others took the first places): the language's own
			// plural form, as Intl.PluralRules picks it (Arabic's dual).
			var form string
			v.MustEval(`new Intl.PluralRules(`+apptest.JSString(code)+`).select(2)`, &form)
			want := texts["ahead."+form]
			if want == "" {
				want = texts["ahead.other"]
			}
			var two string
			v.MustEval(`new Intl.NumberFormat(`+apptest.JSString(code)+`).format(2)`, &two)
			if want = strings.ReplaceAll(want, "{n}", two); got.Ahead != want {
				t.Errorf("two ahead reads %q, want %q (form %s)", got.Ahead, want, form)
			}
			if code != "en" && !strings.HasPrefix(code, "pt") && code != "es" && code != "fr" && code != "de" {
				checkFontsCover(v, "#waiting-heading", testenv.Fonts(t, fontconfigLang(code)))
			}
			if code != "ar" {
				return
			}
			// Mirrored: the brand on the right and the language switch on
			// the left; the bar grows from the right; text starts on the right.
			var rtl struct {
				Brand, Switch, Main, Bar, Track struct{ Left, Right float64 }
				Align                           string
			}
			v.MustEval(`(() => { const r = (s) => { const b = document.querySelector(s).getBoundingClientRect(); return {left: b.left, right: b.right}; };
				return {brand: r('.brand'), switch: r('.languages'), bar: r('.progress-bar'), track: r('.progress'),
					align: getComputedStyle(document.querySelector('.place')).direction}; })()`, &rtl)
			if !(rtl.Brand.Left > rtl.Switch.Right) || rtl.Align != "rtl" || rtl.Bar.Right != rtl.Track.Right || !(rtl.Bar.Left > rtl.Track.Left) {
				t.Errorf("Arabic is not mirrored: %+v", rtl)
			}
		})
	}
}

// refuseNavigations keeps the visitor on the page it is on: the browser
// pauses every later request for a document, and each is failed at once as
// aborted, which leaves the page in place, so the page's own refresh cannot
// replace it during an audit. A paused request must be answered: Chromium
// holds back every later answer of the tab's DevTools session until it is,
// and an audit that met the refresh hung until go test's timeout.
func refuseNavigations(t *testing.T, v *apptest.Visitor) {
	t.Helper()
	err := chromedp.Listen(v.Ctx, func(ev any) {
		paused, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		go func() { // a listener must not wait for the session it listens to
			chromedp.Call(v.Ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: paused.RequestID, ErrorReason: network.ErrorReasonAborted})
		}()
	})
	if err != nil {
		t.Fatalf("refusing the page's navigations: %v", err)
	}
	documents := []*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageRequest}}
	if _, err := chromedp.Call(v.Ctx, fetch.Enable, fetch.EnableParams{Patterns: documents}); err != nil {
		t.Fatalf("refusing the page's navigations: %v", err)
	}
}

// axeRun audits the page as it is now with axe-core at WCAG 2.1 AA, less
// the rules named (apptest.Visitor.Axe).
func axeRun(v *apptest.Visitor, axe string, except ...string) ([]string, error) {
	return v.Axe(axe, except...)
}

// a11yTable collects the audit's results: state × language → violations.
type a11yTable struct {
	mu   sync.Mutex
	rows map[string]map[string]int
}

func (a *a11yTable) add(state, lang string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rows[state] == nil {
		a.rows[state] = map[string]int{}
	}
	a.rows[state][lang] = n
}

// markdown is the table docs/page.md shows.
func (a *a11yTable) markdown(states, langs []string) string {
	var b strings.Builder
	b.WriteString("| state | " + strings.Join(langs, " | ") + " |\n|---|" + strings.Repeat("---|", len(langs)) + "\n")
	for _, s := range states {
		b.WriteString("| " + s + " |")
		for _, l := range langs {
			if n, ok := a.rows[s][l]; ok {
				fmt.Fprintf(&b, " %d |", n)
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// a11yStates are the waiting page's states the audit visits, in order.
var a11yStates = []string{"joining (challenge)", "waiting", "paused", "stalled", "opening countdown", "ready",
	"line full", "line closed", "sold out", "unknown queue", "error (connection)", "no-script waiting", "no-script challenge"}

// The no-script states are audited without axe's meta-refresh rule (see
// TestAccessibility).

// TestAccessibility audits, with axe-core (tools/npm), the waiting
// page in every state in English, Korean and Arabic, and the admin page:
// no violation of WCAG 2.1 AA. WAITROOM_A11Y_TABLE names a file to write
// the table of results into (docs/page.md shows it).
func TestAccessibility(t *testing.T) {
	axe := testenv.Axe(t)
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	table := &a11yTable{rows: map[string]map[string]int{}}
	langs := []string{"en", "ko", "ar"}

	// The lines the states need, shared by the languages.
	in.PutQueue("a-join", map[string]any{"challengeCost": 100_000}) // minutes of work: joining for as long as the audit takes
	in.PutQueue("a-wait", map[string]any{"entry": "any", "ratePerSecond": 0.001, "batchSize": 1})
	in.Do("POST", "/api/v1/queues/a-wait/entries", in.As("a-ahead"), nil) // nobody else is let in for a while
	in.PutQueue("a-paused", map[string]any{"entry": "any", "paused": true})
	in.PutQueue("a-stall", map[string]any{"entry": "any", "maxActiveTokens": 1})
	in.Do("POST", "/api/v1/queues/a-stall/entries", in.As("a-holder"), nil)
	in.WaitReady("a-stall", "a-holder")
	in.PutQueue("a-open", map[string]any{"entry": "any", "opensAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	in.PutQueue("a-ready", map[string]any{"entry": "any"})
	in.PutQueue("a-full", map[string]any{"entry": "any", "paused": true, "capacity": 1})
	in.Do("POST", "/api/v1/queues/a-full/entries", in.As("a-first"), nil)
	in.PutQueue("a-pow", map[string]any{})
	in.PutQueue("a-phased", map[string]any{"paused": true, "phases": []any{ // the admin page's schedule
		map[string]any{"name": "members", "startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "queueingMethod": "random", "ratePerSecond": 50},
		map[string]any{"name": "public", "startsAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}})
	in.PutQueue("a-closed", map[string]any{"entry": "any", "closesAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
	in.PutQueue("a-soldout", map[string]any{"entry": "any"})
	in.Do("POST", "/admin/v1/queues/a-soldout/sold-out", in.AdminAuth(), nil)

	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			in := in.ReportingTo(t)
			audit := func(v *apptest.Visitor, state string) {
				t.Helper()
				start := time.Now()
				found, err := axeRun(v, axe)
				if err != nil {
					t.Fatalf("%s: %v", state, err)
				}
				t.Logf("%s: audited in %s", state, time.Since(start).Round(time.Millisecond))
				table.add(state, lang, len(found))
				if len(found) > 0 {
					t.Errorf("%s in %s: %d violations:\n  %s", state, lang, len(found), strings.Join(found, "\n  "))
				}
			}
			// visit opens a page, waits for its card, audits it and closes
			// it (a tab left open polls on, and two cores are all CI has).
			visit := func(path, state, card string, timeout time.Duration) {
				t.Helper()
				v := apptest.NewVisitor(t, browser, in, lang)
				v.Open(path)
				v.WaitState(card, timeout)
				audit(v, state)
				if err := chromedp.Cancel(v.Ctx); err != nil {
					t.Logf("closing the tab: %v", err)
				}
			}
			visit("/q/a-join", "joining (challenge)", "joining", 5*time.Second) // its workers would run for minutes
			waiting := apptest.NewVisitor(t, browser, in, lang)
			waiting.Open("/q/a-wait")
			waiting.WaitState("waiting", apptest.JoinWithin)
			audit(waiting, "waiting")
			visit("/q/a-paused", "paused", "waiting", apptest.JoinWithin)
			stalled := apptest.NewVisitor(t, browser, in, lang)
			stalled.Open("/q/a-stall")
			stalled.WaitUntil("the stalled note", `!document.getElementById('stalled-note').hidden`, 20*time.Second)
			audit(stalled, "stalled")
			chromedp.Cancel(stalled.Ctx)
			visit("/q/a-open", "opening countdown", "opening", apptest.JoinWithin)
			visit("/q/a-ready", "ready", "ready", apptest.JoinWithin)
			visit("/q/a-full", "line full", "full", apptest.JoinWithin)
			visit("/q/a-closed", "line closed", "closed", apptest.JoinWithin)
			visit("/q/a-soldout", "sold out", "soldout", apptest.JoinWithin)
			visit("/q/a-nosuch", "unknown queue", "notfound", apptest.JoinWithin)
			// The connection drops: the page says so over what it shows.
			if _, err := chromedp.Call(waiting.Ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{
				URLPatterns: []*network.BlockPattern{{URLPattern: "*://*:*/api/*", Block: true}}}); err != nil {
				t.Fatal(err)
			}
			waiting.WaitUntil("the connection banner", `!document.getElementById('banner').hidden`, 20*time.Second)
			audit(waiting, "error (connection)")
			chromedp.Cancel(waiting.Ctx)
			// The page without JavaScript refreshes itself: that is what it
			// is for (WCAG 2.2.1's real-time exception: a place in a moving
			// line), so axe's meta-refresh rule is left out there, and the
			// refresh is refused while the audit runs (on a loaded machine it
			// cut three audits in a row short).
			for _, ns := range []struct{ path, state string }{
				{"/q/a-paused/noscript?lang=" + lang, "no-script waiting"},
				{"/q/a-pow/noscript?lang=" + lang, "no-script challenge"},
			} {
				v := apptest.NewVisitor(t, browser, in, lang)
				v.Open(ns.path)
				refuseNavigations(t, v)
				found, err := axeRun(v, axe, "meta-refresh")
				if err != nil {
					t.Fatalf("%s: %v", ns.state, err)
				}
				chromedp.Cancel(v.Ctx)
				table.add(ns.state, lang, len(found))
				if len(found) > 0 {
					t.Errorf("%s in %s: %d violations:\n  %s", ns.state, lang, len(found), strings.Join(found, "\n  "))
				}
			}
		})
	}
	t.Run("admin", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		op := apptest.NewVisitor(t, browser, in, "en")
		op.Open("/admin")
		op.WaitUntil("the sign-in form", `!document.getElementById('login').hidden`, 5*time.Second)
		check := func(state string) {
			t.Helper()
			found, err := axeRun(op, axe)
			if err != nil {
				t.Fatalf("%s: %v", state, err)
			}
			table.add("admin: "+state, "en", len(found))
			if len(found) > 0 {
				t.Errorf("admin page, %s: %d violations:\n  %s", state, len(found), strings.Join(found, "\n  "))
			}
		}
		check("sign-in")
		op.TypeInto("#token", in.AdminToken)
		op.Keys("\r")
		op.WaitUntil("the cards", `document.querySelector('[data-queue="a-wait"] [data-field="length"]')?.textContent !== ''`, 10*time.Second)
		op.Click(`[data-queue="a-wait"] .settings summary`)
		op.Click(`[data-queue="a-wait"] .message-languages summary`)
		op.TypeInto(`[data-queue="a-wait"] textarea[name="message"]`, "Restocked at nine")
		check("queues, settings and a message preview open")
		op.Click("#new-queue")
		op.WaitUntil("the new-queue form", `document.getElementById('queue-dialog').open`, 5*time.Second)
		check("new-queue dialog")
		op.Keys(kb.Escape)
		op.Click("#tab-products")
		op.WaitUntil("the products", `!document.getElementById('products-screen').hidden && document.querySelector('[data-product]')`, 10*time.Second)
		check("products")
	})
	t.Cleanup(func() {
		if t.Failed() && len(table.rows) == 0 {
			return
		}
		states := slices.Clone(a11yStates)
		for _, s := range []string{"admin: sign-in", "admin: queues, settings and a message preview open", "admin: new-queue dialog", "admin: products"} {
			states = append(states, s)
		}
		md := table.markdown(states, langs)
		t.Logf("axe-core violations at WCAG 2.1 AA:\n%s", md)
		if path := os.Getenv("WAITROOM_A11Y_TABLE"); path != "" {
			if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
				t.Error(err)
			}
		}
	})
}

// The screen reader hears the place change at most once per answer,
// politely, and READY at once, urgently.
func TestAnnouncements(t *testing.T) {
	t.Parallel()
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	in.PutQueue("s-move", map[string]any{"entry": "any", "paused": true})
	for i := range 8 {
		in.Do("POST", "/api/v1/queues/s-move/entries", in.As(fmt.Sprintf("s-%d", i)), nil)
	}
	v := apptest.NewVisitor(t, browser, in, "en")
	v.Open("/q/s-move")
	v.WaitState("waiting", apptest.JoinWithin)
	// Every change of the two live regions, with when, and every answer.
	v.MustEval(`(() => { window.__said = [];
		for (const id of ['announcer', 'announcer-urgent']) {
			const el = document.getElementById(id);
			new MutationObserver(() => { if (el.textContent) window.__said.push({id, text: el.textContent, at: performance.now(),
				live: el.getAttribute('aria-live'), polls: window.__polls.length}); })
				.observe(el, {childList: true, characterData: true, subtree: true});
		}
		return true; })()`, nil)
	// The line moves a place or two per poll, then lets our visitor in.
	in.PatchQueue("s-move", map[string]any{"paused": false, "ratePerSecond": 0.5, "batchSize": 1})
	v.WaitState("ready", 60*time.Second)
	v.WaitUntil("READY announced", `window.__said.some(s => s.id === "announcer-urgent")`, 30*time.Second)
	var said []struct {
		ID, Text, Live string
		At             float64
		Polls          int
	}
	v.MustEval(`window.__said`, &said)
	var polls []apptest.PagePoll
	v.MustEval(`window.__polls`, &polls)
	var readyAt float64
	for _, p := range polls {
		if p.State == "READY" {
			readyAt = p.AnsweredAt
			break
		}
	}
	polite := map[int]int{} // answers so far → polite announcements then
	urgent := 0
	for _, s := range said {
		switch s.ID {
		case "announcer":
			if s.Live != "polite" {
				t.Errorf("the place is announced %s, want polite", s.Live)
			}
			polite[s.Polls]++
		case "announcer-urgent":
			urgent++
			if s.Live != "assertive" || s.Text != "It's your turn. Place your order now." {
				t.Errorf("READY announced %s: %q", s.Live, s.Text)
			}
			if s.At-readyAt > 1000 {
				t.Errorf("READY was announced %.0f ms after the answer", s.At-readyAt)
			}
		}
	}
	for n, count := range polite {
		if count > 1 {
			t.Errorf("%d polite announcements after answer %d: at most one per answer", count, n)
		}
	}
	if len(polite) < 2 || urgent != 1 {
		t.Errorf("announcements: %+v; want the place at least twice and READY once", said)
	}
	t.Logf("%d answers, %d places announced politely, READY urgently %d time(s)", len(polls), len(polite), urgent)
}

// Less motion for those who ask: the live dot stops breathing and the bar
// stops gliding, on the built-in page and on a shop's own.
func TestReducedMotion(t *testing.T) {
	t.Parallel()
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) { c.PageDir = exampleBrand })
	in.PutQueue("m-plain", map[string]any{"entry": "any", "paused": true})
	in.PutQueue("vip", map[string]any{"entry": "any", "paused": true}) // the brand's own template
	for _, reduce := range []bool{false, true} {
		v := apptest.NewVisitor(t, browser, in, "en")
		if reduce {
			if _, err := chromedp.Call(v.Ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}}); err != nil {
				t.Fatal(err)
			}
		}
		v.Open("/q/vip")
		v.WaitState("waiting", apptest.JoinWithin)
		var got struct{ Animation, Transition string }
		v.MustEval(`({animation: getComputedStyle(document.querySelector('#waiting-heading .pulse')).animationName,
			transition: getComputedStyle(document.getElementById('progress-bar')).transitionDuration})`, &got)
		if moving := got.Animation != "none" && got.Transition != "0s"; moving == reduce {
			t.Errorf("prefers-reduced-motion %v: animation %q, transition %q", reduce, got.Animation, got.Transition)
		}
	}
}

// The admin's main flows by keyboard alone: sign in, pause a queue, write
// its message and save it, make a queue, close the dialog.
func TestAdminKeyboard(t *testing.T) {
	t.Parallel()
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	in.PutQueue("k-sale", map[string]any{"paused": false})
	op := apptest.NewVisitor(t, browser, in, "en")
	op.Open("/admin")
	op.WaitUntil("the sign-in form", `!document.getElementById('login').hidden`, 5*time.Second)
	// tabTo presses Tab until css has the focus (the keyboard reaches it).
	tabTo := func(css string) {
		t.Helper()
		for range 120 {
			var there bool
			op.MustEval(`document.activeElement === document.querySelector(`+apptest.JSString(css)+`)`, &there)
			if there {
				return
			}
			op.Keys(kb.Tab)
		}
		t.Fatalf("Tab never reached %s (stuck on %s)", css, op.Focused())
	}
	tabTo("#token")
	op.Keys(in.AdminToken + "\r")
	op.WaitUntil("the dashboard", `!document.getElementById('dash').hidden && document.querySelector('[data-queue="k-sale"] .pause-button')`, 10*time.Second)

	card := `[data-queue="k-sale"]`
	tabTo(card + " .pause-button")
	op.Keys(" ") // Space presses a button
	op.WaitUntil("paused", `document.querySelector('`+card+` .badge').textContent === 'Paused'`, 5*time.Second)
	if r := in.Do("GET", "/admin/v1/queues/k-sale", in.AdminAuth(), nil); r.Body["paused"] != true {
		t.Errorf("the pause button, by Space, did not pause: %s", r.Raw)
	}

	tabTo(card + " .settings summary")
	op.Keys("\r") // Enter opens <details>
	tabTo(card + ` textarea[name="message"]`)
	op.Keys("Back in five minutes")
	tabTo(card + " .settings-form button[type=submit]")
	op.Keys("\r")
	op.WaitUntil("saved", `document.querySelector('`+card+` .qmessage').textContent === 'Saved.'`, 5*time.Second)
	if r := in.Do("GET", "/admin/v1/queues/k-sale", in.AdminAuth(), nil); r.Str("message") != "Back in five minutes" {
		t.Errorf("the message typed and saved by keyboard: %s", r.Raw)
	}

	tabTo("#new-queue")
	op.Keys("\r")
	op.WaitUntil("the new-queue form", `document.getElementById('queue-dialog').open`, 5*time.Second)
	if got := op.Focused(); got != "input#queue-name" {
		t.Errorf("the dialog opened with the focus on %s, want its first field", got)
	}
	op.Keys("k-new\r") // Enter in a field submits the form
	op.WaitUntil("the new queue's card", `!document.getElementById('queue-dialog').open && document.querySelector('[data-queue="k-new"]')`, 5*time.Second)
	tabTo("#new-queue")
	op.Keys("\r")
	op.WaitUntil("the form again", `document.getElementById('queue-dialog').open`, 5*time.Second)
	op.Keys(kb.Escape)
	op.WaitUntil("Escape to close it", `!document.getElementById('queue-dialog').open`, 5*time.Second)
	if got := op.Focused(); got != "button#new-queue" {
		t.Errorf("after Escape the focus is on %s, want back on the button that opened the dialog", got)
	}
}
