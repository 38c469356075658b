package app_test

// The order API's promises (DESIGN.md §1.4 and §3, issue 3), shown end to end
// through HTTP on every backend: no oversell, one order per entry token (even
// under concurrent use or after a Redis failover resurrects the token), a
// failed order keeps the token, Idempotency-Key replays, and bad requests
// are refused with the right 4xx and never a 5xx.
//
// PostgreSQL is shared by every boot, so product ids, user ids and
// Idempotency-Keys carry a random suffix (see saleID): reruns and parallel
// tests never meet each other's rows.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/testenv"
)

// shop is an instance seen by the order tests: its helpers live here, apart
// from the other tests' helpers on *instance.
type shop struct{ *instance }

// saleID returns prefix with a random suffix: ids that no other test or run uses.
func saleID(prefix string) string { return fmt.Sprintf("%s-%x", prefix, rand.Uint64()) }

// fastSaleQueue admits up to 100 users per 100 ms tick, so tests never wait long.
var fastSaleQueue = map[string]any{"ratePerSecond": 1000, "batchSize": 100, "intervalMs": 100}

// newSale creates a queue with cfg (fastSaleQueue when nil) and a product with
// stock behind it, and returns both names.
func (in shop) newSale(stock int64, cfg map[string]any) (queue, product string) {
	in.t.Helper()
	if cfg == nil {
		cfg = fastSaleQueue
	}
	queue, product = saleID("q"), saleID("p")
	if r := in.do("PUT", "/admin/v1/queues/"+queue, in.adminAuth(), cfg); r.status != http.StatusOK {
		in.t.Fatalf("PUT queue %s: %d %s", queue, r.status, r.raw)
	}
	in.putProduct(product, queue, stock)
	return queue, product
}

// putProduct creates or restocks a product.
func (in shop) putProduct(id, queue string, stock int64) {
	in.t.Helper()
	r := in.do("PUT", "/admin/v1/products/"+id, in.adminAuth(),
		map[string]any{"name": "Product " + id, "stock": stock, "queue": queue})
	if r.status != http.StatusOK || r.num("stock") != float64(stock) {
		in.t.Fatalf("PUT product %s: %d %s", id, r.status, r.raw)
	}
}

// buy lets user into queue and buys one of product: 201.
func (in shop) buy(queue, product, user string) {
	in.t.Helper()
	token := in.admit(queue, user)[user]
	r := in.do("POST", "/api/v1/orders", in.as(user), map[string]any{"productId": product, "quantity": 1}, "X-Entry-Token", token)
	if r.status != http.StatusCreated {
		in.t.Fatalf("%s buying %s: %d %s", user, product, r.status, r.raw)
	}
}

// stock reads a product's stock through the public API.
func (in shop) stock(id string) int64 {
	in.t.Helper()
	r := in.do("GET", "/api/v1/products/"+id, "", nil)
	if r.status != http.StatusOK {
		in.t.Fatalf("GET product %s: %d %s", id, r.status, r.raw)
	}
	return int64(r.num("stock"))
}

// admit enters every user into queue at once and waits until each is READY;
// it returns their entry tokens.
func (in shop) admit(queue string, users ...string) map[string]string {
	in.t.Helper()
	reqs := make([]apiCall, len(users))
	for i, u := range users {
		reqs[i] = apiCall{method: "POST", path: "/api/v1/queues/" + queue + "/entries", auth: in.as(u)}
	}
	for i, r := range in.fireAll(reqs) {
		if r.status != http.StatusOK {
			in.t.Fatalf("enter %s as %s: %d %s", queue, users[i], r.status, r.raw)
		}
	}
	tokens := make(map[string]string, len(users))
	for _, u := range users {
		tokens[u] = in.waitReady(queue, u)
	}
	return tokens
}

// statusOf is the user's standing in queue.
func (in shop) statusOf(queue, user string) response {
	in.t.Helper()
	r := in.do("GET", "/api/v1/queues/"+queue+"/entries/me", in.as(user), nil)
	if r.status != http.StatusOK {
		in.t.Fatalf("status of %s in %s: %d %s", user, queue, r.status, r.raw)
	}
	return r
}

