// Package storetest owns the conformance suite for order.Store: the
// behaviour every implementation (PostgreSQL, SQLite) must show, above all no
// oversell, one order per entry token, and errors the HTTP layer can map.
//
// Tests share one database: each names its products, users and tokens
// uniquely instead of emptying tables, so the suite may run against a
// database other tests (or earlier runs) are using.
package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/order"
)

// Run runs the suite. open returns a fresh, empty-or-not store for one
// subtest and closes it in t.Cleanup; Close must be safe to call twice.
func Run(t *testing.T, open func(t *testing.T) order.Store) {
	tests := []struct {
		name string
		test func(*testing.T, order.Store)
	}{
		{"PutProduct", testPutProduct},
		{"PutProductInvalid", testPutProductInvalid},
		{"ProductNotFound", testProductNotFound},
		{"Products", testProducts},
		{"ProductsCountOrders", testProductsCountOrders},
		{"Restock", testRestock},
		{"RestockWhileSelling", testRestockWhileSelling},
		{"CreateOrder", testCreateOrder},
		{"CreateOrderRefused", testCreateOrderRefused},
		{"NoOversell", testNoOversell},
		{"NoOversellMixedQuantities", testNoOversellMixedQuantities},
		{"TokenUsedTwice", testTokenUsedTwice},
		{"TokenUsedConcurrently", testTokenUsedConcurrently},
		{"IdempotencyKey", testIdempotencyKey},
		{"BeforeCommitFails", testBeforeCommitFails},
		{"WorkInsideTransaction", testWorkInsideTransaction},
		{"ContextCancelled", testContextCancelled},
		{"DeadlineDuringWork", testDeadlineDuringWork},
		{"Closed", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.test(t, open(t))
		})
	}
}

func testPutProduct(t *testing.T, s order.Store) {
	ctx := t.Context()
	p := order.Product{ID: uniqueID(t, "product"), Name: "Sneaker", Stock: 20, Queue: "drop-1"}
	got, err := s.PutProduct(ctx, p)
	if err != nil {
		t.Fatalf("PutProduct(create): %v", err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("PutProduct(create) returned (-want +got):\n%s", diff)
	}
	assertProduct(t, s, p)

	// Restock replaces the stock rather than adding to it, and renames.
	restocked := order.Product{ID: p.ID, Name: "Sneaker v2", Stock: 5, Queue: ""}
	if got, err = s.PutProduct(ctx, restocked); err != nil {
		t.Fatalf("PutProduct(restock): %v", err)
	}
	if diff := cmp.Diff(restocked, got); diff != "" {
		t.Errorf("PutProduct(restock) returned (-want +got):\n%s", diff)
	}
	assertProduct(t, s, restocked)
}

func testPutProductInvalid(t *testing.T, s order.Store) {
	tests := []struct {
		name string
		p    order.Product
	}{
		{"empty id", order.Product{Name: "x", Stock: 1}},
		{"negative stock", order.Product{ID: uniqueID(t, "product"), Name: "x", Stock: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.PutProduct(t.Context(), tt.p)
			if !errors.Is(err, order.ErrInvalidOrder) {
				t.Errorf("PutProduct(%+v) = %v, want %v", tt.p, err, order.ErrInvalidOrder)
			}
		})
	}
}

func testProductNotFound(t *testing.T, s order.Store) {
	_, err := s.Product(t.Context(), uniqueID(t, "missing"))
	if !errors.Is(err, order.ErrProductNotFound) {
		t.Errorf("Product(unknown) = %v, want %v", err, order.ErrProductNotFound)
	}
}

// testProducts pages through the products from just before this test's
// own (the database is shared): each page holds at most the limit, and
// together they hold each product once.
func testProducts(t *testing.T, s order.Store) {
	ctx := t.Context()
	prefix := uniqueID(t, "list") + "/"
	var want []order.ProductStats
	for i := range 5 {
		p := order.Product{ID: fmt.Sprintf("%sp%d", prefix, i), Name: fmt.Sprintf("Item %d", i), Stock: int64(i), Queue: "q"}
		if _, err := s.PutProduct(ctx, p); err != nil {
			t.Fatalf("PutProduct: %v", err)
		}
		want = append(want, order.ProductStats{Product: p})
	}
	got := listed(t, s, prefix, 2, len(want))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}

	// Past the last product: an empty page, not an error.
	if page, err := s.Products(ctx, "\U0010FFFF", 2); err != nil || len(page) != 0 {
		t.Errorf("Products(after everything) = %+v, %v; want none", page, err)
	}
}

