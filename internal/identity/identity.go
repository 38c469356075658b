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
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/clientaddr"
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
	secret        []byte
	sessionMaxAge time.Duration
	now           func() time.Time
	secureCookies bool
	proxies       clientaddr.Resolver
	// parse checks a JWT's signature, algorithm, expiry and, when
	// configured, its audience and issuer.
	parser *jwt.Parser
	// audience and issuer are what SignJWT writes.
	audience, issuer string

	// verified remembers JWTs already checked: a waiting user polls with the
	// same token every few seconds, and verifying it (base64, JSON, HMAC) is
	// the largest CPU cost of a status request after the network. The key is
	// the whole token's SHA-256 (its first half), signature included, so a
	// forged one never hits, and an entry is a few dozen bytes, not the
	// token. Two generations: when the current one is full it becomes the
	// previous one (whose hits move back to the current), so the tokens in
	// use stay and the rest age out, in bounded memory.
	mu                 sync.Mutex
	verified, previous map[tokenDigest]verifiedJWT
	maxVerified        int // MaxVerified; tests set less
}

// tokenDigest is the first 16 bytes of a token's SHA-256: no two tokens
// anyone can make share one.
type tokenDigest [16]byte

func digestOf(raw string) tokenDigest {
	// The token's bytes read in place: a copy would be an allocation on
	// every poll (TestHandlerAllocations), and SHA-256 only reads them.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(raw), len(raw)))
	return tokenDigest(sum[:16])
}

type verifiedJWT struct {
	user string
	exp  int64 // Unix ms
}

// MaxVerified bounds the cache of verified JWTs, both generations together
// (about 50 bytes an entry, measured by TestVerifiedCacheMemory): as many
// users as poll one instance on a big night, each polling with the token
// it entered with, are verified once each; a miss only costs one
// verification (BenchmarkVerifyJWT).
const MaxVerified = 2_000_000

// DefaultSessionMaxAge is how long an anonymous session lasts unless
// --session-max-age says otherwise: a whole sale night, however long the
// line.
const DefaultSessionMaxAge = 24 * time.Hour

// maxSessionSkew is how far in the future a session's issue time may lie:
// the instance that issued it may run a little ahead of this one.
const maxSessionSkew = time.Minute

// Options are an Identity's settings beyond its secret.
type Options struct {
	// SessionMaxAge is how long an anonymous session is good for after it
	// was issued (DefaultSessionMaxAge when 0).
	SessionMaxAge time.Duration
	// Now is the clock sessions are issued and checked by (time.Now when
	// nil).
	Now func() time.Time
	// SecureCookies marks every cookie Secure, even on a request that came
	// over plain HTTP (TLS ends in front and the proxy does not say so).
	SecureCookies bool
	// Proxies are the trusted proxies, whose X-Forwarded-Proto: https
	// makes a cookie Secure.
	Proxies clientaddr.Resolver
	// Audience and Issuer, when set, are required of a user JWT's aud
	// (one of its values) and iss (--auth-audience, --auth-issuer): a
	// token the shop's login issued for another service is refused.
	Audience, Issuer string
}

// New returns an Identity signing and checking with secret, with the
// default options.
func New(secret []byte) *Identity { return NewWith(secret, Options{}) }

// NewWith returns an Identity signing and checking with secret.
func NewWith(secret []byte, o Options) *Identity {
	if o.SessionMaxAge <= 0 {
		o.SessionMaxAge = DefaultSessionMaxAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	checks := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"HS256"}), // pinned: never "none", never RS/HS confusion
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(5 * time.Second),
	}
	if o.Audience != "" {
		checks = append(checks, jwt.WithAudience(o.Audience))
	}
	if o.Issuer != "" {
		checks = append(checks, jwt.WithIssuer(o.Issuer))
	}
	return &Identity{secret: secret, sessionMaxAge: o.SessionMaxAge, now: o.Now, secureCookies: o.SecureCookies, proxies: o.Proxies,
		parser: jwt.NewParser(checks...), audience: o.Audience, issuer: o.Issuer,
		verified: map[tokenDigest]verifiedJWT{}, previous: map[tokenDigest]verifiedJWT{}, maxVerified: MaxVerified}
}

// Caller is who a request is for.
type Caller struct {
	User string
	// Signed: the shop vouches for the user (a JWT signed with the auth
	// secret: a signed-in customer). Otherwise an anonymous session this
	// server handed out, which anyone can get, as many as they like.
	Signed bool
}

// Caller returns who the request is for: ErrUnauthenticated when there is
// no valid identity, queue.ErrInvalidUser when the identity names an id
// that cannot be used (checked before anything touches Redis).
func (id *Identity) Caller(r *http.Request) (Caller, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		raw, ok := Bearer(h)
		if !ok {
			return Caller{}, ErrUnauthenticated
		}
		user, err := id.userFromJWT(raw)
		return Caller{User: user, Signed: true}, err
	}
	if c, err := r.Cookie(CookieName); err == nil {
		user, err := id.userFromSession(c.Value)
		return Caller{User: user}, err
	}
	return Caller{}, ErrUnauthenticated
}

// User is the request's user id, as Caller.
func (id *Identity) User(r *http.Request) (string, error) {
	c, err := id.Caller(r)
	return c.User, err
}

