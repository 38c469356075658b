package httpapi_test

// The order API's promises (DESIGN.md §1.4 and §3, issue 3), shown end to end
// through HTTP on every backend: no oversell, one order per entry token (even
// under concurrent use or after a Redis failover resurrects the token), a
// failed order keeps the token, Idempotency-Key replays, and bad requests
// are refused with the right 4xx and never a 5xx.
//
// PostgreSQL is shared by every boot, so product ids, user ids and
// Idempotency-Keys carry a random suffix (see apptest.UniqueID): reruns and parallel
// tests never meet each other's rows.

import (
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// tallyAnswers tallies answers by "status code" (code empty on success) and
// fails the test on any 5xx.
func tallyAnswers(t *testing.T, rs []apptest.Response) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, r := range rs {
		if r.Status >= 500 {
			t.Errorf("5xx: %d %s", r.Status, r.Raw)
		}
		n[strings.TrimSpace(strconv.Itoa(r.Status)+" "+r.ErrorCode())]++
	}
	return n
}

// tallyOrBusy is tallyAnswers for a burst: 50 requests at once on two
// loaded cores can outwait the Redis client's 1 s fail-fast timeouts, and a
// 503 unavailable with Retry-After is then the contract's answer, not a
// fault. Any other 5xx still fails.
func tallyOrBusy(t *testing.T, rs []apptest.Response) map[string]int {
	t.Helper()
	var rest []apptest.Response
	busy := 0
	for _, r := range rs {
		if r.Status == http.StatusServiceUnavailable && r.ErrorCode() == "unavailable" && r.Header.Get("Retry-After") != "" {
			busy++
			continue
		}
		rest = append(rest, r)
	}
	n := tallyAnswers(t, rest)
	if busy > 0 {
		n["503 unavailable"] = busy
	}
	return n
}

// wantOrderError fails unless r is the error answer status/code.
func wantOrderError(t *testing.T, what string, r apptest.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.ErrorCode() != code {
		t.Errorf("%s: got %d %s, want %d %s", what, r.Status, r.Raw, status, code)
	}
}

// uncapped is apptest.FastSaleQueue with admitPerUnit 0: admission lets in
// more buyers than there are units, as the tests of the database's own
// guard need.
func uncapped() map[string]any {
	cfg := maps.Clone(apptest.FastSaleQueue)
	cfg["admitPerUnit"] = 0
	return cfg
}

// freshUsers returns n fresh user ids.
func freshUsers(n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = apptest.UniqueID(fmt.Sprintf("u%d", i))
	}
	return us
}

// TestOrderNoOversell: ten buyers per unit, all admitted (admitPerUnit 0:
// the line's own cap off, so the database's guard is what is tested), all
// ordering at once. The conditional decrement sells exactly the stock;
// every loser gets 409 out_of_stock (or, on a loaded machine, 503 with
// Retry-After) and keeps the token to try again.
func TestOrderNoOversell(t *testing.T) {
	t.Parallel()
	const stock = 10
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q, p := in.NewSale(stock, uncapped())
			buyers := freshUsers(10 * stock)
			tokens := in.Admit(q, buyers...)

			reqs := make([]apptest.Call, len(buyers))
			for i, u := range buyers {
				reqs[i] = in.OrderCall(u, tokens[u], p)
			}
			rs := in.FireAll(reqs)
			// A hundred at once may outwait the Redis client's fail-fast
			// timeouts on loaded cores (tallyOrBusy): those buyers are told
			// 503 and keep their tokens, and the others still buy every unit.
			got := tallyOrBusy(t, rs)
			busy := got["503 unavailable"]
			want := map[string]int{"201": stock, "409 out_of_stock": 9*stock - busy}
			if busy > 0 {
				want["503 unavailable"] = busy
			}
			if !maps.Equal(got, want) {
				t.Errorf("answers: got %v, want %v", got, want)
			}
			if s := in.Stock(p); s != 0 {
				t.Errorf("stock after the sale: %d, want 0", s)
			}
			for i, r := range rs {
				u := buyers[i]
				if r.Status == http.StatusCreated {
					if r.Str("productId") != p || r.Str("userId") != u || r.Num("quantity") != 1 || r.Num("id") == 0 {
						t.Errorf("order of %s: %s", u, r.Raw)
					}
					in.AssertSpent(q, u)
				} else {
					in.AssertHolds(q, u, tokens[u])
				}
			}
		})
	}
}

