// Package identity tells who a request is for. waitroom does not log people
// in: it trusts the shop's login (an HS256 JWT whose sub is the user id) or
// an anonymous session cookie it signs itself. Both the built-in API
// (httpapi) and gateway mode (gateway) ask it.
package identity

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/queue"
)

// CookieName names the anonymous session cookie the page gets on its first visit.
const CookieName = "wr_session"

// ErrUnauthenticated: the request carries no valid identity (401).
var ErrUnauthenticated = errors.New("no valid identity: send Authorization: Bearer <JWT> or the session cookie")

// Identity tells who a request is for. waitroom does not log people in: it
// trusts the shop's login (an HS256 JWT whose sub is the user id) or an
// anonymous session cookie signed by this server.
type Identity struct {
	secret []byte

	// verified remembers JWTs already checked: a waiting user polls with the
	// same token every few seconds, and verifying it (base64, JSON, HMAC) is
	// the largest CPU cost of a status request after the network. The key is
	// the whole token, signature included, so a forged one never hits.
	// Two generations: when the current one is full it becomes the
	// previous one (whose hits move back to the current), so the tokens in
	// use stay and the rest age out, in bounded memory.
	mu                 sync.Mutex
	verified, previous map[string]verifiedJWT
}

type verifiedJWT struct {
	user string
	exp  time.Time
}

// maxVerified bounds the cache, both generations together (about 250 bytes
// an entry); a miss only costs one verification.
const maxVerified = 400_000

// New returns an Identity signing and checking with secret.
func New(secret []byte) *Identity {
	return &Identity{secret: secret, verified: map[string]verifiedJWT{}, previous: map[string]verifiedJWT{}}
}

// User returns the request's user id: ErrUnauthenticated when there is no
// valid identity, queue.ErrInvalidUser when the identity names an id that
// cannot be used (checked before anything touches Redis).
func (id *Identity) User(r *http.Request) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		raw, ok := Bearer(h)
		if !ok {
			return "", ErrUnauthenticated
		}
		return id.userFromJWT(raw)
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return id.userFromSession(c.Value)
	}
	return "", ErrUnauthenticated
}

func (id *Identity) userFromJWT(raw string) (string, error) {
	if v, ok := id.cached(raw); ok && time.Now().Before(v.exp) {
		return v.user, nil
	}
	tok, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return id.secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), // pinned: never "none", never RS/HS confusion
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(5*time.Second),
	)
	if err != nil || !tok.Valid {
		return "", ErrUnauthenticated
	}
	sub, err := tok.Claims.GetSubject()
	if err != nil || sub == "" {
		return "", ErrUnauthenticated
	}
	if err := queue.ValidateUserID(sub); err != nil {
		return "", err
	}
	if exp, err := tok.Claims.GetExpirationTime(); err == nil && exp != nil {
		id.mu.Lock()
		id.remember(raw, verifiedJWT{user: sub, exp: exp.Time})
		id.mu.Unlock()
	}
	return sub, nil
}

// cached looks a token up in both generations, moving a hit in the previous
// one back to the current.
func (id *Identity) cached(raw string) (verifiedJWT, bool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if v, ok := id.verified[raw]; ok {
		return v, true
	}
	v, ok := id.previous[raw]
	if ok {
		delete(id.previous, raw)
		id.remember(raw, v)
	}
	return v, ok
}

// remember adds a verified token; the caller holds id.mu.
func (id *Identity) remember(raw string, v verifiedJWT) {
	if len(id.verified) >= maxVerified/2 {
		id.previous, id.verified = id.verified, make(map[string]verifiedJWT, len(id.verified))
	}
	id.verified[raw] = v
}

// NewSession returns a fresh anonymous user id and its signed cookie value.
func (id *Identity) NewSession() (user, value string) {
	b := make([]byte, 16)
	rand.Read(b)
	user = "anon-" + hex.EncodeToString(b)
	return user, user + "." + id.sign(user)
}

func (id *Identity) userFromSession(value string) (string, error) {
	user, sig, ok := strings.Cut(value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(id.sign(user))) {
		return "", ErrUnauthenticated
	}
	if err := queue.ValidateUserID(user); err != nil {
		return "", err
	}
	return user, nil
}

func (id *Identity) sign(user string) string {
	m := hmac.New(sha256.New, id.secret)
	m.Write([]byte("waitroom-session:" + user))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SignJWT makes an HS256 token for user, valid for ttl: what a shop's login
// would issue. Used by tests, the bench harness and the demo.
func (id *Identity) SignJWT(user string, ttl time.Duration) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": user,
		"exp": time.Now().Add(ttl).Unix(),
	}).SignedString(id.secret)
	if err != nil {
		panic(err) // HS256 with a byte key cannot fail
	}
	return s
}

// sessionCookie returns the cookie carrying value.
func Cookie(value string, secure bool) *http.Cookie {
	return &http.Cookie{
		Name:     CookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   int((24 * time.Hour).Seconds()),
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
}

// bearer returns the credentials of an "Authorization: Bearer …" header;
// the scheme name is case-insensitive (RFC 9110 §11.1).
func Bearer(header string) (string, bool) {
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return cred, true
}
