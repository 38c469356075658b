package httpapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/testenv"
)

// badCase is one request the API must refuse with a 4xx JSON error.
type badCase struct {
	name         string
	method, path string
	auth         string
	body         any // string, []byte or a value to marshal
	headers      []string
	status       int
	code         string
}

// rs256Key signs RS256 tokens, which must be refused however well signed.
var rs256Key = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 1024) // small: only the algorithm matters, and keys are slow under -race
	if err != nil {
		panic(err)
	}
	return k
})

func signTestJWT(t *testing.T, m jwt.SigningMethod, claims jwt.MapClaims, key any) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handMadeJWT HMAC-SHA256-signs header and claims with secret whatever the
// header claims the algorithm is: the alg confusion attack.
func handMadeJWT(header, claims map[string]any, secret string) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(header) + "." + enc(claims)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(in))
	return in + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// identityCases are Authorization headers and cookies that name nobody
// (401) or name an id that cannot be used (400).
func identityCases(t *testing.T, in *apptest.Instance) []badCase {
	exp := time.Now().Add(time.Hour).Unix()
	hs := func(claims jwt.MapClaims) string {
		return "Bearer " + signTestJWT(t, jwt.SigningMethodHS256, claims, []byte(in.AuthSecret))
	}
	_, otherCookie := identity.New([]byte("not-the-secret")).NewSession()
	unauth := []struct{ name, auth, cookie string }{
		{name: "no identity"},
		{name: "scheme only", auth: "Bearer"},
		{name: "empty bearer", auth: "Bearer "},
		{name: "basic auth", auth: "Basic dXNlcjpwYXNz"},
		{name: "garbage bearer", auth: "Bearer !!!not-a-jwt!!!"},
		{name: "three empty parts", auth: "Bearer .."},
		{name: "huge bearer", auth: "Bearer " + strings.Repeat("A", 8000)},
		{name: "JWT without scheme", auth: in.JWT("alice")},
		{name: "JWT with two spaces", auth: "Bearer  " + in.JWT("alice")},
		{name: "JWT wrong secret", auth: "Bearer " + identity.New([]byte("not-the-secret")).SignJWT("alice", time.Hour)},
		{name: "JWT alg none", auth: "Bearer " + signTestJWT(t, jwt.SigningMethodNone, jwt.MapClaims{"sub": "alice", "exp": exp}, jwt.UnsafeAllowNoneSignatureType)},
		{name: "JWT alg none signed", auth: "Bearer " + handMadeJWT(map[string]any{"alg": "none", "typ": "JWT"}, map[string]any{"sub": "alice", "exp": exp}, in.AuthSecret)},
		{name: "JWT past exp", auth: "Bearer " + identity.New([]byte(in.AuthSecret)).SignJWT("alice", -time.Hour)},
		{name: "JWT without exp", auth: hs(jwt.MapClaims{"sub": "alice"})},
		{name: "JWT exp not a number", auth: hs(jwt.MapClaims{"sub": "alice", "exp": "never"})},
		{name: "JWT not yet valid", auth: hs(jwt.MapClaims{"sub": "alice", "exp": exp, "nbf": exp})},
		{name: "JWT RS256", auth: "Bearer " + signTestJWT(t, jwt.SigningMethodRS256, jwt.MapClaims{"sub": "alice", "exp": exp}, rs256Key())},
		{name: "JWT alg confusion RS256 header with HMAC", auth: "Bearer " + handMadeJWT(map[string]any{"alg": "RS256", "typ": "JWT"}, map[string]any{"sub": "alice", "exp": exp}, in.AuthSecret)},
		{name: "JWT HS512 right secret", auth: "Bearer " + signTestJWT(t, jwt.SigningMethodHS512, jwt.MapClaims{"sub": "alice", "exp": exp}, []byte(in.AuthSecret))},
		{name: "JWT tampered payload", auth: func() string {
			p := strings.Split(in.JWT("alice"), ".")
			b, _ := json.Marshal(map[string]any{"sub": "mallory", "exp": exp})
			return "Bearer " + p[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + p[2]
		}()},
		{name: "JWT without sub", auth: hs(jwt.MapClaims{"exp": exp})},
		{name: "JWT sub not a string", auth: hs(jwt.MapClaims{"sub": 7, "exp": exp})},
		{name: "JWT empty sub", auth: in.As("")},
		{name: "forged cookie", cookie: "wr_session=anon-0123456789abcdef.Zm9yZ2Vk"},
		{name: "unsigned cookie", cookie: "wr_session=anon-0123456789abcdef"},
		{name: "empty cookie", cookie: "wr_session="},
		{name: "cookie of another secret", cookie: "wr_session=" + otherCookie},
		{name: "cookie with braces", cookie: "wr_session=a{b}.c"},
	}
	invalid := []struct{ name, sub string }{
		{"braces", "user{1}"},
		{"hash tag", "{default}"},
		{"NUL", "a\x00b"},
		{"space", "john doe"},
		{"tab", "a\tb"},
		{"newline", "a\nb"},
		{"DEL", "a\x7fb"},
		{"non-ASCII", "jürgen"},
		{"129 chars", strings.Repeat("u", 129)},
		{"200 chars", strings.Repeat("u", 200)},
	}
	routes := []struct{ method, path string }{
		{"POST", entriesPath("bq")},
		{"GET", mePath("bq")},
		{"DELETE", mePath("bq")},
		{"POST", mePath("bq") + "/presence"},
	}
	var out []badCase
	for _, rt := range routes {
		for _, u := range unauth {
			c := badCase{name: rt.method + " " + u.name, method: rt.method, path: rt.path, auth: u.auth,
				status: http.StatusUnauthorized, code: "unauthenticated"}
			if u.cookie != "" {
				c.headers = []string{"Cookie", u.cookie}
			}
			out = append(out, c)
		}
		for _, u := range invalid {
			out = append(out, badCase{name: rt.method + " sub " + u.name, method: rt.method, path: rt.path,
				auth: in.As(u.sub), status: http.StatusBadRequest, code: "invalid_user_id"})
		}
	}
	out = append(out, badCase{name: "order without identity", method: "POST", path: "/api/v1/orders",
		body: `{"productId":"p1","quantity":1}`, headers: []string{"X-Entry-Token", "x"},
		status: http.StatusUnauthorized, code: "unauthenticated"})
	return out
}

// bodyCases are malformed, oversized, unknown-field and wrong-type bodies.
func bodyCases(in *apptest.Instance) []badCase {
	big := `{"productId":"` + strings.Repeat("a", 5000) + `","quantity":1}`
	malformed := []struct{ name, body string }{
		{"empty", ""},
		{"truncated", `{"productId":`},
		{"not JSON", `productId=p1&quantity=1`},
		{"null", `null`},
		{"array", `[{"productId":"p1","quantity":1}]`},
		{"string", `"p1"`},
		{"two objects", `{"productId":"p1","quantity":1}{}`},
		{"trailing garbage", `{"productId":"p1","quantity":1} x`},
		{"single quotes", `{'productId':'p1'}`},
		{"NUL byte", "{\"productId\":\"p1\"\x00}"},
	}
	var out []badCase
	order := func(name string, body any, status int, code string, headers ...string) {
		if headers == nil {
			headers = []string{"X-Entry-Token", "not-a-token"}
		}
		out = append(out, badCase{name: "order " + name, method: "POST", path: "/api/v1/orders",
			auth: in.As("buyer"), body: body, headers: headers, status: status, code: code})
	}
	for _, m := range malformed {
		order(m.name, m.body, http.StatusBadRequest, "invalid_request")
	}
	order("unknown field", `{"productId":"p1","quantity":1,"price":0}`, 400, "invalid_request")
	order("productId number", `{"productId":1,"quantity":1}`, 400, "invalid_request")
	order("quantity string", `{"productId":"p1","quantity":"1"}`, 400, "invalid_request")
	order("quantity fraction", `{"productId":"p1","quantity":1.5}`, 400, "invalid_request")
	order("quantity overflow", `{"productId":"p1","quantity":1e30}`, 400, "invalid_request")
	order("over 4 KiB", big, http.StatusRequestEntityTooLarge, "body_too_large")
	order("over 4 KiB garbage", strings.Repeat("x", 5000), http.StatusRequestEntityTooLarge, "body_too_large")
	order("over 4 KiB trailing space", `{"productId":"p1","quantity":1}`+strings.Repeat(" ", 5000), http.StatusRequestEntityTooLarge, "body_too_large")
	// Well-formed, but the entry token is not one: refused before anything is written.
	order("bogus token", `{"productId":"p1","quantity":1}`, http.StatusForbidden, "entry_token_invalid")
	order("no token", `{"productId":"p1","quantity":1}`, http.StatusForbidden, "entry_token_invalid", "X-Ignore", "1")
	order("oversized token", `{"productId":"p1","quantity":1}`, http.StatusForbidden, "entry_token_invalid", "X-Entry-Token", strings.Repeat("t", 300))

	// The presence beacon (issue 55): exactly {"hidden": true|false}, as
	// text/plain or JSON; the queue's existence is checked after the body.
	beacon := func(name, path string, body any, status int, code string, headers ...string) {
		out = append(out, badCase{name: "beacon " + name, method: "POST", path: path, auth: in.As("member"),
			body: body, headers: headers, status: status, code: code})
	}
	presence := mePath("bq") + "/presence"
	for _, m := range malformed {
		beacon(m.name, presence, m.body, http.StatusBadRequest, "invalid_body")
	}
	beacon("no field", presence, `{}`, http.StatusBadRequest, "invalid_body")
	beacon("hidden null", presence, `{"hidden":null}`, http.StatusBadRequest, "invalid_body")
	beacon("hidden a string", presence, `{"hidden":"true"}`, http.StatusBadRequest, "invalid_body")
	beacon("hidden a number", presence, `{"hidden":1}`, http.StatusBadRequest, "invalid_body")
	beacon("unknown field", presence, `{"hidden":true,"at":1}`, http.StatusBadRequest, "invalid_body")
	beacon("form type", presence, `{"hidden":true}`, http.StatusBadRequest, "invalid_body", "Content-Type", "application/x-www-form-urlencoded")
	beacon("over 1 KiB", presence, `{"hidden":true}`+strings.Repeat(" ", 2000), http.StatusRequestEntityTooLarge, "body_too_large")
	beacon("unknown queue", mePath("nosuchqueue")+"/presence", `{"hidden":true}`, http.StatusNotFound, "queue_not_found")
	out = append(out, badCase{name: "status hidden=yes", method: "GET", path: mePath("bq") + "?hidden=yes", auth: in.As("member"),
		status: http.StatusBadRequest, code: "invalid_request"})

	admin := func(name, method, path string, body any, status int, code string) {
		out = append(out, badCase{name: name, method: method, path: path, auth: in.AdminAuth(),
			body: body, status: status, code: code})
	}
	for _, target := range []struct{ method, path string }{
		{"PUT", "/admin/v1/queues/bq"},
		{"PATCH", "/admin/v1/queues/bq"},
		{"PUT", "/admin/v1/queues/newq"}, // must not be created by a bad PUT
	} {
		n := target.method + " " + target.path + " "
		for _, m := range malformed {
			admin(n+m.name, target.method, target.path, m.body, 400, "invalid_request")
		}
		admin(n+"unknown field", target.method, target.path, `{"rate":5}`, 400, "invalid_request")
		admin(n+"paused string", target.method, target.path, `{"paused":"yes"}`, 400, "invalid_request")
		admin(n+"rate string", target.method, target.path, `{"ratePerSecond":"fast"}`, 400, "invalid_request")
		admin(n+"batch fraction", target.method, target.path, `{"batchSize":1.5}`, 400, "invalid_request")
		admin(n+"capacity overflow", target.method, target.path, `{"capacity":1e30}`, 400, "invalid_request")
		admin(n+"rate out of float range", target.method, target.path, `{"ratePerSecond":1e400}`, 400, "invalid_request")
		// A queue's settings may be 64 KiB (a message in twenty languages).
		admin(n+"over 64 KiB", target.method, target.path, `{"paused":false`+strings.Repeat(` `, 66_000)+`}`, 413, "body_too_large")
		admin(n+"invalid config", target.method, target.path, `{"ratePerSecond":-1}`, 400, "invalid_config")
		admin(n+"rate over batch", target.method, target.path, `{"ratePerSecond":1000,"batchSize":10,"intervalMs":100}`, 400, "invalid_config")
	}
	for _, m := range malformed {
		admin("PUT product "+m.name, "PUT", "/admin/v1/products/p2", m.body, 400, "invalid_request")
	}
	admin("PUT product without stock", "PUT", "/admin/v1/products/p2", `{"name":"x"}`, 400, "invalid_request")
	admin("PUT product stock string", "PUT", "/admin/v1/products/p2", `{"name":"x","stock":"1"}`, 400, "invalid_request")
	admin("PUT product negative stock", "PUT", "/admin/v1/products/p2", `{"name":"x","stock":-1}`, 400, "invalid_request")
	admin("PUT product bad queue", "PUT", "/admin/v1/products/p2", `{"name":"x","stock":1,"queue":"a{b}"}`, 400, "invalid_request")
	admin("PUT product unknown field", "PUT", "/admin/v1/products/p2", `{"name":"x","stock":1,"price":3}`, 400, "invalid_request")
	admin("PUT product over 4 KiB", "PUT", "/admin/v1/products/p2", `{"name":"`+strings.Repeat("n", 5000)+`","stock":1}`, 413, "body_too_large")
	return out
}

// queueNameCases put bad queue names in every path that takes one.
func queueNameCases(in *apptest.Instance) []badCase {
	names := []struct{ name, escaped string }{
		{"65 chars", strings.Repeat("q", 65)},
		{"1000 chars", strings.Repeat("q", 1000)},
		{"space", "a%20b"},
		{"braces", "a%7Bb%7D"},
		{"hash tag", "%7Bdefault%7D"},
		{"non-ASCII", "j%C3%BCrgen"},
		{"NUL", "a%00b"},
		{"newline", "a%0Ab"},
		{"escaped slash", "a%2Fb"},
		{"colon", "a:b"},
		{"star", "a*b"},
		{"question glob", "a%3Fb"},
		{"percent", "a%25b"},
		{"comma", "a,b"},
		{"right-to-left override", "%E2%80%AEq"},
		{"dot segment", "%2E"},
		{"dot-dot segment", "%2E%2E"},
	}
	var out []badCase
	for _, n := range names {
		for _, rt := range []struct {
			method, path, auth string
			body               any
		}{
			{"POST", entriesPath(n.escaped), in.As("alice"), nil},
			{"GET", mePath(n.escaped), in.As("alice"), nil},
			{"DELETE", mePath(n.escaped), in.As("alice"), nil},
			{"GET", "/admin/v1/queues/" + n.escaped, in.AdminAuth(), nil},
			{"PUT", "/admin/v1/queues/" + n.escaped, in.AdminAuth(), `{}`},
			{"PATCH", "/admin/v1/queues/" + n.escaped, in.AdminAuth(), `{"paused":true}`},
			{"GET", "/q/" + n.escaped, "", nil},
		} {
			out = append(out, badCase{name: rt.method + " " + rt.path[:min(len(rt.path), 60)] + " " + n.name,
				method: rt.method, path: rt.path, auth: rt.auth, body: rt.body,
				status: http.StatusBadRequest, code: "invalid_queue_name"})
		}
	}
	return out
}

// routeCases are paths nobody serves (404) and methods a path does not take
// (405), answered as JSON like every other error.
func routeCases(in *apptest.Instance) []badCase {
	var out []badCase
	for _, p := range []struct{ method, path string }{
		{"GET", "/nope"},
		{"GET", "/api/v1"},
		{"GET", "/api/v1/queues/bq"},
		{"GET", "/api/v1/queues/bq/entries/member"},
		{"GET", "/api/v1/queues/bq/entries/me/extra"},
		{"POST", "/api/v2/queues/bq/entries"},
		{"GET", "/admin/v1/nope"},
		{"GET", "/admin/v1/queues/bq/extra"},
		{"GET", "/q/bq/extra"},
		{"GET", "/index.html"},
	} {
		out = append(out, badCase{name: "404 " + p.method + " " + p.path, method: p.method, path: p.path,
			auth: in.As("alice"), status: http.StatusNotFound, code: "not_found"})
	}
	for _, p := range []struct{ method, path string }{
		{"PUT", entriesPath("bq")},
		{"GET", entriesPath("bq")},
		{"POST", mePath("bq")},
		{"PATCH", mePath("bq")},
		{"GET", "/api/v1/orders"},
		{"DELETE", "/api/v1/orders"},
		{"POST", "/api/v1/products/p1"},
		{"DELETE", "/admin/v1/queues/bq"},
		{"POST", "/admin/v1/queues/bq"},
		{"DELETE", "/admin/v1/products/p1"},
		{"POST", "/healthz"},
		{"DELETE", "/readyz"},
		{"POST", "/"},
	} {
		out = append(out, badCase{name: "405 " + p.method + " " + p.path, method: p.method, path: p.path,
			auth: in.As("alice"), status: http.StatusMethodNotAllowed, code: "method_not_allowed"})
	}
	return out
}

// TestBadInput: every bad request is a 4xx JSON error with its documented
// code, never a 5xx, and leaves the stores as they were.
func TestBadInput(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			// Some state for the bad requests to (not) disturb.
			in.PutQueue("bq", map[string]any{"paused": true})
			if r := in.Do("POST", entriesPath("bq"), in.As("member"), nil); r.Status != 200 {
				t.Fatalf("enter: %d %s", r.Status, r.Raw)
			}
			if r := in.Do("PUT", "/admin/v1/products/p1", in.AdminAuth(), map[string]any{"name": "P", "stock": 5, "queue": "bq"}); r.Status != 200 {
				t.Fatalf("product: %d %s", r.Status, r.Raw)
			}
			var rdb *redis.Client
			var redisBefore map[string]string
			if b.Redis {
				rdb = testenv.RedisClient(t)
				redisBefore = redisSnapshot(t, rdb, in.KeyPrefix)
				if len(redisBefore) == 0 {
					t.Fatalf("no keys under %q: the snapshot looks in the wrong place", in.KeyPrefix)
				}
			}
			httpBefore := httpSnapshot(in)

			var cases []badCase
			cases = append(cases, identityCases(t, in)...)
			cases = append(cases, bodyCases(in)...)
			cases = append(cases, queueNameCases(in)...)
			cases = append(cases, routeCases(in)...)
			t.Run("requests", func(t *testing.T) {
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						t.Parallel()
						r := in.ReportingTo(t).Do(c.method, c.path, c.auth, c.body, c.headers...)
						if r.Status >= 500 {
							t.Fatalf("5xx: %d %s", r.Status, r.Raw)
						}
						checkErrorAnswer(t, r, c.status, c.code)
						if c.status == http.StatusMethodNotAllowed && r.Header.Get("Allow") == "" {
							t.Errorf("405 without Allow")
						}
					})
				}
			})

			if d := cmp.Diff(httpBefore, httpSnapshot(in)); d != "" {
				t.Errorf("bad requests changed what the API shows (-before +after):\n%s", d)
			}
			if rdb != nil {
				after := redisSnapshot(t, rdb, in.KeyPrefix)
				if d := cmp.Diff(redisBefore, after); d != "" {
					t.Errorf("bad requests wrote to Redis (-before +after):\n%s", d)
				}
				// The check can see a write: one good request makes one.
				if r := in.Do("POST", entriesPath("bq"), in.As("latecomer"), nil); r.Status != 200 {
					t.Fatalf("enter: %d %s", r.Status, r.Raw)
				}
				if cmp.Equal(after, redisSnapshot(t, rdb, in.KeyPrefix)) {
					t.Error("the Redis snapshot did not notice a good request's write")
				}
			}
		})
	}
}

