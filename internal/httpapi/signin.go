package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// AdminSignIn is the admin page's single sign-on through the shop's
// identity provider (issue 56; package adminsso): the round trip's two
// navigations, and the session the page reads and ends.
type AdminSignIn interface {
	SessionAuth
	// Start sends the browser to the provider (GET /admin/sso/login).
	Start(w http.ResponseWriter, r *http.Request)
	// Callback ends the round trip (GET /admin/sso/callback), sending the
	// browser to the admin page with the session's cookie set, or saying
	// why not.
	Callback(w http.ResponseWriter, r *http.Request)
	// Current is the session r's cookie holds.
	Current(r *http.Request) (staff.Session, error)
	// SignOut ends it, in the store (CSRF-guarded).
	SignOut(w http.ResponseWriter, r *http.Request) error
}

// signedIn is GET /admin/sso/session's answer: who is signed in, and the
// value the page sends with every change (the session's CSRF guard).
type signedIn struct {
	Subject string     `json:"subject"`
	Email   string     `json:"email,omitempty"`
	Role    staff.Role `json:"role"`
	CSRF    string     `json:"csrf"`
	Expires time.Time  `json:"expires"`
}

// adminSession is GET /admin/sso/session.
func (s *Server) adminSession(w http.ResponseWriter, r *http.Request) {
	ss, err := s.AdminSignIn.Current(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, signedIn{Subject: ss.Subject, Email: ss.Email, Role: ss.Role, CSRF: ss.CSRF, Expires: ss.Expires.UTC()})
}

// adminSignOut is POST /admin/sso/logout.
func (s *Server) adminSignOut(w http.ResponseWriter, r *http.Request) {
	if err := s.AdminSignIn.SignOut(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// signInOn answers 404 sign_in_off where no sign-in is configured.
func (s *Server) signInOn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.AdminSignIn == nil {
			s.writeError(w, r, errSignInOff)
			return
		}
		h(w, r)
	}
}

func (s *Server) signInStart(w http.ResponseWriter, r *http.Request)    { s.AdminSignIn.Start(w, r) }
func (s *Server) signInCallback(w http.ResponseWriter, r *http.Request) { s.AdminSignIn.Callback(w, r) }

// errSignInOff: the admin page's sign-in is not configured here.
var errSignInOff = errors.New("admin sign-in is not configured (--admin-oidc-issuer)")