// assertHolds fails unless user is still READY with token.
func (in shop) assertHolds(queue, user, token string) {
	in.t.Helper()
	r := in.statusOf(queue, user)
	if r.str("status") != "READY" || r.str("token") != token {
		in.t.Errorf("%s should still hold its token: %s", user, r.raw)
	}
}

// assertSpent fails if user is still READY: the token was consumed.
func (in shop) assertSpent(queue, user string) {
	in.t.Helper()
	if r := in.statusOf(queue, user); r.str("status") == "READY" {
		in.t.Errorf("%s's token should be consumed, status is %s", user, r.raw)
	}
}

// orderReq is POST /api/v1/orders for one unit of product, as user with token.
func (in shop) orderReq(user, token, product string, headers ...string) apiCall {
	return apiCall{
		method: "POST", path: "/api/v1/orders", auth: in.as(user),
		body:    map[string]any{"productId": product, "quantity": 1},
		headers: append([]string{"X-Entry-Token", token}, headers...),
	}
}

// order places one order and returns the answer.
func (in shop) order(user, token, product string, headers ...string) response {
	in.t.Helper()
	return in.call(in.orderReq(user, token, product, headers...))
}

// call makes one request from the test's goroutine.
func (in shop) call(c apiCall) response {
	in.t.Helper()
	r, err := in.send(http.DefaultClient, c)
	if err != nil {
		in.t.Fatal(err)
	}
	return r
}

// tallyAnswers tallies answers by "status code" (code empty on success) and
// fails the test on any 5xx.
func tallyAnswers(t *testing.T, rs []response) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, r := range rs {
		if r.status >= 500 {
			t.Errorf("5xx: %d %s", r.status, r.raw)
		}
		n[strings.TrimSpace(strconv.Itoa(r.status)+" "+r.errorCode())]++
	}
	return n
}

// tallyOrBusy is tallyAnswers for a burst: 50 requests at once on two
// loaded cores can outwait the Redis client's 1 s fail-fast timeouts, and a
// 503 unavailable with Retry-After is then the contract's answer, not a
// fault. Any other 5xx still fails.
func tallyOrBusy(t *testing.T, rs []response) map[string]int {
	t.Helper()
	var rest []response
	busy := 0
	for _, r := range rs {
		if r.status == http.StatusServiceUnavailable && r.errorCode() == "unavailable" && r.header.Get("Retry-After") != "" {
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
func wantOrderError(t *testing.T, what string, r response, status int, code string) {
	t.Helper()
	if r.status != status || r.errorCode() != code {
		t.Errorf("%s: got %d %s, want %d %s", what, r.status, r.raw, status, code)
	}
}

// freshUsers returns n fresh user ids.
func freshUsers(n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = saleID(fmt.Sprintf("u%d", i))
	}
	return us
}

// TestOrderNoOversell: ten buyers per unit, all admitted, all ordering at
// once. The conditional decrement sells exactly the stock; every loser gets
// 409 out_of_stock and keeps the token to try again.
func TestOrderNoOversell(t *testing.T) {
	t.Parallel()
	const stock = 10
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, nil)}
			q, p := in.newSale(stock, nil)
			buyers := freshUsers(10 * stock)
			tokens := in.admit(q, buyers...)

			reqs := make([]apiCall, len(buyers))
			for i, u := range buyers {
				reqs[i] = in.orderReq(u, tokens[u], p)
			}
			rs := in.fireAll(reqs)
			got := tallyAnswers(t, rs)
			want := map[string]int{"201": stock, "409 out_of_stock": 9 * stock}
			if !maps.Equal(got, want) {
				t.Errorf("answers: got %v, want %v", got, want)
			}
			if s := in.stock(p); s != 0 {
				t.Errorf("stock after the sale: %d, want 0", s)
			}
			for i, r := range rs {
				u := buyers[i]
				if r.status == http.StatusCreated {
					if r.str("productId") != p || r.str("userId") != u || r.num("quantity") != 1 || r.num("id") == 0 {
						t.Errorf("order of %s: %s", u, r.raw)
					}
					in.assertSpent(q, u)
				} else {
					in.assertHolds(q, u, tokens[u])
				}
			}
		})
	}
}

