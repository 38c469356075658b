package web_test

// The page tells its person (issue 55): on READY, and with the queue's
// notifyLeadSeconds once shortly before, the title, the favicon, the live
// region, a tone (when turned on) and a system notification (when
// allowed), in the page's language; permission is asked only from a
// click on the page's button, never on load.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/apptest"
)

// recordNotices runs before each document's own scripts: every
// notification the page makes (its title, body and tag, and whether the
// browser fired show or error on it) goes to window.__notices, every
// request for permission counts in window.__asked, and what the two live
// regions say, each text as set, goes to window.__said. The constructor is
// wrapped by a Proxy, so Notification.permission and the rest read as the
// browser's own. (The DevTools protocol has no domain that lists shown
// notifications: headless Chromium draws none.)
const recordNotices = `window.__notices = []; window.__asked = 0; window.__said = [];
if (window.Notification) {
  const Real = window.Notification;
  const ask = Real.requestPermission.bind(Real);
  window.Notification = new Proxy(Real, {
    construct(target, args) {
      const n = Reflect.construct(target, args);
      const rec = {title: args[0], body: (args[1] || {}).body || '', tag: (args[1] || {}).tag || '', events: []};
      window.__notices.push(rec);
      n.addEventListener('show', () => rec.events.push('show'));
      n.addEventListener('error', () => rec.events.push('error'));
      const close = n.close.bind(n);
      n.close = () => { rec.events.push('closed'); close(); };
      return n;
    },
    get(target, prop) {
      if (prop === 'requestPermission') return (...a) => { window.__asked++; return ask(...a); };
      return target[prop];
    },
  });
}
document.addEventListener('DOMContentLoaded', () => {
  for (const id of ['announcer', 'announcer-urgent']) {
    const el = document.getElementById(id);
    if (el) new MutationObserver(() => { if (el.textContent) window.__said.push({id, text: el.textContent}); })
      .observe(el, {childList: true, characterData: true, subtree: true});
  }
});`

// notice is one entry of window.__notices.
type notice struct {
	Title, Body, Tag string
	Events           []string
}

// toldEntry is one entry of the page's own record, window.__told.
type toldEntry struct {
	Kind     string
	Hidden   bool
	Sound    string
	Notified bool
}

// watchNotices records v's notifications, permission requests and live
// regions (recordNotices) from its next page on.
func watchNotices(t *testing.T, v *apptest.Visitor) {
	t.Helper()
	if _, err := chromedp.Call(v.Ctx, page.AddScriptToEvaluateOnNewDocument,
		page.AddScriptToEvaluateOnNewDocumentParams{Source: recordNotices}); err != nil {
		t.Fatal(err)
	}
}

// setNotifications answers the notification permission for origin in v's
// browser context as the person would have (Browser.setPermission, the
// protocol's successor of Browser.grantPermissions, which this Chromium's
// protocol package no longer lists).
func setNotifications(t *testing.T, v *apptest.Visitor, origin string, setting cdpbrowser.PermissionSetting) {
	t.Helper()
	_, err := chromedp.CallBrowser(v.Ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: setting,
		Origin: origin, BrowserContextID: chromedp.FromContext(v.Ctx).BrowserContextID,
	})
	if err != nil {
		t.Fatalf("notification permission %s: %v", setting, err)
	}
}

// favicon is the href of the page's icon.
func favicon(v *apptest.Visitor) string {
	var href string
	v.MustEval(`[...document.querySelectorAll('link[rel~="icon"]')].map(l => l.getAttribute('href')).join(' ')`, &href)
	return href
}

func notices(v *apptest.Visitor) []notice {
	var n []notice
	v.MustEval(`window.__notices`, &n)
	return n
}

func toldOf(v *apptest.Visitor) []toldEntry {
	var told []toldEntry
	v.MustEval(`window.__told`, &told)
	return told
}

func asked(v *apptest.Visitor) int {
	var n int
	v.MustEval(`window.__asked`, &n)
	return n
}

// checkNotice checks that v's notification i has the title and body
// given, for queue q, and that the browser showed it.
func checkNotice(t *testing.T, v *apptest.Visitor, i int, q, title, body string) {
	t.Helper()
	got := notices(v)
	if len(got) <= i {
		t.Fatalf("notification %d: the page made %d: %+v", i, len(got), got)
	}
	n := got[i]
	if n.Title != title || n.Body != body || n.Tag != "waitroom:"+q {
		t.Errorf("notification %d: %+v, want %q / %q, tag waitroom:%s", i, n, title, body, q)
	}
	// The browser says it showed it (headless Chromium fires show, having
	// nowhere to draw it) or refused it (error).
	v.WaitUntil("the browser showing the notification", `window.__notices[`+fmt.Sprint(i)+`].events.includes('show')`, 2*time.Second)
}

