package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// The admin page's "Save the report": a queue's card saves the sale's
// report as one HTML file, in the page's language, which opens on its own
// in the browser and passes axe-core's audit.
func TestAdminSavesReport(t *testing.T) {
	b := apptest.StartBrowser(t)
	axe := testenv.Axe(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	q := apptest.UniqueID("sale")
	in.PutQueue(q, map[string]any{"paused": true})
	op := apptest.SignedInAdminAt(t, b, in, "/admin?lang=ko")
	card := `[data-queue="` + q + `"]`
	op.WaitUntil("the queue's card", `document.querySelector('`+card+`')`, 5*time.Second)

	dir := t.TempDir()
	_, err := chromedp.CallBrowser(op.Ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, BrowserContextID: chromedp.FromContext(op.Ctx).BrowserContextID})
	if err != nil {
		t.Fatal(err)
	}
	op.Click(card + ` .report-button`)
	file := filepath.Join(dir, "waitroom-report-"+q+".html")
	deadline := time.Now().Add(30 * time.Second)
	var html []byte
	for html == nil {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(strings.TrimSpace(string(b)), "</html>") {
			html = b
		} else if time.Now().After(deadline) {
			t.Fatalf("no report saved in %s after 30 s; the card says %q", dir, op.Text(card+` .qmessage`))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(string(html), `<html lang="ko">`) || !strings.Contains(string(html), q+" 판매 보고서") {
		t.Errorf("the saved report: %.300s", html)
	}
	op.WaitUntil("the card saying so", `document.querySelector('`+card+` .qmessage').textContent.includes('waitroom-report-`+q+`.html')`, 5*time.Second)

	// The file on its own, as whoever it is mailed to opens it.
	v := apptest.NewVisitor(t, b, &apptest.Instance{T: t, Base: "file://" + dir}, "ko")
	v.Open("/waitroom-report-" + q + ".html")
	if h := v.Text("h1"); h != q+" 판매 보고서" {
		t.Errorf("the saved report's heading: %q", h)
	}
	found, err := v.Axe(axe)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("axe: %s", f)
	}
}
