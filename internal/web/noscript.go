package web

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// The page without JavaScript: the server says where the visitor stands,
// in words of the page's language (x/text formats the numbers and picks
// the plural forms, as Intl does on the page with JavaScript), and the page
// refreshes itself when the server says to ask again.

// StandingState is what the page without JavaScript shows.
type StandingState string

const (
	Waiting StandingState = "waiting"
	// Opening: waiting for the line's opening, with no place yet.
	Opening StandingState = "opening"
	Ready   StandingState = "ready"
	// Left: was in line, is no more (admitted and expired, or skipped).
	Left StandingState = "left"
	Full StandingState = "full"
	// Crowded: this address has taken its share of places for now.
	Crowded StandingState = "crowded"
	// Closed: the line has closed (closesAt) and takes no one new.
	Closed StandingState = "closed"
	// SignIn: the line is for signed-in customers.
	SignIn StandingState = "signin"
	// Challenge: the line asks for a proof of work, which needs JavaScript.
	Challenge StandingState = "challenge"
	// HumanCheck: the line asks for a provider's human check, whose widget
	// needs JavaScript.
	HumanCheck StandingState = "humancheck"
	NotFound   StandingState = "notfound"
	// Unsupported: the line refuses this client a place (suspects refuse);
	// said as the page with JavaScript says it, and never refreshed, since
	// each refresh would be judged and counted again.
	Unsupported StandingState = "unsupported"
	// Trouble: the line could not be asked (the store is down).
	Trouble StandingState = "error"
	// SoldOut: the sale has nothing left; nobody new takes a place, and
	// whoever holds one keeps it until a restock (Standing.KeepsPlace).
	SoldOut StandingState = "soldout"
	// Moved: the visitor's place was carried to another device with a
	// handoff link (issue 55): no place, nothing to wait for.
	Moved StandingState = "moved"
)

// Standing is where a visitor without JavaScript stands, as the API found
// it.
type Standing struct {
	State            StandingState
	Position, Length int64
	// Estimate is the wait in full (Waiting, Opening and a kept place's
	// SoldOut; queue.View.Estimate, issue 54): its median (Seconds), its
	// range while Known, and why not otherwise (Reason, one of estimate's
	// Unknown… reasons). The page says the range or the reason.
	Estimate estimate.Estimate
	// Drawn: the line draws whom it lets in; Position means nothing.
	Drawn           bool
	Paused, Stalled bool
	// BeyondStock (Waiting): fewer units are left than people ahead.
	BeyondStock bool
	// KeepsPlace (SoldOut): the visitor holds a place (SOLD_OUT), rather
	// than having been refused one (410 sold_out).
	KeepsPlace         bool
	OpensAt, ExpiresAt time.Time
	// PollAfter is when to ask again (0: nothing to wait for).
	PollAfter time.Duration
	// Draw (Opening): the visitor's id in the opening's draw and the salt
	// that proves it theirs; nil: none shown.
	Draw *DrawShown
	// Lane is the visitor's lane in a queue with lanes ("public" or the
	// lane's name; "": the queue has none): Position and Length are
	// within it.
	Lane string
	// CodeRefused says why the access code just posted was turned down
	// (CodeAccepted: none was, or none was posted); the standing is the
	// visitor's as it was.
	CodeRefused CodeRefusal
	// OffersHandoff: the page offers its handoff button (issue 55), shown while
	// the visitor holds a place; false for a signed-in visitor, whose
	// place follows their sign-in. Handoff is the link just made, shown
	// as text and as its QR code; HandoffFailed says one could not be made.
	OffersHandoff bool
	Handoff       *HandoffShown
	HandoffFailed bool
}

// qrDataURL starts HandoffShown.QR: a base64 SVG image.
const qrDataURL = "data:image/svg+xml;base64,"

// HandoffShown is a handoff link as the page without JavaScript shows
// it: its URL, its QR code as a data: URL of its SVG (qrDataURL), and
// its expiry.
type HandoffShown struct {
	URL, QR   string
	ExpiresAt time.Time
}

// CodeRefusal is why the line turned an access code down, as the page says
// it.
type CodeRefusal string

