package adminsso

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/waitroom/waitroom/internal/staff"
)

// refusal is why a callback made no session: the word the admin page
// shows it by (?sso=) and what the log says.
type refusal struct {
	why string
	err error
}

func (r *refusal) Error() string { return r.why + ": " + r.err.Error() }

func refuse(why string, err error) *refusal { return &refusal{why, err} }

// Callback ends the round trip (GET /admin/sso/callback): the session
// kept and its cookie set, the browser sent to the admin page; or, when
// anything is amiss, no session and the page told why.
func (s *SignIn) Callback(w http.ResponseWriter, r *http.Request) {
	// The state cookie serves one round trip, whatever its end.
	http.SetCookie(w, &http.Cookie{Name: StateCookie, Value: "", Path: s.o.Base + "/admin/sso/callback", MaxAge: -1,
		HttpOnly: true, Secure: s.o.Secure(r), SameSite: http.SameSiteLaxMode})
	ss, value, err := s.finish(r)
	if err != nil {
		var ref *refusal
		if !errors.As(err, &ref) {
			ref = refuse("store", err)
		}
		s.o.Logger.Warn("admin sign-in refused", "why", ref.why, "err", ref.err)
		s.back(w, r, ref.why)
		return
	}
	http.SetCookie(w, s.sessionCookie(r, value, int(s.o.Life.Seconds())))
	s.o.Logger.Info("admin signed in", "subject", ss.Subject, "email", ss.Email, "role", ss.Role)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.o.Base+"/admin", http.StatusSeeOther)
}

// sessionCookie is the session's cookie (maxAge -1: its removal).
func (s *SignIn) sessionCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: value, Path: s.o.Base + "/admin", MaxAge: maxAge,
		HttpOnly: true, Secure: s.o.Secure(r), SameSite: http.SameSiteStrictMode}
}

// finish checks the provider's answer and keeps the session it proves,
// returning it and its cookie's value.
func (s *SignIn) finish(r *http.Request) (staff.Session, string, error) {
	c, err := r.Cookie(StateCookie)
	if err != nil {
		return staff.Session{}, "", refuse("expired", errors.New("no state cookie (it lapsed, or the round trip began in another browser)"))
	}
	parts := strings.Split(c.Value, ".")
	q := r.URL.Query()
	switch {
	case len(parts) != 3:
		return staff.Session{}, "", refuse("state", errors.New("a malformed state cookie"))
	case q.Get("error") != "":
		return staff.Session{}, "", refuse("denied", errors.New("the provider answered "+q.Get("error")))
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(parts[0])) != 1:
		return staff.Session{}, "", refuse("state", errors.New("the state does not match the cookie's"))
	}
	ctx := oidc.ClientContext(r.Context(), s.o.Client)
	p, err := s.discover(ctx)
	if err != nil {
		return staff.Session{}, "", refuse("provider", err)
	}
	tok, err := s.oauth(r, p).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(parts[2]))
	if err != nil {
		return staff.Session{}, "", refuse("provider", err)
	}
	person, err := s.verify(ctx, p, tok, parts[1])
	if err != nil {
		return staff.Session{}, "", err
	}
	now := s.o.Now()
	value := random(32)
	person.Hash, person.CSRF, person.Created, person.Expires = staff.HashToken(value), random(32), now, now.Add(s.o.Life)
	if err := s.o.Sessions.PutSession(r.Context(), person); err != nil {
		return staff.Session{}, "", refuse("store", err)
	}
	return person, value, nil
}

// verify checks the ID token (signature, issuer, audience, expiry, the
// nonce) and reads who it names and their role.
func (s *SignIn) verify(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, nonce string) (staff.Session, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return staff.Session{}, refuse("token", errors.New("the provider answered no ID token"))
	}
	idt, err := p.VerifierContext(ctx, &oidc.Config{ClientID: s.o.ClientID, Now: s.o.Now}).Verify(ctx, raw)
	if err != nil {
		return staff.Session{}, refuse("token", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return staff.Session{}, refuse("token", errors.New("the ID token's nonce is not this round trip's"))
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return staff.Session{}, refuse("token", err)
	}
	email := verifiedEmail(claims)
	role, ok := s.role(claims[s.o.RolesClaim])
	if !ok {
		return staff.Session{}, refuse("norole", errors.New("subject "+idt.Subject+" ("+email+"): no role in claim "+s.o.RolesClaim))
	}
	return staff.Session{Subject: idt.Subject, Email: email, Role: role}, nil
}

// verifiedEmail is the ID token's e-mail when the provider says it
// verified it (email_verified true; a few providers send the string
// "true"), else "": the audit log names people by it, and an address
// anyone may type in at the provider proves nothing. Without it, the
// session and the log go by the subject.
func verifiedEmail(claims map[string]any) string {
	email, _ := claims["email"].(string)
	switch v := claims["email_verified"].(type) {
	case bool:
		if v {
			return email
		}
	case string:
		if v == "true" {
			return email
		}
	}
	return ""
}

// role is the highest role the roles claim's values name (a string or a
// list of them), directly or through the role map.
func (s *SignIn) role(claim any) (staff.Role, bool) {
	var values []string
	switch v := claim.(type) {
	case string:
		values = []string{v}
	case []any:
		for _, x := range v {
			if str, ok := x.(string); ok {
				values = append(values, str)
			}
		}
	}
	var best staff.Role
	for _, v := range values {
		r, ok := s.o.RoleMap[v]
		if !ok {
			var err error
			if r, err = staff.ParseRole(v); err != nil {
				continue
			}
		}
		if best == "" || r.Allows(best) {
			best = r
		}
	}
	return best, best != ""
}
