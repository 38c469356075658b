package httpapi_test

// Likely bots (issue 51), through the real program: a shadowed client is
// answered as a person is; refuse, challenge and degraded mode as each
// says; a person is never shadowed by the per-address limits.

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/degraded"
)

// withSignals trusts the test's own connections as the edge's proxy, which
// scores clients in Cf-Bot-Score below 30, and makes 203.0.113.0/24 a
// suspect range.
func withSignals(t *testing.T) func(*app.Config) {
	ranges := t.TempDir() + "/ranges.txt"
	if err := os.WriteFile(ranges, []byte("# a data centre\n203.0.113.0/24\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *app.Config) {
		c.TrustedProxies = "127.0.0.1,::1"
		c.BotScoreHeader, c.BotScoreBelow = "Cf-Bot-Score", 30
		c.SuspectRanges = []string{ranges}
	}
}

// Headers of a person and of two kinds of bot, as the edge forwards them.
var (
	personAt = []string{"X-Forwarded-For", "198.51.100.10", "Cf-Bot-Score", "91"}
	botScore = []string{"X-Forwarded-For", "198.51.100.20", "Cf-Bot-Score", "4"}
	botRange = []string{"X-Forwarded-For", "203.0.113.5"}
)

// keysOf is the sorted keys of a JSON answer.
func keysOf(r apptest.Response) []string {
	var keys []string
	for k := range r.Body {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestShadowedAnswersAsAPerson: a client the edge scores as a bot takes a
// place in the shadow line (the default action) and is answered as a
// person is: the same status codes and JSON keys on enter, status and
// leave, a signed ticket, an estimate, and a position that falls as
// people are let in.
func TestShadowedAnswersAsAPerson(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, withSignals(t))
			q := apptest.UniqueID("shadow")
			entries, me := "/api/v1/queues/"+q+"/entries", "/api/v1/queues/"+q+"/entries/me"
			in.PutQueue(q, map[string]any{"paused": true, "ratePerSecond": 2})
			for _, u := range []string{"p1", "p2", "p3", "p4"} {
				if r := in.Do("POST", entries, in.As(u), nil, personAt...); r.Status != 200 {
					t.Fatalf("%s: %d %s", u, r.Status, r.Raw)
				}
			}
			bot := in.Do("POST", entries, in.As("bot"), nil, botScore...)
			person := in.Do("POST", entries, in.As("p5"), nil, personAt...)
			if bot.Status != person.Status || !slices.Equal(keysOf(bot), keysOf(person)) {
				t.Fatalf("enter: the bot got %d %v, a person %d %v", bot.Status, keysOf(bot), person.Status, keysOf(person))
			}
			if bot.Num("position") != 5 || bot.Num("estimatedWaitSeconds") <= 0 || bot.Str("ticket") == "" {
				t.Errorf("the bot's place: %s, want position 5 (behind the four before it), an estimate, a ticket", bot.Raw)
			}
			if st := in.QueueStats(q); st.Num("length") != 5 || st.Num("shadowLength") != 1 {
				t.Errorf("stats: %s, want the 5 people in the real line, the bot in the shadow line", st.Raw)
			}
			botMe, personMe := in.Do("GET", me, in.As("bot"), nil), in.Do("GET", me, in.As("p5"), nil)
			if botMe.Status != 200 || !slices.Equal(keysOf(botMe), keysOf(personMe)) {
				t.Errorf("status: the bot got %d %v, a person %d %v", botMe.Status, keysOf(botMe), personMe.Status, keysOf(personMe))
			}
			// The bot's ticket looks a person's: the real line's epoch and
			// the number the person after it holds, so the front document
			// places it where it is shown, as that person; shown back, it is
			// still answered as its shadow place, signed as one.
			doc := in.Do("GET", frontPath(q), "", nil)
			if epochOf(t, bot.Str("ticket")) != epochOf(t, person.Str("ticket")) || numberOf(t, bot.Str("ticket")) != 5 {
				t.Errorf("the bot's ticket %s, the person's %s: want the same epoch, and number 5", bot.Str("ticket"), person.Str("ticket"))
			}
			if pos, ok := placeFrom(t, doc, bot.Str("ticket")); !ok || pos != 5 {
				t.Errorf("the front document places the bot at %d %v, want 5 as shown", pos, ok)
			}
			if pos, ok := placeFrom(t, doc, person.Str("ticket")); !ok || pos != 5 {
				t.Errorf("the front document places the person at %d %v, want 5", pos, ok)
			}
			if r := in.Do("GET", me, in.As("bot"), nil, "X-Waitroom-Ticket", bot.Str("ticket")); r.Status != 200 || r.Num("position") != 5 || r.Str("ticket") != bot.Str("ticket") {
				t.Errorf("the bot showing its ticket: %d %s, want its shadow place, 5", r.Status, r.Raw)
			}
			// People are let in: the bot's position falls with theirs, and
			// it is never let in before them.
			in.PatchQueue(q, map[string]any{"paused": false})
			start := botMe.Num("position")
			for deadline := time.Now().Add(apptest.Patience); ; time.Sleep(50 * time.Millisecond) {
				r := in.Do("GET", me, in.As("bot"), nil)
				if r.Status != 200 || r.Str("status") != "WAITING" {
					t.Fatalf("the bot's status: %d %s, want WAITING", r.Status, r.Raw)
				}
				if r.Num("position") < start {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the bot's position stayed %v for %v", start, apptest.Patience)
				}
			}
			botLeave, personLeave := in.Do("DELETE", me, in.As("bot"), nil), in.Do("DELETE", me, in.As("p5"), nil)
			if botLeave.Status != http.StatusNoContent || personLeave.Status != botLeave.Status {
				t.Errorf("leave: the bot %d, a person %d, want 204 both", botLeave.Status, personLeave.Status)
			}
			m := apptest.Metrics(t, in.Base)
			if n := m[`waitroom_suspects_total{action="shadow",queue="`+q+`",signal="edge_score"}`]; n != 1 {
				t.Errorf("waitroom_suspects_total for the bot: %v, want 1", n)
			}
		})
	}
}