const (
	CodeAccepted CodeRefusal = ""
	// CodeInvalid: wrong, expired, malformed or another queue's (403
	// invalid_code).
	CodeInvalid CodeRefusal = "invalid"
	// CodeUsed: no redemption left (409 code_used).
	CodeUsed CodeRefusal = "used"
)

// codeTexts are the page's words for each refusal.
var codeTexts = map[CodeRefusal]string{CodeInvalid: "codeInvalid", CodeUsed: "codeUsed"}

// inLane says whether lane is one of a queue's lanes other than public.
func inLane(lane string) bool { return lane != "" && lane != "public" }

// DrawShown is a visitor's participant id in an opening's draw and its
// salt (draw.Participant), as the page shows them.
type DrawShown struct{ Participant, Salt string }

// noScriptView is a Standing in words, for waitroom.noscript.
type noScriptView struct {
	State            StandingState
	Position, Length string
	Ahead, ETA       string
	// ETAWhy is why the wait is not known, said under ETA ("": it is, or
	// the page has no words for why).
	ETAWhy          string
	Drawn           bool
	Paused, Stalled bool
	BeyondStock     bool
	KeepsPlace      bool
	Heading, Note   string
	Return          string
	Again           string // the link to enter again
	Draw            *DrawShown
	Refresh         *refresh
	// PlaceLabel and LengthLabel name the line the place is in: the
	// visitor's lane's, in a queue with lanes.
	PlaceLabel, LengthLabel string
	// Code is the access code form, where a code can move the visitor
	// (a queue whose lanes take codes; not in one of its lanes already).
	Code *codeForm
	// HandoffAction is where the handoff button posts ("": no button);
	// Handoff the link it made, HandoffNote what the page says of it.
	HandoffAction string
	Handoff       *HandoffShown
	HandoffNote   string
	HandoffBack   string
	// HandoffQR is Handoff's QR code, a data: URL html/template lets
	// through (it filters data: out of a plain string's src).
	HandoffQR template.URL
}

type refresh struct {
	Seconds int64
	URL     string
}

func (s *Site) noScriptView(r *http.Request, lang Language, v Visit) *noScriptView {
	st := v.NoScript
	T := s.page.texts[lang.Code]
	// Digits as the page's script writes them (Intl in Chromium writes
	// Arabic with Latin digits; x/text's data would use Arabic-Indic).
	p := message.NewPrinter(latinDigits(lang.Tag))
	num := func(n int64) string { return p.Sprintf("%d", n) }
	t := func(key string, vars ...string) string { return fill(T[key], vars...) }
	ret := r.URL.Query().Get("return")
	// A refused code's message stays up long enough to read and retype
	// the code: the refresh that would take it off waits at least
	// codeSaidFor (at 2 s, a person near the front barely saw it).
	pollAfter := st.PollAfter
	if st.CodeRefused != CodeAccepted && pollAfter > 0 {
		pollAfter = max(pollAfter, codeSaidFor)
	}
	view := &noScriptView{State: st.State, Paused: st.Paused, Stalled: st.Stalled, Drawn: st.Drawn,
		BeyondStock: st.BeyondStock, KeepsPlace: st.KeepsPlace}
	joined := false
	view.PlaceLabel, view.LengthLabel = t("positionLabel"), t("lengthLabel")
	if inLane(st.Lane) {
		view.PlaceLabel, view.LengthLabel = t("lanePlaceLabel", "lane", st.Lane), t("laneLengthLabel", "lane", st.Lane)
	}
	switch st.State {
	case Waiting:
		joined = true
		view.Position, view.Length = num(st.Position), num(st.Length)
		switch ahead := st.Position - 1; {
		case ahead <= 0:
			view.Ahead = t("aheadNone")
		default:
			view.Ahead = t(pluralKey(lang.Tag, "ahead", ahead), "n", num(ahead))
		}
		view.ETA, view.ETAWhy = wait(lang.Tag, T, p, st.Estimate)
		view.Note = t("noscriptRefresh", "n", num(seconds(pollAfter)))
	case Opening:
		joined = true
		view.Note = t("opensIn", "t", countdown(time.Until(st.OpensAt)))
		view.Draw = st.Draw
	case Ready:
		joined = true
		view.Note = t("expiresIn", "t", countdown(time.Until(st.ExpiresAt)))
		if s.o.Gateway {
			// Back to the shop, as the page with JavaScript goes: the
			// gateway sets the entry cookie there (the ?return= it was
			// sent with is checked there too).
			if ret == "" {
				ret = "/"
			}
			view.Return = s.o.Base + "/return?" + url.Values{"queue": {v.Queue}, "to": {ret}}.Encode()
		}
	case SoldOut:
		// Whoever holds a place refreshes as one in line; whoever was
		// refused one refreshes as a newcomer, who enters once a restock
		// lets them.
		joined = st.KeepsPlace
		if st.KeepsPlace {
			view.Note = t("noscriptRefresh", "n", num(seconds(pollAfter)))
		}
	case Left, Moved:
		said := againTexts[st.State]
		view.Heading, view.Note = t(said[0]), t(said[1])
		view.Again = s.noScriptURL(v.Queue, lang.Code, ret, false)
	case Full, Crowded, Closed, SignIn, Challenge, HumanCheck, NotFound, Unsupported:
		said := refusalTexts[st.State]
		view.Heading, view.Note = t(said[0]), t(said[1])
	case Trouble:
		view.Heading, view.Note = t("noscriptTroubleHeading"), t("trouble", "n", num(seconds(pollAfter)))
	}
	s.noScriptHandoff(view, st, v.Queue, lang.Code, ret, t)
	if v.Codes && !inLane(st.Lane) && (st.State == Waiting || st.State == Opening || st.State == Left) {
		view.Code = &codeForm{Action: s.codeAction(v.Queue, lang.Code, ret), Refused: t(codeTexts[st.CodeRefused])}
	}
	s.noScriptRefresh(view, s.noScriptURL(v.Queue, lang.Code, ret, joined), pollAfter)
	return view
}

