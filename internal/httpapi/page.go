package httpapi

import (
	"net/http"

	"github.com/waitroom/waitroom/internal/queue"
)

// page serves the waiting-room page, first giving a visitor without an
// identity the anonymous session cookie the page's API calls will carry.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	if q := r.PathValue("queue"); q != "" {
		if err := queue.ValidateQueueName(q); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if _, err := s.Identity.User(r); err != nil {
		if err := s.Gate.NewSession(s.Gate.Address(r)); err != nil {
			s.writeError(w, r, err)
			return
		}
		_, value := s.Identity.NewSession()
		http.SetCookie(w, s.Identity.Cookie(r, value))
	}
	s.pageFiles(w, r)
}

// pageFiles serves what comes with the page (its static files, the admin
// page): nothing there names a user, so no cookie is set.
func (s *Server) pageFiles(w http.ResponseWriter, r *http.Request) {
	if s.Page == nil {
		s.writeError(w, r, errNotFound)
		return
	}
	s.Page.ServeHTTP(w, r)
}