// TestOrderDoubleSpend: one token fired 50 times at once buys exactly once;
// every other use is refused (in flight → 409, already consumed → 403).
func TestOrderDoubleSpend(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q, p := in.NewSale(100, nil)
			u := apptest.UniqueID("spender")
			tok := in.Admit(q, u)[u]

			reqs := make([]apptest.Call, 50)
			for i := range reqs {
				reqs[i] = in.OrderCall(u, tok, p)
			}
			got := tallyOrBusy(t, in.FireAll(reqs))
			busy := got["503 unavailable"]
			if got["201"] > 1 || got["201"]+got["403 entry_token_invalid"]+got["409 order_in_progress"]+busy != len(reqs) {
				t.Errorf("answers: %v; want at most one 201, the rest 403 entry_token_invalid, 409 order_in_progress or 503 unavailable", got)
			}
			if got["201"] == 0 {
				// Every try that could have bought was answered 503: a failed
				// order keeps its token, so the same token buys now.
				if busy == 0 {
					t.Fatalf("answers: %v; nobody bought and nothing failed", got)
				}
				if r := in.Order(u, tok, p); r.Status != http.StatusCreated {
					t.Fatalf("the token after %d answers of 503: got %d %s, want 201", busy, r.Status, r.Raw)
				}
			}
			if s := in.Stock(p); s != 99 {
				t.Errorf("stock: %d, want 99", s)
			}
			in.AssertSpent(q, u)
			wantOrderError(t, "the spent token once more", in.Order(u, tok, p), http.StatusForbidden, "entry_token_invalid")
		})
	}
}

// TestOrderResurrectedToken: a Redis failover may bring back a token whose
// deletion was lost. The unique key on the token in the orders table refuses
// it (403), nothing is sold, and the token is consumed again.
func TestOrderResurrectedToken(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		if !b.Redis {
			continue // only Redis fails over; the in-process line cannot lose a deletion
		}
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q, p := in.NewSale(5, nil)
			u := apptest.UniqueID("phoenix")
			tok := in.Admit(q, u)[u]
			if r := in.Order(u, tok, p); r.Status != http.StatusCreated {
				t.Fatalf("first order: %d %s", r.Status, r.Raw)
			}
			in.AssertSpent(q, u)

			// Write the token back as a failover to a replica that missed the
			// deletion would (layout: internal/queue/redisstore/keys.go).
			rdb := testenv.RedisClient(t)
			ctx := t.Context()
			now, err := rdb.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			pre := in.KeyPrefix + "{" + q + "}:"
			if err := rdb.HSet(ctx, pre+"tokens", u, tok).Err(); err != nil {
				t.Fatal(err)
			}
			exp := float64(now.Add(time.Minute).UnixMilli())
			if err := rdb.ZAdd(ctx, pre+"texp", redis.Z{Score: exp, Member: u}).Err(); err != nil {
				t.Fatal(err)
			}
			in.AssertHolds(q, u, tok) // the line believes in it again

			wantOrderError(t, "order with the resurrected token", in.Order(u, tok, p), http.StatusForbidden, "entry_token_invalid")
			if s := in.Stock(p); s != 4 {
				t.Errorf("stock: %d, want 4 (one sale only)", s)
			}
			in.AssertSpent(q, u)
		})
	}
}

// TestOrderFailureKeepsToken: an order that fails for reasons not the
// user's fault keeps the token; success consumes it.
func TestOrderFailureKeepsToken(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name+"/out of stock", func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q, p := in.NewSale(1, nil)
			u := apptest.UniqueID("early")
			tok := in.Admit(q, u)[u]
			in.Restock(p, q, 0) // sold out: an entry already handed out is honoured

			wantOrderError(t, "order while out of stock", in.Order(u, tok, p), http.StatusConflict, "out_of_stock")
			in.AssertHolds(q, u, tok)

			in.Restock(p, q, 1)
			if r := in.Order(u, tok, p); r.Status != http.StatusCreated {
				t.Fatalf("order after restock with the same token: %d %s", r.Status, r.Raw)
			}
			if s := in.Stock(p); s != 0 {
				t.Errorf("stock: %d, want 0", s)
			}
			in.AssertSpent(q, u)
			in.Restock(p, q, 1)
			wantOrderError(t, "the same token after success", in.Order(u, tok, p), http.StatusForbidden, "entry_token_invalid")
			if s := in.Stock(p); s != 1 {
				t.Errorf("stock: %d, want 1", s)
			}
		})
		t.Run(b.Name+"/payment failed", func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, func(c *app.Config) { c.PaymentFailureRate = 1 })}
			q, p := in.NewSale(3, nil)
			u := apptest.UniqueID("broke")
			tok := in.Admit(q, u)[u]
			for range 2 {
				wantOrderError(t, "order whose payment fails", in.Order(u, tok, p), http.StatusPaymentRequired, "payment_failed")
				in.AssertHolds(q, u, tok)
			}
			if s := in.Stock(p); s != 3 {
				t.Errorf("stock: %d, want 3 (payment failures roll back)", s)
			}
		})
	}
}

