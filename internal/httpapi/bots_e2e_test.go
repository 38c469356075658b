package httpapi_test

// A fair line against bots (issue 11), through the real program: the
// join policies, the challenge and its one use, the per-address limits
// behind trusted proxies, sessions that expire, bodies refused where none
// is taken.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/identity"
)

func TestEntryPolicies(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			entries := func(q string) string { return "/api/v1/queues/" + q + "/entries" }
			me := func(q string) string { return "/api/v1/queues/" + q + "/entries/me" }

			t.Run("challenge: one solved challenge, one place", func(t *testing.T) {
				in := in.ReportingTo(t)
				q := apptest.UniqueID("ch")
				in.PutQueue(q, map[string]any{"paused": true}) // new queues: entry challenge
				if st := in.QueueStats(q); st.Body["entry"] != "challenge" {
					t.Fatalf("a new queue's join policy is %v, want challenge", st.Body["entry"])
				}
				alice := in.SessionCookie()
				r := in.Do("POST", entries(q), "", nil, "Cookie", alice)
				checkErrorAnswer(t, r, http.StatusForbidden, "challenge_required")
				url, _ := r.Body["error"].(map[string]any)["challengeUrl"].(string)
				if url != "/api/v1/queues/"+q+"/challenge" {
					t.Fatalf("challengeUrl %q", url)
				}
				// The challenge is ALTCHA v2 at the queue's difficulty.
				c := in.Do("GET", url, "", nil)
				var ch challenge.Challenge
				if err := json.Unmarshal([]byte(c.Raw), &ch); err != nil || c.Status != 200 {
					t.Fatalf("challenge: %d %s", c.Status, c.Raw)
				}
				p := ch.Parameters
				if p.Algorithm != "PBKDF2/SHA-256" || p.Cost != apptest.LeastChallengeCost || p.KeyPrefix != "000" || p.Data["queue"] != q ||
					p.KeyLength != 32 || time.Until(time.Unix(p.ExpiresAt, 0)) > challenge.TTL {
					t.Fatalf("challenge parameters %+v", p)
				}
				solution := in.Solve("", q)
				if pos := checkWaiting(t, in.Do("POST", entries(q), "", nil, "Cookie", alice, "X-Challenge-Solution", solution), waitShape{rate: 100, tick: 10, paused: true}); pos != 1 {
					t.Fatalf("entered at %d", pos)
				}
				// In line: entering again asks nothing and keeps the place.
				if pos := checkWaiting(t, in.Do("POST", entries(q), "", nil, "Cookie", alice), waitShape{rate: 100, tick: 10, paused: true}); pos != 1 {
					t.Fatalf("entered again at %d", pos)
				}
				// The same solution never takes a second place.
				bob := in.SessionCookie()
				checkErrorAnswer(t, in.Do("POST", entries(q), "", nil, "Cookie", bob, "X-Challenge-Solution", solution), http.StatusForbidden, "challenge_required")
				// Nor does another queue's, nor a tampered one.
				other := apptest.UniqueID("other")
				in.PutQueue(other, map[string]any{"paused": true})
				checkErrorAnswer(t, in.Do("POST", entries(q), "", nil, "Cookie", bob, "X-Challenge-Solution", in.Solve("", other)), http.StatusForbidden, "challenge_required")
				var payload challenge.Payload
				raw, _ := base64.StdEncoding.DecodeString(in.Solve("", q))
				json.Unmarshal(raw, &payload)
				payload.Solution.Counter++
				checkErrorAnswer(t, in.Do("POST", entries(q), "", nil, "Cookie", bob, "X-Challenge-Solution", payload.Encode()), http.StatusForbidden, "challenge_required")
				checkErrorAnswer(t, in.Do("POST", entries(q), "", nil, "Cookie", bob, "X-Challenge-Solution", "garbage"), http.StatusForbidden, "challenge_required")
				if r := in.Do("GET", me(q), "", nil, "Cookie", bob); r.Str("status") != "NOT_IN_QUEUE" {
					t.Fatalf("bob after refused solutions: %s", r.Raw)
				}
				// Signed-in users are never asked.
				if pos := checkWaiting(t, in.Do("POST", entries(q), in.As("carol"), nil), waitShape{rate: 100, tick: 10, paused: true}); pos != 2 {
					t.Fatalf("carol at %d", pos)
				}
				// Leaving and coming back is a new place: a new solution.
				if r := in.Do("DELETE", me(q), "", nil, "Cookie", alice); r.Status != 204 {
					t.Fatalf("leave: %d", r.Status)
				}
				checkErrorAnswer(t, in.Do("POST", entries(q), "", nil, "Cookie", alice), http.StatusForbidden, "challenge_required")
				if pos := checkWaiting(t, in.EnterAnonymously("", q, alice), waitShape{rate: 100, tick: 10, paused: true}); pos != 2 {
					t.Fatalf("back at %d, want behind carol", pos)
				}
			})

			t.Run("signed: signed-in users only; places already held stay", func(t *testing.T) {
				in := in.ReportingTo(t)
				q := apptest.UniqueID("signed")
				in.PutQueue(q, map[string]any{"paused": true})
				early := in.SessionCookie()
				in.EnterAnonymously("", q, early)
				if r := in.Do("PATCH", "/admin/v1/queues/"+q, in.AdminAuth(), map[string]any{"entry": "signed"}); r.Status != 200 || r.Str("entry") != "signed" {
					t.Fatalf("PATCH entry signed: %d %s", r.Status, r.Raw)
				}
				checkErrorAnswer(t, in.Do("POST", entries(q), "", nil, "Cookie", in.SessionCookie(), "X-Challenge-Solution", in.Solve("", q)), http.StatusForbidden, "signin_required")
				if pos := checkWaiting(t, in.Do("POST", entries(q), "", nil, "Cookie", early), waitShape{rate: 100, tick: 10, paused: true}); pos != 1 {
					t.Fatalf("the session in line before the change: at %d", pos)
				}
				if pos := checkWaiting(t, in.Do("POST", entries(q), in.As("dave"), nil), waitShape{rate: 100, tick: 10, paused: true}); pos != 2 {
					t.Fatalf("dave at %d", pos)
				}
			})

			t.Run("any: no challenge", func(t *testing.T) {
				in := in.ReportingTo(t)
				q := apptest.UniqueID("any")
				in.PutQueue(q, map[string]any{"paused": true, "entry": "any"})
				if pos := checkWaiting(t, in.Do("POST", entries(q), "", nil, "Cookie", in.SessionCookie()), waitShape{rate: 100, tick: 10, paused: true}); pos != 1 {
					t.Fatalf("at %d", pos)
				}
			})

			t.Run("bad settings", func(t *testing.T) {
				in := in.ReportingTo(t)
				for _, body := range []map[string]any{{"entry": "everyone"}, {"entry": ""}, {"challengeCost": 9}, {"challengeCost": 100_001}} {
					checkErrorAnswer(t, in.Do("PATCH", "/admin/v1/queues/default", in.AdminAuth(), body), http.StatusBadRequest, "invalid_config")
				}
			})
		})
	}
}

