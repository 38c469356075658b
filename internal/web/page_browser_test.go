package web_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// exampleBrand is the repository's example of a shop's own waiting page
// (docs/page.md): its own template, look and assets, and a template of its
// own for the queue vip.
const exampleBrand = "../../examples/page"

// watchDialogs fails the test for any JavaScript dialog (alert, confirm,
// prompt) the tab opens from now on, and dismisses it.
func watchDialogs(v *apptest.Visitor) func() []string {
	var mu sync.Mutex
	var opened []string
	err := chromedp.Listen(v.Ctx, func(ev any) {
		if e, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			mu.Lock()
			opened = append(opened, string(e.Type)+": "+e.Message)
			mu.Unlock()
			go chromedp.Call(v.Ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}
	})
	if err != nil {
		v.T.Fatal(err)
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
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) { c.PageDir = exampleBrand })

	t.Run("the example brand: join, wait, a message within one poll, READY", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("p-brand", map[string]any{"paused": true})
		v := apptest.NewVisitor(t, browser, in, "en")
		dialogs := watchDialogs(v)
		v.Open("/q/p-brand")
		v.WaitState("waiting", apptest.JoinWithin)
		var look struct {
			Kicker, Title, Paper string
			Challenged           bool
		}
		v.MustEval(`({kicker: document.querySelector('.kicker').textContent, title: document.title,
			paper: getComputedStyle(document.body).backgroundColor, challenged: !!window.__challenge})`, &look)
		if look.Kicker != "Spring drop · p-brand" || !strings.HasPrefix(look.Title, "#1 in line · Maru Goods") ||
			look.Paper != "rgb(253, 246, 236)" || !look.Challenged {
			t.Errorf("not the example brand's page, joined through the challenge: %+v", look)
		}
		if got := v.Text("#position"); got != "1" {
			t.Fatalf("position %q", got)
		}

		// The operator speaks; the page shows it at the first poll after.
		const said = "Restocked: sizes S and M are back.\nThank you for waiting."
		var sent int
		v.MustEval(`window.__polls.length`, &sent)
		in.PatchQueue("p-brand", map[string]any{"message": said})
		v.WaitUntil("the message", `document.getElementById('operator-message-text').textContent === `+apptest.JSString(said)+
			` && !document.getElementById('operator-message').hidden`, 20*time.Second)
		var first int
		v.MustEval(`window.__polls.findIndex(p => p.message === `+apptest.JSString(said)+`)`, &first)
		if first < 0 || first > sent {
			t.Errorf("the message came with request %d; %d had been sent when it was set: not within one poll", first, sent)
		}

		// Cleared with an empty value: gone at the next poll.
		in.PatchQueue("p-brand", map[string]any{"message": ""})
		v.WaitUntil("the message to go", `document.getElementById('operator-message').hidden`, 20*time.Second)

		in.PatchQueue("p-brand", map[string]any{"paused": false})
		v.WaitState("ready", 10*time.Second)
		if got := v.Focused(); got != "h1#ready-heading" {
			t.Errorf("focus when READY is on %q", got)
		}
		if d := dialogs(); len(d) > 0 {
			t.Errorf("dialogs opened: %v", d)
		}
	})

	t.Run("a queue with its own template", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		in.PutQueue("vip", map[string]any{"paused": true, "entry": "any"})
		v := apptest.NewVisitor(t, browser, in, "ja")
		v.Open("/q/vip")
		v.WaitState("waiting", apptest.JoinWithin)
		var got struct {
			Members bool
			Title   string
			Lang    string
		}
		v.MustEval(`({members: !!document.getElementById('members-kicker'), title: document.title, lang: document.documentElement.lang})`, &got)
		if !got.Members || !strings.Contains(got.Title, "Maru Goods Members") || got.Lang != "ja" {
			t.Errorf("/q/vip is not its own page in Japanese: %+v", got)
		}
	})

	t.Run("markup in a message is text, on the page and on the admin page", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		const attack = `<script>alert(1)</script><img src=x onerror="alert(2)"> & <b>bold</b>`
		in.PutQueue("p-xss", map[string]any{"paused": true, "entry": "any",
			"message": map[string]any{"en": attack, "ko": attack + " 한국어"}})
		v := apptest.NewVisitor(t, browser, in, "en")
		dialogs := watchDialogs(v)
		v.Open("/q/p-xss")
		v.WaitState("waiting", apptest.JoinWithin)
		// Served in the page and brought by every answer: text both ways.
		v.WaitUntil("a poll with the message", `window.__polls.some(p => p.message === `+apptest.JSString(attack)+`)`, 15*time.Second)
		checkText := func(v *apptest.Visitor, css, want string) {
			t.Helper()
			var got struct {
				Text     string
				Elements int
			}
			v.MustEval(`(() => { const e = document.querySelector(`+apptest.JSString(css)+`);
				return {text: e ? (e.value ?? e.textContent) : null, elements: e ? e.querySelectorAll('*').length : -1}; })()`, &got)
			if got.Text != want || got.Elements != 0 {
				t.Errorf("%s holds %q with %d elements, want the text %q and none", css, got.Text, got.Elements, want)
			}
		}
		checkText(v, "#operator-message-text", attack)
		var injected int
		v.MustEval(`document.querySelectorAll('img[src="x"], main script:not([src]):not([type]), b').length`, &injected)
		if injected != 0 {
			t.Errorf("%d elements of the message made it into the page", injected)
		}

		op := apptest.SignedInAdmin(t, browser, in)
		opDialogs := watchDialogs(op)
		card := `[data-queue="p-xss"]`
		op.WaitUntil("the queue's card", `document.querySelector('`+card+` [data-field="message"]')?.textContent.includes('<script>')`, 10*time.Second)
		checkText(op, card+` [data-field="message"]`, "Message: "+attack)
		op.Click(card + " .settings summary")
		op.Click(card + " .message-languages summary")
		checkText(op, card+` textarea[data-message-lang="en"]`, attack)
		checkText(op, card+` .message-preview .operator-message-text`, attack)
		// Typing more markup into the form previews it as text, too.
		op.TypeInto(card+` textarea[data-message-lang="en"]`, `<img src=y onerror="alert(3)">`)
		checkText(op, card+` .message-preview .operator-message-text`, `<img src=y onerror="alert(3)">`)
		var imgs int
		op.MustEval(`document.querySelectorAll('img[src="x"], img[src="y"]').length`, &imgs)
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
		in := in.ReportingTo(t)
		in.PutQueue("p-say", map[string]any{"paused": true, "entry": "any"})
		op := apptest.SignedInAdmin(t, browser, in)
		card := `[data-queue="p-say"]`
		op.WaitUntil("the queue's card", `document.querySelector('`+card+`')`, 10*time.Second)
		op.Click(card + " .settings summary")
		op.TypeInto(card+` textarea[name="message"]`, "Back at 9pm")
		op.WaitUntil("the preview", `document.querySelector('`+card+` .message-preview .operator-message-text').textContent === 'Back at 9pm'`, 5*time.Second)
		op.Click(card + " .message-languages summary")
		op.TypeInto(card+` textarea[data-message-lang="ja"]`, "午後9時に再開します")
		op.Click(card + " .settings-form button[type=submit]")
		op.WaitUntil("saved", `document.querySelector('`+card+` .qmessage').textContent === 'Saved.'`, 5*time.Second)
		r := in.Do("GET", "/admin/v1/queues/p-say", in.AdminAuth(), nil)
		m, _ := r.Body["message"].(map[string]any)
		if m["en"] != "Back at 9pm" || m["ja"] != "午後9時に再開します" || len(m) != 2 {
			t.Errorf("the message saved: %s", r.Raw)
		}
		// Each reader gets theirs.
		for lang, want := range map[string]string{"ja-JP": "午後9時に再開します", "en": "Back at 9pm", "de": "Back at 9pm"} {
			v := apptest.NewVisitor(t, browser, in, lang)
			v.Open("/q/p-say")
			v.WaitUntil("the message in "+lang, `document.getElementById('operator-message-text').textContent === `+apptest.JSString(want), apptest.JoinWithin)
		}
	})
}
