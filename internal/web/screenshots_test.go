//go:build screenshots

package web_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/web"
)

// screenshotsVar names a directory: TestPageScreenshots writes the
// README's pictures there (WAITROOM_SCREENSHOTS=docs/screenshots, relative
// to the module root).
const screenshotsVar = "WAITROOM_SCREENSHOTS"

// TestPageScreenshots renders the pictures in README.md into
// $WAITROOM_SCREENSHOTS (default docs/screenshots). It is a tool, not a
// check, so it is built only with the screenshots tag and never shows up as
// a skipped test:
//
//	go test -tags screenshots -run PageScreenshots ./internal/web/
func TestPageScreenshots(t *testing.T) {
	dir := os.Getenv(screenshotsVar)
	if dir == "" {
		dir = "docs/screenshots"
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir) // relative to the module root
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)

	// A sale in full swing: two thousand ahead, let in quickly for a while,
	// then at the pace the database bears.
	in.PutQueue("spring-drop", map[string]any{"paused": true, "ratePerSecond": 100, "batchSize": 10, "intervalMs": 100})
	// Stock enough for everyone in the pictures: with fewer units than
	// people let in, the stock's cap (admitPerUnit) would hold admission
	// and the page would say so.
	in.PutProduct("tee", "Spring tee", 5000, "spring-drop")
	in.PutQueue("vip", map[string]any{"paused": true, "ratePerSecond": 20, "batchSize": 2, "intervalMs": 100})

	op := apptest.NewVisitor(t, browser, in, "en")
	if err := chromedp.Do(op.Ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	op.Open("/admin")
	op.TypeInto("#token", in.AdminToken)
	op.Keys("\r")
	op.WaitUntil("the dashboard", `document.querySelector('[data-queue="spring-drop"]')`, 5*time.Second)

	crowd := func(queue string, from, n int) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := from + w; i < from+n; i += 8 {
					in.Send(http.DefaultClient, apptest.Call{Method: "POST", Path: "/api/v1/queues/" + queue + "/entries", Auth: in.As(fmt.Sprintf("u%d", i))})
				}
			})
		}
		wg.Wait()
	}
	for step := range 5 {
		crowd("spring-drop", step*400, 400)
		time.Sleep(2 * time.Second)
	}
	crowd("vip", 10_000, 140)

	en := apptest.NewVisitor(t, browser, in, "en-US,en;q=0.9")
	if err := chromedp.Do(en.Ctx, chromedp.EmulateViewport(1000, 720)); err != nil {
		t.Fatal(err)
	}
	en.Open("/q/spring-drop?product=tee")
	en.WaitState("waiting", apptest.JoinWithin)
	ko := apptest.NewVisitor(t, browser, in, "ko-KR,ko;q=0.9")
	if err := chromedp.Do(ko.Ctx, chromedp.EmulateViewport(390, 760, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	ko.Open("/q/spring-drop?product=tee")
	ko.WaitState("waiting", apptest.JoinWithin)
	crowd("spring-drop", 2000, 600) // more people behind them

	in.PatchQueue("spring-drop", map[string]any{"paused": false})
	time.Sleep(9 * time.Second)
	in.PatchQueue("spring-drop", map[string]any{"ratePerSecond": 4, "batchSize": 1, "intervalMs": 250})
	time.Sleep(4 * time.Second)

	// A refresh shows the new estimate at once and keeps the progress.
	for _, v := range []*apptest.Visitor{en, ko} {
		if err := chromedp.Do(v.Ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		v.WaitState("waiting", apptest.JoinWithin)
	}
	time.Sleep(1500 * time.Millisecond) // the bar's transition

	shoot := func(v *apptest.Visitor, name string) {
		t.Helper()
		buf, err := chromedp.Run(v.Ctx, chromedp.FullScreenshot(100)) // 100: PNG
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d KB): %s", name, len(buf)/1024, v.Screen())
	}
	shoot(en, "waiting-en.png")
	shoot(ko, "waiting-ko.png")
	shoot(op, "admin.png")

	// The products screen, a sale under way: the first people let in
	// bought tees; the other products sold a little through their lines.
	sale := apptest.Shop{Instance: in}
	for i := range 37 {
		sale.Buy("spring-drop", "tee", fmt.Sprintf("u%d", i))
	}
	in.PutQueue("express", map[string]any{})
	in.PutProduct("hoodie", "Spring hoodie", 120, "spring-drop")
	in.PutProduct("cap", "Canvas cap", 60, "vip")
	in.PutProduct("mug", "Enamel mug", 40, "express")
	in.PutProduct("poster", "Riso poster (signed)", 0, "express")
	for i := range 12 {
		sale.Buy("express", "mug", fmt.Sprintf("m%d", i))
	}
	op.Click("#tab-products")
	op.WaitUntil("the products", `document.querySelector('[data-product="mug"] [data-field="orders"]')?.textContent === '12'`, 10*time.Second)
	shoot(op, "admin-products.png")

	ready := apptest.NewVisitor(t, browser, in, "en")
	if err := chromedp.Do(ready.Ctx, chromedp.EmulateViewport(1000, 640)); err != nil {
		t.Fatal(err)
	}
	in.PutQueue("express", map[string]any{})
	in.PutProduct("mug", "Enamel mug", 40, "express")
	ready.Open("/q/express?product=mug")
	ready.WaitState("ready", apptest.JoinWithin)
	ready.WaitUntil("the product line", `document.getElementById('product-info').textContent !== ''`, 3*time.Second)
	shoot(ready, "ready-en.png")

	// The page in every language, on a phone, at the same place in a
	// line, with the operator's message: docs/page.md shows them.
	in.PutQueue("lang-tour", map[string]any{"paused": true, "entry": "any", "message": map[string]any{
		"en": "Restocked: sizes S and M are back.", "ar": "أعدنا التوريد: المقاسان S وM متوفران من جديد.",
		"de": "Nachschub: Die Größen S und M sind wieder da.", "es": "Reponemos: vuelven las tallas S y M.",
		"fr": "Réassort : les tailles S et M sont de retour.", "ja": "再入荷：SサイズとMサイズが戻りました。",
		"ko": "재입고: S와 M 사이즈가 다시 들어왔습니다.", "pt-BR": "Reposição: os tamanhos P e M voltaram.",
		"zh-Hans": "补货：S 码和 M 码又有货了。", "zh-Hant": "補貨：S 號和 M 號又有貨了。",
	}})
	crowd("lang-tour", 20_000, 1234)
	for _, code := range web.PageLanguages() {
		v := apptest.NewVisitor(t, browser, in, "")
		if err := chromedp.Do(v.Ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		v.Open("/q/lang-tour?lang=" + code)
		v.WaitState("waiting", apptest.JoinWithin)
		v.WaitUntil("the message", `!document.getElementById('operator-message').hidden`, 15*time.Second)
		shoot(v, "page-"+code+".png")
	}
	// The page without JavaScript, in Arabic.
	noscript := apptest.NewVisitor(t, browser, in, "")
	if err := chromedp.Do(noscript.Ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	noscript.Open("/q/lang-tour/noscript?lang=ar")
	shoot(noscript, "noscript-ar.png")

	// Sold out, on a phone: someone in line, with the operator's message.
	in.PutQueue("sold", map[string]any{"paused": true, "entry": "any", "message": "Thank you for waiting: we will restock in May."})
	sold := apptest.NewVisitor(t, browser, in, "en")
	if err := chromedp.Do(sold.Ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	sold.Open("/q/sold")
	sold.WaitState("waiting", apptest.JoinWithin)
	in.Do("POST", "/admin/v1/queues/sold/sold-out", in.AdminAuth(), nil)
	sold.WaitState("soldout", 15*time.Second)
	shoot(sold, "soldout-en.png")

	// The example brand (examples/page), in English and Japanese, and its
	// members' line.
	brand := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) { c.PageDir = "../../examples/page" })
	brand.PutQueue("spring-drop", map[string]any{"paused": true, "entry": "any", "message": "Restocked: sizes S and M are back."})
	brand.PutQueue("vip", map[string]any{"paused": true, "entry": "any"})
	for _, p := range []struct{ path, lang, name string }{
		{"/q/spring-drop", "en", "brand-en.png"}, {"/q/spring-drop", "ja", "brand-ja.png"}, {"/q/vip", "ar", "brand-vip-ar.png"},
	} {
		v := apptest.NewVisitor(t, browser, brand, "")
		if err := chromedp.Do(v.Ctx, chromedp.EmulateViewport(1000, 760)); err != nil {
			t.Fatal(err)
		}
		v.Open(p.path + "?lang=" + p.lang)
		v.WaitState("waiting", apptest.JoinWithin)
		shoot(v, p.name)
	}
}