func TestBrowserTellsYou(t *testing.T) {
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)

	t.Run("a hidden page is not skipped at abandonAfterSeconds but is at abandonAfterSecondsHidden", func(t *testing.T) {
		t.Parallel()
		hiddenPageIsNotANoShow(t, browser) // on an instance of its own, whose clock it runs forward
	})

	t.Run("on READY the title, favicon, live region, tone and notification", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		en := pageTexts(t, "en")
		q := apptest.UniqueID("tell")
		in.PutQueue(q, map[string]any{"entry": "any", "paused": true})
		v := apptest.NewVisitor(t, browser, in, "en")
		watchNotices(t, v)
		setNotifications(t, v, in.Base, cdpbrowser.PermissionSettingGranted)
		v.Open("/q/" + q)
		v.WaitState("waiting", apptest.JoinWithin)
		// Allowed already: nothing to ask, and the page says what it will do.
		var button bool
		v.MustEval(`document.getElementById('notify-button').hidden`, &button)
		if !button || v.Text("#notify-note") != en["notifyOn"] {
			t.Errorf("notifications allowed: the button hidden %v, the note %q; want it hidden and %q", button, v.Text("#notify-note"), en["notifyOn"])
		}
		if href := favicon(v); !strings.Contains(href, "/static/favicon.svg?v=") {
			t.Errorf("waiting: the icon is %q, want the page's own", href)
		}
		v.Click("#sound-button")
		var sound string
		v.MustEval(`document.getElementById('sound-button').getAttribute('aria-pressed') + ' ' + localStorage.getItem('waitroom:sound')`, &sound)
		if sound != "true on" {
			t.Errorf("after a click on the sound toggle: pressed and kept %q, want \"true on\"", sound)
		}

		in.PatchQueue(q, map[string]any{"paused": false})
		v.WaitState("ready", 10*time.Second)
		v.WaitUntil("READY said at once", `window.__said.some(s => s.id === 'announcer-urgent' && s.text === `+apptest.JSString(en["announceReady"])+`)`, 2*time.Second)
		var title string
		v.MustEval(`document.title`, &title)
		if !strings.HasPrefix(title, en["titleReady"]+" · ") {
			t.Errorf("READY: the title is %q, want it to start %q", title, en["titleReady"])
		}
		if href := favicon(v); !strings.Contains(href, "/static/favicon-ready.svg?v=") {
			t.Errorf("READY: the icon is %q, want favicon-ready.svg", href)
		}
		checkNotice(t, v, 0, q, en["readyHeading"], en["notifyReadyBody"])
		told := toldOf(v)
		if len(told) != 1 || told[0].Kind != "ready" || !told[0].Notified || told[0].Sound != "running" {
			t.Errorf("the page's record of what it told: %+v, want READY once, notified, a tone played", told)
		}
		if n := asked(v); n != 0 {
			t.Errorf("the page asked for permission %d times without a click", n)
		}
		t.Logf("notification: %+v", notices(v))

		// The place carried to another browser context: this page, told
		// MOVED, takes back what it told (a READY notification left up,
		// requireInteraction, would say "your turn" of a place gone).
		other := apptest.NewVisitor(t, browser, in, "en")
		other.Open(makeLink(t, v))
		other.WaitState("handoff-offer", 10*time.Second)
		other.Click("#handoff-continue")
		other.WaitState("ready", 10*time.Second)
		v.WaitState("moved", 30*time.Second)
		v.WaitUntil("the READY notification closed once MOVED", `window.__notices[0].events.includes('closed')`, 2*time.Second)
		if href := favicon(v); !strings.Contains(href, "/static/favicon.svg?v=") {
			t.Errorf("MOVED: the icon is %q, want the page's own", href)
		}
	})

	t.Run("permission is asked only from the button's click", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		en := pageTexts(t, "en")
		q := apptest.UniqueID("ask")
		in.PutQueue(q, map[string]any{"entry": "any", "paused": true})
		v := apptest.NewVisitor(t, browser, in, "en")
		watchNotices(t, v)
		v.Open("/q/" + q)
		v.WaitState("waiting", apptest.JoinWithin)
		v.WaitUntil("a second answer", `window.__polls.filter(p => p.status === 200).length >= 2`, 15*time.Second)
		if n := asked(v); n != 0 {
			t.Fatalf("the page asked for permission %d times on load", n)
		}
		var shown bool
		v.MustEval(`!document.getElementById('notify-button').hidden && Notification.permission === 'default'`, &shown)
		if !shown || v.Text("#notify-button") != en["notifyButton"] {
			t.Fatalf("not yet asked: the button shown %v, reading %q; want %q", shown, v.Text("#notify-button"), en["notifyButton"])
		}
		v.Click("#notify-button")
		v.WaitUntil("asked once, by the click", `window.__asked === 1`, 2*time.Second)

		// Refused in the browser's settings: no button, and the page says
		// where to allow them.
		blocked := apptest.NewVisitor(t, browser, in, "en")
		watchNotices(t, blocked)
		setNotifications(t, blocked, in.Base, cdpbrowser.PermissionSettingDenied)
		blocked.Open("/q/" + q)
		blocked.WaitState("waiting", apptest.JoinWithin)
		blocked.MustEval(`document.getElementById('notify-button').hidden`, &shown)
		if !shown || blocked.Text("#notify-note") != en["notifyBlocked"] || asked(blocked) != 0 {
			t.Errorf("notifications denied: button hidden %v, note %q, asked %d; want hidden, %q, 0",
				shown, blocked.Text("#notify-note"), asked(blocked), en["notifyBlocked"])
		}
	})

	t.Run("notifyLeadSeconds before the turn, then READY, in Korean", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		ko := pageTexts(t, "ko")
		// Two a second with 40 ahead: the page joins about 20 s from its
		// turn (10 s beyond the lead, room for a slow join), reads the lead
		// (10 s) from the front document at its next look, and is told
		// once within it.
		q := apptest.UniqueID("lead")
		in.PutQueue(q, map[string]any{"entry": "any", "ratePerSecond": 2, "batchSize": 1, "notifyLeadSeconds": 10})
		for i := range 40 {
			in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(fmt.Sprintf("%s-ahead-%d", q, i)), nil)
		}
		v := apptest.NewVisitor(t, browser, in, "ko")
		watchNotices(t, v)
		setNotifications(t, v, in.Base, cdpbrowser.PermissionSettingGranted)
		v.Open("/q/" + q)
		v.WaitState("waiting", apptest.JoinWithin)
		for css, key := range map[string]string{"#sound-button": "soundButton", "#notify-note": "notifyOn"} {
			if got := v.Text(css); got != ko[key] {
				t.Errorf("Korean: %s reads %q, want %q (%s)", css, got, ko[key], key)
			}
		}
		var text string
		v.MustEval(`document.getElementById('notify-button').textContent.trim()`, &text)
		if text != ko["notifyButton"] {
			t.Errorf("Korean: the notification button reads %q, want %q", text, ko["notifyButton"])
		}

		v.WaitUntil("the lead notice", `(window.__told || []).some(x => x.kind === 'soon')`, 40*time.Second)
		if v.State() != "waiting" {
			t.Fatalf("the lead notice came with the page %s, want waiting", v.State())
		}
		checkNotice(t, v, 0, q, ko["notifySoonTitle"], ko["notifySoonBody"])
		v.WaitUntil("the soon title and icon", `document.title.startsWith(`+apptest.JSString(strings.Split(ko["titleSoon"], "{n}")[0])+`)`+
			` && [...document.querySelectorAll('link[rel~="icon"]')].some(l => l.href.includes('/static/favicon-soon.svg'))`, 2*time.Second)
		v.WaitUntil("the lead said", `window.__said.some(s => s.id === 'announcer' && s.text.includes(`+apptest.JSString(ko["announceSoon"])+`))`, 2*time.Second)

		v.WaitState("ready", 40*time.Second)
		checkNotice(t, v, 1, q, ko["readyHeading"], ko["notifyReadyBody"])
		if href := favicon(v); !strings.Contains(href, "/static/favicon-ready.svg?v=") {
			t.Errorf("READY: the icon is %q, want favicon-ready.svg", href)
		}
		told := toldOf(v)
		if len(told) != 2 || told[0].Kind != "soon" || told[1].Kind != "ready" || told[1].Sound != "" {
			t.Errorf("told %+v, want the lead then READY, once each, no tone (sound was not turned on)", told)
		}
	})
}

