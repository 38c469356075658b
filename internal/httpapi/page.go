package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"golang.org/x/text/language"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/web"
)

// page serves the waiting-room page, first giving a visitor without an
// identity the anonymous session cookie the page's API calls will carry.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	q, ok := s.pageQueue(w, r)
	if !ok {
		return
	}
	if _, err := s.Identity.User(r); err != nil {
		if _, err := s.newSession(w, r); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.Page.Waiting(w, r, s.visit(r, q))
}

// pageQueue is the queue the page is for (/ is the default one), or false
// after answering a bad name or a server without pages.
func (s *Server) pageQueue(w http.ResponseWriter, r *http.Request) (string, bool) {
	if s.Page == nil {
		s.writeError(w, r, errNotFound)
		return "", false
	}
	q := r.PathValue("queue")
	if q == "" {
		return queue.DefaultQueue, true
	}
	if err := queue.ValidateQueueName(q); err != nil {
		s.writeError(w, r, err)
		return "", false
	}
	return q, true
}

// newSession starts an anonymous session (within the address's limit) and
// sets its cookie.
func (s *Server) newSession(w http.ResponseWriter, r *http.Request) (identity.Caller, error) {
	if err := s.Gate.NewSession(s.Gate.Address(r)); err != nil {
		return identity.Caller{}, err
	}
	user, value := s.Identity.NewSession()
	http.SetCookie(w, s.Identity.Cookie(r, value))
	return identity.Caller{User: user}, nil
}

// visit is a request for the queue's page with what its settings in force
// say of it: the message, in the page's language (nil when there is none
// or it cannot be read now: the page's first answer brings it), and the
// phase's page template.
func (s *Server) visit(r *http.Request, q string) web.Visit {
	v := web.Visit{Queue: q}
	c, err := s.Queue.ConfigInForce(r.Context(), q)
	if err != nil {
		return v
	}
	v.Template = c.PageTemplate
	v.Codes = slices.ContainsFunc(c.Lanes, func(l lane.Lane) bool { return l.Codes })
	if c.Message.For() != "" { // a message, in whichever language
		v.Message = func(lang string) string { return c.Message.For(language.Make(lang)) }
	}
	return v
}

// noScript serves the waiting page that works without JavaScript: the
// server asks where the visitor stands and writes it into the page, which
// refreshes itself when the line says to ask again (pollAfterSeconds). On
// the first visit it takes a place, where the queue's join policy lets a
// visitor in without a challenge (any, or a signed-in user); under
// challenge, or a human check (turnstile), it says plainly why it cannot. A refresh that finds the visitor
// out of line (?joined=1) says so rather than take a new place unasked.
//
// Its form POSTs an access code (accessCode, in the body: issue 53): the
// visitor then enters with the code, whether or not they hold a place (a
// code moves them to its lane), and a code turned down leaves them where
// they stood.
func (s *Server) noScript(w http.ResponseWriter, r *http.Request) {
	if codeInURL(r) {
		s.writeError(w, r, errCodeInURL)
		return
	}
	q, ok := s.pageQueue(w, r)
	if !ok {
		return
	}
	caller, err := s.Identity.Caller(r)
	if err != nil {
		if caller, err = s.newSession(w, r); err != nil {
			s.Page.Waiting(w, r, web.Visit{Queue: q, NoScript: s.standing(w, r, queue.View{}, err)})
			return
		}
	}
	join, err := s.joinOf(r, caller)
	if errors.Is(err, errBadRequest) || errors.Is(err, errCodeUnreadable) { // the request's fault: no page says "try again"
		s.writeError(w, r, err)
		return
	}
	var refusal error     // the code turned down, said on the page
	if codeRefused(err) { // a malformed code: shown as a wrong one, nobody enters with it
		refusal, err = err, nil
	}
	v, err := s.noScriptStatus(r, q, caller.User, err)
	if err == nil && refusal == nil && (join.Code != "" || v.State == queue.NotInQueue && r.URL.Query().Get("joined") != "1") {
		e := s.Gate.Entrant(r, caller)
		e.Proof, e.HumanToken = "", "" // the page without JavaScript solves no challenge, runs no widget
		e.Join = join
		v, refusal, err = s.noScriptEnter(r, q, e, v)
	} else if err == nil {
		s.Gate.Polled(q, caller.User, v)
	}
	if err == nil {
		s.Gate.Answered(q, caller.User, v)
	}
	visit := s.visit(r, q)
	visit.NoScript = s.standing(w, r, v, err)
	visit.NoScript.CodeRefused = pageRefusal(refusal)
	visit.NoScript.OffersHandoff = s.Handoffs != nil && !caller.Signed
	if p := s.participant(q, caller.User, v); err == nil && p.ID != "" {
		visit.NoScript.Draw = &web.DrawShown{Participant: p.ID, Salt: p.Salt}
	}
	s.Page.Waiting(w, r, visit)
}

