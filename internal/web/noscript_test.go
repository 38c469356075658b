package web_test

import (
	"html"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
