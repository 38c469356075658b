package httpapi_test

// The front document (issue 37): one answer for everyone, cacheable, from
// which a page holding its signed ticket works out the place entries/me
// would tell it; and a ticket not signed here gets nothing.

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/queue/front"
)

func frontPath(q string) string { return "/api/v1/queues/" + q + "/front" }

// placeFrom is where the document, as the page reads it (JSON), places
// the holder of signed: front.Document.Place on what it carries, the
// leavers read back from their deltas (the page's placeFromFront is held
// to the same rule by the place cases: TestThePagePlacesAsTheServerDoes).
func placeFrom(t *testing.T, doc apptest.Response, signed string) (int64, bool) {
	t.Helper()
	parts := strings.Split(signed, ".")
	if len(parts) != 4 || parts[0] != "t1" {
		t.Fatalf("ticket %q is not t1.<epoch>.<ticket>.<mac>", signed)
	}
	epoch, _ := strconv.ParseInt(parts[1], 10, 64)
	ticket, _ := strconv.ParseInt(parts[2], 10, 64)
	var read struct {
		Epoch, Head, Last int64
		Left              struct {
			Deltas   []int64
			Unlisted int64
		}
		Drawn, Placing bool
		OpensAt        *time.Time
	}
	if err := json.Unmarshal([]byte(doc.Raw), &read); err != nil {
		t.Fatalf("front: %v: %s", err, doc.Raw)
	}
	d := front.Document{Epoch: read.Epoch, Head: read.Head, Last: read.Last, Unlisted: read.Left.Unlisted, Drawn: read.Drawn, Placing: read.Placing}
	if read.OpensAt != nil {
		d.OpensAt = *read.OpensAt
	}
	at := read.Head
	for _, delta := range read.Left.Deltas {
		at += delta
		d.Left = append(d.Left, at)
	}
	position, _, ok := d.Place(epoch, ticket)
	return position, ok
}

// enterEach puts users in line through in, in order, and answers each
// one's signed ticket; those leave picks leave the line at once.
func enterEach(t *testing.T, in *apptest.Instance, q string, users []string, leave func(i int) bool) map[string]string {
	t.Helper()
	tickets := map[string]string{}
	for i, u := range users {
		r := in.Do("POST", entriesPath(q), in.As(u), nil)
		if r.Status != http.StatusOK || r.Str("ticket") == "" {
			t.Fatalf("%s entering through %s: %d %s, want WAITING with a ticket", u, in.Base, r.Status, r.Raw)
		}
		tickets[u] = r.Str("ticket")
		if leave(i) {
			if r := in.Do("DELETE", mePath(q), in.As(u), nil); r.Status != http.StatusNoContent {
				t.Fatalf("%s leaving: %d", u, r.Status)
			}
		}
	}
	return tickets
}

