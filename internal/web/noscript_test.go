package web_test

import (
	"html"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/web"
)

// The page without JavaScript, sold out: the sold-out card in the
// visitor's language, with no place, estimate or countdown, refreshing at
// pollAfterSeconds — as one in line when the visitor keeps a place, as a
// newcomer (who enters once a restock lets them) when the line refused
// them one. A place behind more people than units left carries the note.
func TestNoScriptSoldOut(t *testing.T) {
	s := newSite(t, web.Options{})
	tests := []struct {
		name, lang  string
		st          web.Standing
		say, absent []string // texts (by key) and markup
		refresh     string
	}{
		{"keeps a place", "en", web.Standing{State: web.SoldOut, KeepsPlace: true, PollAfter: 31 * time.Second},
			[]string{"soldOutHeading", "soldOutText", "soldOutPlaceKept"}, []string{"soldOutNoPlace", `id="position"`, `id="eta"`, `id="opens-in"`},
			"31; url=/q/drop/noscript?joined=1&lang=en"},
		{"keeps a place, in Japanese", "ja", web.Standing{State: web.SoldOut, KeepsPlace: true, PollAfter: 27 * time.Second},
			[]string{"soldOutHeading", "soldOutText", "soldOutPlaceKept"}, []string{"soldOutNoPlace", `id="position"`, `id="eta"`},
			"27; url=/q/drop/noscript?joined=1&lang=ja"},
		{"refused a place", "ja", web.Standing{State: web.SoldOut, PollAfter: 30 * time.Second},
			[]string{"soldOutHeading", "soldOutText", "soldOutNoPlace"}, []string{"soldOutPlaceKept", `id="position"`, `id="eta"`},
			"30; url=/q/drop/noscript?lang=ja"},
		{"behind more people than units left", "de", web.Standing{State: web.Waiting, Position: 40, Length: 90, BeyondStock: true, PollAfter: 10 * time.Second},
			[]string{"waitingHeading", "beyondStockNote"}, []string{"soldOutHeading"},
			"10; url=/q/drop/noscript?joined=1&lang=de"},
		{"ahead of the units left", "de", web.Standing{State: web.Waiting, Position: 4, Length: 90, PollAfter: 10 * time.Second},
			[]string{"waitingHeading"}, []string{"beyondStockNote", `id="beyond-stock-note"`},
			"10; url=/q/drop/noscript?joined=1&lang=de"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texts := pageTexts(t, tt.lang)
			w := httptest.NewRecorder()
			st := tt.st
			s.Waiting(w, httptest.NewRequest("GET", "/q/drop/noscript?lang="+tt.lang, nil),
				web.Visit{Queue: "drop", NoScript: &st, Message: func(string) string { return "Thank you for waiting." }})
			page := w.Body.String()
			if w.Code != 200 || !strings.Contains(page, `data-state="`+string(tt.st.State)+`"`) || !strings.Contains(page, "Thank you for waiting.") {
				t.Fatalf("status %d, want 200 with the state and the message: %.800s", w.Code, page)
			}
			for _, key := range tt.say {
				if !strings.Contains(page, html.EscapeString(texts[key])) {
					t.Errorf("the page does not say %s (%q)", key, texts[key])
				}
			}
			for _, a := range tt.absent {
				if text, ok := texts[a]; ok {
					a = html.EscapeString(text)
				}
				if strings.Contains(page, a) {
					t.Errorf("the page has %q", a)
				}
			}
			m := refreshTo.FindStringSubmatch(page)
			if m == nil || m[1]+"; url="+html.UnescapeString(m[2]) != tt.refresh {
				t.Errorf("refresh %v, want %q", m, tt.refresh)
			}
		})
	}
}

