package web_test

// The waiting-room and admin pages in a real browser: Debian's chromium,
// headless, driven by chromedp, against the real program booted on :0.
// Outside CI the tests skip when chromium is missing; under CI they fail
// (scripts/test.sh installs it).

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpcss "github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/testenv"
)

// ---------------------------------------------------------------- the tests

// isHex32 says whether s is 32 lowercase hex digits: a participant id or a
// salt.
func isHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// pausedWait is what the page says of the wait while admission is paused.
const pausedWait = "Not known right now The sale is paused"

func TestBrowser(t *testing.T) {
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	start := time.Now()
	t.Cleanup(func() { t.Logf("browser tests took %s", time.Since(start).Round(time.Millisecond)) })

	t.Run("wait, get in without a reload, order", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		// A paused queue holds everyone in line until the admin lets them in.
		// At 0.2/s the second place is 10 s away: Bob is told to come back
		// in 5 s ±20% rather than 2, so the pages see both bands.
		in.PutQueue("b-sale", map[string]any{"paused": true, "ratePerSecond": 0.2, "batchSize": 1})
		in.PutProduct("b-tee", "Tee", 5, "b-sale")
		in.PutProduct("b-gone", "Sold out", 0, "b-sale")

		alice := apptest.NewVisitor(t, browser, in, "en-US,en;q=0.9")
		alice.Open("/q/b-sale?product=b-tee")
		alice.WaitState("waiting", apptest.JoinWithin)
		if got := alice.Text("#position"); got != "1" {
			t.Fatalf("alice's position = %q, want 1; %s", got, alice.Screen())
		}
		if got := alice.Text("#queue-length"); got != "1" {
			t.Errorf("people in line = %q, want 1", got)
		}
		if got := alice.Text("#eta"); got != pausedWait {
			t.Errorf("estimate while paused = %q, want %q", got, pausedWait)
		}
		var pausedShown bool
		alice.MustEval(`!document.getElementById('paused-note').hidden`, &pausedShown)
		if !pausedShown {
			t.Errorf("the paused note is hidden on a paused queue")
		}

		// A second person, with their own cookie, is behind her.
		bob := apptest.NewVisitor(t, browser, in, "en")
		bob.Open("/q/b-sale")
		bob.WaitState("waiting", apptest.JoinWithin)
		if got := bob.Text("#position"); got != "2" {
			t.Fatalf("bob's position = %q, want 2; %s", got, bob.Screen())
		}
		if got := bob.Text("#queue-length"); got != "2" {
			t.Errorf("bob sees %q in line, want 2", got)
		}

		// A refresh enters again (idempotent) and keeps the place.
		if err := chromedp.Do(alice.Ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		alice.WaitState("waiting", apptest.JoinWithin)
		if got := alice.Text("#position"); got != "1" {
			t.Fatalf("after a refresh alice's position = %q, want 1", got)
		}
		if got := alice.Text("#eta"); got != pausedWait {
			t.Errorf("estimate = %q", got)
		}

		// Let her page poll a few times, then open the gate. The page must
		// turn READY by itself: the marker set now would not survive a reload.
		// Counted as CheckPollGaps counts them: a first POST answered 403
		// challenge_required is not a poll. Counting it let the gate open
		// with bob one poll short when his GET was held until READY.
		const threePolls = `window.__polls.filter(p => p.status !== 403).length >= 3`
		alice.WaitUntil("three requests to the line", threePolls, 10*time.Second)
		bob.WaitUntil("three requests to the line", threePolls, 20*time.Second)
		if got := bob.Text("#eta"); got != pausedWait {
			t.Errorf("bob's estimate while paused = %q", got)
		}
		alice.MustEval(`window.__sameDocument = true`, nil)
		in.PatchQueue("b-sale", map[string]any{"paused": false, "ratePerSecond": 100, "batchSize": 10})
		alice.WaitState("ready", 5*time.Second)
		var same bool
		alice.MustEval(`window.__sameDocument === true`, &same)
		if !same {
			t.Fatal("the page reloaded to become READY")
		}
		if got := alice.Text("#ready-heading"); got != "It's your turn" {
			t.Errorf("ready heading = %q", got)
		}
		if got := alice.Focused(); got != "h1#ready-heading" {
			t.Errorf("focus after READY is on %q, want the heading", got)
		}
		readyCount := len(alice.Polls())

		// Polls: never sooner than the previous answer's pollAfterSeconds,
		// by the page's own clock and by the browser's network events.
		polls := alice.CheckPollGaps()
		if polls[0].Method != "POST" || polls[0].State != "WAITING" {
			t.Errorf("after the refresh the page first sent %s → %s, want POST → WAITING", polls[0].Method, polls[0].State)
		}

		// The entry token buys the order; the page shows it (the product's
		// name arrives by a request of its own).
		alice.WaitUntil("the product's name", `document.getElementById('product-info').textContent.includes('Tee')`, 5*time.Second)
		alice.Click("#order-button")
		alice.WaitState("done", 5*time.Second)
		orderText := alice.Text("#order-number")
		if !strings.HasPrefix(orderText, "Order #") {
			t.Errorf("order number = %q", orderText)
		}
		if p := in.Do("GET", "/api/v1/products/b-tee", "", nil); p.Num("stock") != 4 {
			t.Errorf("stock after one order = %v, want 4", p.Num("stock"))
		}
		// READY means nothing more to wait for: no poll after it.
		if n := len(alice.DocumentRequests()); n != readyCount || len(alice.Polls()) != readyCount {
			t.Errorf("the page sent %d requests to the line after READY", n-readyCount)
		}

		// Bob got in as well, at his own pace. Sold out keeps his entry; he
		// then buys something else.
		bob.WaitState("ready", 8*time.Second)
		bobPolls := bob.CheckPollGaps()
		// His first answer (the instance's, or worked out from the front
		// document by the page) said when to look again.
		if p := bobPolls[0].PollAfterSeconds; bobPolls[0].State != "WAITING" || p == nil || *p < 4 || *p > 6 {
			t.Errorf("bob, 10 s away, was told %+v, want WAITING with pollAfterSeconds 5 ±20%%", bobPolls[0])
		}
		bob.TypeInto("#product", "b-gone")
		bob.Click("#order-button")
		bob.WaitUntil("the out-of-stock message", `document.getElementById('order-message').textContent.includes('entry is kept')`, 5*time.Second)
		if got := bob.State(); got != "ready" {
			t.Fatalf("after out of stock the page is %q, want still ready", got)
		}
		bob.TypeInto("#product", "b-tee")
		bob.TypeInto("#quantity", "2")
		// The receipt names the product from the page's own request for it,
		// sent when the field changed: wait for it as alice did, or an order
		// answered first is receipted by the product's id.
		bob.WaitUntil("the product's name", `document.getElementById('product-info').textContent.includes('Tee')`, 5*time.Second)
		bob.Click("#order-button")
		bob.WaitState("done", 5*time.Second)
		if got := bob.Text("#order-detail"); got != "2 × Tee" {
			t.Errorf("bob's receipt says %q, want 2 × Tee", got)
		}
		if got := bob.Text("#order-number"); got == orderText {
			t.Errorf("bob and alice share order %q", got)
		}
	})

	t.Run("the connection drops and comes back; a failed payment keeps the entry", func(t *testing.T) {
		t.Parallel()
		pay := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) { c.PaymentFailureRate = 1 })
		pay.PutQueue("b-pay", map[string]any{"paused": true})
		pay.PutProduct("b-pen", "Pen", 3, "b-pay")
		dave := apptest.NewVisitor(t, browser, pay, "en")
		dave.Open("/q/b-pay?product=b-pen")
		dave.WaitState("waiting", apptest.JoinWithin)

		// The network goes away: the next poll fails, the page says so and
		// keeps showing the place; when it is back the banner goes.
		block := func(on bool) {
			t.Helper()
			var patterns []*network.BlockPattern
			if on {
				patterns = []*network.BlockPattern{{URLPattern: "*://*:*/api/*", Block: true}}
			}
			if _, err := chromedp.Call(dave.Ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns}); err != nil {
				t.Fatal(err)
			}
		}
		block(true)
		dave.WaitUntil("the connection banner", `document.getElementById('banner').textContent.includes('Connection trouble')`, 10*time.Second)
		if got := dave.State(); got != "waiting" {
			t.Errorf("with the connection gone the page is %q, want still waiting", got)
		}
		if got := dave.Text("#position"); got != "1" {
			t.Errorf("with the connection gone the position shows %q, want 1", got)
		}
		block(false)
		dave.WaitUntil("the banner to go", `document.getElementById('banner').hidden`, 15*time.Second)

		// Let in, the payment fails: the page says so and the entry is kept.
		pay.PatchQueue("b-pay", map[string]any{"paused": false})
		dave.WaitState("ready", 8*time.Second)
		dave.Click("#order-button")
		dave.WaitUntil("the payment message", `document.getElementById('order-message').textContent.includes('payment did not go through')`, 5*time.Second)
		if got := dave.State(); got != "ready" {
			t.Errorf("after a failed payment the page is %q, want still ready", got)
		}
		if p := pay.Do("GET", "/api/v1/products/b-pen", "", nil); p.Num("stock") != 3 {
			t.Errorf("stock after a failed payment: %v, want 3", p.Num("stock"))
		}
	})

	t.Run("an expired token sends you back to the line; keyboard only", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("b-fast", map[string]any{})
		in.PutProduct("b-cap", "Cap", 3, "b-fast")

		carol := apptest.NewVisitor(t, browser, in, "en")
		carol.Open("/q/b-fast?product=b-cap")
		carol.WaitState("ready", apptest.JoinWithin)
		// The token goes away behind the page's back (as when it expires).
		var status int
		carol.MustEval(`fetch('/api/v1/queues/b-fast/entries/me', {method: 'DELETE'}).then(r => r.status)`, &status)
		if status != 204 {
			t.Fatalf("giving the token back: %d", status)
		}
		carol.Click("#order-button")
		carol.WaitState("expired", 5*time.Second)
		if got := carol.Text("#expired-heading"); got != "Your entry has expired" {
			t.Errorf("expired heading = %q", got)
		}
		if got := carol.Text(`[data-state="expired"] button`); got != "Enter the line again" {
			t.Errorf("expired button = %q", got)
		}

		// From here on only the keyboard: focus is on the heading; Tab
		// reaches the button, Enter presses it.
		if got := carol.Focused(); got != "h1#expired-heading" {
			t.Errorf("focus after expiry is on %q, want the heading", got)
		}
		carol.Keys("\t")
		if got := carol.Text(`:focus`); got != "Enter the line again" {
			t.Fatalf("Tab from the heading reached %q (%s)", got, carol.Focused())
		}
		carol.Keys("\r")
		carol.WaitState("ready", apptest.JoinWithin)
		if got := carol.Focused(); got != "h1#ready-heading" {
			t.Errorf("focus when READY is on %q", got)
		}
		carol.Keys("\t")
		if got := carol.Focused(); got != "input#product" {
			t.Fatalf("Tab from the heading reached %q, want the product field", got)
		}
		carol.Keys("\t")
		if got := carol.Focused(); got != "input#quantity" {
			t.Fatalf("second Tab reached %q, want the quantity field", got)
		}
		carol.Keys("\r") // Enter in a field submits the form
		carol.WaitState("done", 5*time.Second)

		// Every field has a label; every control is a real button.
		var unlabelled []string
		carol.MustEval(`[...document.querySelectorAll('input')].filter(i => !i.labels || i.labels.length === 0).map(i => i.id)`, &unlabelled)
		if len(unlabelled) > 0 {
			t.Errorf("inputs without a label: %v", unlabelled)
		}
		var fakeButtons int
		carol.MustEval(`document.querySelectorAll('[onclick], div[role=button], a[role=button]').length`, &fakeButtons)
		if fakeButtons > 0 {
			t.Errorf("%d controls are not real buttons", fakeButtons)
		}
	})

	t.Run("a full line says so and retries after Retry-After", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("b-full", map[string]any{"paused": true, "capacity": 1})
		if r := in.Do("POST", "/api/v1/queues/b-full/entries", in.As("first"), nil); r.Status != 200 {
			t.Fatalf("first in: %d %s", r.Status, r.Raw)
		}
		dave := apptest.NewVisitor(t, browser, in, "en")
		dave.Open("/q/b-full")
		dave.WaitState("full", apptest.JoinWithin)
		if got := dave.Text("#full-heading"); got != "The line is full right now" {
			t.Errorf("heading = %q", got)
		}
		retry := dave.Text("#full-retry-in")
		var n int
		if _, err := fmt.Sscanf(retry, "We'll try again for you in %d s", &n); err != nil || n < 28 || n > 30 {
			t.Errorf("retry text = %q, want a countdown from Retry-After (30 s)", retry)
		}
		// The page's first POST met the full line: no challenge is handed
		// out for a place the line has no room for (issue 49).
		if p := dave.Polls(); len(p) != 1 || p[0].Status != 429 {
			t.Errorf("requests: %+v, want one 429 (no challenge first; the retry waits for Retry-After)", p)
		}
	})

	t.Run("Korean by Accept-Language, English by ?lang=", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("b-ko", map[string]any{"paused": true})
		eun := apptest.NewVisitor(t, browser, in, "ko-KR,ko;q=0.9,en;q=0.5")
		eun.Open("/q/b-ko")
		eun.WaitState("waiting", apptest.JoinWithin)
		var lang string
		eun.MustEval(`document.documentElement.lang`, &lang)
		if lang != "ko" {
			t.Errorf("html lang = %q, want ko", lang)
		}
		for css, want := range map[string]string{
			"#waiting-heading": "대기 중입니다",
			".place-number":    "1번째",
			"#ahead":           "다음 차례입니다",
			"#eta":             "지금은 알 수 없음 판매가 일시 중지되었습니다",
		} {
			if got := eun.Text(css); got != want {
				t.Errorf("%s = %q, want %q", css, got, want)
			}
		}
		checkFontsCover(eun, "#waiting-heading", testenv.KoreanFonts(t))
		var announced string
		eun.WaitUntil("the live region", `document.getElementById('announcer').textContent !== ''`, 2*time.Second)
		eun.MustEval(`document.getElementById('announcer').getAttribute('aria-live') + ': ' + document.getElementById('announcer').textContent`, &announced)
		if announced != "polite: 현재 1번째입니다." {
			t.Errorf("live region: %q", announced)
		}

		eun.Open("/q/b-ko?lang=en")
		eun.WaitState("waiting", apptest.JoinWithin)
		if got := eun.Text("#waiting-heading"); got != "You're in line" {
			t.Errorf("with ?lang=en the heading is %q", got)
		}
		if got := eun.Text("#position"); got != "1" {
			t.Errorf("position after switching language = %q, want 1", got)
		}
	})

	t.Run("a countdown to the opening, then a place", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		// Far enough ahead that both pages are surely still before it on a
		// loaded machine (4 s was not: the second page loaded after it);
		// the admin then opens the line early by clearing opensAt.
		opensAt := time.Now().Add(40 * time.Second).UTC()
		in.PutQueue("b-open", map[string]any{"opensAt": opensAt.Format(time.RFC3339Nano), "paused": true})
		en, ko := apptest.NewVisitor(t, browser, in, "en"), apptest.NewVisitor(t, browser, in, "ko")
		en.Open("/q/b-open")
		ko.Open("/q/b-open")
		for v, want := range map[*apptest.Visitor]string{en: "Opens in 0:", ko: "후 오픈"} {
			v.WaitState("opening", apptest.JoinWithin)
			if got := v.Text("#opens-in"); !strings.Contains(got, want) {
				t.Errorf("the countdown says %q, want %q in it; %s", got, want, v.Screen())
			}
		}
		// The page counts down; once the line has opened, its next poll
		// shows the place drawn for it.
		first := en.Text("#opens-in")
		en.WaitUntil("the countdown to move", `document.getElementById('opens-in').textContent !== `+apptest.JSString(first), 3*time.Second)
		in.PatchQueue("b-open", map[string]any{"opensAt": ""})
		en.WaitState("waiting", 30*time.Second)
		if got := en.Text("#position"); got != "1" && got != "2" {
			t.Errorf("place after the opening = %q, want 1 or 2 (two entered)", got)
		}
	})

	t.Run("the opening's draw is checkable, with the visitor's id, in two languages", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("b-check", map[string]any{"opensAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano), "paused": true})
		en, ko := apptest.NewVisitor(t, browser, in, "en"), apptest.NewVisitor(t, browser, in, "ko")
		en.Open("/q/b-check")
		ko.Open("/q/b-check")
		ids := map[string]bool{}
		for v, want := range map[*apptest.Visitor]string{en: "This draw is checkable", ko: "이 추첨은 검증할 수 있습니다"} {
			v.WaitState("opening", apptest.JoinWithin)
			v.WaitUntil("the draw's lines", `!document.getElementById('draw-check').hidden`, 10*time.Second)
			if got := v.Text("#draw-check"); !strings.Contains(got, want) {
				t.Errorf("the draw's lines say %q, want %q in them", got, want)
			}
			id, salt := v.Text("#draw-id"), v.Text("#draw-salt")
			if !isHex32(id) || !isHex32(salt) || ids[id] {
				t.Errorf("the id %q and salt %q: want 32 hex digits each, and an id of one's own", id, salt)
			}
			ids[id] = true
			var link string
			var kept struct{ Participant, Salt string }
			v.MustEval(`document.getElementById('draw-link').href`, &link)
			v.MustEval(`window.__drawKept()`, &kept)
			if !strings.HasSuffix(link, "/api/v1/queues/b-check/draw") || kept.Participant != id || kept.Salt != salt {
				t.Errorf("the link %q, kept %+v; want the queue's draw and the id kept", link, kept)
			}
			var folded bool
			v.MustEval(`!document.querySelector('details.draw-salt').open`, &folded)
			if !folded {
				t.Error("the salt is not folded away")
			}
			// The page without JavaScript shows the same id and link.
			v.Open("/q/b-check/noscript")
			if got := v.Text("#draw-id"); got != id || !strings.Contains(v.Text("#draw-check"), want) {
				t.Errorf("without JavaScript: id %q, lines %q; want %s and %q", got, v.Text("#draw-check"), id, want)
			}
		}
	})

	// Needs the stores' draws (issue 57): the opening drawn from its
	// commitment, and the record published.
	t.Run("once the record is out, where the visitor's id stands in it", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		// Far enough ahead for both pages to join on a loaded machine; not
		// paused, so the line after the opening lets them in: the place in
		// the order stays shown through READY.
		opensAt := time.Now().Add(20 * time.Second)
		in.PutQueue("b-stands", map[string]any{"opensAt": opensAt.UTC().Format(time.RFC3339Nano)})
		en, ko := apptest.NewVisitor(t, browser, in, "en"), apptest.NewVisitor(t, browser, in, "ko")
		en.Open("/q/b-stands")
		ko.Open("/q/b-stands")
		for _, v := range []*apptest.Visitor{en, ko} {
			v.WaitUntil("the id in the draw kept", `window.__drawKept() !== null`, apptest.JoinWithin)
		}
		if time.Now().After(opensAt) {
			t.Fatal("the pages joined after the opening: give them more time")
		}
		for v, want := range map[*apptest.Visitor]string{en: "Your id stands at place ", ko: "공개된 순서에서 내 ID는 2명 중 "} {
			v.WaitUntil("the place in the published order", `!document.getElementById('draw-standing').hidden`, time.Minute)
			if got := v.Text("#draw-standing"); !strings.Contains(got, want) {
				t.Errorf("the page says %q, want %q in it", got, want)
			}
		}
	})

	t.Run("a line that draws shows no place, then one after a switch to fifo", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("b-draw", map[string]any{"queueingMethod": "random", "paused": true})
		en, ko := apptest.NewVisitor(t, browser, in, "en"), apptest.NewVisitor(t, browser, in, "ko")
		en.Open("/q/b-draw")
		en.WaitState("waiting", apptest.JoinWithin)
		ko.Open("/q/b-draw")
		ko.WaitState("waiting", apptest.JoinWithin)
		const drawnShown = `document.getElementById('place').hidden && document.getElementById('progress').hidden &&
			!document.getElementById('draw-note').hidden`
		for _, v := range []*apptest.Visitor{en, ko} {
			v.WaitUntil("the draw's note instead of a place", drawnShown, 10*time.Second)
		}
		if got := en.Text("#draw-note"); !strings.Contains(got, "draw") {
			t.Errorf("the draw's note says %q", got)
		}
		if got := ko.Text("#draw-note"); !strings.Contains(got, "추첨") {
			t.Errorf("the Korean draw's note says %q", got)
		}
		var title, foot string
		en.MustEval(`document.title`, &title)
		en.MustEval(`document.querySelector('footer.foot').textContent`, &foot)
		if !strings.HasPrefix(title, "In the draw") || foot != "Everyone in line has the same chance at each draw." {
			t.Errorf("title %q, footer %q in a drawn line", title, foot)
		}
		// random → fifo: the place is told again, by ticket.
		in.PatchQueue("b-draw", map[string]any{"queueingMethod": "fifo"})
		en.WaitUntil("the place again", `!document.getElementById('place').hidden && document.getElementById('draw-note').hidden &&
			document.getElementById('position').textContent === '1'`, 15*time.Second)
		en.MustEval(`document.querySelector('footer.foot').textContent`, &foot)
		if foot != "Everyone gets in in the order they arrived." {
			t.Errorf("footer after the switch to fifo: %q", foot)
		}
	})

	t.Run("a stalled line is said", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("b-stall", map[string]any{"maxActiveTokens": 1})
		in.Do("POST", "/api/v1/queues/b-stall/entries", in.As("b-holder"), nil)
		in.WaitReady("b-stall", "b-holder")
		v := apptest.NewVisitor(t, browser, in, "en")
		v.Open("/q/b-stall")
		v.WaitState("waiting", apptest.JoinWithin)
		// Its polls come every 2 s; the line is stalled after 2 s.
		v.WaitUntil("the stalled note", `!document.getElementById('stalled-note').hidden`, 15*time.Second)
		if got := v.Text("#eta"); got != "Not known right now The line isn't moving right now" {
			t.Errorf("estimate while stalled = %q", got)
		}
		in.Do("DELETE", "/api/v1/queues/b-stall/entries/me", in.As("b-holder"), nil)
		v.WaitState("ready", 15*time.Second)
	})

	t.Run("a place carried to another device keeps its ticket, once (issue 55)", func(t *testing.T) {
		t.Parallel()
		browserHandoff(t, browser, in.ReportingTo(t))
	})

	t.Run("admin page: live stats, pause, rate", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("b-admin", map[string]any{"paused": true})
		for _, u := range []string{"a1", "a2", "a3"} {
			in.Do("POST", "/api/v1/queues/b-admin/entries", in.As(u), nil)
		}
		op := apptest.SignedInAdmin(t, browser, in)
		card := `[data-queue="b-admin"]`
		op.WaitUntil("the b-admin card", `document.querySelector('`+card+`')`, 5*time.Second)
		if got := op.Text(card + ` [data-field="length"]`); got != "3" {
			t.Errorf("length on the card = %q, want 3", got)
		}
		in.PatchQueue("b-admin", map[string]any{"maxActiveTokens": 50})
		op.WaitUntil("the token cap on the card", `document.querySelector('`+card+` [data-field="active"]').textContent === '0 of 50'`, 5*time.Second)
		if got := op.Text(card + " .badge"); got != "Paused" {
			t.Errorf("badge = %q, want Paused", got)
		}
		var stored string
		op.MustEval(`sessionStorage.getItem('waitroom:admin-token')`, &stored)
		if stored != in.AdminToken {
			t.Errorf("the token is not kept in sessionStorage")
		}

		op.Click(card + " .pause-button") // Resume
		op.WaitUntil("the badge to say Admitting", `document.querySelector('`+card+` .badge').textContent === 'Admitting'`, 5*time.Second)
		if r := in.Do("GET", "/admin/v1/queues/b-admin", in.AdminAuth(), nil); r.Body["paused"] != false {
			t.Errorf("after Resume the queue is %s", r.Raw)
		}
		op.WaitUntil("the line to empty", `document.querySelector('`+card+` [data-field="length"]').textContent === '0'`, 6*time.Second)

		op.TypeInto(card+" .rate-input", "7\r")
		op.WaitUntil("the saved rate", `document.querySelector('`+card+` [data-field="configured"]').textContent === '7/s configured'`, 5*time.Second)
		if r := in.Do("GET", "/admin/v1/queues/b-admin", in.AdminAuth(), nil); r.Num("ratePerSecond") != 7 {
			t.Errorf("rate after Apply: %s", r.Raw)
		}
		op.TypeInto(card+" .rate-input", "1000\r") // × 100 ms > batch 10: refused
		op.WaitUntil("the refusal", `document.querySelector('`+card+` .qmessage').classList.contains('is-error')`, 5*time.Second)

		// Every setting has a field, built from the server's table; a
		// change is saved with the others left as they are, and a refused
		// one is said.
		op.Click(card + " .settings summary")
		var fields []string
		op.MustEval(`[...document.querySelectorAll('`+card+` .setting')].map(e => e.dataset.setting)`, &fields)
		var writable []string
		for _, s := range queue.Settings {
			if !s.ReadOnly {
				writable = append(writable, s.Name)
			}
		}
		if !slices.Equal(fields, writable) {
			t.Errorf("the settings form has %v, the server's settings are %v", fields, writable)
		}
		op.TypeInto(card+` [name="abandonAfterSeconds"]`, "30")
		op.Click(card + ` [name="adaptive"]`)
		// A choice is a list of its values, named in the page's language.
		var choices []string
		op.MustEval(`[...document.querySelectorAll('`+card+` select[name="entry"] option')].map(o => o.value + ': ' + o.textContent)`, &choices)
		if want := []string{"any: Anyone", "challenge: Proof of work for anonymous", "signed: Signed-in only", "turnstile: Human check for anonymous"}; !slices.Equal(choices, want) {
			t.Errorf("the entry choices are %q, want %q", choices, want)
		}
		op.MustEval(`(() => { const e = document.querySelector('`+card+` select[name="entry"]'); e.focus(); e.value = 'signed';
			e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, nil)
		cost := in.Do("GET", "/admin/v1/queues/b-admin", in.AdminAuth(), nil).Num("challengeCost")
		op.Click(card + " .settings-form button")
		op.WaitUntil("the saved settings", `document.querySelector('`+card+` .qmessage').textContent === 'Saved.'`, 5*time.Second)
		if r := in.Do("GET", "/admin/v1/queues/b-admin", in.AdminAuth(), nil); r.Num("abandonAfterSeconds") != 30 || r.Body["adaptive"] != true ||
			r.Num("ratePerSecond") != 7 || r.Str("entry") != "signed" || r.Num("challengeCost") != cost {
			t.Errorf("after saving the settings form: %s", r.Raw)
		}
		op.TypeInto(card+` [name="abandonAfterSeconds"]`, "7")
		op.Click(card + " .settings-form button")
		op.WaitUntil("the refusal naming the setting", `document.querySelector('`+card+` .qmessage').textContent.includes('abandonAfterSeconds')`, 5*time.Second)
		// Adaptive now: the card says so with the rate in force (it starts
		// at the configured 7/s) and the target, and the rate chart has
		// the change as a point.
		op.WaitUntil("the adaptive rate on the card", `document.querySelector('`+card+` [data-field="configured"]').textContent === '7/s adaptive (target 250 ms)'`, 5*time.Second)
		op.WaitUntil("points in the rate chart", `document.querySelector('`+card+` .chart-rate .chart-line').getAttribute('d').split('L').length >= 2`, 8*time.Second)

		// The chart has a point per 2 s sample: 3 and more after 4 s.
		op.WaitUntil("three samples in the chart", `document.querySelector('`+card+` .chart-line').getAttribute('d').split('L').length >= 3`, 8*time.Second)

		// A queue watched since before the page opened: the chart has
		// those minutes at once (here the server samples every 100 ms).
		// Twenty of them: the page's own samples, one per 2 s, would take
		// longer than any wait to make as many.
		hist := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) { c.HistoryInterval = 100 * time.Millisecond })
		hist.PutQueue("b-hist", map[string]any{"paused": true})
		hist.Do("POST", "/api/v1/queues/b-hist/entries", hist.As("h1"), nil)
		waitFor(t, "twenty samples of b-hist on the server", func() bool {
			points, _ := hist.Do("GET", "/admin/v1/queues/b-hist/history", hist.AdminAuth(), nil).Body["points"].([]any)
			return len(points) >= 20
		})
		op2 := apptest.SignedInAdmin(t, browser, hist)
		op2.WaitUntil("the chart seeded with the server's samples",
			`(document.querySelector('[data-queue="b-hist"] .chart-line')?.getAttribute('d') || '').split('L').length >= 20`, 3*time.Second)

		op.Click("#sign-out")
		op.WaitUntil("the sign-in form again", `!document.getElementById('login').hidden`, 2*time.Second)
		op.MustEval(`sessionStorage.getItem('waitroom:admin-token') ?? ''`, &stored)
		if stored != "" {
			t.Errorf("sign-out left the token in sessionStorage")
		}
	})

	t.Run("admin page: products, their stock and orders", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		sale := apptest.Shop{Instance: in}
		in.PutQueue("b-shop", map[string]any{})
		in.PutProduct("b-mug", "Mug", 3, "b-shop")
		sale.Buy("b-shop", "b-mug", "mug-buyer-1")

		op := apptest.SignedInAdmin(t, browser, in)
		op.Click("#tab-products")
		row := `[data-product="b-mug"]`
		op.WaitUntil("the mug's row", `document.querySelector('`+row+`')`, 5*time.Second)
		cell := func(id, field string) string {
			return op.Text(`[data-product="` + id + `"] [data-field="` + field + `"]`)
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
		op.MustEval(`document.getElementById('tab-products').getAttribute('aria-current')`, &current)
		if current != "page" {
			t.Errorf("the Products tab is not marked current: %q", current)
		}

		// An order while the page is open shows at its next refresh.
		sale.Buy("b-shop", "b-mug", "mug-buyer-2")
		op.WaitUntil("the second order", `document.querySelector('`+row+` [data-field="orders"]').textContent === '2'`, 12*time.Second)

		// A product made elsewhere shows up in its place without taking the
		// focus from someone typing in another row.
		op.TypeInto(row+" .restock-input", "5")
		in.PutProduct("b-aaa", "First", 1, "")
		op.WaitUntil("the new row", `document.querySelector('[data-product="b-aaa"]')`, 12*time.Second)
		var focused bool
		op.MustEval(`document.activeElement === document.querySelector('`+row+` .restock-input')`, &focused)
		if !focused {
			t.Errorf("a new row took the focus away to %s", op.Focused())
		}

		// Restocking adds to what is left.
		op.TypeInto(row+" .restock-input", "5\r")
		op.WaitUntil("the restocked stock", `document.querySelector('`+row+` [data-field="stock"]').textContent === '6'`, 5*time.Second)
		if got := sale.Stock("b-mug"); got != 6 {
			t.Errorf("stock after adding 5 to 1: %d, want 6", got)
		}
		if got := op.Text(row + " .restock-message"); got != "Added 5: 6 in stock." {
			t.Errorf("restock message %q", got)
		}
		// A restock the server refuses says why and changes nothing.
		op.TypeInto(row+" .restock-input", "1000000000\r")
		op.WaitUntil("the refusal", `document.querySelector('`+row+` .restock-message').classList.contains('is-error')`, 5*time.Second)
		if got := sale.Stock("b-mug"); got != 6 {
			t.Errorf("stock after a refused restock: %d, want 6", got)
		}

		// A new product, through the form.
		op.TypeInto("#new-product-id", "b-cap2")
		op.TypeInto("#new-product-name", "Wool cap")
		op.TypeInto("#new-product-stock", "7")
		op.TypeInto("#new-product-queue", "b-shop")
		op.Click("#product-form button[type=submit]")
		op.WaitUntil("the new product's row", `document.querySelector('[data-product="b-cap2"]')`, 5*time.Second)
		if r := in.Do("GET", "/api/v1/products/b-cap2", "", nil); r.Str("name") != "Wool cap" || r.Num("stock") != 7 || r.Str("queue") != "b-shop" {
			t.Errorf("the product made by the form: %s", r.Raw)
		}
		// An id that exists is refused on the page: saving it would set its
		// stock over the orders taken.
		op.TypeInto("#new-product-id", "b-mug")
		op.TypeInto("#new-product-name", "Mug again")
		op.TypeInto("#new-product-stock", "100")
		op.Click("#product-form button[type=submit]")
		op.WaitUntil("the refusal", `document.getElementById('product-message').classList.contains('is-error')`, 5*time.Second)
		if got := sale.Stock("b-mug"); got != 6 {
			t.Errorf("stock after creating an existing id: %d, want 6", got)
		}

		// A reload stays on the products.
		if err := chromedp.Do(op.Ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		op.WaitUntil("the products after a reload", `!document.getElementById('products-screen').hidden && document.querySelector('`+row+`')`, 5*time.Second)
	})

	t.Run("admin page: a new queue from the server's settings", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		op := apptest.SignedInAdmin(t, browser, in)
		op.WaitUntil("the default queue's card", `document.querySelector('[data-queue="default"]')`, 5*time.Second)

		// The form's fields are the admin API's queue settings: every
		// property of openapi.yaml's QueueConfig, each with a label, showing
		// the default GET /admin/v1/queue-settings declares for it.
		var want []string
		for name := range openAPIDoc(t).Components.Schemas["QueueConfig"].Value.Properties {
			want = append(want, name)
		}
		op.Click("#new-queue")
		op.WaitUntil("the new-queue form", `document.getElementById('queue-dialog').open`, 5*time.Second)
		var got []string
		op.MustEval(`[...document.querySelectorAll('#queue-settings input, #queue-settings select, #queue-settings textarea:not([data-message-lang])')].filter(i => i.labels.length === 1 && i.labels[0].textContent.trim() !== '').map(i => i.name)`, &got)
		if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("the form's labelled settings differ from QueueConfig's properties (-api +form):\n%s", diff)
		}
		formValues := func(form string) map[string]any {
			t.Helper()
			var out map[string]any
			op.MustEval(`Object.fromEntries([...document.querySelectorAll(`+apptest.JSString(form+" .setting input, "+form+" .setting select, "+form+" .setting textarea:not([data-message-lang])")+`)].map(i =>
				[i.name, i.type === 'checkbox' ? i.checked : i.type === 'number' ? Number(i.value) : (i.name === 'phases' || i.name === 'lanes') ? JSON.parse(i.value || '[]') : i.value]))`, &out)
			return out
		}
		defaults := map[string]any{}
		for _, s := range in.Do("GET", "/admin/v1/queue-settings", in.AdminAuth(), nil).Body["settings"].([]any) {
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
		op.TypeInto("#queue-name", "b-form")
		op.TypeInto(`#queue-form [name="ratePerSecond"]`, "1000") // × 100 ms > batch 10
		op.Click("#queue-form button[type=submit]")
		op.WaitUntil("the refusal", `document.getElementById('queue-message').classList.contains('is-error')`, 5*time.Second)
		if msg := op.Text("#queue-message"); !strings.Contains(msg, "batch") {
			t.Errorf("refusal message %q does not say what is wrong", msg)
		}
		if r := in.Do("GET", "/admin/v1/queues/b-form", in.AdminAuth(), nil); r.Status != 404 {
			t.Errorf("after a refused new queue: %d %s", r.Status, r.Raw)
		}
		op.Keys(kb.Escape)
		op.WaitUntil("Escape to close the form", `!document.getElementById('queue-dialog').open`, 5*time.Second)

		// A new queue with every setting.
		op.Click("#new-queue")
		op.WaitUntil("the new-queue form", `document.getElementById('queue-dialog').open`, 5*time.Second)
		if got := formValues("#queue-form")["ratePerSecond"]; got != defaults["ratePerSecond"] {
			t.Errorf("the form opens again with rate %v, want the default %v", got, defaults["ratePerSecond"])
		}
		op.TypeInto("#queue-name", "b-form")
		for field, v := range map[string]string{"ratePerSecond": "5", "batchSize": "1", "intervalMs": "200",
			"capacity": "50", "tokenTtlSeconds": "60", "maxActiveTokens": "3", "minRatePerSecond": "2",
			"maxRatePerSecond": "5", "targetLatencyMs": "400", "abandonAfterSeconds": "20", "challengeCost": "1500"} {
			op.TypeInto(`#queue-form [name="`+field+`"]`, v)
		}
		op.MustEval(`(() => { const e = document.querySelector('#queue-form select[name="entry"]'); e.value = 'signed';
			e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, nil)
		op.Click(`#queue-form [name="paused"]`)
		op.Click(`#queue-form [name="adaptive"]`)
		// A datetime-local field takes no typed text the same way in every
		// locale: set it as the browser's picker would.
		const opensLocal = "2031-05-01T10:00:30"
		op.MustEval(`document.querySelector('#queue-form [name="opensAt"]').value = '`+opensLocal+`'`, nil)
		var opensISO string
		op.MustEval(`new Date('`+opensLocal+`').toISOString()`, &opensISO)
		opensAt, err := time.Parse(time.RFC3339Nano, opensISO)
		if err != nil {
			t.Fatal(err)
		}
		op.Click("#queue-form button[type=submit]")
		card := `[data-queue="b-form"]`
		op.WaitUntil("the new queue's card", `!document.getElementById('queue-dialog').open && document.querySelector('`+card+`')`, 5*time.Second)
		wantConfig := map[string]any{"ratePerSecond": 5.0, "batchSize": 1.0, "intervalMs": 200.0, "capacity": 50.0,
			"tokenTtlSeconds": 60.0, "maxActiveTokens": 3.0, "paused": true, "adaptive": true, "minRatePerSecond": 2.0,
			"maxRatePerSecond": 5.0, "targetLatencyMs": 400.0, "abandonAfterSeconds": 20.0, "entry": "signed", "challengeCost": 1500.0,
			"message": "", "queueingMethod": "fifo", "sessionMaxSeconds": 0.0, "admitPerUnit": 1.0}
		config := func() map[string]any {
			t.Helper()
			r := in.Do("GET", "/admin/v1/queues/b-form", in.AdminAuth(), nil)
			out := map[string]any{}
			for k := range wantConfig {
				out[k] = r.Body[k]
			}
			if at, err := time.Parse(time.RFC3339Nano, r.Str("opensAt")); err != nil || !at.Equal(opensAt) {
				t.Errorf("opensAt %q, want %s", r.Str("opensAt"), opensISO)
			}
			return out
		}
		if diff := cmp.Diff(wantConfig, config()); diff != "" {
			t.Errorf("the queue the form made (-want +got):\n%s", diff)
		}

		// Its card's settings form (the one place to change them) shows
		// its values; Save sends what the operator changed, and keeps what
		// someone else changed meanwhile.
		op.Click(card + " .settings summary")
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
		// Every other setting as the API has it: a setting added to the
		// table is checked here without a word of this test changed.
		stored, fromAPI := in.Do("GET", "/admin/v1/queues/b-form", in.AdminAuth(), nil).Body, map[string]any{}
		for name := range shown {
			fromAPI[name] = stored[name]
		}
		if diff := cmp.Diff(fromAPI, shown); diff != "" {
			t.Errorf("the card's form shows (-queue +form):\n%s", diff)
		}
		op.TypeInto(card+` [name="capacity"]`, "70")
		in.PatchQueue("b-form", map[string]any{"maxActiveTokens": 9})
		op.WaitUntil("the other change on the card", `document.querySelector('`+card+` [data-field="active"]').textContent === '0 of 9'`, 5*time.Second)
		op.Click(card + ` [name="paused"]`)
		op.Click(card + " .settings-form button")
		op.WaitUntil("the saved settings", `document.querySelector('`+card+` .qmessage').textContent === 'Saved.'`, 5*time.Second)
		wantConfig["capacity"], wantConfig["paused"], wantConfig["maxActiveTokens"] = 70.0, false, 9.0
		if diff := cmp.Diff(wantConfig, config()); diff != "" {
			t.Errorf("after Save (-want +got):\n%s", diff)
		}

		// A new queue under a name in use is refused on the page: PUT would
		// replace that queue's whole config.
		op.Click("#new-queue")
		op.WaitUntil("the new-queue form", `document.getElementById('queue-dialog').open`, 5*time.Second)
		op.TypeInto("#queue-name", "b-form")
		op.Click("#queue-form button[type=submit]")
		op.WaitUntil("the refusal", `document.getElementById('queue-message').classList.contains('is-error')`, 5*time.Second)
		if diff := cmp.Diff(wantConfig, config()); diff != "" {
			t.Errorf("after a new queue of the same name (-want +got):\n%s", diff)
		}
		op.Click("#queue-cancel")
		op.WaitUntil("Cancel to close the form", `!document.getElementById('queue-dialog').open`, 5*time.Second)
	})
}

