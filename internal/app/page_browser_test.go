package app_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app"
)

// exampleBrand is the repository's example of a shop's own waiting page
// (docs/page.md): its own template, look and assets, and a template of its
// own for the queue vip.
const exampleBrand = "../../examples/page"

// dialogs fails the test for any JavaScript dialog (alert, confirm,
// prompt) the tab opens from now on, and dismisses it.
func (v *visitor) dialogs() func() []string {
	var mu sync.Mutex
	var opened []string
	err := chromedp.Listen(v.ctx, func(ev any) {
		if e, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			mu.Lock()
			opened = append(opened, string(e.Type)+": "+e.Message)
			mu.Unlock()
			go chromedp.Call(v.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}
	})
	if err != nil {
		v.t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), opened...)
	}
}

// A shop's own page, in a real browser: the example brand's template joins
// (solving the challenge), waits, shows the operator's message within one
// poll, and turns READY; a queue with its own template gets it; markup in a
// message is shown as text on the page and on the admin page, and runs
// nothing.
func TestShopPageBrowser(t *testing.T) {
	browser := startBrowser(t)
	in := boot(t, backend{name: "embedded"}, func(c *app.Config) { c.PageDir = exampleBrand })

	t.Run("the example brand: join, wait, a message within one poll, READY", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("p-brand", map[string]any{"paused": true})
		v := newVisitor(t, browser, in, "en")
		dialogs := v.dialogs()
		v.open("/q/p-brand")
		v.waitState("waiting", joinWithin)
		var look struct {
			Kicker, Title, Paper string
			Challenged           bool
		}
		v.mustEval(`({kicker: document.querySelector('.kicker').textContent, title: document.title,
			paper: getComputedStyle(document.body).backgroundColor, challenged: !!window.__challenge})`, &look)
		if look.Kicker != "Spring drop · p-brand" || !strings.HasPrefix(look.Title, "#1 in line · Maru Goods") ||
			look.Paper != "rgb(253, 246, 236)" || !look.Challenged {
			t.Errorf("not the example brand's page, joined through the challenge: %+v", look)
		}
		if got := v.text("#position"); got != "1" {
			t.Fatalf("position %q", got)
		}

		// The operator speaks; the page shows it at the first poll after.
		const said = "Restocked: sizes S and M are back.\nThank you for waiting."
		var sent int
		v.mustEval(`window.__polls.length`, &sent)
		in.patchQueue("p-brand", map[string]any{"message": said})
		v.waitUntil("the message", `document.getElementById('operator-message-text').textContent === `+jsString(said)+
			` && !document.getElementById('operator-message').hidden`, 20*time.Second)
		var first int
		v.mustEval(`window.__polls.findIndex(p => p.message === `+jsString(said)+`)`, &first)
		if first < 0 || first > sent {
			t.Errorf("the message came with request %d; %d had been sent when it was set: not within one poll", first, sent)
		}

		// Cleared with an empty value: gone at the next poll.
		in.patchQueue("p-brand", map[string]any{"message": ""})
		v.waitUntil("the message to go", `document.getElementById('operator-message').hidden`, 20*time.Second)

		in.patchQueue("p-brand", map[string]any{"paused": false})
		v.waitState("ready", 10*time.Second)
		if got := v.focused(); got != "h1#ready-heading" {
			t.Errorf("focus when READY is on %q", got)
		}
		if d := dialogs(); len(d) > 0 {
			t.Errorf("dialogs opened: %v", d)
		}
	})

	t.Run("a queue with its own template", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("vip", map[string]any{"paused": true, "entry": "any"})
		v := newVisitor(t, browser, in, "ja")
		v.open("/q/vip")
		v.waitState("waiting", joinWithin)
		var got struct {
			Members bool
			Title   string
			Lang    string
		}
		v.mustEval(`({members: !!document.getElementById('members-kicker'), title: document.title, lang: document.documentElement.lang})`, &got)
		if !got.Members || !strings.Contains(got.Title, "Maru Goods Members") || got.Lang != "ja" {
			t.Errorf("/q/vip is not its own page in Japanese: %+v", got)
		}
	})

	t.Run("markup in a message is text, on the page and on the admin page", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		const attack = `<script>alert(1)</script><img src=x onerror="alert(2)"> & <b>bold</b>`
		in.putQueue("p-xss", map[string]any{"paused": true, "entry": "any",
			"message": map[string]any{"en": attack, "ko": attack + " 한국어"}})
		v := newVisitor(t, browser, in, "en")
		dialogs := v.dialogs()
		v.open("/q/p-xss")
		v.waitState("waiting", joinWithin)
		// Served in the page and brought by every answer: text both ways.
		v.waitUntil("a poll with the message", `window.__polls.some(p => p.message === `+jsString(attack)+`)`, 15*time.Second)
		checkText := func(v *visitor, css, want string) {
			t.Helper()
			var got struct {
				Text     string
				Elements int
			}
			v.mustEval(`(() => { const e = document.querySelector(`+jsString(css)+`);
				return {text: e ? (e.value ?? e.textContent) : null, elements: e ? e.querySelectorAll('*').length : -1}; })()`, &got)
			if got.Text != want || got.Elements != 0 {
				t.Errorf("%s holds %q with %d elements, want the text %q and none", css, got.Text, got.Elements, want)
			}
		}
		checkText(v, "#operator-message-text", attack)
		var injected int
		v.mustEval(`document.querySelectorAll('img[src="x"], main script:not([src]):not([type]), b').length`, &injected)
		if injected != 0 {
			t.Errorf("%d elements of the message made it into the page", injected)
		}

		op := signedInAdmin(t, browser, in)
		opDialogs := op.dialogs()
		card := `[data-queue="p-xss"]`
		op.waitUntil("the queue's card", `document.querySelector('`+card+` [data-field="message"]')?.textContent.includes('<script>')`, 10*time.Second)
		checkText(op, card+` [data-field="message"]`, "Message: "+attack)
		op.click(card + " .settings summary")
		op.click(card + " .message-languages summary")
		checkText(op, card+` textarea[data-message-lang="en"]`, attack)
		checkText(op, card+` .message-preview .operator-message-text`, attack)
		// Typing more markup into the form previews it as text, too.
		op.typeInto(card+` textarea[data-message-lang="en"]`, `<img src=y onerror="alert(3)">`)
		checkText(op, card+` .message-preview .operator-message-text`, `<img src=y onerror="alert(3)">`)
		var imgs int
		op.mustEval(`document.querySelectorAll('img[src="x"], img[src="y"]').length`, &imgs)
		if imgs != 0 {
			t.Errorf("%d images of the message made it into the admin page", imgs)
		}
		time.Sleep(300 * time.Millisecond) // a dialog opening is an event: give it the time it would take
		if d := append(dialogs(), opDialogs()...); len(d) > 0 {
			t.Errorf("dialogs opened: %v", d)
		}
	})

	t.Run("the admin page sets a message per language, with a preview", func(t *testing.T) {
		t.Parallel()
		in := in.reportingTo(t)
		in.putQueue("p-say", map[string]any{"paused": true, "entry": "any"})
		op := signedInAdmin(t, browser, in)
		card := `[data-queue="p-say"]`
		op.waitUntil("the queue's card", `document.querySelector('`+card+`')`, 10*time.Second)
		op.click(card + " .settings summary")
		op.typeInto(card+` textarea[name="message"]`, "Back at 9pm")
		op.waitUntil("the preview", `document.querySelector('`+card+` .message-preview .operator-message-text').textContent === 'Back at 9pm'`, 5*time.Second)
		op.click(card + " .message-languages summary")
		op.typeInto(card+` textarea[data-message-lang="ja"]`, "午後9時に再開します")
		op.click(card + " .settings-form button[type=submit]")
		op.waitUntil("saved", `document.querySelector('`+card+` .qmessage').textContent === 'Saved.'`, 5*time.Second)
		r := in.do("GET", "/admin/v1/queues/p-say", in.adminAuth(), nil)
		m, _ := r.body["message"].(map[string]any)
		if m["en"] != "Back at 9pm" || m["ja"] != "午後9時に再開します" || len(m) != 2 {
			t.Errorf("the message saved: %s", r.raw)
		}
		// Each reader gets theirs.
		for lang, want := range map[string]string{"ja-JP": "午後9時に再開します", "en": "Back at 9pm", "de": "Back at 9pm"} {
			v := newVisitor(t, browser, in, lang)
			v.open("/q/p-say")
			v.waitUntil("the message in "+lang, `document.getElementById('operator-message-text').textContent === `+jsString(want), joinWithin)
		}
	})
}