// TestSuspectActions: refuse answers a suspect 403 suspected_bot;
// challenge hands it the dearer challenge and takes nothing cheaper; a
// person behind a carrier-NAT address past its share gets 429, never a
// suspect's answer.
func TestSuspectActions(t *testing.T) {
	t.Parallel()
	in := apptest.Boot(t, apptest.Backends[0], func(c *app.Config) {
		withSignals(t)(c)
		c.AddressEntryBurst, c.AddressEntryRate = 2, 0.01
	})
	t.Run("refuse", func(t *testing.T) {
		q := apptest.UniqueID("refuse")
		in.PutQueue(q, map[string]any{"paused": true, "suspects": "refuse"})
		checkErrorAnswer(t, in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("bot"), nil, botRange...), http.StatusForbidden, "suspected_bot")
		if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("person"), nil, personAt...); r.Status != 200 {
			t.Errorf("a person: %d %s", r.Status, r.Raw)
		}
	})
	t.Run("refuse without JavaScript", func(t *testing.T) {
		// The page says it cannot let this browser in, and does not
		// refresh: each refresh would be judged, and counted, again.
		q := apptest.UniqueID("refusens")
		in.PutQueue(q, map[string]any{"paused": true, "entry": "any", "suspects": "refuse"})
		page := in.Do("GET", "/q/"+q+"/noscript?lang=en", "", nil, append([]string{"Cookie", in.SessionCookie()}, botRange...)...)
		if page.Status != http.StatusForbidden || !strings.Contains(page.Raw, `data-state="unsupported"`) || strings.Contains(page.Raw, `http-equiv="refresh"`) {
			t.Errorf("a suspect's page without JavaScript: %d %.800s", page.Status, page.Raw)
		}
	})
	t.Run("challenge", func(t *testing.T) {
		q := apptest.UniqueID("dear")
		dearer := apptest.LeastChallengeCost + 1
		in.PutQueue(q, map[string]any{"paused": true, "entry": "any", "suspects": "challenge", "suspectChallengeCost": dearer})
		entries := "/api/v1/queues/" + q + "/entries"
		r := in.Do("POST", entries, in.As("bot"), nil, botScore...)
		checkErrorAnswer(t, r, http.StatusForbidden, "challenge_required")
		url, _ := r.Body["error"].(map[string]any)["challengeUrl"].(string)
		c := in.Do("GET", url, "", nil, botScore...)
		var ch challenge.Challenge
		if err := json.Unmarshal([]byte(c.Raw), &ch); err != nil || ch.Parameters.Cost != dearer {
			t.Fatalf("a suspect's challenge: %s, want cost %d", c.Raw, dearer)
		}
		cheap := in.Solve("", q) // asked as a person: the queue's own cost
		checkErrorAnswer(t, in.Do("POST", entries, in.As("bot"), nil, append([]string{"X-Challenge-Solution", cheap}, botScore...)...),
			http.StatusForbidden, "challenge_required")
		p, err := challenge.Solve(context.Background(), ch, 2)
		if err != nil {
			t.Fatal(err)
		}
		if r := in.Do("POST", entries, in.As("bot"), nil, append([]string{"X-Challenge-Solution", p.Encode()}, botScore...)...); r.Status != 200 || r.Str("status") != "WAITING" {
			t.Errorf("the dearer challenge solved: %d %s, want a place", r.Status, r.Raw)
		}
	})
	t.Run("carrier NAT", func(t *testing.T) {
		q := apptest.UniqueID("nat")
		in.PutQueue(q, map[string]any{"paused": true, "entry": "any", "suspects": "refuse"})
		entries := "/api/v1/queues/" + q + "/entries"
		nat := []string{"X-Forwarded-For", "198.51.100.77", "Cf-Bot-Score", "88"}
		for i := range 3 {
			r := in.Do("POST", entries, "", nil, append([]string{"Cookie", in.SessionCookie()}, nat...)...)
			if i < 2 && r.Status != 200 {
				t.Fatalf("person %d behind the NAT: %d %s", i, r.Status, r.Raw)
			}
			if i == 2 {
				checkErrorAnswer(t, r, http.StatusTooManyRequests, "too_many_entries")
			}
		}
		if r := in.Do("POST", entries, in.As("member"), nil, nat...); r.Status != 200 {
			t.Errorf("a signed-in person behind the NAT: %d %s", r.Status, r.Raw)
		}
	})
}