// listed pages through the products after `after`, limit at a time, until
// it has found n whose ids start with after; it checks every page's size
// and that no product comes twice.
func listed(t *testing.T, s order.Store, after string, limit, n int) []order.ProductStats {
	t.Helper()
	prefix := after
	var found []order.ProductStats
	seen := map[string]bool{}
	for pages := 0; len(found) < n; pages++ {
		if pages > 100 {
			t.Fatalf("after 100 pages of %d, found %d of %d products under %q", limit, len(found), n, prefix)
		}
		page, err := s.Products(t.Context(), after, limit)
		if err != nil {
			t.Fatalf("Products(%q, %d): %v", after, limit, err)
		}
		if len(page) == 0 || len(page) > limit {
			t.Fatalf("Products(%q, %d) returned %d products, having found %d of %d", after, limit, len(page), len(found), n)
		}
		for _, p := range page {
			if seen[p.ID] {
				t.Errorf("product %q listed twice", p.ID)
			}
			seen[p.ID] = true
			if strings.HasPrefix(p.ID, prefix) {
				found = append(found, p)
			}
		}
		after = page[len(page)-1].ID
	}
	return found
}

// testProductsCountOrders: the count is of orders committed, not attempts.
func testProductsCountOrders(t *testing.T, s order.Store) {
	ctx := t.Context()
	prefix := uniqueID(t, "count") + "/"
	idle := order.Product{ID: prefix + "idle", Name: "Idle", Stock: 10}
	sold := order.Product{ID: prefix + "sold", Name: "Sold", Stock: 10}
	for _, p := range []order.Product{idle, sold} {
		if _, err := s.PutProduct(ctx, p); err != nil {
			t.Fatalf("PutProduct: %v", err)
		}
	}
	for range 3 {
		if _, err := s.CreateOrder(ctx, newOrder(t, sold.ID, 2), 0, nil); err != nil {
			t.Fatalf("CreateOrder: %v", err)
		}
	}
	_, err := s.CreateOrder(ctx, newOrder(t, sold.ID, 1), 0, func(context.Context, order.Order) error { return order.ErrPayment })
	if !errors.Is(err, order.ErrPayment) {
		t.Fatalf("CreateOrder(payment fails) = %v", err)
	}
	if _, err := s.CreateOrder(ctx, newOrder(t, sold.ID, 5), 0, nil); !errors.Is(err, order.ErrOutOfStock) {
		t.Fatalf("CreateOrder(more than left) = %v, want %v", err, order.ErrOutOfStock)
	}
	sold.Stock = 4
	want := []order.ProductStats{{Product: idle}, {Product: sold, Orders: 3}}
	if diff := cmp.Diff(want, listed(t, s, prefix, 10, 2)); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
}

func testRestock(t *testing.T, s order.Store) {
	ctx := t.Context()
	p := putProduct(t, s, 3)
	got, err := s.Restock(ctx, p.ID, 7)
	if err != nil {
		t.Fatalf("Restock: %v", err)
	}
	want := p
	want.Stock = 10
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Restock returned (-want +got):\n%s", diff)
	}
	assertProduct(t, s, want)

	for _, c := range []struct {
		name string
		id   string
		add  int64
		err  error
	}{
		{"unknown product", uniqueID(t, "missing"), 1, order.ErrProductNotFound},
		{"zero", p.ID, 0, order.ErrInvalidOrder},
		{"negative", p.ID, -5, order.ErrInvalidOrder},
		{"past MaxStock", p.ID, order.MaxStock - 9, order.ErrInvalidOrder},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.Restock(ctx, c.id, c.add); !errors.Is(err, c.err) {
				t.Errorf("Restock(%q, %d) = %v, want %v", c.id, c.add, err, c.err)
			}
		})
	}
	assertProduct(t, s, want)
	// Up to MaxStock exactly is allowed.
	if got, err := s.Restock(ctx, p.ID, order.MaxStock-10); err != nil || got.Stock != order.MaxStock {
		t.Errorf("Restock to MaxStock = %+v, %v", got, err)
	}
}

