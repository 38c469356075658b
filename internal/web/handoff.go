package web

import (
	"html/template"
	"net/http"
	"net/url"
)

// HandoffState is what the "Continue here" page of a handoff link says
// (issue 55; templates/handoff.html).
type HandoffState string

const (
	// HandoffOffer: the button whose POST claims the place (GET's page).
	HandoffOffer HandoffState = "offer"
	// HandoffInLine: this browser holds a place in the line already (409).
	HandoffInLine HandoffState = "in_line"
	// HandoffGone: the link was used, or has expired (410).
	HandoffGone HandoffState = "gone"
	// HandoffBusy: the place cannot move just now (an order under way
	// with its token, or the line's store away): try again.
	HandoffBusy HandoffState = "busy"
	// HandoffNotFound: no such line (404).
	HandoffNotFound HandoffState = "notfound"
)

// handoffStatus is each state's HTTP status.
var handoffStatus = map[HandoffState]int{
	HandoffOffer: http.StatusOK, HandoffInLine: http.StatusConflict, HandoffGone: http.StatusGone,
	HandoffBusy: http.StatusServiceUnavailable, HandoffNotFound: http.StatusNotFound,
}

// HandoffVisit is one request for a handoff link's page.
type HandoffVisit struct {
	Queue, Code string
	State       HandoffState
	// Conflict, with HandoffBusy: the answer is a 409 (an order under
	// way with the place's token), not a 503 (the line's store away).
	Conflict bool
}

// handoffView is what templates/handoff.html reads as .Handoff.
type handoffView struct {
	State HandoffState
	// Action is the link itself (its POST claims); Waiting the queue's
	// waiting page.
	Action, Waiting string
}

// HandoffPath is a handoff link's path for the queue and code, under the
// site's base: GET shows the "Continue here" page, POST claims.
func (s *Site) HandoffPath(queue, code string) string {
	return s.o.Base + "/q/" + url.PathEscape(queue) + "/handoff/" + url.PathEscape(code)
}

// WaitingPath is the queue's waiting page's path under the site's base.
func (s *Site) WaitingPath(queue string) string {
	return s.o.Base + "/q/" + url.PathEscape(queue)
}

// Handoff serves a handoff link's page in the visitor's language, with
// the page's Content-Security-Policy less its script (it has none).
func (s *Site) Handoff(w http.ResponseWriter, r *http.Request, v HandoffVisit) {
	lang := s.page.choose(r)
	d := pageData{Lang: lang.Code, Dir: lang.Dir(), T: s.page.texts[lang.Code], Queue: v.Queue,
		Languages: s.page.links(r, s.o.Base, lang), Base: s.o.Base, Mode: "shop",
		Handoff: &handoffView{State: v.State, Action: s.HandoffPath(v.Queue, v.Code), Waiting: s.WaitingPath(v.Queue)}}
	status := handoffStatus[v.State]
	if v.State == HandoffBusy && v.Conflict {
		status = http.StatusConflict
	}
	s.render(w, s.handoffT, "layout", d, lang, status, s.plainCSP)
}

// parseHandoff parses the handoff link's page (templates/handoff.html in
// the admin page's frame).
func (s *Site) parseHandoff() (*template.Template, error) {
	return template.New("handoff.html").Funcs(s.funcs()).ParseFS(files,
		"templates/handoff.html", "templates/layout.html", "templates/blocks.html")
}
