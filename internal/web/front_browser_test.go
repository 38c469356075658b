package web_test

// The page on the front document (issue 37), in a real browser: far from
// the front it sends no request of its own (only reads of the document,
// the same for everyone) while its place moves, and near the front it asks
// its instance and collects its entry.

import (
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestBrowserFarFromTheFrontTheDocumentAnswers: a line admitting one a
// second (batches of one, so the document's askWithin is five places),
// with the visitor behind `ahead` people. Until the visitor is within five
// places of the front the network sees only its first enter and reads of
// the front document, while the position shown follows the line (it is
// the last one in line, so its place is the queue's length, behind by at
// most what the line moves until the page reads the front again); then it
// asks entries/me and is let in. In CI the far stretch lasts about fifteen
// seconds; with
// WAITROOM_TEST_FRONT_MINUTE=1 it lasts over a minute.
func TestBrowserFarFromTheFrontTheDocumentAnswers(t *testing.T) {
	// Twenty ahead: the page reads the front every 5–6 s while its
	// estimate is 10–30 s, so the far stretch shows at least two places.
	ahead := 20
	if os.Getenv("WAITROOM_TEST_FRONT_MINUTE") != "" {
		ahead = 70
	}
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil).ReportingTo(t)
	q := apptest.UniqueID("front")
	in.PutQueue(q, map[string]any{"paused": true, "ratePerSecond": 1, "batchSize": 1, "intervalMs": 100})
	for i := range ahead {
		in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("ahead-"+strconv.Itoa(i)), nil)
	}
	v := apptest.NewVisitor(t, browser, in, "en")
	v.Open("/q/" + q)
	v.WaitState("waiting", apptest.JoinWithin)
	in.Do("PATCH", "/admin/v1/queues/"+q, in.AdminAuth(), map[string]any{"paused": false})
	started := time.Now()

	// Far: every request after the enter is a read of the front, and the
	// place shown moves with the line, until a read hands over to the
	// instance.
	const handedOver = `window.__polls.some(p => p.method === 'FRONT' && p.pollAfterSeconds === 0)`
	shown := map[string]bool{}
	for {
		var near bool
		v.MustEval(handedOver, &near)
		if near {
			break
		}
		pos, err := strconv.Atoi(v.Text("#position"))
		if err != nil {
			t.Fatalf("position shown: %q", v.Text("#position"))
		}
		length := int(in.QueueStats(q).Num("length"))
		// The place shown is the one the last read of the front gave: the
		// line has moved on since by up to one a second for the time until
		// the next read (the pollAfterSeconds the page was told) and the
		// document's age (its 1 s cache, a tick), and a loaded machine's
		// lateness besides.
		if lag := maxPollAfter(v) + 3; pos < length || pos > length+lag {
			t.Errorf("the page shows place %d while the visitor, last in line, is at %d (a lag of at most %d allowed)", pos, length, lag)
		}
		shown[v.Text("#position")] = true
		if time.Since(started) > time.Duration(ahead+30)*time.Second {
			t.Fatalf("the place shown stopped at %d", pos)
		}
		time.Sleep(500 * time.Millisecond)
	}
	far := time.Since(started)
	var own, reads int
	for _, p := range v.Polls() {
		if p.Method == "FRONT" {
			reads++
			if p.PollAfterSeconds != nil && *p.PollAfterSeconds == 0 {
				break
			}
		} else if p.Method != "POST" { // the enter (and its retry with a solved challenge)
			own++
		}
	}
	if own != 0 || reads < 2 || len(shown) < 2 {
		t.Errorf("over %v far from the front: %d requests of its own after entering (want none), %d reads of the front, places shown %v",
			far.Round(time.Second), own, reads, shown)
	}
	t.Logf("far from the front for %v: %d reads of the front, no request of its own; places shown %v", far.Round(time.Second), reads, shown)

	// Near: the page asks its instance, is held, and is let in.
	v.WaitState("ready", 60*time.Second)
	polls := v.CheckPollGaps()
	if last := polls[len(polls)-1]; last.Method != "GET" {
		t.Errorf("READY came from %s, want the instance's answer to entries/me", last.Method)
	}
}

// maxPollAfter is the longest wait the page has been told so far, in whole
// seconds.
func maxPollAfter(v *apptest.Visitor) int {
	longest := 0.0
	for _, p := range v.Polls() {
		if p.PollAfterSeconds != nil {
			longest = max(longest, *p.PollAfterSeconds)
		}
	}
	return int(math.Ceil(longest))
}