// recordBeacons runs before each document's own scripts: every beacon the
// page sends goes to window.__beacons ({url, data}) before the browser
// sends it.
const recordBeacons = `window.__beacons = [];
const sendBeaconAsIs = navigator.sendBeacon.bind(navigator);
navigator.sendBeacon = (url, data) => { window.__beacons.push({url: String(url), data: String(data)}); return sendBeaconAsIs(url, data); };`

// hide makes v's page hidden as a switch of tab or a locked screen does:
// document.hidden and visibilityState say so, and visibilitychange fires.
// (Headless Chromium keeps every page visible, and the DevTools protocol
// has no command that hides one.)
func hide(t *testing.T, v *apptest.Visitor) {
	t.Helper()
	v.MustEval(`(() => {
  Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'});
  Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});
  document.dispatchEvent(new Event('visibilitychange'));
  return true;
})()`, nil)
}

// freeze freezes v's page as a phone does when its screen locks
// (Page.setWebLifecycleState frozen: no timer runs, nothing is sent).
func freeze(t *testing.T, v *apptest.Visitor) {
	t.Helper()
	if _, err := chromedp.Call(v.Ctx, page.SetWebLifecycleState,
		page.SetWebLifecycleStateParams{State: page.SetWebLifecycleStateStateFrozen}); err != nil {
		t.Fatalf("freezing the page: %v", err)
	}
}

