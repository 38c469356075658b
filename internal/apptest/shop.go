package apptest

// PostgreSQL is shared by every boot, so product ids, user ids and
// Idempotency-Keys carry a random suffix (UniqueID): reruns and parallel
// tests never meet each other's rows.

import (
	"fmt"
	"math/rand/v2"
	"net/http"
)

// Shop is an instance seen through its order API (serve mode sells
// products itself): sales, stock, entries, orders. Its helpers live here,
// apart from the Instance's own.
type Shop struct{ *Instance }

// UniqueID returns prefix with a random suffix: ids that no other test or run uses.
func UniqueID(prefix string) string { return fmt.Sprintf("%s-%x", prefix, rand.Uint64()) }

// FastSaleQueue admits up to 100 users per 100 ms tick, so tests never wait long.
var FastSaleQueue = map[string]any{"ratePerSecond": 1000, "batchSize": 100, "intervalMs": 100}

// NewSale creates a queue with cfg (FastSaleQueue when nil) and a product with
// stock behind it, and returns both names.
func (in Shop) NewSale(stock int64, cfg map[string]any) (queue, product string) {
	in.T.Helper()
	if cfg == nil {
		cfg = FastSaleQueue
	}
	queue, product = UniqueID("q"), UniqueID("p")
	if r := in.Do("PUT", "/admin/v1/queues/"+queue, in.AdminAuth(), cfg); r.Status != http.StatusOK {
		in.T.Fatalf("PUT queue %s: %d %s", queue, r.Status, r.Raw)
	}
	in.Restock(product, queue, stock)
	return queue, product
}

// Restock creates or restocks a product.
func (in Shop) Restock(id, queue string, stock int64) {
	in.T.Helper()
	r := in.Do("PUT", "/admin/v1/products/"+id, in.AdminAuth(),
		map[string]any{"name": "Product " + id, "stock": stock, "queue": queue})
	if r.Status != http.StatusOK || r.Num("stock") != float64(stock) {
		in.T.Fatalf("PUT product %s: %d %s", id, r.Status, r.Raw)
	}
}

// Buy lets user into queue and buys one of product: 201.
func (in Shop) Buy(queue, product, user string) {
	in.T.Helper()
	token := in.Admit(queue, user)[user]
	r := in.Do("POST", "/api/v1/orders", in.As(user), map[string]any{"productId": product, "quantity": 1}, "X-Entry-Token", token)
	if r.Status != http.StatusCreated {
		in.T.Fatalf("%s buying %s: %d %s", user, product, r.Status, r.Raw)
	}
}

// Stock reads a product's stock through the public API.
func (in Shop) Stock(id string) int64 {
	in.T.Helper()
	r := in.Do("GET", "/api/v1/products/"+id, "", nil)
	if r.Status != http.StatusOK {
		in.T.Fatalf("GET product %s: %d %s", id, r.Status, r.Raw)
	}
	return int64(r.Num("stock"))
}

// Admit enters every user into queue at once and waits until each is READY;
// it returns their entry tokens.
func (in Shop) Admit(queue string, users ...string) map[string]string {
	in.T.Helper()
	reqs := make([]Call, len(users))
	for i, u := range users {
		reqs[i] = Call{Method: "POST", Path: "/api/v1/queues/" + queue + "/entries", Auth: in.As(u)}
	}
	for i, r := range in.FireAll(reqs) {
		if r.Status != http.StatusOK {
			in.T.Fatalf("enter %s as %s: %d %s", queue, users[i], r.Status, r.Raw)
		}
	}
	tokens := make(map[string]string, len(users))
	for _, u := range users {
		tokens[u] = in.WaitReady(queue, u)
	}
	return tokens
}

// StatusOf is the user's standing in queue.
func (in Shop) StatusOf(queue, user string) Response {
	in.T.Helper()
	r := in.Do("GET", "/api/v1/queues/"+queue+"/entries/me", in.As(user), nil)
	if r.Status != http.StatusOK {
		in.T.Fatalf("status of %s in %s: %d %s", user, queue, r.Status, r.Raw)
	}
	return r
}

// AssertHolds fails unless user is still READY with token.
func (in Shop) AssertHolds(queue, user, token string) {
	in.T.Helper()
	r := in.StatusOf(queue, user)
	if r.Str("status") != "READY" || r.Str("token") != token {
		in.T.Errorf("%s should still hold its token: %s", user, r.Raw)
	}
}

// AssertSpent fails if user is still READY: the token was consumed.
func (in Shop) AssertSpent(queue, user string) {
	in.T.Helper()
	if r := in.StatusOf(queue, user); r.Str("status") == "READY" {
		in.T.Errorf("%s's token should be consumed, status is %s", user, r.Raw)
	}
}

// OrderCall is POST /api/v1/orders for one unit of product, as user with token.
func (in Shop) OrderCall(user, token, product string, headers ...string) Call {
	return Call{
		Method: "POST", Path: "/api/v1/orders", Auth: in.As(user),
		Body:    map[string]any{"productId": product, "quantity": 1},
		Headers: append([]string{"X-Entry-Token", token}, headers...),
	}
}

// Order places one order and returns the answer.
func (in Shop) Order(user, token, product string, headers ...string) Response {
	in.T.Helper()
	return in.DoCall(in.OrderCall(user, token, product, headers...))
}

// DoCall makes one request from the test's goroutine.
func (in Shop) DoCall(c Call) Response {
	in.T.Helper()
	r, err := in.Send(http.DefaultClient, c)
	if err != nil {
		in.T.Fatal(err)
	}
	return r
}
