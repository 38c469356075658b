package web_test

// The wait as a range on the waiting page, in a real browser (issue 54):
// "about 4–6 min" in the visitor's language while the line moves, "not
// known right now" and why once an operator pauses it; and the page's
// words for a wait are the page without JavaScript's, case by case.

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/web"
)

func TestBrowserRange(t *testing.T) {
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil).ReportingTo(t)
	site := newSite(t, web.Options{})
	// One person a hundred seconds: whoever stands behind the three who
	// came first waits minutes, and the line is not judged stalled (that
	// takes three admissions' worth of stillness, five minutes).
	q := apptest.UniqueID("range")
	in.PutQueue(q, map[string]any{"entry": "any", "ratePerSecond": 0.01, "batchSize": 1})
	for i := range 3 {
		in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(fmt.Sprintf("%s-first-%d", q, i)), nil)
	}
	visitors := []struct {
		lang    string
		ranged  *regexp.Regexp
		paused  string
		visitor *apptest.Visitor
	}{
		{lang: "en", ranged: regexp.MustCompile(`^(About \d+–\d+ min|Up to about \d+ min)$`),
			paused: "Not known right now The sale is paused"},
		{lang: "de", ranged: regexp.MustCompile(`^(Etwa \d+–\d+ Min\.|Bis zu etwa \d+ Min\.)$`),
			paused: "Derzeit nicht absehbar Der Verkauf ist angehalten"},
	}
	for i := range visitors {
		p := &visitors[i]
		p.visitor = apptest.NewVisitor(t, browser, in, p.lang)
		p.visitor.Open("/q/" + q)
		p.visitor.WaitState("waiting", apptest.JoinWithin)
		got := p.visitor.Text("#eta")
		if !p.ranged.MatchString(got) {
			t.Errorf("%s, waiting in a line that moves: the wait reads %q, want a range of minutes (%s)", p.lang, got, p.ranged)
		}
		t.Logf("%s at %s: %q", p.lang, p.visitor.Text("#position"), got)
	}

	// The page's words for a wait are the page without JavaScript's: the
	// same rounding, the same texts.
	known := func(seconds, low, high int64) estimate.Estimate {
		return estimate.Estimate{Seconds: seconds, Low: low, High: high, Known: true}
	}
	cases := []estimate.Estimate{
		known(0, 0, 2), known(55, 42, 68), known(12, 8, 21), known(6, 2, 14), known(40, 40, 40),
		known(300, 250, 340), known(90, 30, 150), known(240, 240, 240), known(120, 120, 120),
		known(9000, 7300, 11000), known(7200, 7200, 7200), known(4_000_000, 3_600_000, 4_600_000),
		{Seconds: 30, Reason: estimate.UnknownPaused}, {Reason: estimate.UnknownStalled}, {Reason: estimate.UnknownOpening},
		{Reason: estimate.UnknownSoldOut}, {Reason: estimate.UnknownBeyondStock}, {Reason: "eclipse"},
	}
	for _, p := range visitors {
		for _, e := range cases {
			answer := map[string]any{"estimatedWaitSeconds": e.Seconds, "waitTimeKnown": e.Known}
			if e.Known {
				answer["estimatedWaitRange"] = map[string]int64{"low": e.Low, "high": e.High}
			} else {
				answer["waitTimeUnknownReason"] = e.Reason
			}
			js, _ := json.Marshal(answer)
			var got string
			p.visitor.MustEval("(w => w.why ? w.text + ' ' + w.why : w.text)(window.__waitText("+string(js)+"))", &got)
			if want := noScriptWait(t, site, p.lang, e); got != want {
				t.Errorf("%s, %+v: the page says %q, the page without JavaScript %q", p.lang, e, got, want)
			}
		}
	}

	// The page's range from the front document (window.__range on the
	// document's pace, as the page reads it) is the instance's answer to
	// those waiting ahead, but for the document's rounding of the model (a
	// hundredth of the wait, at most).
	for i := range 3 {
		checkRangeAsAnswered(t, in, visitors[0].visitor, q, fmt.Sprintf("%s-first-%d", q, i))
	}

	// An operator pauses the line: within a poll the wait is not known,
	// and the page says why.
	in.PatchQueue(q, map[string]any{"paused": true})
	for _, p := range visitors {
		p.visitor.WaitUntil(p.lang+": the wait not known while paused",
			`document.getElementById('eta').textContent.trim() === `+apptest.JSString(p.paused)+
				` && !document.getElementById('paused-note').hidden`, 20*time.Second)
	}
}

// checkRangeAsAnswered compares the instance's answer to user, waiting in
// queue q, with the range the page v works out for the same position from
// the front document read just before.
func checkRangeAsAnswered(t *testing.T, in *apptest.Instance, v *apptest.Visitor, q, user string) {
	t.Helper()
	pace := frontPace(in, q, func(map[string]any) bool { return true })
	a := in.Do("GET", "/api/v1/queues/"+q+"/entries/me", in.As(user), nil)
	if a.Str("status") != "WAITING" {
		return // let in already
	}
	var page struct {
		Seconds   int64
		Low, High *int64
		Known     bool
	}
	v.MustEval(fmt.Sprintf("window.__range(%d, %s)", int64(a.Num("position")), pace), &page)
	span, _ := a.Body["estimatedWaitRange"].(map[string]any)
	if !page.Known || a.Body["waitTimeKnown"] != true || span == nil || page.Low == nil || page.High == nil {
		t.Fatalf("%s: the page's range %+v, the answer %s: both should be known", user, page, a.Raw)
	}
	near := func(got int64, want float64) bool { return math.Abs(float64(got)-want) <= 1+want/100 }
	if !near(page.Seconds, a.Num("estimatedWaitSeconds")) || !near(*page.Low, span["low"].(float64)) || !near(*page.High, span["high"].(float64)) {
		t.Errorf("%s: from the document (pace %s) the page says %d s, %d–%d s; the instance answered %s",
			user, pace, page.Seconds, *page.Low, *page.High, a.Raw)
	}
}