// noScriptRefresh says when and where the page goes next: at once back
// to the shop when let in, never while a handoff link is shown, else
// to itself after pollAfter.
func (s *Site) noScriptRefresh(view *noScriptView, self string, pollAfter time.Duration) {
	switch {
	case view.Return != "":
		view.Refresh = &refresh{Seconds: 0, URL: view.Return}
	case view.Handoff != nil:
		// No refresh while the link is shown: it would take the link off
		// the screen before the other device has it. The page links to
		// itself instead (HandoffBack).
		view.HandoffBack = self
	case pollAfter > 0:
		view.Refresh = &refresh{Seconds: seconds(pollAfter), URL: self}
	}
}

// noScriptHandoff puts the handoff's button (while the visitor holds a
// place), and the link just made, into view (issue 55).
func (s *Site) noScriptHandoff(view *noScriptView, st *Standing, queue, lang, ret string, t func(string, ...string) string) {
	if st.OffersHandoff && (st.State == Waiting || st.State == Opening || st.State == Ready || st.State == SoldOut && st.KeepsPlace) {
		q := url.Values{"lang": {lang}}
		if ret != "" {
			q.Set("return", ret)
		}
		view.HandoffAction = s.o.Base + "/q/" + url.PathEscape(queue) + "/noscript/handoff?" + q.Encode()
	}
	switch {
	case st.Handoff != nil:
		view.Handoff, view.HandoffNote = st.Handoff, t("handoffText")
		if strings.HasPrefix(st.Handoff.QR, qrDataURL) { // an image of ours, never markup or script
			view.HandoffQR = template.URL(st.Handoff.QR)
		}
	case st.HandoffFailed:
		view.HandoffNote = t("handoffFailed")
	}
}

// againTexts are the heading and the text of each state in which the
// visitor no longer holds the place they had, and may enter again.
var againTexts = map[StandingState][2]string{
	Left:  {"leftHeading", "leftText"},
	Moved: {"movedHeading", "movedText"},
}