// noScriptStatus is where the visitor stands, unless reading the request
// failed already (err).
func (s *Server) noScriptStatus(r *http.Request, q, user string, err error) (queue.View, error) {
	if err != nil {
		return queue.View{}, err
	}
	return s.Queue.Status(r.Context(), q, user)
}

// noScriptEnter enters for the page without JavaScript; a code turned down
// (wrong, used: refusal) leaves the visitor's standing as it was, v.
func (s *Server) noScriptEnter(r *http.Request, q string, e gatekeeper.Entrant, v queue.View) (_ queue.View, refusal, err error) {
	got, err := s.Gate.Enter(r.Context(), q, e)
	if e.Join.Code != "" && codeRefused(err) {
		return v, err, nil
	}
	return got, nil, err
}

// pageRefusal is a code's refusal as the page says it.
func pageRefusal(err error) web.CodeRefusal {
	switch {
	case err == nil:
		return web.CodeAccepted
	case errors.Is(err, accesscode.ErrUsed):
		return web.CodeUsed
	default:
		return web.CodeInvalid
	}
}

// codeRefused says whether err turns an access code down.
func codeRefused(err error) bool {
	return errors.Is(err, accesscode.ErrInvalid) || errors.Is(err, accesscode.ErrMalformed) || errors.Is(err, accesscode.ErrUsed)
}

// standing is a view of the line, or the error that stood in its way
// (logged and counted as the API would), as the page without JavaScript
// shows it.
func (s *Server) standing(w http.ResponseWriter, r *http.Request, v queue.View, err error) *web.Standing {
	if err != nil {
		row, _ := s.noteError(w, r, err)
		again := time.Duration(row.retryAfter) * time.Second
		switch {
		case errors.Is(err, queue.ErrQueueNotFound), errors.Is(err, queue.ErrInvalidQueue):
			return &web.Standing{State: web.NotFound}
		case errors.Is(err, gatekeeper.ErrChallengeRequired):
			return &web.Standing{State: web.Challenge}
		case errors.Is(err, gatekeeper.ErrSignInRequired):
			return &web.Standing{State: web.SignIn}
		case errors.Is(err, gatekeeper.ErrHumanCheckRequired):
			return &web.Standing{State: web.HumanCheck}
		case errors.Is(err, gatekeeper.ErrSuspectedBot):
			return &web.Standing{State: web.Unsupported}
		case errors.Is(err, queue.ErrQueueClosed):
			return &web.Standing{State: web.Closed}
		case errors.Is(err, gatekeeper.ErrTooManyEntries):
			return &web.Standing{State: web.Crowded, PollAfter: again}
		case errors.Is(err, queue.ErrQueueFull):
			return &web.Standing{State: web.Full, PollAfter: again}
		case errors.Is(err, queue.ErrSoldOut):
			// Refused a place: the page enters again as seldom as the
			// page with JavaScript does, so a restock lets them in.
			return &web.Standing{State: web.SoldOut, PollAfter: 30 * time.Second}
		default:
			return &web.Standing{State: web.Trouble, PollAfter: max(again, 5*time.Second)}
		}
	}
	st := &web.Standing{Position: v.Position, Length: v.Length, Estimate: v.Estimate, Drawn: v.Drawn,
		Paused: v.Paused, Stalled: v.Stalled, BeyondStock: v.BeyondStock, OpensAt: v.OpensAt, ExpiresAt: v.ExpiresAt, Lane: v.Lane}
	if v.PollAfterSeconds != nil {
		st.PollAfter = time.Duration(*v.PollAfterSeconds) * time.Second
	}
	switch {
	case v.State == queue.Ready:
		st.State = web.Ready
	case v.State == queue.Waiting && !v.OpensAt.IsZero():
		st.State = web.Opening
	case v.State == queue.Waiting:
		st.State = web.Waiting
	case v.State == queue.SoldOut:
		st.State, st.KeepsPlace = web.SoldOut, true
	case v.State == queue.Moved:
		st.State = web.Moved
	default:
		st.State = web.Left
	}
	return st
}

// pageFiles serves what comes with the page (its static files, the
// operator's assets, the admin page): nothing there names a user, so no
// cookie is set.
func (s *Server) pageFiles(w http.ResponseWriter, r *http.Request) {
	if s.Page == nil {
		s.writeError(w, r, errNotFound)
		return
	}
	s.Page.ServeHTTP(w, r)
}