// testRestockWhileSelling: restocks and orders race, and none is lost:
// what was added minus what was sold is what is left.
func testRestockWhileSelling(t *testing.T, s order.Store) {
	p := putProduct(t, s, 0)
	var (
		mu   sync.Mutex
		sold int64
	)
	got := concurrently(60, func(i int) error {
		if i%2 == 0 {
			_, err := s.Restock(t.Context(), p.ID, 2)
			return err
		}
		_, err := s.CreateOrder(t.Context(), newOrder(t, p.ID, 1), 0, nil)
		if err == nil {
			mu.Lock()
			sold++
			mu.Unlock()
		}
		return err
	})
	for outcome := range got {
		if outcome != "ok" && outcome != "out of stock" {
			t.Errorf("unexpected outcome %q (all: %v)", outcome, got)
		}
	}
	assertStock(t, s, p.ID, 30*2-sold)
}

func testCreateOrder(t *testing.T, s order.Store) {
	p := putProduct(t, s, 10)
	no := newOrder(t, p.ID, 3)
	no = withKey(no, uniqueID(t, "key"))
	before := time.Now()

	got, err := s.CreateOrder(t.Context(), no, 0, nil)
	if err != nil {
		t.Fatalf("CreateOrder: %v", err)
	}
	if got.ID <= 0 {
		t.Errorf("order ID = %d, want > 0", got.ID)
	}
	// Allow for a database clock a little behind ours.
	if got.CreatedAt.Before(before.Add(-time.Minute)) || got.CreatedAt.After(time.Now().Add(time.Minute)) {
		t.Errorf("CreatedAt = %v, want close to %v", got.CreatedAt, before)
	}
	want := order.Order{
		ID:                 got.ID,
		ProductID:          p.ID,
		UserID:             no.UserID,
		Quantity:           3,
		IdempotencyKey:     no.IdempotencyKey,
		CreatedAt:          got.CreatedAt,
		RequestFingerprint: no.RequestFingerprint,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CreateOrder returned (-want +got):\n%s", diff)
	}
	assertStock(t, s, p.ID, 7)

	// An order made without a key is not found under the empty key.
	plain := newOrder(t, p.ID, 1)
	if _, err := s.CreateOrder(t.Context(), plain, 0, nil); err != nil {
		t.Fatalf("CreateOrder(no key): %v", err)
	}
	if o, ok, err := s.OrderByKey(t.Context(), plain.UserID, ""); err != nil || ok {
		t.Errorf("OrderByKey(empty key) = %+v, %v, %v; want not found", o, ok, err)
	}
	assertStock(t, s, p.ID, 6)
}

func testCreateOrderRefused(t *testing.T, s order.Store) {
	p := putProduct(t, s, 2)
	tests := []struct {
		name   string
		change func(*order.NewOrder)
		want   error
	}{
		{"unknown product", func(o *order.NewOrder) { o.ProductID = uniqueID(t, "missing") }, order.ErrProductNotFound},
		{"more than the stock", func(o *order.NewOrder) { o.Quantity = 3 }, order.ErrOutOfStock},
		{"zero quantity", func(o *order.NewOrder) { o.Quantity = 0 }, order.ErrInvalidOrder},
		{"negative quantity", func(o *order.NewOrder) { o.Quantity = -1 }, order.ErrInvalidOrder},
		{"above MaxQuantity", func(o *order.NewOrder) { o.Quantity = order.MaxQuantity + 1 }, order.ErrInvalidOrder},
		{"no token", func(o *order.NewOrder) { o.Token = "" }, order.ErrInvalidOrder},
		{"no user", func(o *order.NewOrder) { o.UserID = "" }, order.ErrInvalidOrder},
		{"a key without its fingerprint", func(o *order.NewOrder) { o.IdempotencyKey = uniqueID(t, "key") }, order.ErrInvalidOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			no := newOrder(t, p.ID, 1)
			tt.change(&no)
			_, err := s.CreateOrder(t.Context(), no, 0, failIfCalled(t))
			if !errors.Is(err, tt.want) {
				t.Errorf("CreateOrder(%+v) = %v, want %v", no, err, tt.want)
			}
			assertStock(t, s, p.ID, 2)
		})
	}
}

// testNoOversell is the sale: ten times more buyers than stock, all at once.
func testNoOversell(t *testing.T, s order.Store) {
	const stock = 20
	p := putProduct(t, s, stock)
	got := concurrently(10*stock, func(int) error {
		_, err := s.CreateOrder(t.Context(), newOrder(t, p.ID, 1), 0, nil)
		return err
	})
	want := map[string]int{"ok": stock, "out of stock": 9 * stock}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	assertStock(t, s, p.ID, 0)
}