// TestPollRateMarksTheNextPlace: a session that polls its status much
// faster than it is told becomes a suspect for the places it takes next,
// here refused; its place already held is kept.
func TestPollRateMarksTheNextPlace(t *testing.T) {
	t.Parallel()
	in := apptest.Boot(t, apptest.Backends[0], func(c *app.Config) { c.SuspectPollFactor = 3 })
	q := apptest.UniqueID("polls")
	in.PutQueue(q, map[string]any{"paused": true, "suspects": "refuse"})
	entries, me := "/api/v1/queues/"+q+"/entries", "/api/v1/queues/"+q+"/entries/me"
	if r := in.Do("POST", entries, in.As("hammer"), nil); r.Status != 200 || r.Num("pollAfterSeconds") < 2 {
		t.Fatalf("entering: %d %s", r.Status, r.Raw)
	}
	for range 30 { // told to wait 2 s or more: asked at once, 30 times
		if r := in.Do("GET", me, in.As("hammer"), nil); r.Status != 200 {
			t.Fatalf("polling: %d %s", r.Status, r.Raw)
		}
	}
	if r := in.Do("POST", entries, in.As("hammer"), nil); r.Status != 200 || r.Num("position") != 1 {
		t.Errorf("entering again while holding a place: %d %s, want the place kept", r.Status, r.Raw)
	}
	in.Do("DELETE", me, in.As("hammer"), nil)
	checkErrorAnswer(t, in.Do("POST", entries, in.As("hammer"), nil), http.StatusForbidden, "suspected_bot")
	if r := in.Do("POST", entries, in.As("calm"), nil); r.Status != 200 {
		t.Errorf("a session that polled as told: %d %s", r.Status, r.Raw)
	}
}

// TestSuspectDegraded: under --on-store-error admit, with the store away,
// a person gets a degraded entry and a suspect 503 + Retry-After.
func TestSuspectDegraded(t *testing.T) {
	t.Parallel()
	redis := persistentRedis(t)
	in := apptest.Boot(t, apptest.Backend{Name: "private redis"}, func(c *app.Config) {
		withSignals(t)(c)
		c.RedisURL, c.KeyPrefix, c.OnStoreError = redis.URL(), "wr:", string(degraded.Admit)
	})
	entries := "/api/v1/queues/default/entries"
	// A place shadowed while the store was up (its mark judged then, as the
	// human check's is) is known here: polling from a person's address
	// later, it still gets no degraded entry.
	if r := in.Do("POST", entries, in.As("shadowed"), nil, botScore...); r.Status != 200 {
		t.Fatalf("a suspect entering: %d %s", r.Status, r.Raw)
	}
	redis.Stop()
	if r := in.Do("GET", entries+"/me", in.As("shadowed"), nil, personAt...); r.Status != 503 || r.Body["degraded"] != nil {
		t.Errorf("a known shadow place polling from a person's address with the store away: %d %s, want 503", r.Status, r.Raw)
	}
	if r := in.Do("POST", entries, in.As("ann"), nil, personAt...); r.Status != 200 || r.Body["degraded"] != true {
		t.Fatalf("a person with the store away: %d %s, want a degraded READY", r.Status, r.Raw)
	}
	for _, h := range [][]string{botScore, botRange} {
		r := in.Do("POST", entries, in.As("bot"), nil, h...)
		if r.Status != 503 || r.Header.Get("Retry-After") == "" || r.Body["degraded"] != nil {
			t.Errorf("a suspect (%v) with the store away: %d %s, want 503 with Retry-After", h, r.Status, r.Raw)
		}
		if r := in.Do("GET", entries+"/me", in.As("bot"), nil, h...); r.Status != 503 {
			t.Errorf("a suspect's status (%v) with the store away: %d %s, want 503", h, r.Status, r.Raw)
		}
	}
	// Each refused entry is counted once; the status polls are not.
	m := apptest.Metrics(t, in.Base)
	for _, signal := range []string{"edge_score", "address_range"} {
		if n := m[`waitroom_suspects_total{action="refuse",queue="default",signal="`+signal+`"}`]; n != 1 {
			t.Errorf("refusals counted for %s: %v, want 1 (the entry, not the poll)", signal, n)
		}
	}
}

