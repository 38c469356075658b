package web_test

// The page's own estimate, in a real browser: where the page works out its
// place from the front document it tells the wait by waiting.js's
// arithmetic, which must agree with the server's on the cases every store
// is tested on (queue/storetest's testdata/estimates.json; issue 49).

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/storetest"
)

// TestBrowserEstimateAgreesWithTheServer: for each first-come case, the
// queue's front document as the instance serves it, and the page's
// estimate of each position from it (window.__estimate): 0 only within
// the document's nextTickAdmits, ceil(position / estimateRatePerSecond)
// beyond. Draws are left out: the document places no one in a draw, and
// the page asks its instance there. Where a case lets people in first
// under a live-token cap, they go in through the instance (its ticks),
// and the document is read once it carries the room the last tick left
// under the cap (a cache holds it up to a second): the page counts the
// cap only through nextTickAdmits, and must tell nobody 0 at it.
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
			settings["paused"] = ec.LetInFirst == 0
			in.PutQueue(q, settings)
			letIn(in, q, ec.LetInFirst)
			room := min(math.Floor(ec.RatePerSecond*float64(ec.IntervalMs)/1000), float64(ec.BatchSize), float64(ec.MaxActiveTokens-int64(ec.LetInFirst)))
			pace := frontPace(in, q, func(p map[string]any) bool {
				return ec.LetInFirst == 0 || p["nextTickAdmits"].(float64) == room
			})
			for _, pos := range ec.Positions() {
				var got int64
				if err := v.Eval(fmt.Sprintf("window.__estimate(%d, %s)", pos, pace), &got); err != nil {
					t.Fatal(err)
				}
				if got != ec.Told[pos] {
					t.Errorf("position %d on pace %s: the page tells %d s, want %d s", pos, pace, got, ec.Told[pos])
				}
				// Its range (issue 54), from the document's model: around
				// the same median (the arithmetic is held to the server's
				// by internal/httpapi's TestThePageRangesAsTheServerDoes).
				var r struct {
					Seconds, Low, High int64
					Known              bool
				}
				if err := v.Eval(fmt.Sprintf("window.__range(%d, %s)", pos, pace), &r); err != nil {
					t.Fatal(err)
				}
				if r.Seconds != got || !r.Known || r.Low > r.Seconds || r.Seconds > r.High || r.High == 0 {
					t.Errorf("position %d on pace %s: the page's range %+v, want known, around %d s", pos, pace, r, got)
				}
			}
		})
	}
}

// letIn lets n users into queue q through the instance and waits until
// each holds a token.
func letIn(in *apptest.Instance, q string, n int) {
	in.T.Helper()
	for i := range n {
		user := fmt.Sprintf("%s-first-%d", q, i)
		if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(user), nil); r.Status != http.StatusOK {
			in.T.Fatalf("enter %s as %s: %d %s", q, user, r.Status, r.Raw)
		}
		in.WaitReady(q, user)
	}
}

// frontPace is the pace of queue q's front document, as JSON, once ready
// says it is the one wanted (for apptest.Patience at most).
func frontPace(in *apptest.Instance, q string, ready func(pace map[string]any) bool) []byte {
	in.T.Helper()
	deadline := time.Now().Add(apptest.Patience)
	for {
		doc := in.Do("GET", "/api/v1/queues/"+q+"/front", "", nil)
		p, _ := doc.Body["pace"].(map[string]any)
		js, err := json.Marshal(p)
		if doc.Status != http.StatusOK || p == nil || err != nil {
			in.T.Fatalf("front: %d %s", doc.Status, doc.Raw)
		}
		if _, ok := p["nextTickAdmits"].(float64); ok && ready(p) {
			return js
		}
		if time.Now().After(deadline) {
			in.T.Fatalf("front of %s: pace %s still not as wanted after %v", q, js, apptest.Patience)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