// TestPerAddressLimits: anonymous places and new sessions per client
// address, X-Forwarded-For believed from trusted proxies only; signed-in
// users are not limited.
func TestPerAddressLimits(t *testing.T) {
	t.Parallel()
	limited := func(trusted string) func(*app.Config) {
		return func(c *app.Config) {
			c.AddressEntryBurst, c.AddressEntryRate = 3, 0.01
			c.AddressSessionBurst, c.AddressSessionRate = 3, 0.01
			c.TrustedProxies = trusted
		}
	}
	newSession := func(in *apptest.Instance, xff string) apptest.Response {
		if xff == "" {
			return in.Do("GET", "/", "", nil)
		}
		return in.Do("GET", "/", "", nil, "X-Forwarded-For", xff)
	}
	wantTooMany := func(t *testing.T, r apptest.Response) {
		t.Helper()
		checkErrorAnswer(t, r, http.StatusTooManyRequests, "too_many_entries")
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 90 || s > 100 {
			t.Errorf("Retry-After %q, want about 100 s (one per 100 s)", r.Header.Get("Retry-After"))
		}
	}

	t.Run("sessions and places per address", func(t *testing.T) {
		t.Parallel()
		in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, limited(""))
		q := apptest.UniqueID("limits")
		in.PutQueue(q, map[string]any{"paused": true, "entry": "any"})
		var cookies []string
		for range 3 {
			r := newSession(in, "")
			if r.Status != 200 {
				t.Fatalf("session: %d %s", r.Status, r.Raw)
			}
			cookies = append(cookies, sessionCookieSet(t, r))
		}
		wantTooMany(t, newSession(in, ""))
		// A visitor who has a session is not counted again.
		if r := in.Do("GET", "/", "", nil, "Cookie", cookies[0]); r.Status != 200 {
			t.Fatalf("a page with a session: %d %s", r.Status, r.Raw)
		}
		for _, c := range cookies {
			if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", "", nil, "Cookie", c); r.Status != 200 {
				t.Fatalf("place: %d %s", r.Status, r.Raw)
			}
		}
		wantTooMany(t, in.Do("POST", "/api/v1/queues/"+q+"/entries", "", nil, "Cookie", in.SessionCookie()))
		// Signed-in users are one identity each, whatever the address.
		for i := range 10 {
			if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(fmt.Sprintf("member%d", i)), nil); r.Status != 200 {
				t.Fatalf("member %d: %d %s", i, r.Status, r.Raw)
			}
		}
		// A client-written X-Forwarded-For is not believed.
		wantTooMany(t, newSession(in, "198.51.100.77"))
		// What the operator sees: one address tracked per limit, the
		// refusals by code.
		m := apptest.Metrics(t, in.Base)
		for k, want := range map[string]float64{
			`waitroom_address_limit_addresses{limit="entries"}`:       1,
			`waitroom_address_limit_addresses{limit="sessions"}`:      1,
			`waitroom_address_limit_untracked_total{limit="entries"}`: 0,
			`waitroom_rejected_total{reason="too_many_entries"}`:      3,
		} {
			if got, ok := m[k]; !ok || got != want {
				t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
			}
		}
	})

	t.Run("X-Forwarded-For from a trusted proxy", func(t *testing.T) {
		t.Parallel()
		in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, limited("127.0.0.0/8"))
		for i := range 6 { // six clients behind the proxy: six buckets
			if r := newSession(in, fmt.Sprintf("198.51.100.%d", i+1)); r.Status != 200 {
				t.Fatalf("client %d: %d %s", i, r.Status, r.Raw)
			}
		}
		for range 3 {
			newSession(in, "203.0.113.9, 10.0.0.1") // 10.0.0.1 is not trusted: the client is it
		}
		wantTooMany(t, newSession(in, "198.51.100.200, 10.0.0.1"))
		// An IPv6 client counts by its /64.
		for i := range 3 {
			newSession(in, fmt.Sprintf("2001:db8:1:2::%x", i+1))
		}
		wantTooMany(t, newSession(in, "2001:db8:1:2:ffff::1"))
		if r := newSession(in, "2001:db8:1:3::1"); r.Status != 200 {
			t.Fatalf("another /64: %d %s", r.Status, r.Raw)
		}
	})
}

