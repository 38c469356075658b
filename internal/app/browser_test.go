package app_test

// The waiting-room and admin pages in a real browser: Debian's chromium,
// headless, driven by chromedp, against the real program booted on :0.
// Outside CI the tests skip when chromium is missing; under CI they fail
// (scripts/test.sh installs it).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpcss "github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/testenv"
)

// startBrowser starts one headless chromium with a fresh profile for the test.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := testenv.Chromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		// Several pages poll at once; none of them may be slowed down for
		// being a background tab.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
	)
	t.Cleanup(cancelAlloc)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return browser
}

// visitor is one person with a browser: their own browser context (cookie
// jar, sessionStorage) and tab.
type visitor struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu   sync.Mutex
	reqs []lineRequest // the tab's requests to the line, from the network events
}

// lineRequest is one request to /api/v1/queues/{q}/entries[/me] as the
// browser saw it leave.
type lineRequest struct {
	method string
	at     float64 // seconds, the browser's monotonic clock
	// loader is the document that sent it: after a reload, a request the
	// old document sent (or whose event arrived late) is not the new one's.
	loader cdp.LoaderID
}

// recordTimeouts runs before each document's own scripts: it keeps every
// setTimeout the page asks for in window.__timeouts, its delay and when it
// was asked (performance.now(), the clock of window.__polls), so that a
// test can tell what the page scheduled from when the browser, on a loaded
// machine, got round to it.
const recordTimeouts = `window.__timeouts = [];
const setTimeoutAsIs = window.setTimeout;
window.setTimeout = function (fn, ms, ...args) {
  window.__timeouts.push({ms: Number(ms) || 0, at: performance.now()});
  return setTimeoutAsIs.call(this, fn, ms, ...args);
};`