// epochOf and numberOf read a signed ticket t1.<epoch>.<ticket>.<mac>.
func epochOf(t *testing.T, signed string) string { return ticketPart(t, signed, 1) }
func numberOf(t *testing.T, signed string) int64 {
	n, _ := strconv.ParseInt(ticketPart(t, signed, 2), 10, 64)
	return n
}

func ticketPart(t *testing.T, signed string, i int) string {
	t.Helper()
	parts := strings.Split(signed, ".")
	if len(parts) != 4 || parts[0] != "t1" {
		t.Fatalf("ticket %q is not t1.<epoch>.<ticket>.<mac>", signed)
	}
	return parts[i]
}

// TestAShadowTicketPlacesNoOneInTheRealLine: a shadow place's ticket names
// the number of the person after it, but shown to an instance that has not
// heard of the place it is not taken for that person's: the instance asks
// the store and answers the shadow place, its ticket still signed as one.
func TestAShadowTicketPlacesNoOneInTheRealLine(t *testing.T) {
	t.Parallel()
	b := apptest.Backends[1] // two instances on one line
	in := apptest.Boot(t, b, withSignals(t))
	other := apptest.Boot(t, b, func(c *app.Config) {
		withSignals(t)(c)
		c.KeyPrefix, c.AuthSecret, c.AdminToken = in.KeyPrefix, in.AuthSecret, in.AdminToken
	})
	q := apptest.UniqueID("shown")
	entries, me := "/api/v1/queues/"+q+"/entries", "/api/v1/queues/"+q+"/entries/me"
	// Batches of one: beyond the front's two batches an instance answers
	// a ticket it knows from its snapshot, without the store.
	in.PutQueue(q, map[string]any{"paused": true, "ratePerSecond": 1, "batchSize": 1, "intervalMs": 1000})
	for _, u := range []string{"p1", "p2", "p3", "p4"} {
		if r := in.Do("POST", entries, in.As(u), nil, personAt...); r.Status != 200 {
			t.Fatalf("%s: %d %s", u, r.Status, r.Raw)
		}
	}
	bot := in.Do("POST", entries, in.As("bot"), nil, botScore...)
	person := in.Do("POST", entries, in.As("p5"), nil, personAt...)
	if numberOf(t, bot.Str("ticket")) != numberOf(t, person.Str("ticket")) {
		t.Fatalf("the bot's ticket %s, the next person's %s: want the same number", bot.Str("ticket"), person.Str("ticket"))
	}
	// The other instance reads the line (a person's poll), then the bot
	// shows it its ticket.
	if r := other.Do("GET", me, other.As("p1"), nil); r.Status != 200 || r.Num("position") != 1 {
		t.Fatalf("p1 on the other instance: %d %s", r.Status, r.Raw)
	}
	for range 3 {
		r := other.Do("GET", me, other.As("bot"), nil, "X-Waitroom-Ticket", bot.Str("ticket"))
		if r.Status != 200 || r.Str("ticket") != bot.Str("ticket") || r.Num("position") != 5 {
			t.Fatalf("the bot showing its ticket to the other instance: %d %s, want its shadow place (ticket %s)", r.Status, r.Raw, bot.Str("ticket"))
		}
	}
	if st := in.QueueStats(q); st.Num("length") != 5 || st.Num("shadowLength") != 1 {
		t.Errorf("stats: %s, want 5 people and the bot in the shadow line", st.Raw)
	}
}
