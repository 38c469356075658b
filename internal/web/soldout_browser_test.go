package web_test

// The sale sold out, in a real browser: the waiting page says so within
// one poll and keeps the visitor's place, a restock brings the line back
// within one poll, a newcomer is told it is sold out, a visitor behind more
// people than units left is told so calmly, and the admin page marks a
// queue sold out and restocks it.

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// soldOutWithin bounds the wait for a change the page shows at its next
// poll: 10 s ±20% while waiting far back, 30 s ±20% while sold out, and
// slack for a loaded machine. The poll records say whether it was the
// next one.
const soldOutWithin = 45 * time.Second

// pageNow is the page's clock (performance.now(), ms): the clock of its
// record of polls and states.
func pageNow(v *apptest.Visitor) float64 {
	v.T.Helper()
	var now float64
	v.MustEval(`performance.now()`, &now)
	return now
}

// firstPollSentAfter is the page's first request to the line sent after
// at (its clock), once answered; with state, the first answered so.
func firstPollSentAfter(v *apptest.Visitor, at float64, state ...string) apptest.PagePoll {
	v.T.Helper()
	answered := `p.answeredAt > 0`
	if len(state) > 0 {
		answered += ` && p.state === ` + apptest.JSString(state[0])
	}
	v.WaitUntil("an answer to a poll sent after the change",
		`window.__polls.some(p => p.sentAt > `+strconv.FormatFloat(at, 'f', 3, 64)+` && `+answered+`)`, soldOutWithin)
	for _, p := range v.Polls() {
		if p.SentAt > at && (len(state) == 0 || p.State == state[0]) {
			return p
		}
	}
	panic("unreachable: the page had the poll a moment ago")
}

// shownAt is when the page last turned to state (its clock; -1: never).
func shownAt(v *apptest.Visitor, state string) float64 {
	v.T.Helper()
	var at float64
	v.MustEval(`(window.__states.findLast(s => s.state === `+apptest.JSString(state)+`) || {at: -1}).at`, &at)
	return at
}

var digits = regexp.MustCompile(`\d`)