// offline cuts v's page off the API (on) or gives it back (off).
func offline(t *testing.T, v *apptest.Visitor, on bool) {
	t.Helper()
	var patterns []*network.BlockPattern
	if on {
		patterns = []*network.BlockPattern{{URLPattern: "*://*:*/api/*", Block: true}}
	}
	if _, err := chromedp.Call(v.Ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns}); err != nil {
		t.Fatal(err)
	}
}

// standing wakes v's page and asks the line from it (its session) where
// it stands.
func standing(t *testing.T, v *apptest.Visitor, q string) string {
	t.Helper()
	if _, err := chromedp.Call(v.Ctx, page.SetWebLifecycleState,
		page.SetWebLifecycleStateParams{State: page.SetWebLifecycleStateStateActive}); err != nil {
		t.Fatalf("waking the page: %v", err)
	}
	var status string
	v.MustEval(`fetch('/api/v1/queues/`+q+`/entries/me', {cache: 'no-store'}).then(r => r.json()).then(b => b.status || b.error?.code)`, &status)
	return status
}

// hiddenPageIsNotANoShow holds the page's half of "a hidden
// page is not a no-show" (issue 55) against the presence contract: a
// page that said it was hidden (its beacon, then its polls with hidden=1)
// and was then frozen as a locked phone's is is not skipped at
// abandonAfterSeconds, while a page beside it whose word never reached
// the line (cut off as it froze) is, and it is skipped at
// abandonAfterSecondsHidden. The line's clock is run
// forward (apptest.Clock) rather than waited out.
func hiddenPageIsNotANoShow(t *testing.T, browser context.Context) {
	clock := &apptest.Clock{}
	in := apptest.BootWithClock(t, clock, nil).ReportingTo(t)
	// Ticks every 100 ms: the no-shows' checkpoints (every half of
	// abandonAfterSeconds) fall where they would through the run forward.
	cfg := map[string]any{"entry": "any", "paused": true, "ratePerSecond": 10, "batchSize": 10, "intervalMs": 100,
		"abandonAfterSeconds": 15, "abandonAfterSecondsHidden": 30}
	seen, hidden := apptest.UniqueID("seen"), apptest.UniqueID("hidden")
	in.PutQueue(seen, cfg)
	in.PutQueue(hidden, cfg)
	open := func(q string) *apptest.Visitor {
		v := apptest.NewVisitor(t, browser, in, "en")
		if _, err := chromedp.Call(v.Ctx, page.AddScriptToEvaluateOnNewDocument,
			page.AddScriptToEvaluateOnNewDocumentParams{Source: recordBeacons}); err != nil {
			t.Fatal(err)
		}
		watchNotices(t, v)
		setNotifications(t, v, in.Base, cdpbrowser.PermissionSettingGranted)
		v.Open("/q/" + q)
		v.WaitState("waiting", apptest.JoinWithin)
		return v
	}
	// In line seen: V, a page that stops without a word reaching the line
	// (the network gone as it freezes: the beacon it sends on freeze is
	// lost), then H, whose page says it is hidden before it freezes. In
	// line hidden: H2, alike.
	v, h, h2 := open(seen), open(seen), open(hidden)
	hide(t, h)
	hide(t, h2)
	for _, p := range []*apptest.Visitor{h, h2} {
		p.WaitUntil("the hidden beacon", `window.__beacons.some(b => b.url.endsWith('/entries/me/presence') && JSON.parse(b.data).hidden === true)`, 2*time.Second)
	}
	// Each is frozen just after an answer, so that what the line last saw
	// of it is then.
	answered := func(p *apptest.Visitor, hiddenPoll bool) time.Time {
		var n int
		p.MustEval(`window.__polls.length`, &n)
		p.WaitUntil("an answer to a poll", fmt.Sprintf(`window.__polls.slice(%d).some(r => r.status === 200 && r.hidden === %v)`, n, hiddenPoll), 40*time.Second)
		if !hiddenPoll {
			offline(t, p, true)
		}
		freeze(t, p)
		return clock.Now()
	}
	answered(v, false)
	frozeH := answered(h, true)
	frozeH2 := answered(h2, true)

	// 24 s on: past abandonAfterSeconds (V is judged gone up to 1.5 × 15
	// s after it was last seen, by the checkpoints), short of
	// abandonAfterSecondsHidden for H.
	at := clock.RunForward(frozeH.Add(24*time.Second).Sub(clock.Now()), 4*time.Second)
	waitFor(t, "the clock run forward", func() bool { return !clock.Now().Before(at) })
	in.PatchQueue(seen, map[string]any{"paused": false})
	waitFor(t, "the line seen let in or skipped both", func() bool {
		st := in.QueueStats(seen)
		return st.Num("admittedTotal")+st.Num("abandonedTotal") == 2
	})
	if st := in.QueueStats(seen); st.Num("admittedTotal") != 1 || st.Num("abandonedTotal") != 1 {
		t.Errorf("24 s after both froze: %s; want the hidden page let in and the silent one skipped", st.Raw)
	}
	if got := standing(t, h, seen); got != "READY" {
		t.Errorf("the hidden page, 24 s frozen (abandonAfterSeconds 15, hidden 30): %s, want READY", got)
	}
	offline(t, v, false)
	var said bool
	v.MustEval(`window.__beacons.some(b => JSON.parse(b.data).hidden === true)`, &said)
	if !said {
		t.Errorf("the visible page frozen sent no hidden beacon (freeze): %s", v.Screen())
	}
	if got := standing(t, v, seen); got != "NOT_IN_QUEUE" {
		t.Errorf("the page frozen without a word, 24 s on: %s, want NOT_IN_QUEUE (a no-show)", got)
	}

	// And at abandonAfterSecondsHidden a hidden page is judged gone (up
	// to 1.5 × 30 s after it was last seen).
	at = clock.RunForward(frozeH2.Add(47*time.Second).Sub(clock.Now()), 4*time.Second)
	waitFor(t, "the clock run forward", func() bool { return !clock.Now().Before(at) })
	in.PatchQueue(hidden, map[string]any{"paused": false})
	waitFor(t, "the line hidden skipped its hidden page", func() bool {
		st := in.QueueStats(hidden)
		return st.Num("admittedTotal")+st.Num("abandonedTotal") == 1
	})
	if st := in.QueueStats(hidden); st.Num("abandonedTotal") != 1 {
		t.Errorf("47 s after the hidden page froze: %s; want it skipped (abandonAfterSecondsHidden 30)", st.Raw)
	}
	if got := standing(t, h2, hidden); got != "NOT_IN_QUEUE" {
		t.Errorf("the hidden page, 47 s frozen: %s, want NOT_IN_QUEUE", got)
	}

	// H, awake but still hidden, learns READY at its next poll and tells
	// its person from that answer: the notification, with the page hidden.
	h.WaitState("ready", 40*time.Second)
	checkNotice(t, h, 0, seen, "It's your turn", pageTexts(t, "en")["notifyReadyBody"])
	if told := toldOf(h); len(told) != 1 || told[0].Kind != "ready" || !told[0].Hidden || !told[0].Notified {
		t.Errorf("the hidden page at READY told %+v, want READY once, hidden, notified", told)
	}
}
