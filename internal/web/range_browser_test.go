package web_test

// The wait as a range on the waiting page, in a real browser (issue 54):
// "about 4–6 min" in the visitor's language while the line moves, "not
// known right now" and why once an operator pauses it; and the page's
// words for a wait are the page without JavaScript's, case by case.

import (
	"encoding/json"
	"fmt"
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
			paused: "Not known right now: the sale is paused"},
		{lang: "de", ranged: regexp.MustCompile(`^(Etwa \d+–\d+ Min\.|Bis zu etwa \d+ Min\.)$`),
			paused: "Derzeit nicht absehbar: der Verkauf ist angehalten"},
	}
	for i := range visitors {
		p := &visitors[i]
		p.visitor = apptest.NewVisitor(t, browser, in, p.lang)
		p.visitor.Open("/q/" + q)
		p.visitor.WaitState("waiting", apptest.JoinWithin)
		if got := p.visitor.Text("#eta"); !p.ranged.MatchString(got) {
			t.Errorf("%s, waiting in a line that moves: the wait reads %q, want a range of minutes (%s)", p.lang, got, p.ranged)
		}
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
			p.visitor.MustEval("window.__waitText("+string(js)+")", &got)
			if want := noScriptWait(t, site, p.lang, e); got != want {
				t.Errorf("%s, %+v: the page says %q, the page without JavaScript %q", p.lang, e, got, want)
			}
		}
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
