package httpapi_test

// Sold out, end to end through the order API (issue 36): the sale of the
// last unit tells the line, whoever waits is told at their next poll and
// keeps their place, newcomers are refused, and a restock reopens it.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue/operate"
)

// TestLastSaleSellsTheLineOut: two units, two buyers let in (admitPerUnit
// 1 lets no third in while they hold their entries), three more waiting.
// The second sale commits the last unit: at once every waiting user's poll
// answers SOLD_OUT with a long pollAfterSeconds and no place, a newcomer is
// refused 410 sold_out in the queue's words, and the queue's stats say sold
// out with 0 units left. The admin restock reopens it: everyone waits
// again at the place they had, and the next buyer is let in.
func TestLastSaleSellsTheLineOut(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q, p := in.NewSale(2, map[string]any{"ratePerSecond": 1000, "batchSize": 100, "intervalMs": 100,
				"message": "The spring drop"})
			buyers, waiting := freshUsers(2), freshUsers(3)
			tokens := in.Admit(q, buyers...)
			for _, u := range waiting {
				if r := in.Do("POST", entriesPath(q), in.As(u), nil); r.Status != http.StatusOK || r.Str("status") != "WAITING" {
					t.Fatalf("%s entering behind two live entries for two units: %d %s, want WAITING", u, r.Status, r.Raw)
				}
			}
			before := map[string]float64{}
			for _, u := range waiting {
				before[u] = in.StatusOf(q, u).Num("position")
			}
			for _, u := range buyers {
				if r := in.Order(u, tokens[u], p); r.Status != http.StatusCreated {
					t.Fatalf("%s buying: %d %s", u, r.Status, r.Raw)
				}
			}

			for _, u := range waiting {
				r := in.StatusOf(q, u)
				if r.Str("status") != "SOLD_OUT" || r.Num("pollAfterSeconds") < 20 || r.Body["position"] != nil ||
					r.Str("message") != "The spring drop" {
					t.Errorf("%s polling after the last unit sold: %s, want SOLD_OUT, pollAfterSeconds ≥ 20, no position, the message", u, r.Raw)
				}
			}
			newcomer := apptest.UniqueID("late")
			if r := in.Do("POST", entriesPath(q), in.As(newcomer), nil); r.Status != http.StatusGone || r.ErrorCode() != "sold_out" {
				t.Errorf("a newcomer after the last unit sold: %d %s, want 410 sold_out", r.Status, r.Raw)
			}
			if st := in.QueueStats(q); st.Body["soldOut"] != true || st.Body["unitsLeft"] != 0.0 {
				t.Errorf("stats after the last unit sold: soldOut %v, unitsLeft %v", st.Body["soldOut"], st.Body["unitsLeft"])
			}

			in.Restock(p, q, 1)
			for _, u := range waiting {
				if r := in.StatusOf(q, u); r.Str("status") != "WAITING" && r.Str("status") != "READY" ||
					r.Str("status") == "WAITING" && r.Num("position") > before[u] {
					t.Errorf("%s after the restock: %s, want waiting no further back than %v, or READY", u, r.Raw, before[u])
				}
			}
			if tok := in.WaitReady(q, waiting[0]); in.Order(waiting[0], tok, p).Status != http.StatusCreated {
				t.Errorf("the first in line could not buy the restocked unit")
			}
		})
	}
}