// TestOrderDoubleSpend: one token fired 50 times at once buys exactly once;
// every other use is refused (in flight → 409, already consumed → 403).
func TestOrderDoubleSpend(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, nil)}
			q, p := in.newSale(100, nil)
			u := saleID("spender")
			tok := in.admit(q, u)[u]

			reqs := make([]apiCall, 50)
			for i := range reqs {
				reqs[i] = in.orderReq(u, tok, p)
			}
			got := tallyOrBusy(t, in.fireAll(reqs))
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
				if r := in.order(u, tok, p); r.status != http.StatusCreated {
					t.Fatalf("the token after %d answers of 503: got %d %s, want 201", busy, r.status, r.raw)
				}
			}
			if s := in.stock(p); s != 99 {
				t.Errorf("stock: %d, want 99", s)
			}
			in.assertSpent(q, u)
			wantOrderError(t, "the spent token once more", in.order(u, tok, p), http.StatusForbidden, "entry_token_invalid")
		})
	}
}

// TestOrderResurrectedToken: a Redis failover may bring back a token whose
// deletion was lost. The unique key on the token in the orders table refuses
// it (403), nothing is sold, and the token is consumed again.
func TestOrderResurrectedToken(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		if !b.redis {
			continue // only Redis fails over; the in-process line cannot lose a deletion
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, nil)}
			q, p := in.newSale(5, nil)
			u := saleID("phoenix")
			tok := in.admit(q, u)[u]
			if r := in.order(u, tok, p); r.status != http.StatusCreated {
				t.Fatalf("first order: %d %s", r.status, r.raw)
			}
			in.assertSpent(q, u)

			// Write the token back as a failover to a replica that missed the
			// deletion would (layout: internal/queue/redisstore/keys.go).
			rdb := testenv.RedisClient(t)
			ctx := t.Context()
			now, err := rdb.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			pre := in.prefix + "{" + q + "}:"
			if err := rdb.HSet(ctx, pre+"tokens", u, tok).Err(); err != nil {
				t.Fatal(err)
			}
			exp := float64(now.Add(time.Minute).UnixMilli())
			if err := rdb.ZAdd(ctx, pre+"texp", redis.Z{Score: exp, Member: u}).Err(); err != nil {
				t.Fatal(err)
			}
			in.assertHolds(q, u, tok) // the line believes in it again

			wantOrderError(t, "order with the resurrected token", in.order(u, tok, p), http.StatusForbidden, "entry_token_invalid")
			if s := in.stock(p); s != 4 {
				t.Errorf("stock: %d, want 4 (one sale only)", s)
			}
			in.assertSpent(q, u)
		})
	}
}