// httpSnapshot is the state the API shows an operator and a user.
func httpSnapshot(in *apptest.Instance) map[string]any {
	in.T.Helper()
	snap := map[string]any{}
	list := in.Do("GET", "/admin/v1/queues", in.AdminAuth(), nil)
	qs, _ := list.Body["queues"].([]any)
	for _, q := range qs {
		m, _ := q.(map[string]any)
		delete(m, "measuredRatePerSecond") // moves with the admission ticks
		snap["queue "+fmt.Sprint(m["queue"])] = m
	}
	for _, p := range []string{"p1", "p2"} {
		r := in.Do("GET", "/api/v1/products/"+p, "", nil)
		snap["product "+p] = fmt.Sprint(r.Status, " ", r.Raw)
	}
	for _, u := range []string{"member", "alice", "buyer"} {
		r := in.Do("GET", mePath("bq"), in.As(u), nil)
		delete(r.Body, "pollAfterSeconds") // jittered
		snap["user "+u] = r.Body
	}
	return snap
}

// admissionTickFields are the fields of a queue's hash that the admission
// loop rewrites on every tick whatever requests come in (inline: what
// AdmitNow took of the next tick, set back to 0 by each tick; last_call: the
// call that claimed it; cap_room: the room the tick left under the live
// cap, which a stock set just before moves at the next tick; the
// estimate's fit, issue 54, whose surprise a paused line with people in it
// records on every tick); the counters (admitted, left, returned, consumed,
// expired) must not move.
var admissionTickFields = []string{"next", "carry", "win_start", "win_count", "measured", "inline",
	"moved", "pace_rate", "pace_busy", "pace_at", "reach", "last_call", "cap_room",
	"pace_claimed", "pace_departed", "rate_mean", "rate_var", "rate_recent", "phase", "changes", "surprise"}

// redisSnapshot reads every key under prefix: its type and DUMP, except for
// the queues' hashes (config and admission state), whose admission tick
// fields are left out: the admission loop writes them on every tick of a
// queue, whenever that comes.
func redisSnapshot(t *testing.T, rdb *redis.Client, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	snap := map[string]string{}
	iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		if strings.Contains(key, ":minute:") {
			// The sale's per-minute rows: every instance's events detector
			// writes them once a second from what it reads, whatever the
			// requests; a request that wrote would show in the line's keys.
			continue
		}
		typ, err := rdb.Type(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(key, ":cfg") && typ == "hash" {
			m, err := rdb.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range admissionTickFields {
				delete(m, f)
			}
			fields := make([]string, 0, len(m))
			for f, v := range m {
				fields = append(fields, f+"="+v)
			}
			slices.Sort(fields)
			snap[key] = "hash " + strings.Join(fields, " ")
			continue
		}
		dump, err := rdb.Dump(ctx, key).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		snap[key] = fmt.Sprintf("%s %x", typ, dump)
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return snap
}