// Gateway mode with the shop's own page: the shopper waits on the brand's
// page under the prefix, sees the operator's message, and lands on the
// page they asked for once admitted.
func TestShopPageGatewayBrowser(t *testing.T) {
	t.Parallel()
	browser := startBrowser(t)
	p := bootProxy(t, backend{name: "embedded"}, newUpstreamShop(t, 10), func(c *app.Config) { c.PageDir = exampleBrand })
	p.setPaused(true)
	if r := p.do("PATCH", gwPrefix+"/admin/v1/queues/default", p.adminAuth(), map[string]any{"message": "Checkout opens in a moment."}); r.status != 200 {
		t.Fatalf("message: %d %s", r.status, r.raw)
	}
	shopper := newVisitor(t, browser, p.instance, "en")
	shopper.open("/checkout?step=2")
	shopper.waitState("waiting", joinWithin)
	var got struct {
		Path, Kicker, Message, CSS string
	}
	shopper.mustEval(`({path: location.pathname, kicker: document.querySelector('.kicker')?.textContent,
		message: document.getElementById('operator-message-text').textContent,
		css: document.querySelector('link[rel=stylesheet]').getAttribute('href')})`, &got)
	if got.Path != gwPrefix+"/q/default" || got.Kicker != "Spring drop · default" || got.Message != "Checkout opens in a moment." ||
		!strings.HasPrefix(got.CSS, gwPrefix+"/assets/custom/brand.css?v=") {
		t.Errorf("the waiting page in gateway mode: %+v", got)
	}
	p.setPaused(false)
	shopper.waitUntil("back on the checkout page", `location.pathname === '/checkout' && !!document.getElementById('checkout')`, 15*time.Second)
	var path string
	shopper.mustEval(`location.pathname + location.search`, &path)
	if path != "/checkout?step=2" {
		t.Errorf("landed on %q, want /checkout?step=2", path)
	}
}