// TestOrderFailureKeepsToken: an order that fails for reasons not the
// user's fault keeps the token; success consumes it.
func TestOrderFailureKeepsToken(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name+"/out of stock", func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, nil)}
			q, p := in.newSale(0, nil)
			u := saleID("early")
			tok := in.admit(q, u)[u]

			wantOrderError(t, "order while out of stock", in.order(u, tok, p), http.StatusConflict, "out_of_stock")
			in.assertHolds(q, u, tok)

			in.putProduct(p, q, 1)
			if r := in.order(u, tok, p); r.status != http.StatusCreated {
				t.Fatalf("order after restock with the same token: %d %s", r.status, r.raw)
			}
			if s := in.stock(p); s != 0 {
				t.Errorf("stock: %d, want 0", s)
			}
			in.assertSpent(q, u)
			in.putProduct(p, q, 1)
			wantOrderError(t, "the same token after success", in.order(u, tok, p), http.StatusForbidden, "entry_token_invalid")
			if s := in.stock(p); s != 1 {
				t.Errorf("stock: %d, want 1", s)
			}
		})
		t.Run(b.name+"/payment failed", func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, func(c *app.Config) { c.PaymentFailureRate = 1 })}
			q, p := in.newSale(3, nil)
			u := saleID("broke")
			tok := in.admit(q, u)[u]
			for range 2 {
				wantOrderError(t, "order whose payment fails", in.order(u, tok, p), http.StatusPaymentRequired, "payment_failed")
				in.assertHolds(q, u, tok)
			}
			if s := in.stock(p); s != 3 {
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
	for _, b := range backends {
		t.Run(b.name+"/sequential", func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, nil)}
			q, p := in.newSale(10, nil)
			u, key := saleID("retrier"), saleID("key")
			tok := in.admit(q, u)[u]

			first := in.order(u, tok, p, "Idempotency-Key", key)
			if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: %d %v %s", first.status, first.header, first.raw)
			}
			second := in.order(u, tok, p, "Idempotency-Key", key)
			if second.status != http.StatusOK || second.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("retry: %d %v %s", second.status, second.header, second.raw)
			}
			if first.num("id") == 0 || second.raw != first.raw {
				t.Errorf("retry answered a different order:\nfirst  %s\nsecond %s", first.raw, second.raw)
			}
			if s := in.stock(p); s != 9 {
				t.Errorf("stock: %d, want 9 (decremented once)", s)
			}
			in.assertSpent(q, u)
			// The same key with another body is a mistake, not a retry.
			other := in.orderReq(u, tok, p, "Idempotency-Key", key)
			other.body = map[string]any{"productId": p, "quantity": 2}
			wantOrderError(t, "the same key for two units", in.call(other), http.StatusUnprocessableEntity, "idempotency_key_reused")
			other.body = map[string]any{"productId": saleID("p"), "quantity": 1}
			wantOrderError(t, "the same key for another product", in.call(other), http.StatusUnprocessableEntity, "idempotency_key_reused")
			if s := in.stock(p); s != 9 {
				t.Errorf("stock after the refused reuses: %d, want 9", s)
			}
			// A new key is a new order, and the token is spent.
			wantOrderError(t, "a new key with the spent token", in.order(u, tok, p, "Idempotency-Key", saleID("key")),
				http.StatusForbidden, "entry_token_invalid")
		})
		t.Run(b.name+"/concurrent", func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, nil)}
			q, p := in.newSale(10, nil)
			u, key := saleID("impatient"), saleID("key")
			tok := in.admit(q, u)[u]

			reqs := make([]apiCall, 20)
			for i := range reqs {
				reqs[i] = in.orderReq(u, tok, p, "Idempotency-Key", key)
			}
			rs := in.fireAll(reqs)
			got := tallyAnswers(t, rs)
			// Each retry either meets the first in flight (409) or replays it
			// (200); none may be told its token is invalid, since the order
			// its key names exists.
			if got["201"] != 1 || got["201"]+got["200"]+got["409 order_in_progress"] != len(reqs) {
				t.Errorf("answers: %v; want one 201, the rest 200 (replayed) or 409 order_in_progress", got)
			}
			var id float64
			for _, r := range rs {
				if r.status == http.StatusCreated {
					id = r.num("id")
				}
			}
			for _, r := range rs {
				if r.status == http.StatusOK && (r.num("id") != id || r.header.Get("Idempotent-Replayed") != "true") {
					t.Errorf("replay %v %s, want order %v", r.header, r.raw, id)
				}
			}
			if s := in.stock(p); s != 9 {
				t.Errorf("stock: %d, want 9 (decremented once)", s)
			}
		})
	}
}

