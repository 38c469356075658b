package adminsso

import (
	"crypto/subtle"
	"net/http"

	"github.com/waitroom/waitroom/internal/staff"
)

// session is the live session r's cookie names (false: r has no session
// cookie; ErrNoSession: one naming no live session).
func (s *SignIn) session(r *http.Request) (staff.Session, bool, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return staff.Session{}, false, nil
	}
	ss, ok, err := s.o.Sessions.Session(r.Context(), staff.HashToken(c.Value))
	switch {
	case err != nil:
		return staff.Session{}, true, err
	case !ok || !s.o.Now().Before(ss.Expires):
		return staff.Session{}, true, ErrNoSession
	}
	return ss, true, nil
}

// guarded is r's session, refused unless a change (any method but GET and
// HEAD) carries its CSRF value.
func (s *SignIn) guarded(r *http.Request) (staff.Session, bool, error) {
	ss, ok, err := s.session(r)
	if !ok || err != nil {
		return ss, ok, err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead &&
		subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(ss.CSRF)) != 1 {
		return staff.Session{}, true, ErrCSRF
	}
	return ss, true, nil
}

// Actor implements httpapi.SessionAuth.
func (s *SignIn) Actor(r *http.Request) (staff.Actor, bool, error) {
	ss, ok, err := s.guarded(r)
	if !ok || err != nil {
		return staff.Actor{}, ok, err
	}
	return staff.Actor{Kind: staff.KindSignIn, Subject: ss.Subject, Email: ss.Email, Role: ss.Role}, true, nil
}

// Current is the session r's cookie holds (GET /admin/sso/session): who
// is signed in, and the CSRF value the page sends with every change.
func (s *SignIn) Current(r *http.Request) (staff.Session, error) {
	ss, ok, err := s.session(r)
	if !ok {
		return staff.Session{}, ErrNoSession
	}
	return ss, err
}

// SignOut ends r's session (POST /admin/sso/logout, CSRF-guarded): gone
// from the store, so no copy of the cookie works again, and its cookie
// removed.
func (s *SignIn) SignOut(w http.ResponseWriter, r *http.Request) error {
	ss, ok, err := s.guarded(r)
	if !ok {
		return ErrNoSession
	}
	if err != nil {
		return err
	}
	if err := s.o.Sessions.DeleteSession(r.Context(), ss.Hash); err != nil {
		return err
	}
	http.SetCookie(w, s.sessionCookie(r, "", -1))
	s.o.Logger.Info("admin signed out", "subject", ss.Subject, "email", ss.Email)
	return nil
}