// checkFontsCover fails unless the text of the element css is drawn with
// fonts among families (by Chromium's own account of the fonts it used),
// apart from the odd space or digit a fallback may draw.
func checkFontsCover(v *apptest.Visitor, css string, families map[string]bool) {
	v.T.Helper()
	ids, err := chromedp.Run(v.Ctx, chromedp.QueryNodeIDs(chromedp.CSS(css)))
	if err != nil || len(ids) == 0 {
		v.T.Fatalf("%s: %v", css, err)
	}
	if _, err := chromedp.Call(v.Ctx, cdpcss.Enable, cdp.Empty{}); err != nil {
		v.T.Fatal(err)
	}
	// Chromium reports the fonts of text it has drawn: on a busy machine
	// the first frames may not be, so ask until it has (two frames later).
	var res cdpcss.GetPlatformFontsForNodeResult
	for deadline := time.Now().Add(10 * time.Second); len(res.Fonts) == 0 && time.Now().Before(deadline); {
		v.MustEval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil)
		res, err = chromedp.Call(v.Ctx, cdpcss.GetPlatformFontsForNode, cdpcss.GetPlatformFontsForNodeParams{NodeID: ids[0]})
		if err != nil {
			v.T.Fatal(err)
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
	text := []rune(v.Text(css))
	if covered < float64(len(text))-2 || all == 0 {
		v.T.Errorf("%s (%q) is drawn with %v; want fonts covering its script, one of %v", css, string(text), used, families)
	}
}

// ---------------------------------------------------------------- admin helpers

// openAPIDoc is openapi.yaml as the program embeds it (internal/repolint's
// TestOpenAPI holds the two equal, and the document valid).
func openAPIDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(waitroom.OpenAPI)
	if err != nil {
		t.Fatalf("loading openapi.yaml: %v", err)
	}
	return doc
}

// waitFor polls cond until it holds, failing the test after apptest.Patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(apptest.Patience); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", apptest.Patience, what)
		}
	}
}
