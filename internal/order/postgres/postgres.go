// Package postgres owns the PostgreSQL side of order.Store: the connection
// pool (pgx), the schema (embedded migrations applied at Open) and the one
// transaction that turns an entry token into an order without overselling.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/spend"
)

// Names of the unique constraints in migrations/0001_init.sql; a violation
// of each means a different thing to the buyer.
const (
	tokenConstraint          = "orders_token_key"
	idempotencyKeyConstraint = "orders_user_idempotency_key"
)

// Store is an order.Store on PostgreSQL.
type Store struct {
	pool      *pgxpool.Pool
	closeOnce sync.Once
}

var _ order.Store = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL or a key=value DSN),
// with at most poolSize connections, and applies the embedded migrations.
// The pool size is the admission rate's bottleneck (see DESIGN.md), so it is
// the caller's decision, not a default hidden here. A database that cannot be
// reached gives an error wrapping order.ErrUnavailable.
func Open(ctx context.Context, url string, poolSize int) (*Store, error) {
	if poolSize < 1 {
		return nil, fmt.Errorf("postgres: pool size must be at least 1, got %d", poolSize)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	cfg.MaxConns = int32(poolSize)
	// Without a connect timeout a request would wait on a dead database for
	// as long as its client does; fail fast so the answer is 503 + Retry-After.
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, wrapErr(ctx, "open", err)
	}
	// The pool connects lazily; ping now so a wrong URL fails at start, not
	// on the first buyer.
	if err := pingAtStart(ctx, pool); err != nil {
		pool.Close()
		return nil, wrapErr(ctx, "open", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, wrapErr(ctx, "migrate", err)
	}
	return &Store{pool: pool}, nil
}

// startAttempts is how many connect timeouts Open sits out before it gives up.
const startAttempts = 4

// pingAtStart pings until the database answers, retrying only timeouts: a
// server busy forking backends (a loaded host, a checkpoint, a crowd of
// instances starting at once) answers late, and an instance that gave up on it
// would stay down. What says nothing is there (refused, no such host) or that
// the URL is wrong (authentication, no such database) fails at once.
func pingAtStart(ctx context.Context, pool *pgxpool.Pool) error {
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err = pool.Ping(ctx); err == nil || !pgconn.Timeout(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// PutProduct creates the product or replaces its name, stock and queue.
func (s *Store) PutProduct(ctx context.Context, p order.Product) (order.Product, error) {
	if p.ID == "" || p.Stock < 0 {
		return order.Product{}, fmt.Errorf("%w: product needs an id and a stock >= 0", order.ErrInvalidOrder)
	}
	var got order.Product
	err := s.pool.QueryRow(ctx, `
		INSERT INTO products (id, name, stock, queue) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE
		SET name = excluded.name, stock = excluded.stock, queue = excluded.queue
		RETURNING id, name, stock, queue`,
		p.ID, p.Name, p.Stock, p.Queue,
	).Scan(&got.ID, &got.Name, &got.Stock, &got.Queue)
	if err != nil {
		return order.Product{}, wrapErr(ctx, "put product", err)
	}
	return got, nil
}

// Product returns order.ErrProductNotFound for an unknown id.
func (s *Store) Product(ctx context.Context, id string) (order.Product, error) {
	var p order.Product
	err := s.pool.QueryRow(ctx, "SELECT id, name, stock, queue FROM products WHERE id = $1", id).
		Scan(&p.ID, &p.Name, &p.Stock, &p.Queue)
	if errors.Is(err, pgx.ErrNoRows) {
		return order.Product{}, order.ErrProductNotFound
	}
	if err != nil {
		return order.Product{}, wrapErr(ctx, "product", err)
	}
	return p, nil
}

// UnitsLeft implements order.Store.UnitsLeft. A product without a queue
// (an empty queue column) is the default queue's.
func (s *Store) UnitsLeft(ctx context.Context, queue string) (int64, bool, error) {
	var units, products int64
	err := s.pool.QueryRow(ctx, `
		SELECT COALESCE(SUM(stock), 0), count(*) FROM products
		WHERE queue = $1 OR (queue = '' AND $1 = $2)`, queue, order.DefaultQueue,
	).Scan(&units, &products)
	if err != nil {
		return 0, false, wrapErr(ctx, "units left", err)
	}
	return units, products > 0, nil
}

// Products implements order.Store.Products. The order count is read through
// the orders_product_id index, one product at a time.
func (s *Store) Products(ctx context.Context, after string, limit int) ([]order.ProductStats, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.id, p.name, p.stock, p.queue,
		       (SELECT count(*) FROM orders o WHERE o.product_id = p.id)
		FROM products p WHERE p.id > $1 ORDER BY p.id LIMIT $2`, after, limit)
	if err != nil {
		return nil, wrapErr(ctx, "products", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (order.ProductStats, error) {
		var p order.ProductStats
		err := row.Scan(&p.ID, &p.Name, &p.Stock, &p.Queue, &p.Orders)
		return p, err
	})
	if err != nil {
		return nil, wrapErr(ctx, "products", err)
	}
	return out, nil
}

// Restock implements order.Store.Restock.
func (s *Store) Restock(ctx context.Context, id string, add int64) (order.Product, error) {
	if add < 1 {
		return order.Product{}, fmt.Errorf("%w: restock by at least 1, got %d", order.ErrInvalidOrder, add)
	}
	var got order.Product
	err := s.pool.QueryRow(ctx, `
		UPDATE products SET stock = stock + $2 WHERE id = $1 AND stock + $2 <= $3
		RETURNING id, name, stock, queue`,
		id, add, int64(order.MaxStock),
	).Scan(&got.ID, &got.Name, &got.Stock, &got.Queue)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.Product(ctx, id); err != nil {
			return order.Product{}, err
		}
		return order.Product{}, fmt.Errorf("%w: the stock would pass %d", order.ErrInvalidOrder, order.MaxStock)
	}
	if err != nil {
		return order.Product{}, wrapErr(ctx, "restock", err)
	}
	return got, nil
}

// CreateOrder implements order.Store.CreateOrder.
//
// The work time is spent first, before the product row is locked: it stands
// for the order API's own database time, which holds a pool connection but
// not the hot row. Sleeping after the decrement would hold the row lock for
// the whole of work and serialise every buyer of one product (at 200 ms, five
// orders a second however large the pool), far below the admission rate the
// pool size is meant to carry. The row is locked from the decrement until
// commit: the insert and beforeCommit only.
func (s *Store) CreateOrder(ctx context.Context, o order.NewOrder, work time.Duration, beforeCommit func(context.Context, order.Order) error) (order.Order, error) {
	if err := o.Validate(); err != nil {
		return order.Order{}, err
	}
	acquired := spend.Wait(ctx)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return order.Order{}, wrapErr(ctx, "create order", err)
	}
	released := acquired()
	defer func() { conn.Release(); released() }()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return order.Order{}, wrapErr(ctx, "create order", err)
	}
	// Rollback after Commit is a no-op; on any early return it undoes the
	// decrement and the insert, so the token stays usable.
	defer tx.Rollback(ctx) //nolint:errcheck // the error that matters is already being returned

	if work > 0 {
		if _, err := tx.Exec(ctx, "SELECT pg_sleep($1)", work.Seconds()); err != nil {
			return order.Order{}, wrapErr(ctx, "create order: work", err)
		}
	}

	// The condition in the WHERE clause is what prevents overselling: the
	// row lock makes concurrent buyers take turns, and each re-checks the
	// stock it sees after the previous one committed.
	tag, err := tx.Exec(ctx,
		"UPDATE products SET stock = stock - $2 WHERE id = $1 AND stock >= $2",
		o.ProductID, o.Quantity)
	if err != nil {
		return order.Order{}, wrapErr(ctx, "create order: decrement stock", err)
	}
	if tag.RowsAffected() == 0 {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM products WHERE id = $1)", o.ProductID).Scan(&exists); err != nil {
			return order.Order{}, wrapErr(ctx, "create order: find product", err)
		}
		if !exists {
			return order.Order{}, order.ErrProductNotFound
		}
		return order.Order{}, order.ErrOutOfStock
	}

	created := order.Order{
		ProductID:          o.ProductID,
		UserID:             o.UserID,
		Quantity:           o.Quantity,
		IdempotencyKey:     o.IdempotencyKey,
		RequestFingerprint: o.RequestFingerprint,
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO orders (product_id, user_id, quantity, token, idempotency_key, request_fingerprint)
		VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''))
		RETURNING id, created_at`,
		o.ProductID, o.UserID, o.Quantity, o.Token, o.IdempotencyKey, o.RequestFingerprint,
	).Scan(&created.ID, &created.CreatedAt)
	if err != nil {
		return order.Order{}, insertErr(ctx, err)
	}
	created.CreatedAt = created.CreatedAt.UTC()

	if beforeCommit != nil {
		if err := beforeCommit(ctx, created); err != nil {
			return order.Order{}, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return order.Order{}, wrapErr(ctx, "create order: commit", err)
	}
	return created, nil
}

// OrderByKey finds the order userID made with the Idempotency-Key key.
func (s *Store) OrderByKey(ctx context.Context, userID, key string) (order.Order, bool, error) {
	if key == "" {
		return order.Order{}, false, nil
	}
	o := order.Order{UserID: userID, IdempotencyKey: key}
	err := s.pool.QueryRow(ctx, `
		SELECT id, product_id, quantity, created_at, coalesce(request_fingerprint, '') FROM orders
		WHERE user_id = $1 AND idempotency_key = $2`,
		userID, key,
	).Scan(&o.ID, &o.ProductID, &o.Quantity, &o.CreatedAt, &o.RequestFingerprint)
	if errors.Is(err, pgx.ErrNoRows) {
		return order.Order{}, false, nil
	}
	if err != nil {
		return order.Order{}, false, wrapErr(ctx, "order by key", err)
	}
	o.CreatedAt = o.CreatedAt.UTC()
	return o, true, nil
}

// Connections implements order.Store: the pool's size.
func (s *Store) Connections() int { return int(s.pool.Config().MaxConns) }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return wrapErr(ctx, "ping", err)
	}
	return nil
}

// Close closes the pool, waiting for borrowed connections to come back.
// Calls made afterwards fail with order.ErrUnavailable.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// insertErr tells which unique key refused the order.
func insertErr(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505" && pgErr.ConstraintName == tokenConstraint:
			return order.ErrTokenUsed
		case pgErr.Code == "23505" && pgErr.ConstraintName == idempotencyKeyConstraint:
			return order.ErrDuplicateKey
		case pgErr.Code == "23503": // foreign_key_violation: the product went away
			return order.ErrProductNotFound
		}
	}
	return wrapErr(ctx, "create order: insert", err)
}