// newVisitor opens a tab in a fresh browser context that asks for
// acceptLanguage ("" for the browser's default).
func newVisitor(t *testing.T, browser context.Context, in *instance, acceptLanguage string) *visitor {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	v := &visitor{t: t, ctx: ctx, base: in.base}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1000, 800)); err != nil {
		t.Fatalf("new tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
		page.AddScriptToEvaluateOnNewDocumentParams{Source: recordTimeouts}); err != nil {
		t.Fatalf("new tab: %v", err)
	}
	if acceptLanguage != "" {
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"Accept-Language": acceptLanguage},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err := chromedp.Listen(ctx, func(ev any) {
		e, ok := ev.(*network.EventRequestWillBeSent)
		if !ok || e.Request == nil {
			return
		}
		u, err := url.Parse(e.Request.URL)
		if err != nil || !strings.HasPrefix(u.Path, "/api/v1/queues/") || !strings.Contains(u.Path, "/entries") {
			return
		}
		v.mu.Lock()
		v.reqs = append(v.reqs, lineRequest{method: e.Request.Method, at: e.Timestamp.Float64(), loader: e.LoaderID})
		v.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// open loads a page of the instance (until its load event); what the
// page's script does next, the caller waits for with waitState/waitUntil.
func (v *visitor) open(path string) {
	v.t.Helper()
	if err := chromedp.Do(v.ctx, chromedp.Navigate(v.base+path)); err != nil {
		v.t.Fatalf("open %s: %v", path, err)
	}
}

// eval evaluates a JavaScript expression and decodes its JSON value into out.
func (v *visitor) eval(expr string, out any) error {
	raw, err := chromedp.Run(v.ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

func (v *visitor) mustEval(expr string, out any) {
	v.t.Helper()
	if err := v.eval(expr, out); err != nil {
		v.t.Fatalf("evaluating %s: %v", expr, err)
	}
}

// waitUntil evaluates a JavaScript condition every 50 ms until it is true,
// for timeout and at least minWait. (chromedp's Poll builds its predicate
// with new Function, which the page's Content-Security-Policy rightly
// forbids.)
func (v *visitor) waitUntil(what, cond string, timeout time.Duration) {
	v.t.Helper()
	timeout = max(timeout, minWait)
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		err := v.eval("!!("+cond+")", &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("%s: still not true after %s (%s; last error: %v); on screen: %s",
				what, timeout, cond, err, v.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// state is the page's visible card (data-state): joining, waiting, ready, …
func (v *visitor) state() string {
	var s string
	v.eval(`document.querySelector('[data-state]:not([hidden])')?.dataset.state ?? ''`, &s)
	return s
}

// minWait is the least any wait for the page is given: a timeout names
// what the page takes on a quiet machine, and a loaded two-core CI machine
// may take ten times as long. Waiting is polled, so a long bound costs
// nothing when the page is quick.
const minWait = 30 * time.Second

// joinWithin bounds a page's way into the line: the proof of work it
// solves in Web Workers takes a median 1.2 s on a quiet machine
// (docs/security.md), but it is CPU-bound, and on a loaded two-core CI
// machine one join took over 5 s. Waiting is polled, so a long bound costs
// nothing when the page is quick.
const joinWithin = 30 * time.Second

// waitState waits until the page shows the card named state.
func (v *visitor) waitState(state string, timeout time.Duration) {
	v.t.Helper()
	v.waitUntil("page in state "+state,
		`document.querySelector('[data-state="`+state+`"]') && !document.querySelector('[data-state="`+state+`"]').hidden`, timeout)
}

// text returns the trimmed text of the first element matching css.
func (v *visitor) text(css string) string {
	v.t.Helper()
	var s string
	v.mustEval(`(document.querySelector(`+jsString(css)+`)?.textContent ?? '').trim()`, &s)
	return s
}

// screen describes the page for failure messages.
func (v *visitor) screen() string {
	var s string
	v.eval(`(() => { const c = document.querySelector('[data-state]:not([hidden])') || document.querySelector('main');
		return (c ? (c.dataset.state || 'main') + ': ' + c.innerText : document.body.innerText).replace(/\s+/g, ' ').slice(0, 400); })()`, &s)
	return fmt.Sprintf("%q", s)
}

// pagePoll is one entry of window.__polls, the page's own record of its
// requests to the line.
type pagePoll struct {
	Method string  `json:"method"`
	SentAt float64 `json:"sentAt"` // ms, performance.now()
	// AnsweredAt is when the answer was read (ms, performance.now()):
	// pollAfterSeconds counts from there.
	AnsweredAt       float64  `json:"answeredAt"`
	Status           int      `json:"status"`
	State            string   `json:"state"`
	PollAfterSeconds *float64 `json:"pollAfterSeconds"`
}

// pageTimeout is a setTimeout the page asked for (recordTimeouts).
type pageTimeout struct {
	MS float64 `json:"ms"`
	At float64 `json:"at"` // ms, performance.now()
}

func (v *visitor) polls() []pagePoll {
	v.t.Helper()
	var p []pagePoll
	v.mustEval(`window.__polls`, &p)
	return p
}

// documentRequests returns the line requests the network saw from the
// document the tab shows now.
func (v *visitor) documentRequests() []lineRequest {
	v.t.Helper()
	tree, err := chromedp.Call(v.ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil || tree.FrameTree == nil || tree.FrameTree.Frame == nil {
		v.t.Fatalf("frame tree: %+v, %v", tree, err)
	}
	loader := tree.FrameTree.Frame.LoaderID
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []lineRequest
	for _, r := range v.reqs {
		if r.loader == loader {
			out = append(out, r)
		}
	}
	return out
}

// checkPollGaps checks the requests the page now shown sent to the line
// (the network log and the page's own record, window.__polls): each came
// no sooner than the previous answer's pollAfterSeconds — and the page,
// on reading that answer, set its timer for exactly that long, not later
// (when the timer fires is the browser's, late on a loaded machine) — and
// the last answer was READY, with nothing to wait for. It returns the
// page's record.
func (v *visitor) checkPollGaps() []pagePoll {
	v.t.Helper()
	t := v.t
	// The network events arrive on their own, possibly after the page
	// recorded the request: wait for them rather than compare too early.
	var polls []pagePoll
	var reqs []lineRequest
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		polls, reqs = v.polls(), v.documentRequests()
		if len(reqs) == len(polls) || time.Now().After(deadline) {
			break
		}
	}
	// An anonymous page's first POST is answered 403 challenge_required; it
	// solves the challenge and enters again at once: not a poll.
	if len(polls) > 1 && len(reqs) > 1 && polls[0].Method == "POST" && polls[0].Status == http.StatusForbidden {
		polls, reqs = polls[1:], reqs[1:]
	}
	if len(polls) < 3 || len(reqs) != len(polls) {
		t.Fatalf("page recorded %d requests, network saw %d (want equal, ≥ 3): %+v", len(polls), len(reqs), polls)
	}
	var timeouts []pageTimeout
	v.mustEval(`window.__timeouts`, &timeouts)
	const tolerance = 0.05 // seconds: timer and event clock granularity
	for i := 1; i < len(polls); i++ {
		prev := polls[i-1]
		if prev.PollAfterSeconds == nil {
			t.Fatalf("request %d was sent after an answer without pollAfterSeconds: %+v", i, polls)
		}
		want := *prev.PollAfterSeconds
		if polls[i].Method != "GET" || reqs[i].method != "GET" {
			t.Errorf("request %d: %s/%s, want a GET status poll", i, polls[i].Method, reqs[i].method)
		}
		pageGap := (polls[i].SentAt - prev.SentAt) / 1000
		netGap := reqs[i].at - reqs[i-1].at
		t.Logf("poll %d: pollAfterSeconds %.0f, sent %.3f s later (network: %.3f s)", i, want, pageGap, netGap)
		if pageGap < want-tolerance || netGap < want-tolerance {
			t.Errorf("poll %d came %.3f s (network %.3f s) after the previous one, which said pollAfterSeconds=%.0f",
				i, pageGap, netGap, want)
		}
		// Not sooner is the rule; later would leave people waiting: the
		// timer the page set between reading the answer and sending the
		// poll was for pollAfterSeconds (a second at least: waiting.js's
		// schedule).
		scheduled := slices.ContainsFunc(timeouts, func(to pageTimeout) bool {
			return to.MS == max(1, want)*1000 && to.At >= prev.AnsweredAt && to.At <= polls[i].SentAt
		})
		if !scheduled {
			t.Errorf("poll %d: after an answer of pollAfterSeconds=%.0f the page set no timer of %.0f s before sending it; its timers: %+v",
				i, want, max(1, want), timeouts)
		}
	}
	if last := polls[len(polls)-1]; last.State != "READY" || last.PollAfterSeconds != nil {
		t.Errorf("last answer %+v, want READY with pollAfterSeconds null", last)
	}
	return polls
}

func (v *visitor) click(css string) {
	v.t.Helper()
	if err := chromedp.Do(v.ctx, chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible)); err != nil {
		v.t.Fatalf("click %s: %v", css, err)
	}
}

// typeInto replaces the value of a field by typing, as a person would.
func (v *visitor) typeInto(css, text string) {
	v.t.Helper()
	// Focus first (the admin page leaves a focused field alone when it
	// refreshes), empty it, then type: chromedp.Clear only resets the value
	// attribute, not what was typed before.
	err := chromedp.Do(v.ctx,
		chromedp.Focus(chromedp.CSS(css)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+jsString(css)+`).value = ''`),
		chromedp.SendKeys(chromedp.CSS(css), text))
	if err != nil {
		v.t.Fatalf("typing into %s: %v", css, err)
	}
}

// keys sends key presses to whatever has the focus.
func (v *visitor) keys(k string) {
	v.t.Helper()
	if err := chromedp.Do(v.ctx, chromedp.KeyEvent(k)); err != nil {
		v.t.Fatalf("keys %q: %v", k, err)
	}
}

func (v *visitor) focused() string {
	var s string
	v.eval(`(() => { const e = document.activeElement; return e ? e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') : ''; })()`, &s)
	return s
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ---------------------------------------------------------------- the tests

func TestBrowser(t *testing.T) {
	browser := startBrowser(t)
	in := boot(t, backend{name: "embedded"}, nil)
	start := time.Now()
	t.Cleanup(func() { t.Logf("browser tests took %s", time.Since(start).Round(time.Millisecond)) })

	t.Run("wait, get in without a reload, order", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		// A paused queue holds everyone in line until the admin lets them in.
		// At 0.2/s the second place is 10 s away: Bob is told to come back
		// in 5 s ±20% rather than 2, so the pages see both bands.
		in.putQueue("b-sale", map[string]any{"paused": true, "ratePerSecond": 0.2, "batchSize": 1})
		in.putProduct("b-tee", "Tee", 5, "b-sale")
		in.putProduct("b-gone", "Sold out", 0, "b-sale")

		alice := newVisitor(t, browser, in, "en-US,en;q=0.9")
		alice.open("/q/b-sale?product=b-tee")
		alice.waitState("waiting", joinWithin)
		if got := alice.text("#position"); got != "1" {
			t.Fatalf("alice's position = %q, want 1; %s", got, alice.screen())
		}
		if got := alice.text("#queue-length"); got != "1" {
			t.Errorf("people in line = %q, want 1", got)
		}
		if got := alice.text("#eta"); got != "On hold" {
			t.Errorf("estimate while paused = %q, want On hold", got)
		}
		var pausedShown bool
		alice.mustEval(`!document.getElementById('paused-note').hidden`, &pausedShown)
		if !pausedShown {
			t.Errorf("the paused note is hidden on a paused queue")
		}

		// A second person, with their own cookie, is behind her.
		bob := newVisitor(t, browser, in, "en")
		bob.open("/q/b-sale")
		bob.waitState("waiting", joinWithin)
		if got := bob.text("#position"); got != "2" {
			t.Fatalf("bob's position = %q, want 2; %s", got, bob.screen())
		}
		if got := bob.text("#queue-length"); got != "2" {
			t.Errorf("bob sees %q in line, want 2", got)
		}

		// A refresh enters again (idempotent) and keeps the place.
		if err := chromedp.Do(alice.ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		alice.waitState("waiting", joinWithin)
		if got := alice.text("#position"); got != "1" {
			t.Fatalf("after a refresh alice's position = %q, want 1", got)
		}
		if got := alice.text("#eta"); got != "On hold" {
			t.Errorf("estimate = %q", got)
		}

		// Let her page poll a few times, then open the gate. The page must
		// turn READY by itself: the marker set now would not survive a reload.
		// Counted as checkPollGaps counts them: a first POST answered 403
		// challenge_required is not a poll. Counting it let the gate open
		// with bob one poll short when his GET was held until READY.
		const threePolls = `window.__polls.filter(p => p.status !== 403).length >= 3`
		alice.waitUntil("three requests to the line", threePolls, 10*time.Second)
		bob.waitUntil("three requests to the line", threePolls, 20*time.Second)
		if got := bob.text("#eta"); got != "On hold" {
			t.Errorf("bob's estimate while paused = %q", got)
		}
		alice.mustEval(`window.__sameDocument = true`, nil)
		in.patchQueue("b-sale", map[string]any{"paused": false, "ratePerSecond": 100, "batchSize": 10})
		alice.waitState("ready", 5*time.Second)
		var same bool
		alice.mustEval(`window.__sameDocument === true`, &same)
		if !same {
			t.Fatal("the page reloaded to become READY")
		}
		if got := alice.text("#ready-heading"); got != "It's your turn" {
			t.Errorf("ready heading = %q", got)
		}
		if got := alice.focused(); got != "h1#ready-heading" {
			t.Errorf("focus after READY is on %q, want the heading", got)
		}
		readyCount := len(alice.polls())

		// Polls: never sooner than the previous answer's pollAfterSeconds,
		// by the page's own clock and by the browser's network events.
		polls := alice.checkPollGaps()
		if polls[0].Method != "POST" || polls[0].State != "WAITING" {
			t.Errorf("after the refresh the page first sent %s → %s, want POST → WAITING", polls[0].Method, polls[0].State)
		}

		// The entry token buys the order; the page shows it (the product's
		// name arrives by a request of its own).
		alice.waitUntil("the product's name", `document.getElementById('product-info').textContent.includes('Tee')`, 5*time.Second)
		alice.click("#order-button")
		alice.waitState("done", 5*time.Second)
		orderText := alice.text("#order-number")
		if !strings.HasPrefix(orderText, "Order #") {
			t.Errorf("order number = %q", orderText)
		}
		if p := in.do("GET", "/api/v1/products/b-tee", "", nil); p.num("stock") != 4 {
			t.Errorf("stock after one order = %v, want 4", p.num("stock"))
		}
		// READY means nothing more to wait for: no poll after it.
		if n := len(alice.documentRequests()); n != readyCount || len(alice.polls()) != readyCount {
			t.Errorf("the page sent %d requests to the line after READY", n-readyCount)
		}

		// Bob got in as well, at his own pace. Sold out keeps his entry; he
		// then buys something else.
		bob.waitState("ready", 8*time.Second)
		bobPolls := bob.checkPollGaps()
		if p := bobPolls[1].PollAfterSeconds; p == nil || *p < 4 || *p > 6 {
			t.Errorf("bob, 10 s away, was told pollAfterSeconds=%v, want 5 ±20%%", p)
		}
		bob.typeInto("#product", "b-gone")
		bob.click("#order-button")
		bob.waitUntil("the out-of-stock message", `document.getElementById('order-message').textContent.includes('entry is kept')`, 5*time.Second)
		if got := bob.state(); got != "ready" {
			t.Fatalf("after out of stock the page is %q, want still ready", got)
		}
		bob.typeInto("#product", "b-tee")
		bob.typeInto("#quantity", "2")
		// The receipt names the product from the page's own request for it,
		// sent when the field changed: wait for it as alice did, or an order
		// answered first is receipted by the product's id.
		bob.waitUntil("the product's name", `document.getElementById('product-info').textContent.includes('Tee')`, 5*time.Second)
		bob.click("#order-button")
		bob.waitState("done", 5*time.Second)
		if got := bob.text("#order-detail"); got != "2 × Tee" {
			t.Errorf("bob's receipt says %q, want 2 × Tee", got)
		}
		if got := bob.text("#order-number"); got == orderText {
			t.Errorf("bob and alice share order %q", got)
		}
	})

	t.Run("the connection drops and comes back; a failed payment keeps the entry", func(t *testing.T) {
		t.Parallel()
		pay := boot(t, backend{name: "embedded"}, func(c *app.Config) { c.PaymentFailureRate = 1 })
		pay.putQueue("b-pay", map[string]any{"paused": true})
		pay.putProduct("b-pen", "Pen", 3, "b-pay")
		dave := newVisitor(t, browser, pay, "en")
		dave.open("/q/b-pay?product=b-pen")
		dave.waitState("waiting", joinWithin)

		// The network goes away: the next poll fails, the page says so and
		// keeps showing the place; when it is back the banner goes.
		block := func(on bool) {
			t.Helper()
			var patterns []*network.BlockPattern
			if on {
				patterns = []*network.BlockPattern{{URLPattern: "*://*:*/api/*", Block: true}}
			}
			if _, err := chromedp.Call(dave.ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns}); err != nil {
				t.Fatal(err)
			}
		}
		block(true)
		dave.waitUntil("the connection banner", `document.getElementById('banner').textContent.includes('Connection trouble')`, 10*time.Second)
		if got := dave.state(); got != "waiting" {
			t.Errorf("with the connection gone the page is %q, want still waiting", got)
		}
		if got := dave.text("#position"); got != "1" {
			t.Errorf("with the connection gone the position shows %q, want 1", got)
		}
		block(false)
		dave.waitUntil("the banner to go", `document.getElementById('banner').hidden`, 15*time.Second)

		// Let in, the payment fails: the page says so and the entry is kept.
		pay.patchQueue("b-pay", map[string]any{"paused": false})
		dave.waitState("ready", 8*time.Second)
		dave.click("#order-button")
		dave.waitUntil("the payment message", `document.getElementById('order-message').textContent.includes('payment did not go through')`, 5*time.Second)
		if got := dave.state(); got != "ready" {
			t.Errorf("after a failed payment the page is %q, want still ready", got)
		}
		if p := pay.do("GET", "/api/v1/products/b-pen", "", nil); p.num("stock") != 3 {
			t.Errorf("stock after a failed payment: %v, want 3", p.num("stock"))
		}
	})

	t.Run("an expired token sends you back to the line; keyboard only", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("b-fast", map[string]any{})
		in.putProduct("b-cap", "Cap", 3, "b-fast")

		carol := newVisitor(t, browser, in, "en")
		carol.open("/q/b-fast?product=b-cap")
		carol.waitState("ready", joinWithin)
		// The token goes away behind the page's back (as when it expires).
		var status int
		carol.mustEval(`fetch('/api/v1/queues/b-fast/entries/me', {method: 'DELETE'}).then(r => r.status)`, &status)
		if status != 204 {
			t.Fatalf("giving the token back: %d", status)
		}
		carol.click("#order-button")
		carol.waitState("expired", 5*time.Second)
		if got := carol.text("#expired-heading"); got != "Your entry has expired" {
			t.Errorf("expired heading = %q", got)
		}
		if got := carol.text(`[data-state="expired"] button`); got != "Enter the line again" {
			t.Errorf("expired button = %q", got)
		}

		// From here on only the keyboard: focus is on the heading; Tab
		// reaches the button, Enter presses it.
		if got := carol.focused(); got != "h1#expired-heading" {
			t.Errorf("focus after expiry is on %q, want the heading", got)
		}
		carol.keys("\t")
		if got := carol.text(`:focus`); got != "Enter the line again" {
			t.Fatalf("Tab from the heading reached %q (%s)", got, carol.focused())
		}
		carol.keys("\r")
		carol.waitState("ready", joinWithin)
		if got := carol.focused(); got != "h1#ready-heading" {
			t.Errorf("focus when READY is on %q", got)
		}
		carol.keys("\t")
		if got := carol.focused(); got != "input#product" {
			t.Fatalf("Tab from the heading reached %q, want the product field", got)
		}
		carol.keys("\t")
		if got := carol.focused(); got != "input#quantity" {
			t.Fatalf("second Tab reached %q, want the quantity field", got)
		}
		carol.keys("\r") // Enter in a field submits the form
		carol.waitState("done", 5*time.Second)

		// Every field has a label; every control is a real button.
		var unlabelled []string
		carol.mustEval(`[...document.querySelectorAll('input')].filter(i => !i.labels || i.labels.length === 0).map(i => i.id)`, &unlabelled)
		if len(unlabelled) > 0 {
			t.Errorf("inputs without a label: %v", unlabelled)
		}
		var fakeButtons int
		carol.mustEval(`document.querySelectorAll('[onclick], div[role=button], a[role=button]').length`, &fakeButtons)
		if fakeButtons > 0 {
			t.Errorf("%d controls are not real buttons", fakeButtons)
		}
	})

	t.Run("a full line says so and retries after Retry-After", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("b-full", map[string]any{"paused": true, "capacity": 1})
		if r := in.do("POST", "/api/v1/queues/b-full/entries", in.as("first"), nil); r.status != 200 {
			t.Fatalf("first in: %d %s", r.status, r.raw)
		}
		dave := newVisitor(t, browser, in, "en")
		dave.open("/q/b-full")
		dave.waitState("full", joinWithin)
		if got := dave.text("#full-heading"); got != "The line is full right now" {
			t.Errorf("heading = %q", got)
		}
		retry := dave.text("#full-retry-in")
		var n int
		if _, err := fmt.Sscanf(retry, "We'll try again for you in %d s", &n); err != nil || n < 28 || n > 30 {
			t.Errorf("retry text = %q, want a countdown from Retry-After (30 s)", retry)
		}
		// The page's first POST asked for the challenge (403); solved, the
		// second met the full line.
		if p := dave.polls(); len(p) != 2 || p[0].Status != 403 || p[1].Status != 429 {
			t.Errorf("requests: %+v, want 403 (challenge) then one 429 (the retry waits for Retry-After)", p)
		}
	})

	t.Run("Korean by Accept-Language, English by ?lang=", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("b-ko", map[string]any{"paused": true})
		eun := newVisitor(t, browser, in, "ko-KR,ko;q=0.9,en;q=0.5")
		eun.open("/q/b-ko")
		eun.waitState("waiting", joinWithin)
		var lang string
		eun.mustEval(`document.documentElement.lang`, &lang)
		if lang != "ko" {
			t.Errorf("html lang = %q, want ko", lang)
		}
		for css, want := range map[string]string{
			"#waiting-heading": "대기 중입니다",
			".place-number":    "1번째",
			"#ahead":           "다음 차례입니다",
			"#eta":             "잠시 멈춤",
		} {
			if got := eun.text(css); got != want {
				t.Errorf("%s = %q, want %q", css, got, want)
			}
		}
		eun.checkFontsCover("#waiting-heading", testenv.KoreanFonts(t))
		var announced string
		eun.waitUntil("the live region", `document.getElementById('announcer').textContent !== ''`, 2*time.Second)
		eun.mustEval(`document.getElementById('announcer').getAttribute('aria-live') + ': ' + document.getElementById('announcer').textContent`, &announced)
		if announced != "polite: 현재 1번째입니다." {
			t.Errorf("live region: %q", announced)
		}

		eun.open("/q/b-ko?lang=en")
		eun.waitState("waiting", joinWithin)
		if got := eun.text("#waiting-heading"); got != "You're in line" {
			t.Errorf("with ?lang=en the heading is %q", got)
		}
		if got := eun.text("#position"); got != "1" {
			t.Errorf("position after switching language = %q, want 1", got)
		}
	})

	t.Run("a countdown to the opening, then a place", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		// Far enough ahead that both pages are surely still before it on a
		// loaded machine (4 s was not: the second page loaded after it);
		// the admin then opens the line early by clearing opensAt.
		opensAt := time.Now().Add(40 * time.Second).UTC()
		in.putQueue("b-open", map[string]any{"opensAt": opensAt.Format(time.RFC3339Nano), "paused": true})
		en, ko := newVisitor(t, browser, in, "en"), newVisitor(t, browser, in, "ko")
		en.open("/q/b-open")
		ko.open("/q/b-open")
		for v, want := range map[*visitor]string{en: "Opens in 0:", ko: "후 오픈"} {
			v.waitState("opening", joinWithin)
			if got := v.text("#opens-in"); !strings.Contains(got, want) {
				t.Errorf("the countdown says %q, want %q in it; %s", got, want, v.screen())
			}
		}
		// The page counts down; once the line has opened, its next poll
		// shows the place drawn for it.
		first := en.text("#opens-in")
		en.waitUntil("the countdown to move", `document.getElementById('opens-in').textContent !== `+jsString(first), 3*time.Second)
		in.patchQueue("b-open", map[string]any{"opensAt": ""})
		en.waitState("waiting", 30*time.Second)
		if got := en.text("#position"); got != "1" && got != "2" {
			t.Errorf("place after the opening = %q, want 1 or 2 (two entered)", got)
		}
	})

	t.Run("a line that draws shows no place, then one after a switch to fifo", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("b-draw", map[string]any{"queueingMethod": "random", "paused": true})
		en, ko := newVisitor(t, browser, in, "en"), newVisitor(t, browser, in, "ko")
		en.open("/q/b-draw")
		en.waitState("waiting", joinWithin)
		ko.open("/q/b-draw")
		ko.waitState("waiting", joinWithin)
		const drawnShown = `document.getElementById('place').hidden && document.getElementById('progress').hidden &&
			!document.getElementById('draw-note').hidden`
		for _, v := range []*visitor{en, ko} {
			v.waitUntil("the draw's note instead of a place", drawnShown, 10*time.Second)
		}
		if got := en.text("#draw-note"); !strings.Contains(got, "draw") {
			t.Errorf("the draw's note says %q", got)
		}
		if got := ko.text("#draw-note"); !strings.Contains(got, "추첨") {
			t.Errorf("the Korean draw's note says %q", got)
		}
		var title, foot string
		en.mustEval(`document.title`, &title)
		en.mustEval(`document.querySelector('footer.foot').textContent`, &foot)
		if !strings.HasPrefix(title, "In the draw") || foot != "Everyone in line has the same chance at each draw." {
			t.Errorf("title %q, footer %q in a drawn line", title, foot)
		}
		// random → fifo: the place is told again, by ticket.
		in.patchQueue("b-draw", map[string]any{"queueingMethod": "fifo"})
		en.waitUntil("the place again", `!document.getElementById('place').hidden && document.getElementById('draw-note').hidden &&
			document.getElementById('position').textContent === '1'`, 15*time.Second)
		en.mustEval(`document.querySelector('footer.foot').textContent`, &foot)
		if foot != "Everyone gets in in the order they arrived." {
			t.Errorf("footer after the switch to fifo: %q", foot)
		}
	})

	t.Run("a stalled line is said", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("b-stall", map[string]any{"maxActiveTokens": 1})
		in.do("POST", "/api/v1/queues/b-stall/entries", in.as("b-holder"), nil)
		in.waitReady("b-stall", "b-holder")
		v := newVisitor(t, browser, in, "en")
		v.open("/q/b-stall")
		v.waitState("waiting", joinWithin)
		// Its polls come every 2 s; the line is stalled after 2 s.
		v.waitUntil("the stalled note", `!document.getElementById('stalled-note').hidden`, 15*time.Second)
		if got := v.text("#eta"); got != "Not moving right now" {
			t.Errorf("estimate while stalled = %q", got)
		}
		in.do("DELETE", "/api/v1/queues/b-stall/entries/me", in.as("b-holder"), nil)
		v.waitState("ready", 15*time.Second)
	})

	t.Run("admin page: live stats, pause, rate", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("b-admin", map[string]any{"paused": true})
		for _, u := range []string{"a1", "a2", "a3"} {
			in.do("POST", "/api/v1/queues/b-admin/entries", in.as(u), nil)
		}
		op := signedInAdmin(t, browser, in)
		card := `[data-queue="b-admin"]`
		op.waitUntil("the b-admin card", `document.querySelector('`+card+`')`, 5*time.Second)
		if got := op.text(card + ` [data-field="length"]`); got != "3" {
			t.Errorf("length on the card = %q, want 3", got)
		}
		in.patchQueue("b-admin", map[string]any{"maxActiveTokens": 50})
		op.waitUntil("the token cap on the card", `document.querySelector('`+card+` [data-field="active"]').textContent === '0 of 50'`, 5*time.Second)
		if got := op.text(card + " .badge"); got != "Paused" {
			t.Errorf("badge = %q, want Paused", got)
		}
		var stored string
		op.mustEval(`sessionStorage.getItem('waitroom:admin-token')`, &stored)
		if stored != in.admin {
			t.Errorf("the token is not kept in sessionStorage")
		}

		op.click(card + " .pause-button") // Resume
		op.waitUntil("the badge to say Admitting", `document.querySelector('`+card+` .badge').textContent === 'Admitting'`, 5*time.Second)
		if r := in.do("GET", "/admin/v1/queues/b-admin", in.adminAuth(), nil); r.body["paused"] != false {
			t.Errorf("after Resume the queue is %s", r.raw)
		}
		op.waitUntil("the line to empty", `document.querySelector('`+card+` [data-field="length"]').textContent === '0'`, 6*time.Second)

		op.typeInto(card+" .rate-input", "7\r")
		op.waitUntil("the saved rate", `document.querySelector('`+card+` [data-field="configured"]').textContent === '7/s configured'`, 5*time.Second)
		if r := in.do("GET", "/admin/v1/queues/b-admin", in.adminAuth(), nil); r.num("ratePerSecond") != 7 {
			t.Errorf("rate after Apply: %s", r.raw)
		}
		op.typeInto(card+" .rate-input", "1000\r") // × 100 ms > batch 10: refused
		op.waitUntil("the refusal", `document.querySelector('`+card+` .qmessage').classList.contains('is-error')`, 5*time.Second)

		// Every setting has a field, built from the server's table; a
		// change is saved with the others left as they are, and a refused
		// one is said.
		op.click(card + " .settings summary")
		var fields []string
		op.mustEval(`[...document.querySelectorAll('`+card+` .setting')].map(e => e.dataset.setting)`, &fields)
		var writable []string
		for _, s := range queue.Settings {
			if !s.ReadOnly {
				writable = append(writable, s.Name)
			}
		}
		if !slices.Equal(fields, writable) {
			t.Errorf("the settings form has %v, the server's settings are %v", fields, writable)
		}
		op.typeInto(card+` [name="abandonAfterSeconds"]`, "30")
		op.click(card + ` [name="adaptive"]`)
		// A choice is a list of its values, named in the page's language.
		var choices []string
		op.mustEval(`[...document.querySelectorAll('`+card+` select[name="entry"] option')].map(o => o.value + ': ' + o.textContent)`, &choices)
		if want := []string{"any: Anyone", "challenge: Proof of work for anonymous", "signed: Signed-in only"}; !slices.Equal(choices, want) {
			t.Errorf("the entry choices are %q, want %q", choices, want)
		}
		op.mustEval(`(() => { const e = document.querySelector('`+card+` select[name="entry"]'); e.focus(); e.value = 'signed';
			e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, nil)
		cost := in.do("GET", "/admin/v1/queues/b-admin", in.adminAuth(), nil).num("challengeCost")
		op.click(card + " .settings-form button")
		op.waitUntil("the saved settings", `document.querySelector('`+card+` .qmessage').textContent === 'Saved.'`, 5*time.Second)
		if r := in.do("GET", "/admin/v1/queues/b-admin", in.adminAuth(), nil); r.num("abandonAfterSeconds") != 30 || r.body["adaptive"] != true ||
			r.num("ratePerSecond") != 7 || r.str("entry") != "signed" || r.num("challengeCost") != cost {
			t.Errorf("after saving the settings form: %s", r.raw)
		}
		op.typeInto(card+` [name="abandonAfterSeconds"]`, "7")
		op.click(card + " .settings-form button")
		op.waitUntil("the refusal naming the setting", `document.querySelector('`+card+` .qmessage').textContent.includes('abandonAfterSeconds')`, 5*time.Second)
		// Adaptive now: the card says so with the rate in force (it starts
		// at half the configured 7/s) and the target, and the rate chart
		// has the change as a point.
		op.waitUntil("the adaptive rate on the card", `document.querySelector('`+card+` [data-field="configured"]').textContent === '3.5/s adaptive (target 250 ms)'`, 5*time.Second)
		op.waitUntil("points in the rate chart", `document.querySelector('`+card+` .chart-rate .chart-line').getAttribute('d').split('L').length >= 2`, 8*time.Second)

		// The chart has a point per 2 s sample: 3 and more after 4 s.
		op.waitUntil("three samples in the chart", `document.querySelector('`+card+` .chart-line').getAttribute('d').split('L').length >= 3`, 8*time.Second)

		// A queue watched since before the page opened: the chart has
		// those minutes at once (here the server samples every 100 ms).
		// Twenty of them: the page's own samples, one per 2 s, would take
		// longer than any wait to make as many.
		hist := boot(t, backend{name: "embedded"}, func(c *app.Config) { c.HistoryInterval = 100 * time.Millisecond })
		hist.putQueue("b-hist", map[string]any{"paused": true})
		hist.do("POST", "/api/v1/queues/b-hist/entries", hist.as("h1"), nil)
		waitFor(t, "twenty samples of b-hist on the server", func() bool {
			points, _ := hist.do("GET", "/admin/v1/queues/b-hist/history", hist.adminAuth(), nil).body["points"].([]any)
			return len(points) >= 20
		})
		op2 := signedInAdmin(t, browser, hist)
		op2.waitUntil("the chart seeded with the server's samples",
			`(document.querySelector('[data-queue="b-hist"] .chart-line')?.getAttribute('d') || '').split('L').length >= 20`, 3*time.Second)

		op.click("#sign-out")
		op.waitUntil("the sign-in form again", `!document.getElementById('login').hidden`, 2*time.Second)
		op.mustEval(`sessionStorage.getItem('waitroom:admin-token') ?? ''`, &stored)
		if stored != "" {
			t.Errorf("sign-out left the token in sessionStorage")
		}
	})

	t.Run("admin page: products, their stock and orders", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		sale := shop{in}
		in.putQueue("b-shop", map[string]any{})
		in.putProduct("b-mug", "Mug", 3, "b-shop")
		sale.buy("b-shop", "b-mug", "mug-buyer-1")

		op := signedInAdmin(t, browser, in)
		op.click("#tab-products")
		row := `[data-product="b-mug"]`
		op.waitUntil("the mug's row", `document.querySelector('`+row+`')`, 5*time.Second)
		cell := func(id, field string) string {
			return op.text(`[data-product="` + id + `"] [data-field="` + field + `"]`)
		}
		for field, want := range map[string]string{"name": "Mug", "queue": "b-shop", "stock": "2", "orders": "1"} {
			if got := cell("b-mug", field); got != want {
				t.Errorf("the mug's %s shows %q, want %q", field, got, want)
			}
		}
		// The embedded default's demo product, untouched by these tests.
		if got := cell("tee", "stock") + " / " + cell("tee", "orders"); got != "1,000 / 0" {
			t.Errorf("the demo product tee shows stock / orders %q, want 1,000 / 0", got)
		}
		var current string
		op.mustEval(`document.getElementById('tab-products').getAttribute('aria-current')`, &current)
		if current != "page" {
			t.Errorf("the Products tab is not marked current: %q", current)
		}

		// An order while the page is open shows at its next refresh.
		sale.buy("b-shop", "b-mug", "mug-buyer-2")
		op.waitUntil("the second order", `document.querySelector('`+row+` [data-field="orders"]').textContent === '2'`, 12*time.Second)

		// A product made elsewhere shows up in its place without taking the
		// focus from someone typing in another row.
		op.typeInto(row+" .restock-input", "5")
		in.putProduct("b-aaa", "First", 1, "")
		op.waitUntil("the new row", `document.querySelector('[data-product="b-aaa"]')`, 12*time.Second)
		var focused bool
		op.mustEval(`document.activeElement === document.querySelector('`+row+` .restock-input')`, &focused)
		if !focused {
			t.Errorf("a new row took the focus away to %s", op.focused())
		}

		// Restocking adds to what is left.
		op.typeInto(row+" .restock-input", "5\r")
		op.waitUntil("the restocked stock", `document.querySelector('`+row+` [data-field="stock"]').textContent === '6'`, 5*time.Second)
		if got := sale.stock("b-mug"); got != 6 {
			t.Errorf("stock after adding 5 to 1: %d, want 6", got)
		}
		if got := op.text(row + " .restock-message"); got != "Added 5: 6 in stock." {
			t.Errorf("restock message %q", got)
		}
		// A restock the server refuses says why and changes nothing.
		op.typeInto(row+" .restock-input", "1000000000\r")
		op.waitUntil("the refusal", `document.querySelector('`+row+` .restock-message').classList.contains('is-error')`, 5*time.Second)
		if got := sale.stock("b-mug"); got != 6 {
			t.Errorf("stock after a refused restock: %d, want 6", got)
		}

		// A new product, through the form.
		op.typeInto("#new-product-id", "b-cap2")
		op.typeInto("#new-product-name", "Wool cap")
		op.typeInto("#new-product-stock", "7")
		op.typeInto("#new-product-queue", "b-shop")
		op.click("#product-form button[type=submit]")
		op.waitUntil("the new product's row", `document.querySelector('[data-product="b-cap2"]')`, 5*time.Second)
		if r := in.do("GET", "/api/v1/products/b-cap2", "", nil); r.str("name") != "Wool cap" || r.num("stock") != 7 || r.str("queue") != "b-shop" {
			t.Errorf("the product made by the form: %s", r.raw)
		}
		// An id that exists is refused on the page: saving it would set its
		// stock over the orders taken.
		op.typeInto("#new-product-id", "b-mug")
		op.typeInto("#new-product-name", "Mug again")
		op.typeInto("#new-product-stock", "100")
		op.click("#product-form button[type=submit]")
		op.waitUntil("the refusal", `document.getElementById('product-message').classList.contains('is-error')`, 5*time.Second)
		if got := sale.stock("b-mug"); got != 6 {
			t.Errorf("stock after creating an existing id: %d, want 6", got)
		}

		// A reload stays on the products.
		if err := chromedp.Do(op.ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		op.waitUntil("the products after a reload", `!document.getElementById('products-screen').hidden && document.querySelector('`+row+`')`, 5*time.Second)
	})

	t.Run("admin page in gateway mode: queues, no products", func(t *testing.T) {
		t.Parallel()
		p := bootProxy(t, backend{name: "embedded"}, newUpstreamShop(t, 1), nil)
		op := signedInAdminAt(t, browser, p.instance, gwPrefix+"/admin#products")
		op.waitUntil("the default queue's card", `document.querySelector('[data-queue="default"]')`, 5*time.Second)
		var shown map[string]bool
		op.mustEval(`({tabs: !document.getElementById('tabs').hidden, queues: !document.getElementById('queues-screen').hidden,
			products: !document.getElementById('products-screen').hidden})`, &shown)
		if diff := cmp.Diff(map[string]bool{"tabs": false, "queues": true, "products": false}, shown); diff != "" {
			t.Errorf("shown in gateway mode, which sells nothing itself (-want +got):\n%s", diff)
		}
	})

	t.Run("admin page: a new queue from the server's settings", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		op := signedInAdmin(t, browser, in)
		op.waitUntil("the default queue's card", `document.querySelector('[data-queue="default"]')`, 5*time.Second)

		// The form's fields are the admin API's queue settings: every
		// property of openapi.yaml's QueueConfig, each with a label, showing
		// the default GET /admin/v1/queue-settings declares for it.
		var want []string
		for name := range loadOpenAPI(t).doc.Components.Schemas["QueueConfig"].Value.Properties {
			want = append(want, name)
		}
		op.click("#new-queue")
		op.waitUntil("the new-queue form", `document.getElementById('queue-dialog').open`, 5*time.Second)
		var got []string
		op.mustEval(`[...document.querySelectorAll('#queue-settings input, #queue-settings select, #queue-settings textarea:not([data-message-lang])')].filter(i => i.labels.length === 1 && i.labels[0].textContent.trim() !== '').map(i => i.name)`, &got)
		if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("the form's labelled settings differ from QueueConfig's properties (-api +form):\n%s", diff)
		}
		formValues := func(form string) map[string]any {
			t.Helper()
			var out map[string]any
			op.mustEval(`Object.fromEntries([...document.querySelectorAll(`+jsString(form+" .setting input, "+form+" .setting select, "+form+" .setting textarea:not([data-message-lang])")+`)].map(i =>
				[i.name, i.type === 'checkbox' ? i.checked : i.type === 'number' ? Number(i.value) : i.value]))`, &out)
			return out
		}
		defaults := map[string]any{}
		for _, s := range in.do("GET", "/admin/v1/queue-settings", in.adminAuth(), nil).body["settings"].([]any) {
			s := s.(map[string]any)
			if s["readOnly"] != true {
				defaults[s["name"].(string)] = s["default"]
			}
			if s["kind"] == "date-time" && s["default"] == nil {
				defaults[s["name"].(string)] = "" // none: an empty field
			}
		}
		if diff := cmp.Diff(defaults, formValues("#queue-form")); diff != "" {
			t.Errorf("the new-queue form opens with (-defaults +form):\n%s", diff)
		}

		// A config the server refuses: the form says why, stays open, and
		// no queue is made.
		op.typeInto("#queue-name", "b-form")
		op.typeInto(`#queue-form [name="ratePerSecond"]`, "1000") // × 100 ms > batch 10
		op.click("#queue-form button[type=submit]")
		op.waitUntil("the refusal", `document.getElementById('queue-message').classList.contains('is-error')`, 5*time.Second)
		if msg := op.text("#queue-message"); !strings.Contains(msg, "batch") {
			t.Errorf("refusal message %q does not say what is wrong", msg)
		}
		if r := in.do("GET", "/admin/v1/queues/b-form", in.adminAuth(), nil); r.status != 404 {
			t.Errorf("after a refused new queue: %d %s", r.status, r.raw)
		}
		op.keys(kb.Escape)
		op.waitUntil("Escape to close the form", `!document.getElementById('queue-dialog').open`, 5*time.Second)

		// A new queue with every setting.
		op.click("#new-queue")
		op.waitUntil("the new-queue form", `document.getElementById('queue-dialog').open`, 5*time.Second)
		if got := formValues("#queue-form")["ratePerSecond"]; got != defaults["ratePerSecond"] {
			t.Errorf("the form opens again with rate %v, want the default %v", got, defaults["ratePerSecond"])
		}
		op.typeInto("#queue-name", "b-form")
		for field, v := range map[string]string{"ratePerSecond": "5", "batchSize": "1", "intervalMs": "200",
			"capacity": "50", "tokenTtlSeconds": "60", "maxActiveTokens": "3", "minRatePerSecond": "2",
			"maxRatePerSecond": "5", "targetLatencyMs": "400", "abandonAfterSeconds": "20", "challengeCost": "1500"} {
			op.typeInto(`#queue-form [name="`+field+`"]`, v)
		}
		op.mustEval(`(() => { const e = document.querySelector('#queue-form select[name="entry"]'); e.value = 'signed';
			e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, nil)
		op.click(`#queue-form [name="paused"]`)
		op.click(`#queue-form [name="adaptive"]`)
		// A datetime-local field takes no typed text the same way in every
		// locale: set it as the browser's picker would.
		const opensLocal = "2031-05-01T10:00:30"
		op.mustEval(`document.querySelector('#queue-form [name="opensAt"]').value = '`+opensLocal+`'`, nil)
		var opensISO string
		op.mustEval(`new Date('`+opensLocal+`').toISOString()`, &opensISO)
		opensAt, err := time.Parse(time.RFC3339Nano, opensISO)
		if err != nil {
			t.Fatal(err)
		}
		op.click("#queue-form button[type=submit]")
		card := `[data-queue="b-form"]`
		op.waitUntil("the new queue's card", `!document.getElementById('queue-dialog').open && document.querySelector('`+card+`')`, 5*time.Second)
		wantConfig := map[string]any{"ratePerSecond": 5.0, "batchSize": 1.0, "intervalMs": 200.0, "capacity": 50.0,
			"tokenTtlSeconds": 60.0, "maxActiveTokens": 3.0, "paused": true, "adaptive": true, "minRatePerSecond": 2.0,
			"maxRatePerSecond": 5.0, "targetLatencyMs": 400.0, "abandonAfterSeconds": 20.0, "entry": "signed", "challengeCost": 1500.0,
			"message": "", "queueingMethod": "fifo", "sessionMaxSeconds": 0.0}
		config := func() map[string]any {
			t.Helper()
			r := in.do("GET", "/admin/v1/queues/b-form", in.adminAuth(), nil)
			out := map[string]any{}
			for k := range wantConfig {
				out[k] = r.body[k]
			}
			if at, err := time.Parse(time.RFC3339Nano, r.str("opensAt")); err != nil || !at.Equal(opensAt) {
				t.Errorf("opensAt %q, want %s", r.str("opensAt"), opensISO)
			}
			return out
		}
		if diff := cmp.Diff(wantConfig, config()); diff != "" {
			t.Errorf("the queue the form made (-want +got):\n%s", diff)
		}

		// Its card's settings form (the one place to change them) shows
		// its values; Save sends what the operator changed, and keeps what
		// someone else changed meanwhile.
		op.click(card + " .settings summary")
		shown := formValues(card)
		if shown["opensAt"] != opensLocal {
			t.Errorf("the card's form shows opensAt %v, want %s", shown["opensAt"], opensLocal)
		}
		delete(shown, "opensAt")
		for _, s := range queue.Settings { // the other instants were not set
			if _, set := wantConfig[s.Name]; s.Kind == queue.Instant && !set && shown[s.Name] == "" {
				delete(shown, s.Name)
			}
		}
		if diff := cmp.Diff(wantConfig, shown); diff != "" {
			t.Errorf("the card's form shows (-queue +form):\n%s", diff)
		}
		op.typeInto(card+` [name="capacity"]`, "70")
		in.patchQueue("b-form", map[string]any{"maxActiveTokens": 9})
		op.waitUntil("the other change on the card", `document.querySelector('`+card+` [data-field="active"]').textContent === '0 of 9'`, 5*time.Second)
		op.click(card + ` [name="paused"]`)
		op.click(card + " .settings-form button")
		op.waitUntil("the saved settings", `document.querySelector('`+card+` .qmessage').textContent === 'Saved.'`, 5*time.Second)
		wantConfig["capacity"], wantConfig["paused"], wantConfig["maxActiveTokens"] = 70.0, false, 9.0
		if diff := cmp.Diff(wantConfig, config()); diff != "" {
			t.Errorf("after Save (-want +got):\n%s", diff)
		}

		// A new queue under a name in use is refused on the page: PUT would
		// replace that queue's whole config.
		op.click("#new-queue")
		op.waitUntil("the new-queue form", `document.getElementById('queue-dialog').open`, 5*time.Second)
		op.typeInto("#queue-name", "b-form")
		op.click("#queue-form button[type=submit]")
		op.waitUntil("the refusal", `document.getElementById('queue-message').classList.contains('is-error')`, 5*time.Second)
		if diff := cmp.Diff(wantConfig, config()); diff != "" {
			t.Errorf("after a new queue of the same name (-want +got):\n%s", diff)
		}
		op.click("#queue-cancel")
		op.waitUntil("Cancel to close the form", `!document.getElementById('queue-dialog').open`, 5*time.Second)
	})
}

// signedInAdmin opens the admin page of in and signs in with its token.
func signedInAdmin(t *testing.T, browser context.Context, in *instance) *visitor {
	t.Helper()
	return signedInAdminAt(t, browser, in, "/admin")
}

// signedInAdminAt is signedInAdmin for an admin page at path.
func signedInAdminAt(t *testing.T, browser context.Context, in *instance, path string) *visitor {
	t.Helper()
	op := newVisitor(t, browser, in, "en")
	op.open(path)
	op.waitUntil("the sign-in form", `!document.getElementById('login').hidden`, 5*time.Second)
	op.typeInto("#token", in.admin)
	op.keys("\r")
	op.waitUntil("the dashboard", `!document.getElementById('dash').hidden`, 5*time.Second)
	return op
}

// checkFontsCover fails unless the text of the element css is drawn with
// fonts among families (by Chromium's own account of the fonts it used),
// apart from the odd space or digit a fallback may draw.
func (v *visitor) checkFontsCover(css string, families map[string]bool) {
	v.t.Helper()
	ids, err := chromedp.Run(v.ctx, chromedp.QueryNodeIDs(chromedp.CSS(css)))
	if err != nil || len(ids) == 0 {
		v.t.Fatalf("%s: %v", css, err)
	}
	if _, err := chromedp.Call(v.ctx, cdpcss.Enable, cdp.Empty{}); err != nil {
		v.t.Fatal(err)
	}
	// Chromium reports the fonts of text it has drawn: on a busy machine
	// the first frames may not be, so ask until it has (two frames later).
	var res cdpcss.GetPlatformFontsForNodeResult
	for deadline := time.Now().Add(10 * time.Second); len(res.Fonts) == 0 && time.Now().Before(deadline); {
		v.mustEval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil)
		res, err = chromedp.Call(v.ctx, cdpcss.GetPlatformFontsForNode, cdpcss.GetPlatformFontsForNodeParams{NodeID: ids[0]})
		if err != nil {
			v.t.Fatal(err)
		}
	}
	var covered, all float64
	var used []string
	for _, f := range res.Fonts {
		all += f.GlyphCount
		used = append(used, fmt.Sprintf("%s (%g glyphs)", f.FamilyName, f.GlyphCount))
		if families[f.FamilyName] {
			covered += f.GlyphCount
		}
	}
	text := []rune(v.text(css))
	if covered < float64(len(text))-2 || all == 0 {
		v.t.Errorf("%s (%q) is drawn with %v; want fonts covering its script, one of %v", css, string(text), used, families)
	}
}

// ---------------------------------------------------------------- admin helpers

func (in *instance) putQueue(name string, cfg map[string]any) {
	in.t.Helper()
	if r := in.do("PUT", "/admin/v1/queues/"+name, in.adminAuth(), cfg); r.status != 200 {
		in.t.Fatalf("PUT queue %s: %d %s", name, r.status, r.raw)
	}
}

func (in *instance) patchQueue(name string, patch map[string]any) {
	in.t.Helper()
	if r := in.do("PATCH", "/admin/v1/queues/"+name, in.adminAuth(), patch); r.status != 200 {
		in.t.Fatalf("PATCH queue %s: %d %s", name, r.status, r.raw)
	}
}

func (in *instance) putProduct(id, name string, stock int, queue string) {
	in.t.Helper()
	body := map[string]any{"name": name, "stock": stock, "queue": queue}
	if r := in.do("PUT", "/admin/v1/products/"+id, in.adminAuth(), body); r.status != 200 {
		in.t.Fatalf("PUT product %s: %d %s", id, r.status, r.raw)
	}
}
