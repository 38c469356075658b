// Package adminsso is the admin page's single sign-on (issue 56): OpenID
// Connect's authorization code flow with PKCE against the shop's identity
// provider (coreos/go-oidc and x/oauth2), the signed-in sessions it makes
// (kept by the line's store, staff.SessionStore, under the hash of the
// cookie's value) and the check of every admin request that carries one
// (httpapi.SessionAuth).
//
// The round trip: GET /admin/sso/login (a link: a form would hold the
// provider's every redirect to the admin page's form-action) sets a short-lived state cookie
// (the state, the nonce and the PKCE verifier; SameSite=Lax, since the
// provider's redirect back is a cross-site navigation) and sends the
// browser to the provider; GET /admin/sso/callback checks the state,
// exchanges the code with the verifier, verifies the ID token (issuer,
// audience, expiry, signature, nonce), reads the role from the roles claim,
// keeps the session and sets its cookie: HttpOnly and SameSite=Strict, so
// it is not sent on the redirect that ends the cross-site navigation
// (/admin, a public page) but on the page's own same-site requests, the
// first of which (GET /admin/sso/session) hands the page the session's
// CSRF value. Every change made in the session carries that value in
// CSRFHeader, which a cross-site form cannot set.
package adminsso

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/staff"
)

const (
	// SessionCookie holds a signed-in session's random value (the store
	// keeps only its hash).
	SessionCookie = "waitroom_admin"
	// StateCookie holds the round trip's state, nonce and PKCE verifier
	// while the browser is at the provider.
	StateCookie = "waitroom_admin_sso"
	// CSRFHeader carries the session's CSRF value on every change.
	CSRFHeader = "X-Waitroom-CSRF"
	// DefaultLife is a session's life: one sale night's shift. Short, so
	// that a person whose access the shop removes at the provider loses
	// it here by the next shift at the latest (a session is not checked
	// with the provider again), and a cookie left on a shared machine
	// lapses.
	DefaultLife = 8 * time.Hour
	// stateLife is how long a person may take at the provider.
	stateLife = 10 * time.Minute
)

var (
	// ErrNoSession: no session cookie, or one whose session is unknown,
	// expired or signed out.
	ErrNoSession = errors.New("not signed in: no admin session, or it expired")
	// ErrCSRF: a change in a session without its CSRF value.
	ErrCSRF = errors.New("the admin session's CSRF value is missing or wrong (header " + CSRFHeader + ")")
)

// Options configure the sign-in.
type Options struct {
	// Issuer is the provider's issuer URL (--admin-oidc-issuer); ClientID
	// and ClientSecret the client registered there for waitroom.
	Issuer, ClientID, ClientSecret string
	// RolesClaim names the ID token's claim whose values name roles
	// (--admin-oidc-roles-claim: "groups"); RoleMap maps other values to
	// roles (--admin-oidc-role-map). The highest role found wins.
	RolesClaim string
	RoleMap    map[string]staff.Role
	// Sessions keeps the sessions (the line's store).
	Sessions staff.SessionStore
	// Secure is the one cookie rule (identity.Identity.Secure).
	Secure func(*http.Request) bool
	// Proxies are the trusted proxies (--trusted-proxies): a request
	// through one is never on this machine, whatever its Host says, so
	// only the cookie rule decides whether it may sign in.
	Proxies clientaddr.Resolver
	// Base is the path the admin page is served under ("" or --prefix).
	Base string
	// Life is a session's life (DefaultLife when 0).
	Life time.Duration
	// Now is the clock (time.Now when nil); Client the HTTP client for
	// the provider (a 10 s timeout when nil).
	Now    func() time.Time
	Client *http.Client
	Logger *slog.Logger
}

// SignIn is the admin page's sign-in. Safe for concurrent use.
type SignIn struct {
	o Options

	mu       sync.Mutex
	provider *oidc.Provider // discovered at the first sign-in that reaches it
}

