package identity

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/queue"
)

var testSecret = []byte("identity-test-secret")

// rsaKey is generated once: RS256 tokens must be refused however well signed.
var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 1024) // small: only the algorithm matters, and keys are slow under -race
	if err != nil {
		panic(err)
	}
	return k
})

// signed makes a token with method and claims, signed with key.
func signed(t testing.TB, m jwt.SigningMethod, claims jwt.MapClaims, key any) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handMade builds a token from a raw header and claims, HMAC-SHA256-signed
// with secret whatever the header says (alg confusion).
func handMade(header, claims map[string]any, secret []byte) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(header) + "." + enc(claims)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(in))
	return in + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func future() int64 { return time.Now().Add(time.Hour).Unix() }

// requestWith returns a request carrying the Authorization and Cookie headers.
func requestWith(auth, cookie string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	return r
}

func TestIdentityUser(t *testing.T) {
	t.Parallel()
	id := New(testSecret)
	other := New([]byte("another-secret"))
	_, goodCookie := id.NewSession()
	_, otherCookie := other.NewSession()
	long := strings.Repeat("u", 128) // the longest id queue.ValidateUserID takes

	cases := []struct {
		name         string
		auth, cookie string
		want         string // the user, when accepted
		wantErr      error
	}{
		{name: "valid JWT", auth: "Bearer " + id.SignJWT("alice", time.Hour), want: "alice"},
		{name: "valid JWT 128-char sub", auth: "Bearer " + id.SignJWT(long, time.Hour), want: long},
		{name: "valid JWT punctuation sub", auth: "Bearer " + id.SignJWT("a.b-c_d@e|f~!", time.Hour), want: "a.b-c_d@e|f~!"},
		{name: "exp within leeway", auth: "Bearer " + signed(t, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "bob", "exp": time.Now().Add(-2 * time.Second).Unix()}, testSecret), want: "bob"},
		{name: "valid cookie", cookie: CookieName + "=" + goodCookie, want: strings.Split(goodCookie, ".")[0]},

		{name: "nothing", wantErr: ErrUnauthenticated},
		{name: "scheme only", auth: "Bearer", wantErr: ErrUnauthenticated},
		{name: "empty bearer", auth: "Bearer ", wantErr: ErrUnauthenticated},
		{name: "basic auth", auth: "Basic dXNlcjpwYXNz", wantErr: ErrUnauthenticated},
		{name: "garbage bearer", auth: "Bearer !!!", wantErr: ErrUnauthenticated},
		{name: "three dots", auth: "Bearer a.b.c", wantErr: ErrUnauthenticated},
		{name: "token without scheme", auth: id.SignJWT("alice", time.Hour), wantErr: ErrUnauthenticated},
		{name: "wrong secret", auth: "Bearer " + other.SignJWT("alice", time.Hour), wantErr: ErrUnauthenticated},
		{name: "alg none", auth: "Bearer " + signed(t, jwt.SigningMethodNone, jwt.MapClaims{"sub": "alice", "exp": future()}, jwt.UnsafeAllowNoneSignatureType), wantErr: ErrUnauthenticated},
		{name: "alg none with HMAC signature", auth: "Bearer " + handMade(map[string]any{"alg": "none", "typ": "JWT"}, map[string]any{"sub": "alice", "exp": future()}, testSecret), wantErr: ErrUnauthenticated},
		{name: "past exp", auth: "Bearer " + id.SignJWT("alice", -time.Hour), wantErr: ErrUnauthenticated},
		{name: "no exp", auth: "Bearer " + signed(t, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice"}, testSecret), wantErr: ErrUnauthenticated},
		{name: "exp as string", auth: "Bearer " + signed(t, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "exp": "tomorrow"}, testSecret), wantErr: ErrUnauthenticated},
		{name: "nbf in future", auth: "Bearer " + signed(t, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "exp": future(), "nbf": future()}, testSecret), wantErr: ErrUnauthenticated},
		{name: "HS512 with the right secret", auth: "Bearer " + signed(t, jwt.SigningMethodHS512, jwt.MapClaims{"sub": "alice", "exp": future()}, testSecret), wantErr: ErrUnauthenticated},
		{name: "RS256", auth: "Bearer " + signed(t, jwt.SigningMethodRS256, jwt.MapClaims{"sub": "alice", "exp": future()}, rsaKey()), wantErr: ErrUnauthenticated},
		{name: "alg confusion RS256 header HMAC-signed", auth: "Bearer " + handMade(map[string]any{"alg": "RS256", "typ": "JWT"}, map[string]any{"sub": "alice", "exp": future()}, testSecret), wantErr: ErrUnauthenticated},
		{name: "no sub", auth: "Bearer " + signed(t, jwt.SigningMethodHS256, jwt.MapClaims{"exp": future()}, testSecret), wantErr: ErrUnauthenticated},
		{name: "sub number", auth: "Bearer " + signed(t, jwt.SigningMethodHS256, jwt.MapClaims{"sub": 42, "exp": future()}, testSecret), wantErr: ErrUnauthenticated},
		{name: "empty sub", auth: "Bearer " + id.SignJWT("", time.Hour), wantErr: ErrUnauthenticated},

		{name: "sub with braces", auth: "Bearer " + id.SignJWT("a{b}", time.Hour), wantErr: queue.ErrInvalidUser},
		{name: "sub with NUL", auth: "Bearer " + id.SignJWT("a\x00b", time.Hour), wantErr: queue.ErrInvalidUser},
		{name: "sub with space", auth: "Bearer " + id.SignJWT("a b", time.Hour), wantErr: queue.ErrInvalidUser},
		{name: "sub with tab", auth: "Bearer " + id.SignJWT("a\tb", time.Hour), wantErr: queue.ErrInvalidUser},
		{name: "sub non-ASCII", auth: "Bearer " + id.SignJWT("jürgen", time.Hour), wantErr: queue.ErrInvalidUser},
		{name: "sub 129 chars", auth: "Bearer " + id.SignJWT(long+"u", time.Hour), wantErr: queue.ErrInvalidUser},
		// The anonymous sessions' prefix: a signed user is never taken for one.
		{name: "sub of an anonymous session", auth: "Bearer " + id.SignJWT("anon-0123456789abcdef0123456789abcdef", time.Hour), wantErr: queue.ErrInvalidUser},
		{name: "sub with the anonymous prefix", auth: "Bearer " + id.SignJWT("anon-", time.Hour), wantErr: queue.ErrInvalidUser},
		{name: "valid JWT sub anon without dash", auth: "Bearer " + id.SignJWT("anonymous", time.Hour), want: "anonymous"},
		{name: "sub 200 chars", auth: "Bearer " + id.SignJWT(strings.Repeat("x", 200), time.Hour), wantErr: queue.ErrInvalidUser},

		{name: "forged cookie", cookie: CookieName + "=anon-00.AAAA", wantErr: ErrUnauthenticated},
		{name: "unsigned cookie", cookie: CookieName + "=anon-00", wantErr: ErrUnauthenticated},
		{name: "empty cookie", cookie: CookieName + "=", wantErr: ErrUnauthenticated},
		{name: "cookie of another secret", cookie: CookieName + "=" + otherCookie, wantErr: ErrUnauthenticated},
		{name: "cookie with swapped user", cookie: CookieName + "=anon-ff" + goodCookie[strings.Index(goodCookie, "."):], wantErr: ErrUnauthenticated},
		{name: "signed cookie naming a bad user", cookie: CookieName + "=" + sessionValue(id, "a{b}", time.Now()), wantErr: queue.ErrInvalidUser},
		{name: "other cookie name", cookie: "session=" + goodCookie, wantErr: ErrUnauthenticated},
		// The header is what the client chose to send: a bad one is not
		// rescued by a good cookie.
		{name: "bad JWT beside good cookie", auth: "Bearer x", cookie: CookieName + "=" + goodCookie, wantErr: ErrUnauthenticated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := id.User(requestWith(c.auth, c.cookie))
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("User = %q, %v; want error %v", got, err, c.wantErr)
				}
				if got != "" {
					t.Errorf("User returned %q along with an error", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("User = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestAnonymousTellsSessionsFromSignedUsers: every session's id is
// anonymous, and no id a JWT may name is.
func TestAnonymousTellsSessionsFromSignedUsers(t *testing.T) {
	t.Parallel()
	id := New(testSecret)
	for range 100 {
		if user, _ := id.NewSession(); !Anonymous(user) {
			t.Fatalf("session %q is not anonymous", user)
		}
	}
	for _, user := range []string{"alice", "anonymous", "Anon-1", "x-anon-1", "42"} {
		if Anonymous(user) {
			t.Errorf("Anonymous(%q) = true", user)
		}
		if got, err := id.User(requestWith("Bearer "+id.SignJWT(user, time.Hour), "")); err != nil || got != user {
			t.Errorf("JWT for %q: %q, %v", user, got, err)
		}
	}
}

func TestNewSessionRoundTrip(t *testing.T) {
	t.Parallel()
	id := New(testSecret)
	seen := map[string]bool{}
	for range 100 {
		user, value := id.NewSession()
		if err := queue.ValidateUserID(user); err != nil {
			t.Fatalf("NewSession made an invalid user id %q: %v", user, err)
		}
		if seen[user] {
			t.Fatalf("NewSession repeated user %q", user)
		}
		seen[user] = true
		c := id.Cookie(httptest.NewRequest("GET", "/", nil), value)
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(c)
		got, err := id.User(r)
		if err != nil || got != user {
			t.Fatalf("cookie %q → %q, %v; want %q", value, got, err, user)
		}
	}
	c := NewWith(testSecret, Options{SecureCookies: true}).Cookie(httptest.NewRequest("GET", "/", nil), "v")
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || !c.Secure || c.Path != "/" || c.MaxAge != int(DefaultSessionMaxAge.Seconds()) {
		t.Errorf("session cookie attributes: %+v", c)
	}
}

// One Secure rule for every cookie: TLS here, a trusted proxy's
// X-Forwarded-Proto: https, or --secure-cookies; never a client's own
// X-Forwarded-Proto.
func TestSecureCookieRule(t *testing.T) {
	t.Parallel()
	proxies, err := clientaddr.Parse("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name          string
		secureCookies bool
		tls           bool
		peer, proto   string
		want          bool
	}{
		{"plain HTTP", false, false, "203.0.113.9:5000", "", false},
		{"TLS to this server", false, true, "203.0.113.9:5000", "", true},
		{"--secure-cookies", true, false, "203.0.113.9:5000", "", true},
		{"a trusted proxy says https", false, false, "10.1.2.3:5000", "https", true},
		{"a trusted proxy says HTTPS, then http", false, false, "10.1.2.3:5000", "HTTPS, http", true},
		{"a trusted proxy says http", false, false, "10.1.2.3:5000", "http", false},
		{"a client says https itself", false, false, "203.0.113.9:5000", "https", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := NewWith(testSecret, Options{SecureCookies: tt.secureCookies, Proxies: proxies})
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			if tt.proto != "" {
				r.Header.Set("X-Forwarded-Proto", tt.proto)
			}
			if !tt.tls {
				r.TLS = nil
			} else {
				r.TLS = &tls.ConnectionState{}
			}
			if got := id.Secure(r); got != tt.want {
				t.Errorf("Secure = %v, want %v", got, tt.want)
			}
			if got := id.Cookie(r, "v").Secure; got != tt.want {
				t.Errorf("the session cookie's Secure = %v, want %v", got, tt.want)
			}
		})
	}
}

// sessionValue signs a session cookie value for user issued at.
func sessionValue(id *Identity, user string, at time.Time) string {
	issued := strconv.FormatInt(at.Unix(), 10)
	return user + "." + issued + "." + id.sign(user, issued)
}

// TestSessionsExpire: a session is good for its max age after issue and
// no longer; its issue time is signed, so it cannot be made younger; the
// first cookie format, which had no issue time, is refused.
// With --auth-audience and --auth-issuer a token the shop's login made for
// another service, or that another login made, is refused; without them
// aud and iss are not looked at.
func TestJWTAudienceAndIssuer(t *testing.T) {
	t.Parallel()
	strict := NewWith(testSecret, Options{Audience: "waitroom", Issuer: "https://login.shop.example"})
	lax := New(testSecret)
	for _, tt := range []struct {
		name   string
		claims jwt.MapClaims
		strict bool // accepted with the audience and issuer set
	}{
		{"both right", jwt.MapClaims{"aud": "waitroom", "iss": "https://login.shop.example"}, true},
		{"ours among several audiences", jwt.MapClaims{"aud": []string{"orders", "waitroom"}, "iss": "https://login.shop.example"}, true},
		{"another audience", jwt.MapClaims{"aud": "orders", "iss": "https://login.shop.example"}, false},
		{"no audience", jwt.MapClaims{"iss": "https://login.shop.example"}, false},
		{"another issuer", jwt.MapClaims{"aud": "waitroom", "iss": "https://evil.example"}, false},
		{"no issuer", jwt.MapClaims{"aud": "waitroom"}, false},
		{"neither", jwt.MapClaims{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.claims["sub"], tt.claims["exp"] = "alice", future()
			r := requestWith("Bearer "+signed(t, jwt.SigningMethodHS256, tt.claims, testSecret), "")
			if user, err := strict.User(r); (err == nil) != tt.strict || tt.strict && user != "alice" {
				t.Errorf("with --auth-audience and --auth-issuer: %q, %v; want accepted %v", user, err, tt.strict)
			} else if err != nil && !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("refused with %v, want ErrUnauthenticated (401)", err)
			}
			if user, err := lax.User(r); err != nil || user != "alice" {
				t.Errorf("without them: %q, %v; want alice", user, err)
			}
		})
	}
	// SignJWT writes what the settings require.
	if user, err := strict.User(requestWith("Bearer "+strict.SignJWT("bob", time.Minute), "")); err != nil || user != "bob" {
		t.Errorf("its own SignJWT: %q, %v", user, err)
	}
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	id := NewWith(testSecret, Options{SessionMaxAge: time.Hour, Now: func() time.Time { return now }})
	user, fresh := id.NewSession()
	oldSig := func(user string) string { // the first format: HMAC over "waitroom-session:" + user
		m := hmac.New(sha256.New, testSecret)
		m.Write([]byte("waitroom-session:" + user))
		return user + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	issued, sig, _ := strings.Cut(strings.TrimPrefix(fresh, user+"."), ".")
	younger := user + "." + strconv.FormatInt(now.Unix()+3600, 10) + "." + sig
	cases := []struct {
		name, value string
		ok          bool
	}{
		{"fresh", fresh, true},
		{"an hour old", sessionValue(id, user, now.Add(-time.Hour)), true},
		{"an hour and a second old", sessionValue(id, user, now.Add(-time.Hour-time.Second)), false},
		{"issued a little ahead (another instance's clock)", sessionValue(id, user, now.Add(30*time.Second)), true},
		{"issued far in the future", sessionValue(id, user, now.Add(time.Hour)), false},
		{"issue time changed, signature kept", younger, false},
		{"issue time not a number", user + ".soon." + id.sign(user, "soon"), false},
		{"the first format, no issue time", oldSig(user), false},
		{"signature of the issue time alone", user + "." + issued + "." + id.sign("", issued), false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Cookie", CookieName+"="+c.value)
		got, err := id.Caller(r)
		switch {
		case c.ok && (err != nil || got.User != user || got.Signed):
			t.Errorf("%s: %+v, %v; want %s, anonymous", c.name, got, err, user)
		case !c.ok && !errors.Is(err, ErrUnauthenticated):
			t.Errorf("%s: %+v, %v; want unauthenticated", c.name, got, err)
		}
	}
	if c := id.Cookie(httptest.NewRequest("GET", "/", nil), fresh); c.MaxAge != 3600 {
		t.Errorf("cookie Max-Age %d, want the session's 3600", c.MaxAge)
	}
}

func TestCallerSaysWhoVouches(t *testing.T) {
	t.Parallel()
	id := New(testSecret)
	_, cookie := id.NewSession()
	if c, err := id.Caller(requestWith("Bearer "+id.SignJWT("alice", time.Hour), "")); err != nil || !c.Signed || c.User != "alice" {
		t.Fatalf("JWT: %+v, %v; want alice, signed", c, err)
	}
	if c, err := id.Caller(requestWith("", CookieName+"="+cookie)); err != nil || c.Signed {
		t.Fatalf("session: %+v, %v; want anonymous", c, err)
	}
}

// checkIdentityOutcome is the contract of Identity.User for any input: a
// valid user id, or one of the two errors the API maps to 401 and 400.
func checkIdentityOutcome(t *testing.T, user string, err error) {
	t.Helper()
	switch {
	case err == nil:
		if verr := queue.ValidateUserID(user); verr != nil {
			t.Fatalf("accepted user %q that fails ValidateUserID: %v", user, verr)
		}
	case errors.Is(err, ErrUnauthenticated), errors.Is(err, queue.ErrInvalidUser):
		if user != "" {
			t.Fatalf("returned user %q with error %v", user, err)
		}
	default:
		t.Fatalf("unexpected error kind %T: %v", err, err)
	}
}

// FuzzIdentityAuthorization feeds arbitrary Authorization header values.
func FuzzIdentityAuthorization(f *testing.F) {
	id := New(testSecret)
	for _, s := range []string{
		"", "Bearer", "Bearer ", "Bearer a.b.c", "Basic dXNlcjpwYXNz", "Bearer ...", "Bearer \x00",
		"Bearer " + id.SignJWT("alice", time.Hour),
		"Bearer " + id.SignJWT("a{b}", time.Hour),
		"Bearer " + id.SignJWT("", time.Hour),
		"Bearer " + id.SignJWT("alice", -time.Hour),
		"Bearer " + New([]byte("x")).SignJWT("alice", time.Hour),
		"Bearer " + handMade(map[string]any{"alg": "none"}, map[string]any{"sub": "alice", "exp": future()}, testSecret),
		"Bearer " + handMade(map[string]any{"alg": "RS256"}, map[string]any{"sub": "alice", "exp": future()}, testSecret),
		"Bearer " + handMade(map[string]any{"alg": "HS256"}, map[string]any{"sub": []string{"a"}, "exp": "x"}, testSecret),
		"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.",
		"Bearer eyJhbGciOiJIUzI1NiJ9.e30.e30.e30",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, auth string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{auth} // raw: no header validation in the way
		user, err := id.User(r)
		checkIdentityOutcome(t, user, err)
		if auth == "" && err == nil {
			t.Fatal("no header and no cookie was accepted")
		}
	})
}

// FuzzIdentityJWTSubject signs arbitrary subjects with the right secret: a
// valid id must come back unchanged, an invalid one must be refused.
func FuzzIdentityJWTSubject(f *testing.F) {
	id := New(testSecret)
	for _, s := range []string{
		"alice", "", "a{b}", "{q}", "a\x00b", "a b", " ", "\t", "jürgen", "\xff",
		strings.Repeat("x", 128), strings.Repeat("x", 129), strings.Repeat("x", 200), "~!@#$%^&*()", "\x7f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sub string) {
		user, err := id.User(requestWith("Bearer "+id.SignJWT(sub, time.Hour), ""))
		checkIdentityOutcome(t, user, err)
		// What the token carries is sub as JSON encodes it (invalid UTF-8
		// becomes U+FFFD).
		b, _ := json.Marshal(sub)
		var carried string
		json.Unmarshal(b, &carried)
		switch {
		case carried == "":
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("empty sub: %q, %v; want unauthenticated", user, err)
			}
		case queue.ValidateUserID(carried) == nil:
			if err != nil || user != carried {
				t.Fatalf("sub %q: %q, %v; want it accepted", carried, user, err)
			}
		default:
			if !errors.Is(err, queue.ErrInvalidUser) {
				t.Fatalf("sub %q: %q, %v; want ErrInvalidUser", carried, user, err)
			}
		}
	})
}

// FuzzIdentitySessionCookie feeds arbitrary cookie values, and values
// correctly signed for arbitrary users.
func FuzzIdentitySessionCookie(f *testing.F) {
	id := New(testSecret)
	_, good := id.NewSession()
	now := time.Now()
	for _, s := range []string{
		good, "", ".", "..", "anon-00.", ".sig", "anon-00.AAAA", "anon-00.1.AAAA", `"` + good + `"`, good + ".extra",
		sessionValue(id, "a{b}", now), sessionValue(id, "a b", now), sessionValue(id, strings.Repeat("x", 200), now),
		sessionValue(id, "anon-00", now.Add(-48*time.Hour)), "anon-00.-1." + id.sign("anon-00", "-1"),
		"anon-00.99999999999999999999." + id.sign("anon-00", "99999999999999999999"),
	} {
		f.Add(s, false)
	}
	f.Add("alice", true)
	f.Add("a{b}", true)
	f.Add("", true)
	f.Fuzz(func(t *testing.T, value string, signIt bool) {
		named := value
		if signIt {
			value = sessionValue(id, named, time.Now())
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Cookie"] = []string{CookieName + "=" + value}
		user, err := id.User(r)
		checkIdentityOutcome(t, user, err)
		// A correctly signed valid id that survives cookie syntax (no '.',
		// which splits user from signature, nor '"', ';', '\\') is accepted
		// as itself.
		if signIt && queue.ValidateUserID(named) == nil && !strings.ContainsAny(named, ".\";\\") {
			if err != nil || user != named {
				t.Fatalf("signed cookie for %q: %q, %v; want it accepted", named, user, err)
			}
		}
	})
}

// TestVerifiedCacheKeepsTokensInUse: the cache of verified JWTs is bounded,
// and a token still in use survives any number of newcomers while one that
// is not used again ages out.
func TestVerifiedCacheKeepsTokensInUse(t *testing.T) {
	id := New([]byte("secret"))
	inUse := id.SignJWT("polling-user", time.Hour)
	gone := id.SignJWT("gone-user", time.Hour)
	for _, tok := range []string{inUse, gone} {
		if _, err := id.userFromJWT(tok); err != nil {
			t.Fatal(err)
		}
	}
	id.maxVerified = 20_000 // MaxVerified's rule, at a size a test fills in a moment
	exp := verifiedJWT{user: "x", exp: time.Now().Add(time.Hour).UnixMilli()}
	for round := range 4 { // each round a full generation of other users
		for i := range id.maxVerified / 2 {
			id.mu.Lock()
			id.remember(digestOf(fmt.Sprintf("other-%d-%d", round, i)), exp)
			id.mu.Unlock()
		}
		if _, ok := id.cached(digestOf(inUse)); !ok {
			t.Fatalf("round %d: the token in use was evicted", round)
		}
		if n := len(id.verified) + len(id.previous); n > id.maxVerified {
			t.Fatalf("round %d: %d cached, bound %d", round, n, id.maxVerified)
		}
	}
	if _, ok := id.cached(digestOf(gone)); ok {
		t.Error("a token not used for two generations is still cached")
	}
}

// TestVerifiedCacheMemory: what MaxVerified's comment says an entry costs,
// measured: a full generation of 12-character user ids, in the heap after
// a collection, per entry. The bound is what an operator sizes an instance
// by (docs/operations.md): MaxVerified of them at most.
func TestVerifiedCacheMemory(t *testing.T) {
	id := New([]byte("secret"))
	const n = 200_000
	exp := time.Now().Add(time.Hour).UnixMilli()
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("user-%07d", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	id.mu.Lock()
	for _, u := range users {
		id.remember(digestOf(u), verifiedJWT{user: strings.Clone(u), exp: exp}) // the user string as the claims give it: its own
	}
	id.mu.Unlock()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.0f B per verified JWT (%d cached, 12-character user ids)", per, n)
	if per > 100 {
		t.Errorf("%.0f B per verified JWT, more than the 100 docs/operations.md counts on (MaxVerified's comment says 50)", per)
	}
	runtime.KeepAlive(id)
}
