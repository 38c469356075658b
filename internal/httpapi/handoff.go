package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/waitroom/waitroom/internal/handoff"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/web"
)

// HandoffStore keeps a handoff link's code (issue 55; queue.Store's
// PutHandoff): the line's store, behind its breaker. The claim goes
// through the line's service (queue.Service.Enter with
// lane.Join.Handoff), which also forgets the ticket it knew the old
// session by.
type HandoffStore interface {
	PutHandoff(ctx context.Context, queue, user, codeHash string, ttl time.Duration) (time.Time, error)
}

// errCrossSite: a claim posted from another site's page. A claim moves a
// place into the browser's session, and a cross-site POST comes without
// the session cookie (SameSite=Lax): answered, it would start a new
// session over the visitor's own, losing their place. Refused instead.
var errCrossSite = errors.New("a handoff is claimed from its own page only, not from another site")

// handoffAnswer is POST entries/me/handoff's answer.
type handoffAnswer struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
	QRSvg     string    `json:"qrSvg"`
}

// handoff makes a link that carries the caller's place to another
// session: single use, for handoff.TTL, its code kept only as a hash
// (POST /api/v1/queues/{queue}/entries/me/handoff). A signed user needs
// none: their place follows their user id (409 handoff_not_needed).
func (s *Server) handoff(w http.ResponseWriter, r *http.Request) {
	if s.Handoffs == nil || s.Page == nil { // no page to continue on
		s.writeError(w, r, errNotFound)
		return
	}
	caller, err := s.Identity.Caller(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.PathValue("queue")
	if err := queue.ValidateQueueName(q); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.makeHandoff(r, q, caller)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// makeHandoff makes a link to the caller's place in q: the API's and the
// page without JavaScript's.
func (s *Server) makeHandoff(r *http.Request, q string, caller identity.Caller) (handoffAnswer, error) {
	if caller.Signed {
		return handoffAnswer{}, handoff.ErrNotNeeded
	}
	code := handoff.New()
	hash, _ := handoff.Hash(code) // New's codes always hash
	expires, err := s.Handoffs.PutHandoff(r.Context(), q, caller.User, hash, handoff.TTL)
	if err != nil {
		return handoffAnswer{}, err
	}
	link := s.origin(r) + s.Page.HandoffPath(q, code)
	svg, err := web.QRCode(link)
	return handoffAnswer{URL: link, ExpiresAt: expires.UTC(), QRSvg: svg}, err
}

// noScriptHandoff is the handoff of the page without JavaScript (POST
// /q/{queue}/noscript/handoff, its form's button): that page again, with
// the link made shown as text and as its QR code (an <img> of a data:
// URL, which the page's Content-Security-Policy allows), or why none
// was. Posted from its own origin only, as a claim is (errCrossSite: a
// cross-site POST comes without the session, and a new one would be
// started over it).
func (s *Server) noScriptHandoff(w http.ResponseWriter, r *http.Request) {
	q, ok := s.pageQueue(w, r)
	if !ok {
		return
	}
	if s.Handoffs == nil {
		s.writeError(w, r, errNotFound)
		return
	}
	if !sameOrigin(r) {
		s.writeError(w, r, errCrossSite)
		return
	}
	caller, err := s.Identity.Caller(r)
	var made handoffAnswer
	var refused error
	if err == nil {
		made, refused = s.makeHandoff(r, q, caller)
	}
	v, err := s.noScriptStatus(r, q, caller.User, err)
	visit := s.visit(r, q)
	visit.NoScript = s.standing(w, r, v, err)
	visit.NoScript.OffersHandoff = err == nil && !caller.Signed
	switch {
	case err != nil:
	case refused == nil:
		visit.NoScript.Handoff = &web.HandoffShown{URL: made.URL, ExpiresAt: made.ExpiresAt,
			QR: "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(made.QRSvg))}
	case !errors.Is(refused, handoff.ErrNoPlace):
		s.noteError(w, r, refused)
		visit.NoScript.HandoffFailed = true
	}
	s.Page.Waiting(w, r, visit)
}

// origin is the page's origin as the browser asking sees it: https when
// the request came over TLS, here or at a trusted proxy in front, or with
// --secure-cookies (the cookies' rule, identity.Secure), and the Host it
// asked for (a proxy in front passes the browser's Host on, as
// deploy/'s configurations do).
func (s *Server) origin(r *http.Request) string {
	scheme := "http"
	if s.Identity.Secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// handoffPage shows a handoff link's "Continue here" page (GET
// /q/{queue}/handoff/{code}). It claims nothing: chat apps and QR
// readers fetch links ahead.
func (s *Server) handoffPage(w http.ResponseWriter, r *http.Request) {
	q, ok := s.pageQueue(w, r)
	if !ok {
		return
	}
	v := web.HandoffVisit{Queue: q, Code: r.PathValue("code"), State: web.HandoffOffer}
	if _, err := handoff.Hash(v.Code); err != nil {
		v.State = web.HandoffGone
	} else if _, err := s.Queue.ConfigInForce(r.Context(), q); errors.Is(err, queue.ErrQueueNotFound) {
		v.State = web.HandoffNotFound
	}
	s.Page.Handoff(w, r, v)
}

// claimHandoff claims the place a handoff link carries into this
// browser's session (POST /q/{queue}/handoff/{code}: the "Continue here"
// button), starting one if it has none, and sends it to the waiting page
// (303). A refusal is a page in the visitor's language: 409 when this
// session holds a place in the line already, 410 when the link was used
// or has expired. A POST from another site's page is refused (403): see
// errCrossSite.
func (s *Server) claimHandoff(w http.ResponseWriter, r *http.Request) {
	q, ok := s.pageQueue(w, r)
	if !ok {
		return
	}
	if !sameOrigin(r) {
		s.writeError(w, r, errCrossSite)
		return
	}
	v := web.HandoffVisit{Queue: q, Code: r.PathValue("code")}
	hash, err := handoff.Hash(v.Code)
	if err != nil {
		v.State = web.HandoffGone
		s.Page.Handoff(w, r, v)
		return
	}
	caller, err := s.Identity.Caller(r)
	if err != nil {
		caller, err = s.newSession(w, r)
	}
	if err == nil {
		_, err = s.Queue.Enter(r.Context(), q, caller.User, lane.Join{Handoff: hash})
	}
	if err == nil {
		http.Redirect(w, r, s.Page.WaitingPath(q), http.StatusSeeOther)
		return
	}
	s.noteError(w, r, err)
	switch {
	case errors.Is(err, handoff.ErrAlreadyInLine):
		v.State = web.HandoffInLine
	case errors.Is(err, handoff.ErrGone):
		v.State = web.HandoffGone
	case errors.Is(err, queue.ErrQueueNotFound):
		v.State = web.HandoffNotFound
	default: // an order under way with the place's token, the store away, too many sessions
		v.State, v.Conflict = web.HandoffBusy, errors.Is(err, queue.ErrTokenInUse)
	}
	s.Page.Handoff(w, r, v)
}

// sameOrigin says whether a browser's POST came from a page of this
// origin: by Sec-Fetch-Site where the browser sends it, else by Origin's
// host. A request with neither came from no browser page, so from no
// other site's.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}