// A queue with lanes, without JavaScript: the place is named by its lane
// ("Your place in the members line"); a queue whose lanes take codes
// offers the code field wherever a code can move the visitor (in the
// public lane, before the opening, out of line), as a form that POSTs the
// code in its body to the page itself, never in its URL; a code turned
// down is said in the page's words. A queue without codes has no field.
func TestNoScriptLanes(t *testing.T) {
	s := newSite(t, web.Options{})
	const action = `<form class="code-form" id="code-form" method="post" action="/q/drop/noscript?lang=`
	tests := []struct {
		name, lang  string
		st          web.Standing
		codes       bool
		say, absent []string // texts (by key, filled with the lane) and markup
	}{
		{"public, codes taken", "en", web.Standing{State: web.Waiting, Position: 40, Length: 90, Lane: "public", PollAfter: 10 * time.Second}, true,
			[]string{"positionLabel", "lengthLabel", "codeLabel", "codeButton", action + "en", `name="accessCode"`},
			[]string{"codeInvalid", "codeUsed", `id="code-message"`}},
		{"in the members lane", "en", web.Standing{State: web.Waiting, Position: 12, Length: 30, Lane: "members", PollAfter: 5 * time.Second}, true,
			[]string{"lanePlaceLabel", "laneLengthLabel", `<span id="position">12</span>`},
			[]string{"codeLabel", `id="code-form"`}},
		{"a used code, in Korean", "ko", web.Standing{State: web.Waiting, Position: 40, Length: 90, Lane: "public", PollAfter: 10 * time.Second, CodeRefused: web.CodeUsed}, true,
			[]string{"codeUsed", action + "ko", `role="alert"`},
			[]string{"codeInvalid"}},
		{"a wrong code, out of line", "ja", web.Standing{State: web.Left, CodeRefused: web.CodeInvalid}, true,
			[]string{"codeInvalid", "codeLabel"},
			[]string{"codeUsed"}},
		{"before the opening", "de", web.Standing{State: web.Opening, OpensAt: time.Now().Add(time.Hour), PollAfter: time.Minute}, true,
			[]string{"codeLabel", action + "de"}, nil},
		{"a queue without codes", "en", web.Standing{State: web.Waiting, Position: 4, Length: 9, Lane: "public", PollAfter: 10 * time.Second}, false,
			[]string{"positionLabel"}, []string{"codeLabel", `id="code-form"`, "lanePlaceLabel"}},
		{"nothing a code can do: READY", "en", web.Standing{State: web.Ready, ExpiresAt: time.Now().Add(time.Minute), Lane: "public"}, true,
			nil, []string{"codeLabel", `id="code-form"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texts := pageTexts(t, tt.lang)
			said := func(key string) string {
				if text, ok := texts[key]; ok {
					return html.EscapeString(strings.ReplaceAll(text, "{lane}", tt.st.Lane))
				}
				return key
			}
			w := httptest.NewRecorder()
			st := tt.st
			s.Waiting(w, httptest.NewRequest("GET", "/q/drop/noscript?lang="+tt.lang, nil),
				web.Visit{Queue: "drop", NoScript: &st, Codes: tt.codes})
			page := w.Body.String()
			if w.Code != 200 || !strings.Contains(page, `data-state="`+string(tt.st.State)+`"`) {
				t.Fatalf("status %d, want 200 with the state: %.800s", w.Code, page)
			}
			for _, key := range tt.say {
				if !strings.Contains(page, said(key)) {
					t.Errorf("the page does not say %s (%q)", key, said(key))
				}
			}
			for _, key := range tt.absent {
				if strings.Contains(page, said(key)) {
					t.Errorf("the page has %s (%q)", key, said(key))
				}
			}
		})
	}
}

// The page with JavaScript carries the code form (hidden: the script shows
// it where a code can help) only for a queue whose lanes take codes; its
// action, used only should the script not run, POSTs to the page without
// JavaScript, so a code never goes into a URL even then.
func TestCodeForm(t *testing.T) {
	s := newSite(t, web.Options{})
	for _, codes := range []bool{true, false} {
		w := httptest.NewRecorder()
		s.Waiting(w, httptest.NewRequest("GET", "/q/drop?lang=fr", nil), web.Visit{Queue: "drop", Codes: codes})
		page := w.Body.String()
		form := `<form class="code-form" id="code-form" method="post" action="/q/drop/noscript?lang=fr" novalidate hidden>`
		if got := strings.Contains(page, form); got != codes {
			t.Errorf("codes %v: the page has the hidden code form: %v, want %v", codes, got, codes)
		}
	}
}

// The wait without JavaScript: a known estimate's range in words of the
// page's language, rounded outward (to 5 s, 10 s, minutes or hours by its
// top), one number where both ends round alike, "up to" where the bottom
// rounds to 0, any moment now within the next tick; an unknown one is
// said to be not known, and why (on a line of its own).
func TestNoScriptWait(t *testing.T) {
	s := newSite(t, web.Options{})
	known := func(seconds, low, high int64) estimate.Estimate {
		return estimate.Estimate{Seconds: seconds, Low: low, High: high, Known: true}
	}
	tests := []struct {
		name, lang string
		e          estimate.Estimate
		want       string
	}{
		{"within the next tick", "en", known(0, 0, 2), "Any moment now"},
		{"seconds, to 10 s", "en", known(55, 42, 68), "About 40–70 s"},
		{"seconds, to 5 s", "en", known(12, 8, 21), "About 5–25 s"},
		{"seconds from 0", "en", known(6, 2, 14), "Up to about 15 s"},
		{"seconds alike", "en", known(40, 40, 40), "About 40 s"},
		{"minutes", "en", known(300, 250, 340), "About 4–6 min"},
		{"minutes from 0", "en", known(90, 30, 150), "Up to about 3 min"},
		{"minutes alike", "en", known(240, 240, 240), "About 4 minutes"},
		{"two minutes alike", "en", known(120, 120, 120), "About 2 minutes"},
		{"hours", "en", known(9000, 7300, 11000), "About 2–4 h"},
		{"hours alike", "en", known(7200, 7200, 7200), "About 2 hours"},
		{"paused", "en", estimate.Estimate{Seconds: 30, Reason: estimate.UnknownPaused}, "Not known right now The sale is paused"},
		{"stalled", "en", estimate.Estimate{Seconds: 3, Reason: estimate.UnknownStalled}, "Not known right now The line isn't moving right now"},
		{"beyond the stock", "en", estimate.Estimate{Seconds: 200, Reason: estimate.UnknownBeyondStock},
			"Not known right now Fewer items are left than people ahead of you"},
		{"a reason the page has no words for", "en", estimate.Estimate{Reason: "eclipse"}, "Not known right now"},
		{"minutes in German", "de", known(300, 250, 340), "Etwa 4–6 Min."},
		{"paused in German", "de", estimate.Estimate{Reason: estimate.UnknownPaused}, "Derzeit nicht absehbar Der Verkauf ist angehalten"},
		{"minutes in Japanese", "ja", known(300, 250, 340), "約4〜6分"},
		{"minutes in Arabic (Latin digits, as Intl writes them)", "ar", known(300, 250, 340), "من 4 إلى 6 دقيقة تقريبًا"},
		{"two minutes alike in Arabic (its dual)", "ar", known(120, 120, 120), "حوالي دقيقتين"},
		{"thousands", "en", known(4_000_000, 3_600_000, 4_600_000), "About 1,000–1,278 h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := noScriptWait(t, s, tt.lang, tt.e); got != tt.want {
				t.Errorf("the page says %q, want %q", got, tt.want)
			}
		})
	}
}

// etaShown is the wait a page without JavaScript shows (and why it is not
// known, in a span of its own).
var etaShown = regexp.MustCompile(`<dd id="eta">(.*?)</dd>`)

// noScriptWait is what the page without JavaScript says of a WAITING
// visitor's wait e, in lang, as text (its textContent).
func noScriptWait(t *testing.T, s *web.Site, lang string, e estimate.Estimate) string {
	t.Helper()
	w := httptest.NewRecorder()
	st := web.Standing{State: web.Waiting, Position: 40, Length: 90, Estimate: e, PollAfter: 10 * time.Second}
	s.Waiting(w, httptest.NewRequest("GET", "/q/drop/noscript?lang="+lang, nil), web.Visit{Queue: "drop", NoScript: &st})
	m := etaShown.FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatalf("no wait on the page: %.1200s", w.Body.String())
	}
	return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], ""))
}