// Claims are the claims of the request's user JWT, checked as Caller
// checks it (nil without a valid one: an anonymous session has none).
// What a signed-in user's lane is judged by (lane.List.ByClaims). The
// token is verified again rather than its claims kept in the cache of
// verified tokens, which holds a few dozen bytes a user: only an enter
// into a queue whose lanes go by claims asks.
func (id *Identity) Claims(r *http.Request) map[string]any {
	raw, ok := Bearer(r.Header.Get("Authorization"))
	if !ok {
		return nil
	}
	claims := jwt.MapClaims{}
	tok, err := id.parser.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return id.secret, nil })
	if err != nil || !tok.Valid {
		return nil
	}
	return claims
}

func (id *Identity) userFromJWT(raw string) (string, error) {
	key := digestOf(raw)
	if v, ok := id.cached(key); ok && time.Now().UnixMilli() < v.exp {
		return v.user, nil
	}
	tok, err := id.parser.Parse(raw, func(*jwt.Token) (any, error) { return id.secret, nil })
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
	if Anonymous(sub) {
		return "", errSignedAnonymous
	}
	if exp, err := tok.Claims.GetExpirationTime(); err == nil && exp != nil {
		id.mu.Lock()
		id.remember(key, verifiedJWT{user: sub, exp: exp.UnixMilli()})
		id.mu.Unlock()
	}
	return sub, nil
}

// cached looks a token up in both generations, moving a hit in the previous
// one back to the current.
func (id *Identity) cached(key tokenDigest) (verifiedJWT, bool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if v, ok := id.verified[key]; ok {
		return v, true
	}
	v, ok := id.previous[key]
	if ok {
		delete(id.previous, key)
		id.remember(key, v)
	}
	return v, ok
}

// remember adds a verified token; the caller holds id.mu.
func (id *Identity) remember(key tokenDigest, v verifiedJWT) {
	if len(id.verified) >= id.maxVerified/2 {
		id.previous, id.verified = id.verified, make(map[tokenDigest]verifiedJWT, len(id.verified))
	}
	id.verified[key] = v
}

// anonymousPrefix begins every anonymous session's user id (NewSession),
// and no signed user's (userFromJWT refuses it).
const anonymousPrefix = "anon-"

// errSignedAnonymous: a JWT names a user id only anonymous sessions have.
var errSignedAnonymous = fmt.Errorf("%w: a signed user id may not begin with %q, which names anonymous sessions", queue.ErrInvalidUser, anonymousPrefix)

// Anonymous says whether user is an anonymous session's id, not a user the
// shop signed for: the one rule that tells them apart wherever only the id
// is known (the store keeps ids alone). It holds by construction: sessions
// are named with the prefix, and a JWT whose sub has it is refused.
func Anonymous(user string) bool { return strings.HasPrefix(user, anonymousPrefix) }

// NewSession returns a fresh anonymous user id and its signed cookie
// value: "<user>.<issued, Unix seconds>.<signature>". The issue time is
// signed with the id, so a session cannot be made younger.
func (id *Identity) NewSession() (user, value string) {
	b := make([]byte, 16)
	rand.Read(b)
	user = anonymousPrefix + hex.EncodeToString(b)
	issued := strconv.FormatInt(id.now().Unix(), 10)
	return user, user + "." + issued + "." + id.sign(user, issued)
}

// userFromSession checks a session cookie: signed by this secret, issued
// no longer than the max age ago. Cookies of the first format, "user.sig"
// with no issue time, are refused: they would never expire.
func (id *Identity) userFromSession(value string) (string, error) {
	user, rest, ok := strings.Cut(value, ".")
	if !ok {
		return "", ErrUnauthenticated
	}
	issued, sig, ok := strings.Cut(rest, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(id.sign(user, issued))) {
		return "", ErrUnauthenticated
	}
	at, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return "", ErrUnauthenticated
	}
	if age := id.now().Sub(time.Unix(at, 0)); age > id.sessionMaxAge || age < -maxSessionSkew {
		return "", ErrUnauthenticated
	}
	if err := queue.ValidateUserID(user); err != nil {
		return "", err
	}
	return user, nil
}

func (id *Identity) sign(user, issued string) string {
	m := hmac.New(sha256.New, id.secret)
	m.Write([]byte("waitroom-session-v2:" + user + "." + issued))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SignJWT makes an HS256 token for user, valid for ttl, with the
// configured audience and issuer: what a shop's login would issue. Used by
// `waitroom token`, tests, the bench harness and the demo.
func (id *Identity) SignJWT(user string, ttl time.Duration) string {
	claims := jwt.MapClaims{"sub": user, "exp": time.Now().Add(ttl).Unix()}
	if id.audience != "" {
		claims["aud"] = id.audience
	}
	if id.issuer != "" {
		claims["iss"] = id.issuer
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(id.secret)
	if err != nil {
		panic(err) // HS256 with a byte key cannot fail
	}
	return s
}

// Cookie returns the cookie carrying a session's value in the answer to r;
// the browser keeps it as long as the session is good.
func (id *Identity) Cookie(r *http.Request, value string) *http.Cookie {
	return &http.Cookie{
		Name:     CookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   int(id.sessionMaxAge.Seconds()),
		HttpOnly: true,
		Secure:   id.Secure(r),
		SameSite: http.SameSiteLaxMode,
	}
}

// Secure is the one rule for every cookie waitroom sets (the session, the
// gateway's entry): Secure when the request came over TLS, here or, by a
// trusted proxy's X-Forwarded-Proto, in front; or always with
// --secure-cookies. A client's own X-Forwarded-Proto counts for nothing.
func (id *Identity) Secure(r *http.Request) bool {
	return id.secureCookies || id.proxies.HTTPS(r)
}

// Bearer returns the credentials of an "Authorization: Bearer …" header;
// the scheme name is case-insensitive (RFC 9110 §11.1).
func Bearer(header string) (string, bool) {
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return cred, true
}