// TestOrderIdempotencyKey: a retry with the same Idempotency-Key returns the
// first order (200, Idempotent-Replayed: true) and buys nothing more; the
// same key with another product or quantity is 422 idempotency_key_reused.
func TestOrderIdempotencyKey(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name+"/sequential", func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q, p := in.NewSale(10, nil)
			u, key := apptest.UniqueID("retrier"), apptest.UniqueID("key")
			tok := in.Admit(q, u)[u]

			first := in.Order(u, tok, p, "Idempotency-Key", key)
			if first.Status != http.StatusCreated || first.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: %d %v %s", first.Status, first.Header, first.Raw)
			}
			second := in.Order(u, tok, p, "Idempotency-Key", key)
			if second.Status != http.StatusOK || second.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("retry: %d %v %s", second.Status, second.Header, second.Raw)
			}
			if first.Num("id") == 0 || second.Raw != first.Raw {
				t.Errorf("retry answered a different order:\nfirst  %s\nsecond %s", first.Raw, second.Raw)
			}
			if s := in.Stock(p); s != 9 {
				t.Errorf("stock: %d, want 9 (decremented once)", s)
			}
			in.AssertSpent(q, u)
			// The same key with another body is a mistake, not a retry.
			other := in.OrderCall(u, tok, p, "Idempotency-Key", key)
			other.Body = map[string]any{"productId": p, "quantity": 2}
			wantOrderError(t, "the same key for two units", in.DoCall(other), http.StatusUnprocessableEntity, "idempotency_key_reused")
			other.Body = map[string]any{"productId": apptest.UniqueID("p"), "quantity": 1}
			wantOrderError(t, "the same key for another product", in.DoCall(other), http.StatusUnprocessableEntity, "idempotency_key_reused")
			if s := in.Stock(p); s != 9 {
				t.Errorf("stock after the refused reuses: %d, want 9", s)
			}
			// A new key is a new order, and the token is spent.
			wantOrderError(t, "a new key with the spent token", in.Order(u, tok, p, "Idempotency-Key", apptest.UniqueID("key")),
				http.StatusForbidden, "entry_token_invalid")
		})
		t.Run(b.Name+"/concurrent", func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q, p := in.NewSale(10, nil)
			u, key := apptest.UniqueID("impatient"), apptest.UniqueID("key")
			tok := in.Admit(q, u)[u]

			reqs := make([]apptest.Call, 20)
			for i := range reqs {
				reqs[i] = in.OrderCall(u, tok, p, "Idempotency-Key", key)
			}
			rs := in.FireAll(reqs)
			got := tallyAnswers(t, rs)
			// Each retry either meets the first in flight (409) or replays it
			// (200); none may be told its token is invalid, since the order
			// its key names exists.
			if got["201"] != 1 || got["201"]+got["200"]+got["409 order_in_progress"] != len(reqs) {
				t.Errorf("answers: %v; want one 201, the rest 200 (replayed) or 409 order_in_progress", got)
			}
			var id float64
			for _, r := range rs {
				if r.Status == http.StatusCreated {
					id = r.Num("id")
				}
			}
			for _, r := range rs {
				if r.Status == http.StatusOK && (r.Num("id") != id || r.Header.Get("Idempotent-Replayed") != "true") {
					t.Errorf("replay %v %s, want order %v", r.Header, r.Raw, id)
				}
			}
			if s := in.Stock(p); s != 9 {
				t.Errorf("stock: %d, want 9 (decremented once)", s)
			}
		})
	}
}