// TestAdminSoldOutAndRestock: the operator's two operations, on a queue
// whose stock waitroom is not told (no product names it): sold-out sells
// it out, restock with a count sets it, without one makes it not known;
// a bad count or body is 400, an unknown queue 404, and both need the
// admin token. While sold out (or paused) the stats' rate reason says that
// admission lets nobody in.
func TestAdminSoldOutAndRestock(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			q := apptest.UniqueID("q")
			if r := in.Do("PUT", "/admin/v1/queues/"+q, in.AdminAuth(), apptest.FastSaleQueue); r.Status != http.StatusOK {
				t.Fatalf("PUT queue: %d %s", r.Status, r.Raw)
			}
			path := "/admin/v1/queues/" + q
			for _, step := range []struct {
				op, body string
				status   int
				units    any
				soldOut  bool
			}{
				{"sold-out", "", http.StatusOK, 0.0, true},
				{"restock", `{"unitsLeft":40}`, http.StatusOK, 40.0, false},
				{"sold-out", "", http.StatusOK, 0.0, true},
				{"restock", "", http.StatusOK, nil, false},
				{"restock", `{"unitsLeft":-1}`, http.StatusBadRequest, nil, false},
				{"restock", `{"unitsLeft":"many"}`, http.StatusBadRequest, nil, false},
				{"restock", `{"units":3}`, http.StatusBadRequest, nil, false},
			} {
				var body any
				if step.body != "" {
					body = step.body
				}
				r := in.Do("POST", path+"/"+step.op, in.AdminAuth(), body)
				if r.Status != step.status {
					t.Fatalf("%s %s: %d %s, want %d", step.op, step.body, r.Status, r.Raw, step.status)
				}
				st := in.QueueStats(q)
				if st.Body["unitsLeft"] != step.units || st.Body["soldOut"] != step.soldOut {
					t.Fatalf("after %s %s: unitsLeft %v, soldOut %v; want %v, %v", step.op, step.body,
						st.Body["unitsLeft"], st.Body["soldOut"], step.units, step.soldOut)
				}
				// The rate's reason says admission lets nobody in while sold
				// out; the rate is the one it resumes at (issue 49).
				why := ""
				if step.soldOut {
					why = operate.SoldOutWhy
				}
				if st.Body["effectiveRateReason"] != why || st.Body["effectiveRatePerSecond"] != 1000.0 {
					t.Fatalf("after %s %s: effectiveRatePerSecond %v, effectiveRateReason %q; want 1000, %q", step.op, step.body,
						st.Body["effectiveRatePerSecond"], st.Body["effectiveRateReason"], why)
				}
			}
			// Sold out before paused: a resume would let nobody in either.
			in.PatchQueue(q, map[string]any{"paused": true})
			for _, step := range []struct{ op, why string }{{"restock", operate.PausedWhy}, {"sold-out", operate.SoldOutWhy}} {
				in.Do("POST", path+"/"+step.op, in.AdminAuth(), nil)
				if st := in.QueueStats(q); st.Body["effectiveRateReason"] != step.why {
					t.Errorf("paused, after %s: effectiveRateReason %q, want %q", step.op, st.Body["effectiveRateReason"], step.why)
				}
			}
			if r := in.Do("POST", "/admin/v1/queues/no-such-queue/sold-out", in.AdminAuth(), nil); r.Status != http.StatusNotFound {
				t.Errorf("sold-out of an unknown queue: %d %s, want 404", r.Status, r.Raw)
			}
			if r := in.Do("POST", path+"/sold-out", "", nil); r.Status != http.StatusUnauthorized {
				t.Errorf("sold-out without the admin token: %d %s, want 401", r.Status, r.Raw)
			}
		})
	}
}

// TestSoldOutRefusesBeforeTheChallenge: under the challenge policy, a
// newcomer to a sold-out queue is refused 410 sold_out at once, in the
// queue's words, where they would have been asked to solve a proof of work
// first (issue 49): entering without a solution, asking the challenge route
// for one, and the page without JavaScript all say sold out, and nobody
// takes a place. Whoever held a place is answered SOLD_OUT, asked for
// nothing. A restock asks newcomers for their challenge again.
func TestSoldOutRefusesBeforeTheChallenge(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			q := apptest.UniqueID("so-ch")
			const words = "The spring drop is over"
			in.PutQueue(q, map[string]any{"paused": true, "message": words}) // new queues: entry challenge
			member := in.SessionCookie()
			if r := in.EnterAnonymously("", q, member); r.Status != http.StatusOK {
				t.Fatalf("a place before the sale sold out: %d %s", r.Status, r.Raw)
			}
			if r := in.Do("POST", "/admin/v1/queues/"+q+"/sold-out", in.AdminAuth(), nil); r.Status != http.StatusOK {
				t.Fatalf("sold-out: %d %s", r.Status, r.Raw)
			}

			newcomer := in.SessionCookie()
			for _, r := range []apptest.Response{
				in.Do("POST", entriesPath(q), "", nil, "Cookie", newcomer),
				in.Do("GET", "/api/v1/queues/"+q+"/challenge", "", nil),
			} {
				checkErrorAnswer(t, r, http.StatusGone, "sold_out")
				if e, _ := r.Body["error"].(map[string]any); e["message"] != words || e["challengeUrl"] != nil {
					t.Errorf("the refusal: %s, want the queue's words and no challenge", r.Raw)
				}
			}
			if r := in.Do("GET", "/q/"+q+"/noscript?lang=en", "", nil, "Cookie", newcomer); r.Status != http.StatusOK ||
				!strings.Contains(r.Raw, `data-state="soldout"`) || strings.Contains(r.Raw, `data-state="challenge"`) {
				t.Errorf("the page without JavaScript, a newcomer: %d %.600s; want it sold out, no challenge", r.Status, r.Raw)
			}
			if r := in.Do("POST", entriesPath(q), "", nil, "Cookie", member); r.Status != http.StatusOK || r.Str("status") != "SOLD_OUT" {
				t.Errorf("the member, holding a place: %d %s, want SOLD_OUT", r.Status, r.Raw)
			}
			if st := in.QueueStats(q); st.Num("length") != 1 {
				t.Errorf("a newcomer took a place in a sold-out line: length %v", st.Num("length"))
			}

			if r := in.Do("POST", "/admin/v1/queues/"+q+"/restock", in.AdminAuth(), map[string]any{"unitsLeft": 10}); r.Status != http.StatusOK {
				t.Fatalf("restock: %d %s", r.Status, r.Raw)
			}
			checkErrorAnswer(t, in.Do("POST", entriesPath(q), "", nil, "Cookie", newcomer), http.StatusForbidden, "challenge_required")
			if r := in.EnterAnonymously("", q, newcomer); r.Status != http.StatusOK || r.Str("status") != "WAITING" {
				t.Errorf("the newcomer after the restock, with a solution: %d %s", r.Status, r.Raw)
			}
		})
	}
}
