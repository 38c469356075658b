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
		_, value := s.Identity.NewSession()
		http.SetCookie(w, sessionCookie(value, s.SecureCookies))
	}
	if s.Page != nil {
		s.Page.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("waitroom: the waiting-room page is not built into this binary; use the JSON API under /api/v1\n"))
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