// TestOrderRefusals: every way an order can be wrong gets its 4xx, never a
// 5xx, and none of them costs the user the token.
func TestOrderRefusals(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, nil)}
			q, p := in.newSale(10, nil)
			alice, bob := saleID("alice"), saleID("bob")
			tokens := in.admit(q, alice, bob)
			tok := tokens[alice]
			orderAs := func(auth string, body any, headers ...string) response {
				return in.call(apiCall{method: "POST", path: "/api/v1/orders", auth: auth, body: body, headers: headers})
			}
			good := map[string]any{"productId": p, "quantity": 1}

			cases := []struct {
				name   string
				r      response
				status int
				code   string
			}{
				{"another user's token", orderAs(in.as(bob), good, "X-Entry-Token", tok), 403, "entry_token_invalid"},
				{"a made-up token", orderAs(in.as(alice), good, "X-Entry-Token", "not-a-token"), 403, "entry_token_invalid"},
				{"an overlong token", orderAs(in.as(alice), good, "X-Entry-Token", strings.Repeat("x", 257)), 403, "entry_token_invalid"},
				{"no X-Entry-Token", orderAs(in.as(alice), good), 403, "entry_token_invalid"},
				{"no identity", orderAs("", good, "X-Entry-Token", tok), 401, "unauthenticated"},
				{"a forged JWT", orderAs("Bearer "+in.jwt(alice)+"x", good, "X-Entry-Token", tok), 401, "unauthenticated"},
				{"malformed body", orderAs(in.as(alice), `{"productId":`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"empty body", orderAs(in.as(alice), nil, "X-Entry-Token", tok), 400, "invalid_request"},
				{"a JSON array", orderAs(in.as(alice), `[]`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"two objects", orderAs(in.as(alice), `{"productId":"`+p+`","quantity":1}{}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"an unknown field", orderAs(in.as(alice), `{"productId":"`+p+`","quantity":1,"price":0}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity 0", orderAs(in.as(alice), map[string]any{"productId": p, "quantity": 0}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity -1", orderAs(in.as(alice), map[string]any{"productId": p, "quantity": -1}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity 101", orderAs(in.as(alice), map[string]any{"productId": p, "quantity": 101}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity 1e9", orderAs(in.as(alice), `{"productId":"`+p+`","quantity":1e9}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity 1.5", orderAs(in.as(alice), `{"productId":"`+p+`","quantity":1.5}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity beyond int64", orderAs(in.as(alice), `{"productId":"`+p+`","quantity":99999999999999999999}`, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity as a string", orderAs(in.as(alice), map[string]any{"productId": p, "quantity": "1"}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"quantity missing", orderAs(in.as(alice), map[string]any{"productId": p}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"productId missing", orderAs(in.as(alice), map[string]any{"quantity": 1}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"productId a number", orderAs(in.as(alice), map[string]any{"productId": 7, "quantity": 1}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"productId too long", orderAs(in.as(alice), map[string]any{"productId": strings.Repeat("p", 129), "quantity": 1}, "X-Entry-Token", tok), 400, "invalid_request"},
				{"Idempotency-Key too long", orderAs(in.as(alice), good, "X-Entry-Token", tok, "Idempotency-Key", strings.Repeat("k", 129)), 400, "invalid_request"},
				{"unknown product", orderAs(in.as(alice), map[string]any{"productId": saleID("nope"), "quantity": 1}, "X-Entry-Token", tok), 404, "product_not_found"},
				{"GET unknown product", in.call(apiCall{method: "GET", path: "/api/v1/products/" + saleID("nope")}), 404, "product_not_found"},
			}
			for _, c := range cases {
				if c.r.status >= 500 {
					t.Errorf("%s: 5xx %d %s", c.name, c.r.status, c.r.raw)
				}
				wantOrderError(t, c.name, c.r, c.status, c.code)
			}
			// None of that cost anyone a token or a unit.
			in.assertHolds(q, alice, tok)
			in.assertHolds(q, bob, tokens[bob])
			if s := in.stock(p); s != 10 {
				t.Errorf("stock: %d, want 10", s)
			}
			if r := in.order(alice, tok, p); r.status != http.StatusCreated {
				t.Errorf("alice's own order after all that: %d %s", r.status, r.raw)
			}
		})
	}
}

// TestOrderExpiredToken: a token past its TTL is refused (403).
func TestOrderExpiredToken(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, nil)}
			// 3 s, not 1: on a loaded CI machine a poll can come later than
			// 1 s, and a token that expires unseen is never READY at all.
			q, p := in.newSale(10, map[string]any{"ratePerSecond": 1000, "batchSize": 100, "intervalMs": 100, "tokenTtlSeconds": 3})
			u := saleID("late")
			tok := in.admit(q, u)[u]
			// Expiry belongs to the store's clock: wait until the line itself
			// no longer shows the token.
			deadline := time.Now().Add(patience)
			for in.statusOf(q, u).str("status") == "READY" {
				if time.Now().After(deadline) {
					t.Fatalf("a 3 s token still READY after %v", patience)
				}
				time.Sleep(50 * time.Millisecond)
			}
			wantOrderError(t, "order with an expired token", in.order(u, tok, p), http.StatusForbidden, "entry_token_invalid")
			if s := in.stock(p); s != 10 {
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
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := shop{boot(t, b, func(c *app.Config) { c.OrderWork = work })}
			q, p := in.newSale(1, nil)
			u := saleID("patient")
			tok := in.admit(q, u)[u]
			start := time.Now()
			r := in.order(u, tok, p)
			took := time.Since(start)
			if r.status != http.StatusCreated {
				t.Fatalf("order: %d %s", r.status, r.raw)
			}
			if took < work {
				t.Errorf("the order took %v, less than --order-work %v", took, work)
			}
		})
	}
}