// testNoOversellMixedQuantities checks the invariant when orders of different
// sizes race: what was sold plus what is left is what there was.
func testNoOversellMixedQuantities(t *testing.T, s order.Store) {
	const stock = 50
	p := putProduct(t, s, stock)
	var (
		mu   sync.Mutex
		sold int64
	)
	got := concurrently(100, func(i int) error {
		qty := int64(1 + i%3)
		_, err := s.CreateOrder(t.Context(), newOrder(t, p.ID, qty), 0, nil)
		if err == nil {
			mu.Lock()
			sold += qty
			mu.Unlock()
		}
		return err
	})
	for outcome := range got {
		if outcome != "ok" && outcome != "out of stock" {
			t.Errorf("unexpected outcome %q (all: %v)", outcome, got)
		}
	}
	if sold > stock {
		t.Errorf("sold %d, more than the stock %d", sold, stock)
	}
	assertStock(t, s, p.ID, stock-sold)
}

func testTokenUsedTwice(t *testing.T, s order.Store) {
	p := putProduct(t, s, 10)
	other := putProduct(t, s, 10)
	no := newOrder(t, p.ID, 1)
	if _, err := s.CreateOrder(t.Context(), no, 0, nil); err != nil {
		t.Fatalf("first CreateOrder: %v", err)
	}
	tests := []struct {
		name      string
		productID string
	}{
		{"same product", p.ID},
		// The unique key is on the token alone: a token admits one order,
		// whatever is bought with it.
		{"another product", other.ID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			again := no
			again.ProductID = tt.productID
			again = withKey(again, uniqueID(t, "key"))
			_, err := s.CreateOrder(t.Context(), again, 0, failIfCalled(t))
			if !errors.Is(err, order.ErrTokenUsed) {
				t.Errorf("CreateOrder(used token) = %v, want %v", err, order.ErrTokenUsed)
			}
		})
	}
	assertStock(t, s, p.ID, 9)
	assertStock(t, s, other.ID, 10)
}