// TestSessionsExpireEndToEnd: a session cookie is good for
// --session-max-age after it was issued; older, tampered and first-format
// cookies are 401.
func TestSessionsExpireEndToEnd(t *testing.T) {
	t.Parallel()
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) { c.SessionMaxAge = time.Hour })
	q := apptest.UniqueID("expiry")
	in.PutQueue(q, map[string]any{"paused": true, "entry": "any"})
	issuedAt := func(at time.Time) string {
		_, v := identity.NewWith([]byte(in.AuthSecret), identity.Options{Now: func() time.Time { return at }}).NewSession()
		return identity.CookieName + "=" + v
	}
	fresh := sessionCookieSet(t, in.Do("GET", "/", "", nil))
	if r := in.Do("GET", "/", "", nil); !strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=3600") {
		t.Errorf("session cookie %q, want Max-Age=3600", r.Header.Get("Set-Cookie"))
	}
	user, rest, _ := strings.Cut(strings.TrimPrefix(fresh, identity.CookieName+"="), ".")
	_, sig, _ := strings.Cut(rest, ".")
	firstFormat := func(user string) string {
		m := hmac.New(sha256.New, []byte(in.AuthSecret))
		m.Write([]byte("waitroom-session:" + user))
		return identity.CookieName + "=" + user + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	for _, c := range []struct {
		name, cookie string
		ok           bool
	}{
		{"fresh", fresh, true},
		{"59 minutes old", issuedAt(time.Now().Add(-59 * time.Minute)), true},
		{"61 minutes old", issuedAt(time.Now().Add(-61 * time.Minute)), false},
		{"made younger", identity.CookieName + "=" + user + "." + strconv.FormatInt(time.Now().Unix()+60, 10) + "." + sig, false},
		{"first format (no issue time)", firstFormat(user), false},
	} {
		r := in.Do("POST", "/api/v1/queues/"+q+"/entries", "", nil, "Cookie", c.cookie)
		switch {
		case c.ok && r.Status != 200:
			t.Errorf("%s: %d %s", c.name, r.Status, r.Raw)
		case !c.ok:
			checkErrorAnswer(t, r, http.StatusUnauthorized, "unauthenticated")
		}
	}
}

// TestBodiesWhereNoneIsTaken: a 2 MB body to enter is refused before
// anything happens; a small one is ignored; a chunked one is read only up
// to the limit.
func TestBodiesWhereNoneIsTaken(t *testing.T) {
	t.Parallel()
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	q := apptest.UniqueID("bodies")
	in.PutQueue(q, map[string]any{"paused": true})
	enter := "/api/v1/queues/" + q + "/entries"
	checkErrorAnswer(t, in.Do("POST", enter, in.As("alice"), strings.Repeat("x", 2<<20)), http.StatusRequestEntityTooLarge, "body_too_large")
	if r := in.Do("GET", enter+"/me", in.As("alice"), nil); r.Str("status") != "NOT_IN_QUEUE" {
		t.Fatalf("the refused enter took a place: %s", r.Raw)
	}
	if r := in.Do("POST", enter, in.As("alice"), "{}"); r.Status != 200 {
		t.Fatalf("a small body: %d %s", r.Status, r.Raw)
	}
	// Chunked, no length given: refused once past the limit.
	req, _ := http.NewRequest("GET", in.Base+enter+"/me", io.MultiReader(strings.NewReader(strings.Repeat("y", 4<<10))))
	req.ContentLength = -1
	req.Header.Set("Authorization", in.As("alice"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked 4 KiB to a status poll: %d", res.StatusCode)
	}
}

// sessionCookieSet returns "wr_session=…" from an answer that sets it.
func sessionCookieSet(t *testing.T, r apptest.Response) string {
	t.Helper()
	for _, v := range r.Header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(v); err == nil && c.Name == "wr_session" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no wr_session cookie in %q", r.Header.Values("Set-Cookie"))
	return ""
}
