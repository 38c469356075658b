// Package order owns what the line protects: products with stock and the
// orders bought with an entry token. It knows neither HTTP nor SQL: the
// database sits behind Store, the entry tokens behind Tokens, the payment
// behind Payment.
package order

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// MaxQuantity bounds one order; anything above is treated as bad input rather
// than as a reason to lock a row.
const MaxQuantity = 100

// DefaultQueue sells the products that name no queue (its stores read
// it here, as they import nothing of the line).
const DefaultQueue = queue.DefaultQueue

// MaxStock bounds a product's stock, whether set or reached by restocking.
const MaxStock = 1_000_000_000

// Product is something for sale. Queue names the line that protects it; an
// empty Queue means the default line.
type Product struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Stock int64  `json:"stock"`
	Queue string `json:"queue"`
}

// ProductStats is a product with how many orders bought it: a line of the
// operators' product list.
type ProductStats struct {
	Product
	Orders int64 `json:"orders"`
}

// Order is a successful purchase.
type Order struct {
	ID             int64     `json:"id"`
	ProductID      string    `json:"productId"`
	UserID         string    `json:"userId"`
	Quantity       int64     `json:"quantity"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	// RequestFingerprint is what the order's Idempotency-Key was first sent
	// with (Fingerprint); empty for an order without a key, or one made
	// before fingerprints were kept.
	RequestFingerprint string `json:"-"`
}

// Fingerprint is the SHA-256 of what an order request asks for, kept with
// its Idempotency-Key: the same key sent again with another product or
// quantity is a mistake to refuse (ErrIdempotencyKeyReused), not a retry to
// answer with the first order.
func Fingerprint(productID string, quantity int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "v1\x00%s\x00%d", productID, quantity))
	return hex.EncodeToString(sum[:])
}

// fingerprint is the order's RequestFingerprint, or the one its product and
// quantity give when it has none (made before fingerprints were kept).
func (o Order) fingerprint() string {
	if o.RequestFingerprint != "" {
		return o.RequestFingerprint
	}
	return Fingerprint(o.ProductID, o.Quantity)
}

// NewOrder is what Store.CreateOrder writes.
type NewOrder struct {
	ProductID string
	UserID    string
	Quantity  int64
	// Token is the entry token that buys this order. The store keeps it under
	// a unique key, so a token can buy at most one order even if Redis loses
	// its deletion (a failover may resurrect it).
	Token string
	// IdempotencyKey is optional; unique per user when given, and then kept
	// with RequestFingerprint.
	IdempotencyKey     string
	RequestFingerprint string
}

// Validate refuses what would let a store's conditional decrement misbehave
// (a negative quantity would add stock) or its unique keys mean nothing.
// Every store checks it before it writes.
func (o NewOrder) Validate() error {
	switch {
	case o.Quantity < 1 || o.Quantity > MaxQuantity:
		return fmt.Errorf("%w: quantity must be 1..%d, got %d", ErrInvalidOrder, MaxQuantity, o.Quantity)
	case o.Token == "":
		return fmt.Errorf("%w: no entry token", ErrInvalidOrder)
	case o.UserID == "":
		return fmt.Errorf("%w: no user", ErrInvalidOrder)
	case o.IdempotencyKey != "" && o.RequestFingerprint == "":
		return fmt.Errorf("%w: an idempotency key without the request's fingerprint", ErrInvalidOrder)
	}
	return nil
}

// Errors of the order domain. The HTTP layer maps each to a status in one table.
var (
	ErrProductNotFound = errors.New("product not found")
	ErrOutOfStock      = errors.New("out of stock")
	// ErrTokenUsed: the token already bought an order (the unique key refused it).
	ErrTokenUsed = errors.New("entry token already used")
	// ErrDuplicateKey: an order with this user's Idempotency-Key already exists.
	ErrDuplicateKey = errors.New("idempotency key already used")
	// ErrIdempotencyKeyReused: the user's Idempotency-Key names an order of
	// another product or quantity than this request's.
	ErrIdempotencyKeyReused = errors.New("idempotency key reused with a different request")
	ErrInvalidOrder         = errors.New("invalid order")
	ErrPayment              = errors.New("payment failed")
	ErrUnavailable          = errors.New("order store unavailable")
)

// Store keeps products and orders. Implementations: PostgreSQL (pgx) and
// SQLite (the embedded default); both pass the same suite in order/storetest.
type Store interface {
	// PutProduct creates the product or replaces its name, stock and queue.
	PutProduct(ctx context.Context, p Product) (Product, error)
	// Product returns ErrProductNotFound for an unknown id.
	Product(ctx context.Context, id string) (Product, error)
	// Products lists at most limit products whose id sorts after `after`
	// ("" lists from the first), in id order, each with its order count.
	Products(ctx context.Context, after string, limit int) ([]ProductStats, error)
	// Restock adds add (≥ 1) to the product's stock in one statement, so
	// orders taken meanwhile are never overwritten (as a read-then-PutProduct
	// would). Unknown product → ErrProductNotFound; a stock that would pass
	// MaxStock → ErrInvalidOrder, nothing changed.
	Restock(ctx context.Context, id string, add int64) (Product, error)
	// CreateOrder runs one transaction: hold the connection for work (the
	// order API's own database time, as pg_sleep would; spent before the
	// product row is locked, so buyers of one product do not queue behind
	// each other's work), decrement stock only where stock >= quantity (else
	// ErrOutOfStock, nothing written), insert the order (a token already used
	// → ErrTokenUsed; the user's idempotency key already used →
	// ErrDuplicateKey), then call beforeCommit; if it fails the transaction
	// rolls back and its error is returned. Unknown product →
	// ErrProductNotFound.
	CreateOrder(ctx context.Context, o NewOrder, work time.Duration, beforeCommit func(context.Context, Order) error) (Order, error)
	// UnitsLeft is the stock of every product queue sells (a product
	// without a queue is the default queue's), added up, as committed; and
	// false when no product names the queue.
	UnitsLeft(ctx context.Context, queue string) (int64, bool, error)
	// OrderByKey finds the order a user made with an Idempotency-Key
	// (ErrNotFound-like: returns ok=false when none).
	OrderByKey(ctx context.Context, userID, key string) (Order, bool, error)
	// Connections is how many orders the store can run at once: the
	// connections CreateOrder takes from. With what an order holds one for
	// (spend.Wait), it is what the database bears (the adaptive rate).
	Connections() int
	// Ping reports whether the database answers (readiness).
	Ping(ctx context.Context) error
	Close() error
}