// refusalTexts are the heading and the text of each state in which the
// visitor has no place, and waits for nothing or only for a retry.
var refusalTexts = map[StandingState][2]string{
	Full:       {"fullHeading", "fullText"},
	Crowded:    {"crowdedHeading", "crowdedText"},
	Closed:     {"closedHeading", "closedText"},
	SignIn:     {"signInRequiredHeading", "signInRequiredText"},
	Challenge:  {"noscriptChallengeHeading", "noscriptChallengeText"},
	HumanCheck: {"noscriptHumanCheckHeading", "noscriptHumanCheckText"},
	NotFound:   {"notFoundHeading", "notFoundText"},
	// The page with JavaScript shows its unsupported block for
	// suspected_bot too: the client is told no more than that.
	Unsupported: {"unsupportedHeading", "unsupportedText"},
}

// seconds is d in whole seconds, rounded up, at least 1.
// codeSaidFor is the least time a refused access code's message stays
// on the page without JavaScript before it refreshes.
const codeSaidFor = 30 * time.Second

func seconds(d time.Duration) int64 { return max(1, int64((d+time.Second-1)/time.Second)) }

// unknownTexts are the page's words for why a wait is not known
// (estimate.Estimate.Reason).
var unknownTexts = map[string]string{
	estimate.UnknownPaused:      "etaWhyPaused",
	estimate.UnknownStalled:     "etaWhyStalled",
	estimate.UnknownOpening:     "etaWhyOpening",
	estimate.UnknownSoldOut:     "etaWhySoldOut",
	estimate.UnknownBeyondStock: "etaWhyBeyondStock",
}

// wait says a wait as the page's script does (waiting.js's waitText): its
// range when known, else that it is not known, and why (a line of its own
// under it, so the fact stays short on a phone).
func wait(tag language.Tag, T map[string]string, p *message.Printer, e estimate.Estimate) (text, why string) {
	if !e.Known {
		return T["etaUnknown"], T[unknownTexts[e.Reason]]
	}
	return waitRange(tag, T, p, e), ""
}

// waitRange says a known wait's range in words people use, as the page's
// script does (waiting.js's waitRange): in seconds while its top is under
// two minutes (to 5 s, or 10 s above half a minute), else in minutes,
// else from two hours in hours; rounded outward, so the range said still
// holds the one computed; one number when both ends round alike, "up to"
// when the bottom rounds to 0. Within the next tick (a median of 0), any
// moment now.
func waitRange(tag language.Tag, T map[string]string, p *message.Printer, e estimate.Estimate) string {
	if e.Seconds <= 0 {
		return T["etaSoon"]
	}
	num := func(n int64) string { return p.Sprintf("%d", n) }
	unit, keys := int64(3600), [3]string{"etaRangeHours", "etaUpToHours", "etaHours"}
	switch {
	case e.High < 120:
		unit, keys = 10, [3]string{"etaRangeSeconds", "etaUpToSeconds", "etaAboutSeconds"}
		if e.High <= 30 {
			unit = 5
		}
	case e.High < 7200:
		unit, keys = 60, [3]string{"etaRangeMinutes", "etaUpToMinutes", "etaMinutes"}
	}
	low, high := e.Low/unit, (e.High+unit-1)/unit
	if unit < 60 {
		low, high = low*unit, high*unit
	}
	switch {
	case low == high && unit < 60:
		return fill(T[keys[2]], "n", num(high))
	case low == high:
		return fill(T[pluralKey(tag, keys[2], high)], "n", num(high))
	case low == 0:
		return fill(T[keys[1]], "n", num(high))
	}
	return fill(T[keys[0]], "low", num(low), "high", num(high))
}

// countdown says a time left as h:mm:ss or m:ss.
func countdown(d time.Duration) string {
	s := max(0, int64((d+time.Second-1)/time.Second))
	if h := s / 3600; h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, s%3600/60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// fill puts values in a text's {placeholders}: pairs of name, value.
func fill(text string, vars ...string) string {
	for i := 0; i+1 < len(vars); i += 2 {
		text = strings.ReplaceAll(text, "{"+vars[i]+"}", vars[i+1])
	}
	return text
}

func newRequest(target string) (*http.Request, error) { return http.NewRequest("GET", target, nil) }

// latinDigits is tag with Latin digits (-u-nu-latn).
func latinDigits(tag language.Tag) language.Tag {
	t, err := tag.SetTypeForKey("nu", "latn")
	if err != nil {
		return tag
	}
	return t
}
