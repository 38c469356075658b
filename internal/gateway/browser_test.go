package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// A shopper in a real browser, through `waitroom proxy`: sent to the
// waiting page while the line is busy, let back in to the page they asked
// for once admitted; on a quiet line, through the waiting page unseen
// (challenge, the default) or the page at once (entry: any). The
// gateway's admin page shows the queues and no products: it sells nothing
// itself.
func TestGatewayBrowser(t *testing.T) {
	browser := apptest.StartBrowser(t)
	s := apptest.NewUpstreamShop(t, 10)
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, s, nil)

	t.Run("busy line: wait, then land on the page asked for", func(t *testing.T) {
		p.SetPaused(true)
		shopper := apptest.NewVisitor(t, browser, p.Instance, "en")
		shopper.Open("/checkout?step=2")
		shopper.WaitState("waiting", apptest.JoinWithin)
		var path string
		shopper.MustEval(`location.pathname + location.search`, &path)
		if path != apptest.GatewayPrefix+"/q/default?return=%2Fcheckout%3Fstep%3D2" {
			t.Fatalf("the busy line sent the shopper to %q", path)
		}
		if got := shopper.Text("#position"); got != "1" {
			t.Fatalf("position %q, want 1; %s", got, shopper.Screen())
		}
		p.SetPaused(false) // the line moves: the shopper is admitted
		shopper.WaitUntil("back on the checkout page", `location.pathname === '/checkout' && !!document.getElementById('checkout')`, 15*time.Second)
		shopper.MustEval(`location.pathname + location.search`, &path)
		if path != "/checkout?step=2" {
			t.Errorf("landed on %q, want /checkout?step=2", path)
		}
		if got := shopper.Text("#checkout"); !strings.HasPrefix(got, "Checkout for anon-") {
			t.Errorf("the shop saw %q, want the shopper's session as X-Waitroom-User", got)
		}
		// The entry cookie is HttpOnly: the page cannot read it.
		var cookies string
		shopper.MustEval(`document.cookie`, &cookies)
		if strings.Contains(cookies, "wr_entry_") || strings.Contains(cookies, "wr_session") {
			t.Errorf("script can read %q", cookies)
		}
		// Reloading keeps the entry (session route: not spent).
		shopper.Open("/checkout?step=3")
		shopper.WaitUntil("checkout again", `location.pathname === '/checkout' && !!document.getElementById('checkout')`, 10*time.Second)
	})

	t.Run("quiet line, challenge: through the waiting page, nothing to do", func(t *testing.T) {
		p.SetPaused(false)
		walkIn := apptest.NewVisitor(t, browser, p.Instance, "en")
		walkIn.Open("/checkout?step=1")
		// The waiting page solves the challenge, enters, is admitted at the
		// next tick and sends the shopper on, all by itself.
		walkIn.WaitUntil("on the checkout page", `location.pathname === '/checkout' && !!document.getElementById('checkout')`, 15*time.Second)
		if got := walkIn.Text("#checkout"); !strings.HasPrefix(got, "Checkout for anon-") {
			t.Errorf("page %q", got)
		}
	})

	t.Run("quiet line, anyone may enter: the page at once", func(t *testing.T) {
		p.SetPaused(false)
		if r := p.Do("PATCH", apptest.GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), map[string]any{"entry": "any"}); r.Status != 200 {
			t.Fatalf("entry any: %d %s", r.Status, r.Raw)
		}
		walkIn := apptest.NewVisitor(t, browser, p.Instance, "ko")
		walkIn.Open("/checkout")
		var nav struct {
			Path      string `json:"path"`
			Redirects int    `json:"redirects"`
		}
		walkIn.MustEval(`({path: location.pathname, redirects: performance.getEntriesByType('navigation')[0].redirectCount})`, &nav)
		if nav.Path != "/checkout" || nav.Redirects != 0 {
			t.Fatalf("quiet line: at %q after %d redirects, want /checkout at once", nav.Path, nav.Redirects)
		}
		if got := walkIn.Text("#checkout"); !strings.HasPrefix(got, "Checkout for anon-") {
			t.Errorf("page %q", got)
		}
	})

	t.Run("admin page in gateway mode: queues, no products", func(t *testing.T) {
		t.Parallel()
		p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, apptest.NewUpstreamShop(t, 1), nil)
		op := apptest.SignedInAdminAt(t, browser, p.Instance, apptest.GatewayPrefix+"/admin#products")
		op.WaitUntil("the default queue's card", `document.querySelector('[data-queue="default"]')`, 5*time.Second)
		var shown map[string]bool
		op.MustEval(`({tabs: !document.getElementById('tabs').hidden, queues: !document.getElementById('queues-screen').hidden,
			products: !document.getElementById('products-screen').hidden})`, &shown)
		if diff := cmp.Diff(map[string]bool{"tabs": false, "queues": true, "products": false}, shown); diff != "" {
			t.Errorf("shown in gateway mode, which sells nothing itself (-want +got):\n%s", diff)
		}
	})
}

// Gateway mode with the shop's own page: the shopper waits on the brand's
// page under the prefix, sees the operator's message, and lands on the
// page they asked for once admitted.
func TestShopPageGatewayBrowser(t *testing.T) {
	t.Parallel()
	browser := apptest.StartBrowser(t)
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, apptest.NewUpstreamShop(t, 10), func(c *app.Config) { c.PageDir = exampleBrand })
	p.SetPaused(true)
	if r := p.Do("PATCH", apptest.GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), map[string]any{"message": "Checkout opens in a moment."}); r.Status != 200 {
		t.Fatalf("message: %d %s", r.Status, r.Raw)
	}
	shopper := apptest.NewVisitor(t, browser, p.Instance, "en")
	shopper.Open("/checkout?step=2")
	shopper.WaitState("waiting", apptest.JoinWithin)
	var got struct {
		Path, Kicker, Message, CSS string
	}
	shopper.MustEval(`({path: location.pathname, kicker: document.querySelector('.kicker')?.textContent,
		message: document.getElementById('operator-message-text').textContent,
		css: document.querySelector('link[rel=stylesheet]').getAttribute('href')})`, &got)
	if got.Path != apptest.GatewayPrefix+"/q/default" || got.Kicker != "Spring drop · default" || got.Message != "Checkout opens in a moment." ||
		!strings.HasPrefix(got.CSS, apptest.GatewayPrefix+"/assets/custom/brand.css?v=") {
		t.Errorf("the waiting page in gateway mode: %+v", got)
	}
	p.SetPaused(false)
	shopper.WaitUntil("back on the checkout page", `location.pathname === '/checkout' && !!document.getElementById('checkout')`, 15*time.Second)
	var path string
	shopper.MustEval(`location.pathname + location.search`, &path)
	if path != "/checkout?step=2" {
		t.Errorf("landed on %q, want /checkout?step=2", path)
	}
}

// exampleBrand is the repository's example of a shop's own waiting page
// (docs/page.md): its own template, look and assets, and a template of its
// own for the queue vip.
const exampleBrand = "../../examples/page"