// TestFrontDocumentPlacesEveryoneAsStatusDoes: a paused line of 30, with
// every third one gone. The document carries no one's id, sets no cookie,
// may be cached by anyone for a second and answers 304 to its ETag; from
// it and their signed ticket, every user still waiting works out exactly
// the position entries/me tells them, and a leaver works out none.
func TestFrontDocumentPlacesEveryoneAsStatusDoes(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q := apptest.UniqueID("front")
			in.PutQueue(q, map[string]any{"ratePerSecond": 5, "batchSize": 2, "paused": true, "notifyLeadSeconds": 30,
				"message": map[string]string{"en": "Sizes S and M are gone.", "ja": "S・Mは完売です。"}})
			users := freshUsers(30)
			tickets := enterEach(t, in.Instance, q, users, func(i int) bool { return i%3 == 1 })
			doc := in.Do("GET", frontPath(q), "", nil)
			if doc.Status != http.StatusOK {
				t.Fatalf("front: %d %s", doc.Status, doc.Raw)
			}
			if cc := doc.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "public, max-age=1, stale-while-revalidate=") {
				t.Errorf("Cache-Control %q, want public, max-age=1, stale-while-revalidate=…", cc)
			}
			if doc.Header.Get("Set-Cookie") != "" {
				t.Errorf("the front document sets a cookie: %s", doc.Header.Get("Set-Cookie"))
			}
			for _, u := range users {
				if strings.Contains(doc.Raw, u) {
					t.Fatalf("the front document names %s: %s", u, doc.Raw)
				}
			}
			if m, _ := doc.Body["message"].(map[string]any); m["ja"] != "S・Mは完売です。" || doc.Body["pace"].(map[string]any)["paused"] != true {
				t.Errorf("front: message %v, pace %v; want every language's text and paused", doc.Body["message"], doc.Body["pace"])
			}
			if doc.Num("notifyLeadSeconds") != 30 {
				t.Errorf("front: notifyLeadSeconds %v, want the queue's 30 (the page tells its person that early)", doc.Body["notifyLeadSeconds"])
			}
			for i, u := range users {
				got, placed := placeFrom(t, doc, tickets[u])
				if i%3 == 1 {
					if placed {
						t.Errorf("%s left, yet the document places them at %d", u, got)
					}
					continue
				}
				if want := int64(in.StatusOf(q, u).Num("position")); !placed || got != want {
					t.Errorf("%s: the document places them at %d (placed %v), entries/me at %d", u, got, placed, want)
				}
			}
			etag := doc.Header.Get("ETag")
			if again := in.Do("GET", frontPath(q), "", nil, "If-None-Match", etag); again.Status != http.StatusNotModified {
				t.Errorf("If-None-Match %s on a line that did not move: %d, want 304", etag, again.Status)
			}
			if r := in.Do("GET", frontPath(apptest.UniqueID("nosuch")), "", nil); r.Status != http.StatusNotFound {
				t.Errorf("the front of a queue that does not exist: %d, want 404", r.Status)
			}
		})
	}
}

// TestATicketNotSignedHereGetsNothing: a page that sends back a ticket
// altered, forged or someone else's is refused (403 ticket_invalid): no
// place, no token; its own ticket is taken, and the answer is the line's
// own either way.
func TestATicketNotSignedHereGetsNothing(t *testing.T) {
	t.Parallel()
	in := apptest.Boot(t, apptest.Backends[0], nil)
	q := apptest.UniqueID("ticket")
	in.PutQueue(q, map[string]any{"ratePerSecond": 5, "batchSize": 1, "paused": true})
	alice, bob := apptest.UniqueID("alice"), apptest.UniqueID("bob")
	mine := in.Do("POST", entriesPath(q), in.As(alice), nil).Str("ticket")
	bobs := in.Do("POST", entriesPath(q), in.As(bob), nil).Str("ticket")
	parts := strings.Split(mine, ".")
	for name, ticket := range map[string]string{
		"the number altered": parts[0] + "." + parts[1] + ".7777." + parts[3],
		"the mac made up":    parts[0] + "." + parts[1] + "." + parts[2] + ".AAAAAAAAAAAAAAAAAAAAAA",
		"someone else's":     bobs,
	} {
		t.Run(name, func(t *testing.T) {
			for _, method := range []string{"GET", "POST"} {
				path := entriesPath(q)
				if method == "GET" {
					path += "/me"
				}
				r := in.Do(method, path, in.As(alice), nil, httpapi.TicketHeader, ticket)
				if r.Status != http.StatusForbidden || r.ErrorCode() != "ticket_invalid" || r.Body["position"] != nil || r.Body["token"] != nil {
					t.Errorf("%s with %q: %d %s, want 403 ticket_invalid and nothing else", method, ticket, r.Status, r.Raw)
				}
			}
		})
	}
	if r := in.Do("GET", entriesPath(q)+"/me", in.As(alice), nil, httpapi.TicketHeader, mine); r.Status != http.StatusOK || r.Num("position") != 1 || r.Str("ticket") != mine {
		t.Errorf("alice with her own ticket: %d %s, want WAITING at 1 with the same ticket", r.Status, r.Raw)
	}
}