func testTokenUsedConcurrently(t *testing.T, s order.Store) {
	const n = 50
	p := putProduct(t, s, 100)
	no := newOrder(t, p.ID, 1)
	got := concurrently(n, func(int) error {
		_, err := s.CreateOrder(t.Context(), no, 0, nil)
		return err
	})
	want := map[string]int{"ok": 1, "token used": n - 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	assertStock(t, s, p.ID, 99)
}

func testIdempotencyKey(t *testing.T, s order.Store) {
	ctx := t.Context()
	p := putProduct(t, s, 10)
	key := uniqueID(t, "key")
	no := newOrder(t, p.ID, 1)
	no = withKey(no, key)
	first, err := s.CreateOrder(ctx, no, 0, nil)
	if err != nil {
		t.Fatalf("first CreateOrder: %v", err)
	}

	// A retry carries a new token (the first one was spent) and the same key.
	retry := newOrder(t, p.ID, 1)
	retry.UserID, retry.Quantity = no.UserID, 2
	retry = withKey(retry, key)
	if _, err := s.CreateOrder(ctx, retry, 0, failIfCalled(t)); !errors.Is(err, order.ErrDuplicateKey) {
		t.Errorf("CreateOrder(same user, same key) = %v, want %v", err, order.ErrDuplicateKey)
	}
	got, ok, err := s.OrderByKey(ctx, no.UserID, key)
	if err != nil || !ok {
		t.Fatalf("OrderByKey = %v, %v; want the first order", ok, err)
	}
	// The first order comes back with the fingerprint it was made with, not
	// the retry's.
	if diff := cmp.Diff(first, got); diff != "" || got.RequestFingerprint != no.RequestFingerprint {
		t.Errorf("OrderByKey (-want +got):\n%s\nfingerprint %q, want %q", diff, got.RequestFingerprint, no.RequestFingerprint)
	}

	// Keys belong to users: another user may pick the same one.
	someoneElse := newOrder(t, p.ID, 1)
	someoneElse = withKey(someoneElse, key)
	theirs, err := s.CreateOrder(ctx, someoneElse, 0, nil)
	if err != nil {
		t.Fatalf("CreateOrder(other user, same key): %v", err)
	}
	if got, ok, err := s.OrderByKey(ctx, someoneElse.UserID, key); err != nil || !ok || got.ID != theirs.ID {
		t.Errorf("OrderByKey(other user) = %+v, %v, %v; want order %d", got, ok, err, theirs.ID)
	}

	if got, ok, err := s.OrderByKey(ctx, no.UserID, uniqueID(t, "unused")); err != nil || ok {
		t.Errorf("OrderByKey(unused key) = %+v, %v, %v; want not found", got, ok, err)
	}
	assertStock(t, s, p.ID, 8)
}

func testBeforeCommitFails(t *testing.T, s order.Store) {
	ctx := t.Context()
	p := putProduct(t, s, 5)
	no := withKey(newOrder(t, p.ID, 2), uniqueID(t, "key"))
	errPayment := fmt.Errorf("card declined: %w", order.ErrPayment)
	var seen order.Order
	_, err := s.CreateOrder(ctx, no, 0, func(_ context.Context, o order.Order) error {
		seen = o
		return errPayment
	})
	if !errors.Is(err, errPayment) {
		t.Fatalf("CreateOrder = %v, want the beforeCommit error %v", err, errPayment)
	}
	if seen.ID <= 0 || seen.ProductID != p.ID || seen.UserID != no.UserID || seen.Quantity != 2 {
		t.Errorf("beforeCommit saw %+v, want the order being written", seen)
	}
	assertStock(t, s, p.ID, 5)
	if o, ok, err := s.OrderByKey(ctx, no.UserID, no.IdempotencyKey); err != nil || ok {
		t.Errorf("OrderByKey after rollback = %+v, %v, %v; want not found", o, ok, err)
	}

	// Nothing was written, so the same token and key buy now.
	if _, err := s.CreateOrder(ctx, no, 0, nil); err != nil {
		t.Fatalf("CreateOrder after rollback: %v", err)
	}
	assertStock(t, s, p.ID, 3)
}

func testWorkInsideTransaction(t *testing.T, s order.Store) {
	const work = 100 * time.Millisecond
	p := putProduct(t, s, 5)
	start := time.Now()
	var inside time.Duration
	_, err := s.CreateOrder(t.Context(), newOrder(t, p.ID, 1), work, func(context.Context, order.Order) error {
		inside = time.Since(start)
		return nil
	})
	if err != nil {
		t.Fatalf("CreateOrder: %v", err)
	}
	// Only lower bounds: the work is spent before commit, inside the call.
	if inside < work {
		t.Errorf("beforeCommit ran %v after the call began, want at least the work %v", inside, work)
	}
	if took := time.Since(start); took < work {
		t.Errorf("CreateOrder took %v, want at least the work %v", took, work)
	}
	assertStock(t, s, p.ID, 4)
}

// testContextCancelled: a request whose context is gone gets an error the
// HTTP layer answers with 503, and changes nothing.
func testContextCancelled(t *testing.T, s order.Store) {
	p := putProduct(t, s, 5)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"CreateOrder", func() error {
			_, err := s.CreateOrder(ctx, newOrder(t, p.ID, 1), 0, failIfCalled(t))
			return err
		}},
		{"Product", func() error { _, err := s.Product(ctx, p.ID); return err }},
		{"PutProduct", func() error {
			_, err := s.PutProduct(ctx, order.Product{ID: p.ID, Name: "x", Stock: 100})
			return err
		}},
		{"OrderByKey", func() error { _, _, err := s.OrderByKey(ctx, "user", "key"); return err }},
		{"Products", func() error { _, err := s.Products(ctx, "", 10); return err }},
		{"Restock", func() error { _, err := s.Restock(ctx, p.ID, 1); return err }},
		{"Ping", func() error { return s.Ping(ctx) }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !errors.Is(err, order.ErrUnavailable) || !errors.Is(err, context.Canceled) {
				t.Errorf("%s(cancelled) = %v, want both %v and %v", c.name, err, order.ErrUnavailable, context.Canceled)
			}
		})
	}
	assertProduct(t, s, p)
}

