package identity

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

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
	long := strings.Repeat("u", queue.MaxUserIDLen)

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
		{name: "sub 200 chars", auth: "Bearer " + id.SignJWT(strings.Repeat("x", 200), time.Hour), wantErr: queue.ErrInvalidUser},

		{name: "forged cookie", cookie: CookieName + "=anon-00.AAAA", wantErr: ErrUnauthenticated},
		{name: "unsigned cookie", cookie: CookieName + "=anon-00", wantErr: ErrUnauthenticated},
		{name: "empty cookie", cookie: CookieName + "=", wantErr: ErrUnauthenticated},
		{name: "cookie of another secret", cookie: CookieName + "=" + otherCookie, wantErr: ErrUnauthenticated},
		{name: "cookie with swapped user", cookie: CookieName + "=anon-ff" + goodCookie[strings.Index(goodCookie, "."):], wantErr: ErrUnauthenticated},
		{name: "signed cookie naming a bad user", cookie: CookieName + "=a{b}." + id.sign("a{b}"), wantErr: queue.ErrInvalidUser},
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
		c := Cookie(value, false)
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(c)
		got, err := id.User(r)
		if err != nil || got != user {
			t.Fatalf("cookie %q → %q, %v; want %q", value, got, err, user)
		}
	}
	c := Cookie("v", true)
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || !c.Secure || c.Path != "/" {
		t.Errorf("session cookie attributes: %+v", c)
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
	for _, s := range []string{
		good, "", ".", "anon-00.", ".sig", "anon-00.AAAA", `"` + good + `"`, good + ".extra",
		"a{b}." + id.sign("a{b}"), "a b." + id.sign("a b"), strings.Repeat("x", 200) + "." + id.sign(strings.Repeat("x", 200)),
	} {
		f.Add(s, false)
	}
	f.Add("alice", true)
	f.Add("a{b}", true)
	f.Add("", true)
	f.Fuzz(func(t *testing.T, value string, signIt bool) {
		named := value
		if signIt {
			value = named + "." + id.sign(named)
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
	exp := verifiedJWT{user: "x", exp: time.Now().Add(time.Hour)}
	for round := range 4 { // each round a full generation of other users
		for i := range maxVerified / 2 {
			id.mu.Lock()
			id.remember(fmt.Sprintf("other-%d-%d", round, i), exp)
			id.mu.Unlock()
		}
		if _, ok := id.cached(inUse); !ok {
			t.Fatalf("round %d: the token in use was evicted", round)
		}
		if n := len(id.verified) + len(id.previous); n > maxVerified {
			t.Fatalf("round %d: %d cached, bound %d", round, n, maxVerified)
		}
	}
	if _, ok := id.cached(gone); ok {
		t.Error("a token not used for two generations is still cached")
	}
}
