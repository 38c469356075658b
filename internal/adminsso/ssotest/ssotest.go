// Package ssotest is a stand-in OpenID Connect provider for tests that
// need a provider but not a real one (package adminsso's unit tests, the
// HTTP contract's): discovery and keys from go-oidc's oidctest, and an
// authorization endpoint that signs in at once whoever Provider.Next names,
// with a token endpoint that checks the PKCE verifier. The browser tests
// use a real provider (Ory Hydra, started by scripts/test.sh).
package ssotest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc/oidctest"
)

// ClientID and ClientSecret are the one client the provider knows.
const (
	ClientID     = "waitroom-test"
	ClientSecret = "waitroom-test-secret"
)

// Person is who the next sign-in is, and what its ID token says beyond.
type Person struct {
	Subject, Email string
	Groups         []string
	// Nonce, when set, replaces the round trip's nonce (a token minted
	// for another round trip); Audience the client's id.
	Nonce, Audience string
	// EmailVerified is the token's email_verified (absent when nil; a
	// string, as a few providers send it, or a bool).
	EmailVerified any
}

// Provider is the stand-in provider.
type Provider struct {
	// URL is its issuer.
	URL string
	key *rsa.PrivateKey

	mu    sync.Mutex
	next  Person
	codes map[string]grant
}

type grant struct {
	person           Person
	nonce, challenge string
	redirect         string
}

// Start starts a provider, stopped when the test ends.
func Start(t testing.TB) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{key: key, codes: map[string]grant{}}
	op := &oidctest.Server{PublicKeys: []oidctest.PublicKey{{PublicKey: key.Public(), KeyID: "k1", Algorithm: "RS256"}}}
	m := http.NewServeMux()
	m.Handle("/", op)
	m.HandleFunc("GET /auth", p.auth)
	m.HandleFunc("POST /token", p.token)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	op.SetIssuer(srv.URL)
	p.URL = srv.URL
	return p
}

// Next sets who the next sign-in is.
func (p *Provider) Next(who Person) {
	p.mu.Lock()
	p.next = who
	p.mu.Unlock()
}

// auth signs in the next person at once and sends the browser back with
// a code.
func (p *Provider) auth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != ClientID || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	p.mu.Lock()
	p.codes[code] = grant{person: p.next, nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
	p.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token exchanges a code, once, for an ID token, if the verifier is the
// challenge's.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	id, secret, _ := r.BasicAuth()
	p.mu.Lock()
	g, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || id != ClientID || secret != ClientSecret || g.redirect != r.PostForm.Get("redirect_uri") ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant"}`))
		return
	}
	nonce, aud := g.nonce, ClientID
	if g.person.Nonce != "" {
		nonce = g.person.Nonce
	}
	if g.person.Audience != "" {
		aud = g.person.Audience
	}
	now := time.Now()
	c := map[string]any{"iss": p.URL, "sub": g.person.Subject, "aud": aud, "email": g.person.Email,
		"groups": g.person.Groups, "nonce": nonce, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	if g.person.EmailVerified != nil {
		c["email_verified"] = g.person.EmailVerified
	}
	claims, _ := json.Marshal(c)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 300,
		"id_token": oidctest.SignIDToken(p.key, "k1", "RS256", string(claims))})
}