// testDeadlineDuringWork: running out of time inside the transaction rolls
// it back; the token stays usable.
func testDeadlineDuringWork(t *testing.T, s order.Store) {
	p := putProduct(t, s, 5)
	no := newOrder(t, p.ID, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := s.CreateOrder(ctx, no, 10*time.Second, failIfCalled(t))
	if !errors.Is(err, order.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CreateOrder(deadline during work) = %v, want both %v and %v", err, order.ErrUnavailable, context.DeadlineExceeded)
	}
	assertStock(t, s, p.ID, 5)
	if _, err := s.CreateOrder(t.Context(), no, 0, nil); err != nil {
		t.Errorf("CreateOrder after the deadline: %v", err)
	}
	assertStock(t, s, p.ID, 4)
}

func testClosed(t *testing.T, s order.Store) {
	p := putProduct(t, s, 5)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	if err := s.Ping(ctx); !errors.Is(err, order.ErrUnavailable) {
		t.Errorf("Ping(closed) = %v, want %v", err, order.ErrUnavailable)
	}
	if _, err := s.Product(ctx, p.ID); !errors.Is(err, order.ErrUnavailable) {
		t.Errorf("Product(closed) = %v, want %v", err, order.ErrUnavailable)
	}
	if _, err := s.CreateOrder(ctx, newOrder(t, p.ID, 1), 0, failIfCalled(t)); !errors.Is(err, order.ErrUnavailable) {
		t.Errorf("CreateOrder(closed) = %v, want %v", err, order.ErrUnavailable)
	}
	if _, err := s.Products(ctx, "", 10); !errors.Is(err, order.ErrUnavailable) {
		t.Errorf("Products(closed) = %v, want %v", err, order.ErrUnavailable)
	}
	if _, err := s.Restock(ctx, p.ID, 1); !errors.Is(err, order.ErrUnavailable) {
		t.Errorf("Restock(closed) = %v, want %v", err, order.ErrUnavailable)
	}
}

// putProduct creates a product only this test uses.
func putProduct(t *testing.T, s order.Store, stock int64) order.Product {
	t.Helper()
	p, err := s.PutProduct(t.Context(), order.Product{ID: uniqueID(t, "product"), Name: "Test product", Stock: stock})
	if err != nil {
		t.Fatalf("PutProduct: %v", err)
	}
	return p
}

// newOrder is an order by a new user with a new token.
func newOrder(t *testing.T, productID string, quantity int64) order.NewOrder {
	return order.NewOrder{
		ProductID: productID,
		UserID:    uniqueID(t, "user"),
		Quantity:  quantity,
		Token:     uniqueID(t, "token"),
	}
}

// withKey gives o an Idempotency-Key, with the fingerprint of what it asks
// for, as order.Service does.
func withKey(o order.NewOrder, key string) order.NewOrder {
	o.IdempotencyKey, o.RequestFingerprint = key, order.Fingerprint(o.ProductID, o.Quantity)
	return o
}

func assertStock(t *testing.T, s order.Store, id string, want int64) {
	t.Helper()
	p, err := s.Product(t.Context(), id)
	if err != nil {
		t.Fatalf("Product(%q): %v", id, err)
	}
	if p.Stock != want {
		t.Errorf("stock of %q = %d, want %d", id, p.Stock, want)
	}
}

func assertProduct(t *testing.T, s order.Store, want order.Product) {
	t.Helper()
	got, err := s.Product(t.Context(), want.ID)
	if err != nil {
		t.Fatalf("Product(%q): %v", want.ID, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Product(%q) (-want +got):\n%s", want.ID, diff)
	}
}

// failIfCalled is a beforeCommit for calls that must not get that far.
func failIfCalled(t *testing.T) func(context.Context, order.Order) error {
	return func(_ context.Context, o order.Order) error {
		t.Errorf("beforeCommit called with %+v, want the call refused before", o)
		return errors.New("beforeCommit must not be called")
	}
}

// concurrently runs call n times at once (released together) and counts
// the outcomes by kind.
func concurrently(n int, call func(i int) error) map[string]int {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[string]int{}
		start    = make(chan struct{})
	)
	for i := range n {
		wg.Go(func() {
			<-start
			kind := outcome(call(i))
			mu.Lock()
			outcomes[kind]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return outcomes
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, order.ErrOutOfStock):
		return "out of stock"
	case errors.Is(err, order.ErrTokenUsed):
		return "token used"
	case errors.Is(err, order.ErrDuplicateKey):
		return "duplicate key"
	case errors.Is(err, order.ErrProductNotFound):
		return "product not found"
	}
	return "unexpected: " + err.Error()
}

// uniqueID names something after the test, unique across runs that share a
// database, e.g. "NoOversell/token-3f9a1c2b7d4e".
func uniqueID(t *testing.T, what string) string {
	name := t.Name()
	if i := strings.Index(name, "/"); i >= 0 {
		name = name[i+1:] // drop the top-level test name every id would share
	}
	return fmt.Sprintf("%s/%s-%s", name, what, rand.Text()[:12])
}

// OpenConcurrently opens n stores at once on one new database (and closes
// them), as n waitroom processes starting together would: every Open must
// succeed, so the migrations took turns.
func OpenConcurrently(t *testing.T, n int, open func(context.Context) (io.Closer, error)) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			s, err := open(t.Context())
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open #%d: %v", i, err)
		}
	}
}