// New checks o and returns the sign-in; the provider is asked for its
// configuration at the first sign-in, so that a start does not wait on it.
func New(o Options) (*SignIn, error) {
	u, err := url.Parse(o.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("issuer %q: want an http(s) URL", o.Issuer)
	}
	if o.ClientID == "" || o.Sessions == nil || o.Secure == nil {
		return nil, errors.New("adminsso: a client id, a session store and the cookie rule are required")
	}
	if o.RolesClaim == "" {
		o.RolesClaim = "groups"
	}
	if o.Life <= 0 {
		o.Life = DefaultLife
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &SignIn{o: o}, nil
}

// Origin is the provider's origin (scheme://host[:port]): the admin page's
// Content-Security-Policy lets its sign-in form be redirected there.
func (s *SignIn) Origin() string {
	u, _ := url.Parse(s.o.Issuer) // checked by New
	return u.Scheme + "://" + u.Host
}

// discover is the provider's configuration, asked once it answers.
func (s *SignIn) discover(ctx context.Context) (*oidc.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider != nil {
		return s.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.o.Client), s.o.Issuer)
	if err != nil {
		return nil, err
	}
	s.provider = p
	return p, nil
}

// oauth is the client's configuration for a request: the redirect URL is
// the callback on the host the browser asked for, over https where the
// cookie rule says the request came over TLS.
func (s *SignIn) oauth(r *http.Request, p *oidc.Provider) *oauth2.Config {
	scheme := "http"
	if s.o.Secure(r) {
		scheme = "https"
	}
	return &oauth2.Config{ClientID: s.o.ClientID, ClientSecret: s.o.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: scheme + "://" + r.Host + s.o.Base + "/admin/sso/callback", Scopes: []string{oidc.ScopeOpenID, "email"}}
}

// random is n random bytes, base64url.
func random(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics rather than return a weak value)
	return base64.RawURLEncoding.EncodeToString(b)
}

// forwarded are the headers a proxy adds: a request with any of them
// came through one, even one the operator did not name.
var forwarded = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip"}

// loopback says whether r was sent on this machine: its connection is
// from a loopback address, not from a proxy (trusted, or one that says
// it forwards), and its Host names this machine (localhost, 127.0.0.1,
// ::1), so the browser treats the origin as secure. The Host alone would
// not do: a proxy that rewrites it to 127.0.0.1 carries the request over
// a network.
func loopback(r *http.Request, proxies clientaddr.Resolver) bool {
	if proxies.FromTrusted(r) {
		return false
	}
	for _, h := range forwarded {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	return loopbackHost(r.RemoteAddr) && loopbackHost(r.Host)
}

// loopbackHost says whether a host, with or without a port, is a
// loopback name or address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Start sends the browser to the provider (GET /admin/sso/login), with
// the state cookie set; a trouble sends it back to the admin page, which
// says why.
func (s *SignIn) Start(w http.ResponseWriter, r *http.Request) {
	if !s.o.Secure(r) && !loopback(r, s.o.Proxies) {
		// A session cookie over plain HTTP on a network could be read on
		// the way: sign-in needs TLS (or the cookie rule saying so) but on
		// this machine.
		s.back(w, r, "insecure")
		return
	}
	p, err := s.discover(r.Context())
	if err != nil {
		s.o.Logger.Warn("admin sign-in: the identity provider does not answer", "issuer", s.o.Issuer, "err", err)
		s.back(w, r, "provider")
		return
	}
	state, nonce, verifier := random(32), random(32), oauth2.GenerateVerifier()
	http.SetCookie(w, &http.Cookie{Name: StateCookie, Value: state + "." + nonce + "." + verifier,
		Path: s.o.Base + "/admin/sso/callback", MaxAge: int(stateLife.Seconds()), HttpOnly: true,
		Secure: s.o.Secure(r), SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.oauth(r, p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusSeeOther)
}

// back sends the browser to the admin page, saying why sign-in failed
// (its ?sso= the page shows in its words).
func (s *SignIn) back(w http.ResponseWriter, r *http.Request, why string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.o.Base+"/admin?sso="+why, http.StatusSeeOther)
}
