package apptest

// A person with a browser: Debian's chromium, headless, driven by
// chromedp, against an instance booted on :0. Outside CI the tests that
// start one skip when chromium is missing; under CI they fail
// (scripts/test.sh installs it): testenv.Chromium.

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
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/testenv"
)

// StartBrowser starts one headless chromium with a fresh profile for the test.
func StartBrowser(t *testing.T) context.Context {
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

// Visitor is one person with a browser: their own browser context (cookie
// jar, sessionStorage) and tab.
type Visitor struct {
	T    *testing.T
	Ctx  context.Context
	base string

	mu   sync.Mutex
	reqs []LineRequest // the tab's requests to the line, from the network events
}

// LineRequest is one request to /api/v1/queues/{q}/entries[/me], or to
// the line's front document (Front: the same for everyone, no one's own
// request), as the browser saw it leave.
type LineRequest struct {
	Method string
	Front  bool
	At     float64 // seconds, the browser's monotonic clock
	// loader is the document that sent it: after a reload, a request the
	// old document sent (or whose event arrived late) is not the new one's.
	Loader cdp.LoaderID
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

// NewVisitor opens a tab in a fresh browser context that asks for
// acceptLanguage ("" for the browser's default).
func NewVisitor(t *testing.T, browser context.Context, in *Instance, acceptLanguage string) *Visitor {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	v := &Visitor{T: t, Ctx: ctx, base: in.Base}
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
		front := strings.HasSuffix(u.Path, "/front")
		// The page's visibility beacons (…/entries/me/presence) are no
		// requests for a place: the polls' rules do not hold them.
		if err != nil || !strings.HasPrefix(u.Path, "/api/v1/queues/") || !strings.Contains(u.Path, "/entries") && !front ||
			strings.HasSuffix(u.Path, "/presence") {
			return
		}
		v.mu.Lock()
		v.reqs = append(v.reqs, LineRequest{Method: e.Request.Method, Front: front, At: e.Timestamp.Float64(), Loader: e.LoaderID})
		v.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Open loads a page of the instance (until its load event); what the
// page's script does next, the caller waits for with WaitState/WaitUntil.
func (v *Visitor) Open(path string) {
	v.T.Helper()
	ctx, cancel := context.WithTimeout(v.Ctx, callWithin)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(v.base+path)); err != nil {
		v.T.Fatalf("open %s: %v", path, err)
	}
}

// Eval evaluates a JavaScript expression and decodes its JSON value into out.
func (v *Visitor) Eval(expr string, out any) error {
	ctx, cancel := context.WithTimeout(v.Ctx, callWithin)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// MustEval is Eval, failing the test on an error.
func (v *Visitor) MustEval(expr string, out any) {
	v.T.Helper()
	if err := v.Eval(expr, out); err != nil {
		v.T.Fatalf("evaluating %s: %v", expr, err)
	}
}

// WaitUntil evaluates a JavaScript condition every 50 ms until it is true,
// for timeout and at least minWait. (chromedp's Poll builds its predicate
// with new Function, which the page's Content-Security-Policy rightly
// forbids.)
func (v *Visitor) WaitUntil(what, cond string, timeout time.Duration) {
	v.T.Helper()
	timeout = max(timeout, minWait)
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		err := v.Eval("!!("+cond+")", &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			v.T.Fatalf("%s: still not true after %s (%s; last error: %v); on screen: %s",
				what, timeout, cond, err, v.Screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// State is the page's visible card (data-state): joining, waiting, ready, …
func (v *Visitor) State() string {
	var s string
	v.Eval(`document.querySelector('[data-state]:not([hidden])')?.dataset.state ?? ''`, &s)
	return s
}

// minWait is the least any wait for the page is given: a timeout names
// what the page takes on a quiet machine, and a loaded two-core CI machine
// may take ten times as long. Waiting is polled, so a long bound costs
// nothing when the page is quick.
const minWait = 30 * time.Second

// callWithin bounds one call to the browser (a load, an evaluation, an
// audit): far beyond what a loaded machine takes (an audit, 5 s), so that a
// browser that stops answering fails the test that asked, with what it
// asked, instead of hanging the package until go test's timeout.
const callWithin = 2 * time.Minute

// JoinWithin bounds a page's way into the line: the proof of work it
// solves in Web Workers takes a median 1.2 s on a quiet machine
// (docs/security.md), but it is CPU-bound, and on a loaded two-core CI
// machine one join took over 5 s. Waiting is polled, so a long bound costs
// nothing when the page is quick.
const JoinWithin = 30 * time.Second

// WaitState waits until the page shows the card named state.
func (v *Visitor) WaitState(state string, timeout time.Duration) {
	v.T.Helper()
	v.WaitUntil("page in state "+state,
		`document.querySelector('[data-state="`+state+`"]') && !document.querySelector('[data-state="`+state+`"]').hidden`, timeout)
}

// Text returns the trimmed text of the first element matching css.
func (v *Visitor) Text(css string) string {
	v.T.Helper()
	var s string
	v.MustEval(`(document.querySelector(`+JSString(css)+`)?.textContent ?? '').trim()`, &s)
	return s
}

// Screen describes the page for failure messages.
func (v *Visitor) Screen() string {
	var s string
	v.Eval(`(() => { const c = document.querySelector('[data-state]:not([hidden])') || document.querySelector('main');
		return (c ? (c.dataset.state || 'main') + ': ' + c.innerText : document.body.innerText).replace(/\s+/g, ' ').slice(0, 400); })()`, &s)
	return fmt.Sprintf("%q", s)
}

// PagePoll is one entry of window.__polls, the page's own record of its
// requests to the line.
type PagePoll struct {
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

// Polls is the page's record of its requests to the line (window.__polls).
func (v *Visitor) Polls() []PagePoll {
	v.T.Helper()
	var p []PagePoll
	v.MustEval(`window.__polls`, &p)
	return p
}

// DocumentRequests returns the line requests the network saw from the
// document the tab shows now.
func (v *Visitor) DocumentRequests() []LineRequest {
	v.T.Helper()
	tree, err := chromedp.Call(v.Ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil || tree.FrameTree == nil || tree.FrameTree.Frame == nil {
		v.T.Fatalf("frame tree: %+v, %v", tree, err)
	}
	loader := tree.FrameTree.Frame.LoaderID
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []LineRequest
	for _, r := range v.reqs {
		if r.Loader == loader {
			out = append(out, r)
		}
	}
	return out
}

// CheckPollGaps checks the requests the page now shown sent to the line
// (the network log and the page's own record, window.__polls): each came
// no sooner than the previous answer's pollAfterSeconds — and the page,
// on reading that answer, set its timer for exactly that long, not later
// (when the timer fires is the browser's, late on a loaded machine) — and
// the last answer was READY, with nothing to wait for. It returns the
// page's record.
func (v *Visitor) CheckPollGaps() []PagePoll {
	v.T.Helper()
	t := v.T
	// The network events arrive on their own, possibly after the page
	// recorded the request: wait for them rather than compare too early.
	var polls []PagePoll
	var reqs []LineRequest
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		polls, reqs = v.Polls(), v.DocumentRequests()
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
	v.MustEval(`window.__timeouts`, &timeouts)
	const tolerance = 0.05 // seconds: timer and event clock granularity
	for i := 1; i < len(polls); i++ {
		prev := polls[i-1]
		if prev.PollAfterSeconds == nil {
			t.Fatalf("request %d was sent after an answer without pollAfterSeconds: %+v", i, polls)
		}
		want := *prev.PollAfterSeconds
		if front := polls[i].Method == "FRONT"; polls[i].Method != "GET" && !front || reqs[i].Method != "GET" || reqs[i].Front != front {
			t.Errorf("request %d: %s/%s (front %v), want a GET status poll or a read of the front", i, polls[i].Method, reqs[i].Method, reqs[i].Front)
		}
		if want == 0 { // a read of the front that handed over to the instance at once
			continue
		}
		pageGap := (polls[i].SentAt - prev.SentAt) / 1000
		netGap := reqs[i].At - reqs[i-1].At
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

// Click clicks the first visible element matching css.
func (v *Visitor) Click(css string) {
	v.T.Helper()
	if err := chromedp.Do(v.Ctx, chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible)); err != nil {
		v.T.Fatalf("click %s: %v", css, err)
	}
}

// TypeInto replaces the value of a field by typing, as a person would.
func (v *Visitor) TypeInto(css, text string) {
	v.T.Helper()
	// Focus first (the admin page leaves a focused field alone when it
	// refreshes), empty it, then type: chromedp.Clear only resets the value
	// attribute, not what was typed before.
	err := chromedp.Do(v.Ctx,
		chromedp.Focus(chromedp.CSS(css)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+JSString(css)+`).value = ''`),
		chromedp.SendKeys(chromedp.CSS(css), text))
	if err != nil {
		v.T.Fatalf("typing into %s: %v", css, err)
	}
}

// Keys sends key presses to whatever has the focus.
func (v *Visitor) Keys(k string) {
	v.T.Helper()
	if err := chromedp.Do(v.Ctx, chromedp.KeyEvent(k)); err != nil {
		v.T.Fatalf("keys %q: %v", k, err)
	}
}

// Focused names the element that has the focus: its tag and #id.
func (v *Visitor) Focused() string {
	var s string
	v.Eval(`(() => { const e = document.activeElement; return e ? e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') : ''; })()`, &s)
	return s
}

// JSString is s as a JavaScript string literal.
func JSString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// SignedInAdmin opens the admin page of in and signs in with its token.
func SignedInAdmin(t *testing.T, browser context.Context, in *Instance) *Visitor {
	t.Helper()
	return SignedInAdminAt(t, browser, in, "/admin")
}

// SignedInAdminAt is SignedInAdmin for an admin page at path.
func SignedInAdminAt(t *testing.T, browser context.Context, in *Instance, path string) *Visitor {
	t.Helper()
	op := NewVisitor(t, browser, in, "en")
	op.Open(path)
	op.WaitUntil("the sign-in form", `!document.getElementById('login').hidden`, 5*time.Second)
	op.TypeInto("#token", in.AdminToken)
	op.Keys("\r")
	op.WaitUntil("the dashboard", `!document.getElementById('dash').hidden`, 5*time.Second)
	return op
}

// Axe audits the page as it is now with axe-core at WCAG 2.1 AA, less
// the rules named, and returns the violations ("rule (impact): targets"
// each). axe is axe-core's script (testenv.Axe), injected once per page.
func (v *Visitor) Axe(axe string, except ...string) ([]string, error) {
	v.T.Helper()
	var loaded bool
	if err := v.Eval(`typeof window.axe === 'object'`, &loaded); err != nil {
		return nil, err
	}
	if !loaded {
		// Evaluated through the DevTools protocol, which the page's
		// Content-Security-Policy does not govern.
		if err := v.Eval(axe+"\n;true", nil); err != nil {
			return nil, fmt.Errorf("injecting axe-core: %w", err)
		}
	}
	off := map[string]map[string]bool{}
	for _, r := range except {
		off[r] = map[string]bool{"enabled": false}
	}
	offJSON, _ := json.Marshal(off)
	var found []struct {
		ID     string   `json:"id"`
		Impact string   `json:"impact"`
		Nodes  []string `json:"nodes"`
	}
	err := v.Eval(`axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations'],
		rules: `+string(offJSON)+`})
		.then(r => r.violations.map(x => ({id: x.id, impact: x.impact, nodes: x.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary)})))`, &found)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, f := range found {
		out = append(out, fmt.Sprintf("%s (%s): %s", f.ID, f.Impact, strings.Join(f.Nodes, " | ")))
	}
	return out, nil
}
