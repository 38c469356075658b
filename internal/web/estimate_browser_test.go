package web_test

// The page's own estimate, in a real browser: where the page works out its
// place from the front document it tells the wait by waiting.js's
// arithmetic, which must agree with the server's on the cases every store
// is tested on (queue/storetest's testdata/estimates.json; issue 49).

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/storetest"
)

// TestBrowserEstimateAgreesWithTheServer: for each first-come case, the
// queue's front document as the instance serves it, and the page's
// estimate of each position from it (window.__estimate): 0 only within
// the document's nextTickAdmits, ceil(position / estimateRatePerSecond)
// beyond. Draws are left out: the document places no one in a draw, and
// the page asks its instance there.
func TestBrowserEstimateAgreesWithTheServer(t *testing.T) {
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil).ReportingTo(t)
	page := apptest.UniqueID("estimate-page")
	in.PutQueue(page, map[string]any{"paused": true})
	v := apptest.NewVisitor(t, browser, in, "en")
	v.Open("/q/" + page)
	v.WaitState("waiting", apptest.JoinWithin)
	for _, ec := range storetest.EstimateCases() {
		if ec.Method == queue.MethodRandom {
			continue
		}
		t.Run(ec.Name, func(t *testing.T) {
			in := in.ReportingTo(t)
			q := apptest.UniqueID("estimate")
			settings := ec.Settings()
			settings["paused"] = true
			in.PutQueue(q, settings)
			doc := in.Do("GET", "/api/v1/queues/"+q+"/front", "", nil)
			pace, err := json.Marshal(doc.Body["pace"])
			if doc.Status != 200 || err != nil {
				t.Fatalf("front: %d %s", doc.Status, doc.Raw)
			}
			for _, pos := range ec.Positions() {
				var got int64
				if err := v.Eval(fmt.Sprintf("window.__estimate(%d, %s)", pos, pace), &got); err != nil {
					t.Fatal(err)
				}
				if got != ec.Told[pos] {
					t.Errorf("position %d on pace %s: the page tells %d s, want %d s", pos, pace, got, ec.Told[pos])
				}
			}
		})
	}
}
