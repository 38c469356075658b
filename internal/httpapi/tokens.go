package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// The named tokens (issue 56): made, listed and revoked by an admin. A
// token is answered once, when made; a list never holds a token nor its
// hash.

// errTokenNotFound: no token of that name is kept (404).
var errTokenNotFound = errors.New("no token of that name")

// tokenJSON is a token as the admin API shows it.
type tokenJSON struct {
	Name       string     `json:"name"`
	Role       staff.Role `json:"role"`
	Token      string     `json:"token,omitempty"` // only in POST's answer
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
}

func toTokenJSON(t staff.Token) tokenJSON {
	j := tokenJSON{Name: t.Name, Role: t.Role, CreatedAt: t.Created.UTC()}
	if !t.LastUsed.IsZero() {
		at := t.LastUsed.UTC()
		j.LastUsedAt = &at
	}
	if !t.Expires.IsZero() {
		at := t.Expires.UTC()
		j.ExpiresAt = &at
	}
	return j
}

// tokens answers the token checker, or 404 where none is kept.
func (s *Server) tokens(w http.ResponseWriter, r *http.Request) (*staff.Checker, bool) {
	if s.Tokens == nil {
		s.writeError(w, r, errWith(errNotFound, "this server keeps no named tokens"))
		return nil, false
	}
	return s.Tokens, true
}

// createToken is POST /admin/v1/tokens.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	c, ok := s.tokens(w, r)
	if !ok {
		return
	}
	var body struct {
		Name      string     `json:"name"`
		Role      string     `json:"role"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	role, err := staff.ParseRole(body.Role)
	if err != nil {
		s.writeError(w, r, errWith(errBadRequest, "role: "+err.Error()))
		return
	}
	var expires time.Time
	if body.ExpiresAt != nil {
		expires = *body.ExpiresAt
	}
	secret, t, err := c.Create(r.Context(), body.Name, role, expires)
	if errors.Is(err, staff.ErrTokenName) || errors.Is(err, staff.ErrTokenExpiry) {
		err = errWith(errBadRequest, err.Error())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, staff.Entry{Outcome: staff.Done, Actor: actorOf(r), Changes: []staff.Change{
		{Field: "name", Before: nil, After: t.Name}, {Field: "role", Before: nil, After: string(t.Role)},
		{Field: "expiresAt", Before: nil, After: toTokenJSON(t).ExpiresAt}}})
	j := toTokenJSON(t)
	j.Token = secret
	writeJSON(w, http.StatusCreated, j)
}

// listTokens is GET /admin/v1/tokens.
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	c, ok := s.tokens(w, r)
	if !ok {
		return
	}
	list, err := c.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]tokenJSON, 0, len(list))
	for _, t := range list {
		out = append(out, toTokenJSON(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// revokeToken is DELETE /admin/v1/tokens/{name}.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	c, ok := s.tokens(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if err := staff.ValidTokenName(name); err != nil {
		s.writeError(w, r, errWith(errBadRequest, err.Error()))
		return
	}
	list, err := c.List(r.Context()) // its role, for the audit log
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var role staff.Role
	for _, t := range list {
		if t.Name == name {
			role = t.Role
		}
	}
	revoked, err := c.Revoke(r.Context(), name)
	if err == nil && !revoked {
		err = errTokenNotFound
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, staff.Entry{Outcome: staff.Done, Actor: actorOf(r), Changes: []staff.Change{
		{Field: "name", Before: name, After: nil}, {Field: "role", Before: string(role), After: nil}}})
	w.WriteHeader(http.StatusNoContent)
}

// actorOf is who made r (the admin guard put them in its context).
func actorOf(r *http.Request) staff.Actor {
	a, _ := staff.ActorOf(r.Context())
	return a
}
