//go:build screenshots

package report_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestReportScreenshot renders docs/screenshots/report.png: the known sale's
// report (reporttest) in English, whole, as chromium shows it. A tool, as
// the pages' screenshots are (internal/web), built only with the
// screenshots tag:
//
//	scripts/test.sh -tags screenshots -run ReportScreenshot ./internal/report/
func TestReportScreenshot(t *testing.T) {
	dir := os.Getenv("WAITROOM_SCREENSHOTS")
	if dir == "" {
		dir = "docs/screenshots"
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir) // relative to the module root
	}
	page := t.TempDir()
	if err := os.WriteFile(filepath.Join(page, "report.html"), []byte(renderScenario(t, "en")), 0o644); err != nil {
		t.Fatal(err)
	}
	v := apptest.NewVisitor(t, apptest.StartBrowser(t), &apptest.Instance{T: t, Base: "file://" + page}, "en")
	if err := chromedp.Do(v.Ctx, chromedp.EmulateViewport(1000, 800)); err != nil {
		t.Fatal(err)
	}
	v.Open("/report.html")
	buf, err := chromedp.Run(v.Ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote report.png (%d KB)", len(buf)/1024)
}