func TestBrowserSoldOut(t *testing.T) {
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)

	t.Run("sold out while waiting, in English and Japanese; a restock gives the place back", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		const q = "so-sale"
		in.PutQueue(q, map[string]any{"paused": true, "message": "Thank you for waiting."})
		in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("so-ahead"), nil)
		en := apptest.NewVisitor(t, browser, in, "en")
		en.Open("/q/" + q)
		en.WaitState("waiting", apptest.JoinWithin)
		ja := apptest.NewVisitor(t, browser, in, "ja")
		ja.Open("/q/" + q)
		ja.WaitState("waiting", apptest.JoinWithin)
		visitors := []struct {
			v        *apptest.Visitor
			lang     string
			position string
		}{{en, "en", "2"}, {ja, "ja", "3"}}
		for _, p := range visitors {
			if got := p.v.Text("#position"); got != p.position {
				t.Fatalf("%s: position %q, want %s", p.lang, got, p.position)
			}
		}

		// Sold out: the next poll of each page shows it, and nothing that
		// moves (no place, no estimate, no countdown) is on screen.
		// Each page's clock is read before the sale sells out: read after,
		// on a loaded machine, a poll answered SOLD_OUT could come between
		// and be passed over. A poll sent meanwhile may still be answered
		// WAITING, so the first answered SOLD_OUT is the one.
		soldAt := map[string]float64{"en": pageNow(en), "ja": pageNow(ja)}
		if r := in.Do("POST", "/admin/v1/queues/"+q+"/sold-out", in.AdminAuth(), nil); r.Status != 200 || r.Body["soldOut"] != true {
			t.Fatalf("sold-out: %d %s", r.Status, r.Raw)
		}
		for _, p := range visitors {
			texts := pageTexts(t, p.lang)
			p.v.WaitState("soldout", soldOutWithin)
			next := firstPollSentAfter(p.v, soldAt[p.lang], "SOLD_OUT")
			if next.State != "SOLD_OUT" || next.PollAfterSeconds == nil || *next.PollAfterSeconds < 24 || *next.PollAfterSeconds > 36 {
				t.Errorf("%s: the first poll after the sale sold out was answered %+v, want SOLD_OUT, pollAfterSeconds 24..36", p.lang, next)
			}
			if at := shownAt(p.v, "soldout"); at < next.AnsweredAt || at > next.AnsweredAt+1000 {
				t.Errorf("%s: sold out shown at %.0f ms, its answer read at %.0f ms: not at that poll", p.lang, at, next.AnsweredAt)
			}
			var shown struct {
				Card, Title string
				Message     bool
			}
			p.v.MustEval(`({card: document.querySelector('[data-state="soldout"]').innerText, title: document.title,
				message: !document.getElementById('operator-message').hidden})`, &shown)
			want := texts["soldOutHeading"] + "\n" + texts["soldOutText"] + "\n" + texts["soldOutPlaceKept"]
			if got := strings.Join(strings.Fields(strings.ReplaceAll(shown.Card, "\n", " \n ")), " "); got != strings.Join(strings.Fields(strings.ReplaceAll(want, "\n", " \n ")), " ") {
				t.Errorf("%s: the sold-out card reads %q, want %q", p.lang, shown.Card, want)
			}
			if !strings.HasPrefix(shown.Title, texts["titleSoldOut"]+" · ") || !shown.Message {
				t.Errorf("%s: title %q, message shown %v", p.lang, shown.Title, shown.Message)
			}
			var visible string
			p.v.MustEval(`document.getElementById('waitroom').innerText`, &visible)
			if digits.MatchString(visible) {
				t.Errorf("%s: a number is on screen while sold out (a place, an estimate or a countdown): %q", p.lang, visible)
			}
		}
		if got := en.Focused(); got != "h1#soldout-heading" {
			t.Errorf("focus after sold out is on %q, want the heading", got)
		}
		en.WaitUntil("sold out announced", `document.getElementById('announcer').textContent === "Sold out. Everything in this sale has been sold."`, 5*time.Second)

		// A newcomer is refused a place at its first request (410), before
		// the challenge every anonymous visitor solves is asked of it: the
		// page fetches none (issue 49). It is told it is sold out.
		newcomer := apptest.NewVisitor(t, browser, in, "en")
		newcomer.Open("/q/" + q)
		newcomer.WaitState("soldout", apptest.JoinWithin)
		var refused struct{ Status int }
		newcomer.MustEval(`window.__polls[0]`, &refused)
		var noPlace, kept, challenged bool
		newcomer.MustEval(`!document.getElementById('soldout-no-place').hidden`, &noPlace)
		newcomer.MustEval(`!document.getElementById('soldout-kept').hidden`, &kept)
		newcomer.MustEval(`window.__challenge !== undefined`, &challenged)
		if refused.Status != 410 || !noPlace || kept || challenged {
			t.Errorf("newcomer: first answer %d, no-place note shown %v, place-kept note shown %v, a challenge fetched %v; want 410, true, false, false",
				refused.Status, noPlace, kept, challenged)
		}

		// A restock: each page's next poll brings its place back, the same.
		restockAt := map[string]float64{"en": pageNow(en), "ja": pageNow(ja)} // before it, as soldAt
		if r := in.Do("POST", "/admin/v1/queues/"+q+"/restock", in.AdminAuth(), nil); r.Status != 200 || r.Body["soldOut"] != false {
			t.Fatalf("restock: %d %s", r.Status, r.Raw)
		}
		for _, p := range visitors {
			p.v.WaitState("waiting", soldOutWithin)
			next := firstPollSentAfter(p.v, restockAt[p.lang], "WAITING")
			if next.State != "WAITING" {
				t.Errorf("%s: the first poll after the restock was answered %+v, want WAITING", p.lang, next)
			}
			if got := p.v.Text("#position"); got != p.position {
				t.Errorf("%s: after the restock the position is %q, want %s as before", p.lang, got, p.position)
			}
		}
		// The newcomer's page tries again as seldom, and gets in line.
		newcomer.WaitState("waiting", soldOutWithin)
		if got := newcomer.Text("#position"); got != "4" {
			t.Errorf("the newcomer's position after the restock = %q, want 4", got)
		}

		// Every poll came when the answer before it said, sold out or not.
		in.PatchQueue(q, map[string]any{"paused": false, "ratePerSecond": 100, "batchSize": 10})
		en.WaitState("ready", 10*time.Second)
		en.CheckPollGaps()
	})

	t.Run("fewer units left than people ahead: a calm note, gone after a restock", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		const q = "so-few"
		in.PutQueue(q, map[string]any{"paused": true})
		in.PutProduct("so-few-mug", "Mug", 1, q)
		in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("so-few-first"), nil)
		v := apptest.NewVisitor(t, browser, in, "de")
		v.Open("/q/" + q)
		v.WaitState("waiting", apptest.JoinWithin)
		v.WaitUntil("the note", `!document.getElementById('beyond-stock-note').hidden`, 5*time.Second)
		if got, want := v.Text("#beyond-stock-note"), pageTexts(t, "de")["beyondStockNote"]; got != want {
			t.Errorf("the note reads %q, want %q", got, want)
		}
		if got := v.Text("#position"); got != "2" {
			t.Errorf("position %q, want 2", got)
		}
		in.PutProduct("so-few-mug", "Mug", 5, q)
		v.WaitUntil("the note to go", `document.getElementById('beyond-stock-note').hidden`, soldOutWithin)
	})

	t.Run("admin page: units left, mark sold out, restock", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		const q = "so-admin"
		in.PutQueue(q, map[string]any{"paused": true})
		in.PutProduct("so-admin-cap", "Cap", 4, q)
		op := apptest.SignedInAdmin(t, browser, in)
		card := `[data-queue="` + q + `"]`
		field := func(name string) string { return card + ` [data-field="` + name + `"]` }
		op.WaitUntil("the card's units left", `document.querySelector('`+field("units")+`')?.textContent === 'Units left: 4'`, 5*time.Second)
		var badge bool
		op.MustEval(`!document.querySelector('`+card+` .badge-soldout').hidden`, &badge)
		if badge {
			t.Errorf("the sold-out badge shows on a queue with 4 units left")
		}

		op.Click(card + " .soldout-button")
		op.WaitUntil("the sold-out badge", `!document.querySelector('`+card+` .badge-soldout').hidden`, 5*time.Second)
		if got := op.Text(field("units")); got != "Units left: 0" {
			t.Errorf("units after Mark sold out: %q", got)
		}
		if got := op.Text(card + " .qmessage"); !strings.HasPrefix(got, "Marked sold out") {
			t.Errorf("message after Mark sold out: %q", got)
		}
		if r := in.QueueStats(q); r.Body["soldOut"] != true || r.Num("unitsLeft") != 0 {
			t.Errorf("after Mark sold out the queue is %s", r.Raw)
		}

		// Restocked with the units given.
		op.TypeInto(card+" .units-input", "7")
		op.Click(card + " .stock-form button")
		op.WaitUntil("units left 7", `document.querySelector('`+field("units")+`').textContent === 'Units left: 7'`, 5*time.Second)
		op.MustEval(`!document.querySelector('`+card+` .badge-soldout').hidden`, &badge)
		if r := in.QueueStats(q); badge || r.Body["soldOut"] != false || r.Num("unitsLeft") != 7 {
			t.Errorf("after a restock of 7: badge shown %v, queue %s", badge, r.Raw)
		}
		var left string
		op.MustEval(`document.querySelector('`+card+` .units-input').value`, &left)
		if left != "" {
			t.Errorf("the units field keeps %q after the restock", left)
		}

		// Without units: counted again from the products (4 caps).
		op.Click(card + " .soldout-button")
		op.WaitUntil("sold out again", `!document.querySelector('`+card+` .badge-soldout').hidden`, 5*time.Second)
		op.Click(card + " .stock-form button")
		op.WaitUntil("units left counted again", `document.querySelector('`+field("units")+`').textContent === 'Units left: 4'`, 5*time.Second)

		// Refusals are said where the card says them: the page's own, and
		// the server's, and change nothing.
		op.TypeInto(card+" .units-input", "-1")
		op.Click(card + " .stock-form button")
		op.WaitUntil("the page's refusal", `document.querySelector('`+card+` .qmessage').classList.contains('is-error')`, 5*time.Second)
		if got := op.Text(card + " .qmessage"); got != "Units left: a whole number, 0 or more, or empty." {
			t.Errorf("refusal of -1: %q", got)
		}
		op.TypeInto(card+" .units-input", "2000000000")
		op.Click(card + " .stock-form button")
		op.WaitUntil("the server's refusal", `document.querySelector('`+card+` .qmessage').textContent.includes('unitsLeft')`, 5*time.Second)
		if r := in.QueueStats(q); r.Num("unitsLeft") != 4 {
			t.Errorf("after refused restocks the queue is %s", r.Raw)
		}

		// A queue whose stock nobody told: not known.
		in.PutQueue("so-unknown", map[string]any{})
		op.WaitUntil("not known", `document.querySelector('[data-queue="so-unknown"] [data-field="units"]')?.textContent === 'Units left: not known'`, 5*time.Second)
	})
}