// wrapErr names the operation that failed and adds order.ErrUnavailable when
// the database could not be reached, so the HTTP layer answers 503 (try again
// later) rather than 500.
func wrapErr(ctx context.Context, op string, err error) error {
	// 22021 / 22P05: text the database cannot store (a NUL, bad UTF-8).
	// The domain validates first; this keeps a miss a 400, never a 500.
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P05") {
		return fmt.Errorf("postgres: %s: %w: %w", op, order.ErrInvalidOrder, err)
	}
	if !unavailable(ctx, err) {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	// Callers tell a deadline from a cancellation by the context's error,
	// which the driver does not always pass on (an interrupted statement
	// may come back as the database's own error).
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("postgres: %s: %w: %w: %w", op, order.ErrUnavailable, ctxErr, err)
	}
	return fmt.Errorf("postgres: %s: %w: %w", op, order.ErrUnavailable, err)
}

// unavailable reports whether err means "the database did not answer" as
// opposed to "the database refused this".
func unavailable(ctx context.Context, err error) bool {
	// A request that ran out of time (or whose client went away) most often
	// waited for a pool connection or a slow server; either way, retrying
	// later is the right answer.
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var (
		connectErr *pgconn.ConnectError
		netErr     net.Error
		pgErr      *pgconn.PgError
	)
	switch {
	case errors.As(err, &connectErr), // refused, no route, DNS, TLS, authentication
		errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), // connection dropped mid-query
		errors.Is(err, puddle.ErrClosedPool): // Store.Close was called
		return true
	case errors.As(err, &pgErr):
		// 08: connection exception; 53: insufficient resources (too many
		// connections, disk full); 57: operator intervention (shutdown,
		// statement timeout, cannot connect now).
		return strings.HasPrefix(pgErr.Code, "08") ||
			strings.HasPrefix(pgErr.Code, "53") ||
			strings.HasPrefix(pgErr.Code, "57")
	}
	return false
}