// TestOrderRefusals: every way an order can be wrong gets its 4xx, never a
// 5xx, and none of them costs the user the token.
func TestOrderRefusals(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			q, p := in.NewSale(10, nil)
			alice, bob := apptest.UniqueID("alice"), apptest.UniqueID("bob")
			tokens := in.Admit(q, alice, bob)
			tok := tokens[alice]
			orderAs := func(auth string, body any, headers ...string) apptest.Response {
				return in.DoCall(apptest.Call{Method: "POST", Path: "/api/v1/orders", Auth: auth, Body: body, Headers: headers})
			}
			good := map[string]any{"productId": p, "quantity": 1}

			cases := []struct {
				name   string
				r      apptest.Response
				status int
				code   string
			}{
				{"another user's token", orderAs(in.As(bob), good, "X-Entry-Token", tok), 403, "entry_token_invalid"},
				{"a made-up token", orderAs(in.As(alice), good, "X-Entry-Token", "not-a-token"), 403, "entry_token_invalid"},
				{"an overlong token", orderAs(in.As(alice), good, "X-Entry-Token", strings.Repeat("x", 257)), 403, "entry_token_invalid"},
				{"no X-Entry-Token", orderAs(in.As(alice), good), 403, "entry_token_invalid"},
				{"no identity", orderAs("", good, "X-Entry-Token", tok), 401, "unauthenticated"},
				{"a forged JWT", orderAs("Bearer "+in.JWT(alice)+"x", good, "X-Entry-Token", tok), 401, "unauthenticated"},
				{"malformed body", orderAs(in.As(alice), `{"productId":`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"empty body", orderAs(in.As(alice), nil, "X-Entry-Token", tok), 400, "invalid_request"},
				{"a JSON array", orderAs(in.As(alice), `[]`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"two objects", orderAs(in.As(alice), `{"productId":"`+p+`","quantity":1}{}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"an unknown field", orderAs(in.As(alice), `{"productId":"`+p+`","quantity":1,"price":0}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity 0", orderAs(in.As(alice), map[string]any{"productId": p, "quantity": 0}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity -1", orderAs(in.As(alice), map[string]any{"productId": p, "quantity": -1}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity 101", orderAs(in.As(alice), map[string]any{"productId": p, "quantity": 101}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity 1e9", orderAs(in.As(alice), `{"productId":"`+p+`","quantity":1e9}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity 1.5", orderAs(in.As(alice), `{"productId":"`+p+`","quantity":1.5}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity beyond int64", orderAs(in.As(alice), `{"productId":"`+p+`","quantity":99999999999999999999}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity as a string", orderAs(in.As(alice), map[string]any{"productId": p, "quantity": "1"}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity missing", orderAs(in.As(alice), map[string]any{"productId": p}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"productId missing", orderAs(in.As(alice), map[string]any{"quantity": 1}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"productId a number", orderAs(in.As(alice), map[string]any{"productId": 7, "quantity": 1}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"productId too long", orderAs(in.As(alice), map[string]any{"productId": strings.Repeat("p", 129), "quantity": 1}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"Idempotency-Key too long", orderAs(in.As(alice), good, "X-Entry-Token", tok, "Idempotency-Key", strings.Repeat("k", 129)), 400, "invalid_request"},
				{"unknown product", orderAs(in.As(alice), map[string]any{"productId": apptest.UniqueID("nope"), "quantity": 1}, "X-Entry-Token", tok), 404, "product_not_found"},
				{"GET unknown product", in.DoCall(apptest.Call{Method: "GET", Path: "/api/v1/products/" + apptest.UniqueID("nope")}), 404, "product_not_found"},
			}
			for _, c := range cases {
				if c.r.Status >= 500 {
					t.Errorf("%s: 5xx %d %s", c.name, c.r.Status, c.r.Raw)
				}
				wantOrderError(t, c.name, c.r, c.status, c.code)
			}
			// None of that cost anyone a token or a unit.
			in.AssertHolds(q, alice, tok)
			in.AssertHolds(q, bob, tokens[bob])
			if s := in.Stock(p); s != 10 {
				t.Errorf("stock: %d, want 10", s)
			}
			if r := in.Order(alice, tok, p); r.Status != http.StatusCreated {
				t.Errorf("alice's own order after all that: %d %s", r.Status, r.Raw)
			}
		})
	}
}

// TestOrderExpiredToken: a token past its TTL is refused (403).
func TestOrderExpiredToken(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, nil)}
			// 3 s, not 1: on a loaded CI machine a poll can come later than
			// 1 s, and a token that expires unseen is never READY at all.
			q, p := in.NewSale(10, map[string]any{"ratePerSecond": 1000, "batchSize": 100, "intervalMs": 100, "tokenTtlSeconds": 3})
			u := apptest.UniqueID("late")
			tok := in.Admit(q, u)[u]
			// Expiry belongs to the store's clock: wait until the line itself
			// no longer shows the token.
			deadline := time.Now().Add(apptest.Patience)
			for in.StatusOf(q, u).Str("status") == "READY" {
				if time.Now().After(deadline) {
					t.Fatalf("a 3 s token still READY after %v", apptest.Patience)
				}
				time.Sleep(50 * time.Millisecond)
			}
			wantOrderError(t, "order with an expired token", in.Order(u, tok, p), http.StatusForbidden, "entry_token_invalid")
			if s := in.Stock(p); s != 10 {
				t.Errorf("stock: %d, want 10", s)
			}
		})
	}
}

// TestOrderWork: --order-work holds each order's database connection for at
// least that long. Only a lower bound is asserted; timing is not a claim.
func TestOrderWork(t *testing.T) {
	t.Parallel()
	const work = 200 * time.Millisecond
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Shop{Instance: apptest.Boot(t, b, func(c *app.Config) { c.OrderWork = work })}
			q, p := in.NewSale(1, nil)
			u := apptest.UniqueID("patient")
			tok := in.Admit(q, u)[u]
			start := time.Now()
			r := in.Order(u, tok, p)
			took := time.Since(start)
			if r.Status != http.StatusCreated {
				t.Fatalf("order: %d %s", r.Status, r.Raw)
			}
			if took < work {
				t.Errorf("the order took %v, less than --order-work %v", took, work)
			}
		})
	}
}
