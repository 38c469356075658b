// Package sqlite owns the embedded default order.Store: one SQLite file
// (modernc.org/sqlite, pure Go, no cgo), its schema (embedded migrations
// applied at Open) and the transaction that turns an entry token into an
// order without overselling.
//
// SQLite allows one writer at a time. Rather than let concurrent writers
// race for the file lock and fail with "database is locked", the store sends
// every write through a pool of exactly one connection, so writers queue in
// Go (honouring their contexts) and reads run beside them from a separate
// read-only pool (WAL mode lets readers see the last commit while a write is
// in progress).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/spend"
)

// busyTimeout is how long a connection waits for another process's write
// lock before giving up with SQLITE_BUSY (reported as order.ErrUnavailable).
// Within one process writers never meet the lock: they queue for the single
// write connection instead.
const busyTimeout = 5 * time.Second

// timeLayout stores created_at as UTC text at PostgreSQL's precision.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// Store is an order.Store on a SQLite file.
type Store struct {
	write     *sql.DB // exactly one connection: the only writer
	read      *sql.DB // read-only connections
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ order.Store = (*Store)(nil)

// Open opens (creating when missing) the SQLite database file at path and
// applies the embedded migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") || path == ":memory:" {
		// An in-memory database would be a different one per connection,
		// and '?' starts the driver's parameters.
		return nil, fmt.Errorf("sqlite: need a file path without '?' or '#', got %q", path)
	}
	// BEGIN IMMEDIATE takes the write lock up front. A deferred transaction
	// that reads first and writes later can fail with SQLITE_BUSY without
	// waiting when another process committed in between.
	write, err := sql.Open("sqlite", dsn(path, url.Values{"_txlock": {"immediate"}}))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)

	// The write connection must be the first one: it switches the file to
	// WAL mode and creates the schema.
	if err := useWAL(ctx, write); err != nil {
		write.Close()
		return nil, wrapErr(ctx, "open", err)
	}
	if err := migrate(ctx, write); err != nil {
		write.Close()
		return nil, wrapErr(ctx, "migrate", err)
	}

	read, err := sql.Open("sqlite", dsn(path, url.Values{"_pragma": {"query_only(1)"}}))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	if err := read.PingContext(ctx); err != nil {
		read.Close()
		write.Close()
		return nil, wrapErr(ctx, "open", err)
	}
	return &Store{write: write, read: read}, nil
}

// PutProduct creates the product or replaces its name, stock and queue.
func (s *Store) PutProduct(ctx context.Context, p order.Product) (order.Product, error) {
	if p.ID == "" || p.Stock < 0 {
		return order.Product{}, fmt.Errorf("%w: product needs an id and a stock >= 0", order.ErrInvalidOrder)
	}
	var got order.Product
	err := s.write.QueryRowContext(ctx, `
		INSERT INTO products (id, name, stock, queue) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (id) DO UPDATE
		SET name = excluded.name, stock = excluded.stock, queue = excluded.queue
		RETURNING id, name, stock, queue`,
		p.ID, p.Name, p.Stock, p.Queue,
	).Scan(&got.ID, &got.Name, &got.Stock, &got.Queue)
	if err != nil {
		return order.Product{}, s.wrapErr(ctx, "put product", err)
	}
	return got, nil
}

// Product returns order.ErrProductNotFound for an unknown id.
func (s *Store) Product(ctx context.Context, id string) (order.Product, error) {
	var p order.Product
	err := s.read.QueryRowContext(ctx, "SELECT id, name, stock, queue FROM products WHERE id = ?1", id).
		Scan(&p.ID, &p.Name, &p.Stock, &p.Queue)
	if errors.Is(err, sql.ErrNoRows) {
		return order.Product{}, order.ErrProductNotFound
	}
	if err != nil {
		return order.Product{}, s.wrapErr(ctx, "product", err)
	}
	return p, nil
}

// UnitsLeft implements order.Store.UnitsLeft. A product without a queue
// (an empty queue column) is the default queue's.
func (s *Store) UnitsLeft(ctx context.Context, queue string) (int64, bool, error) {
	var units, products int64
	err := s.read.QueryRowContext(ctx, `
		SELECT COALESCE(SUM(stock), 0), count(*) FROM products
		WHERE queue = ?1 OR (queue = '' AND ?1 = ?2)`, queue, order.DefaultQueue,
	).Scan(&units, &products)
	if err != nil {
		return 0, false, s.wrapErr(ctx, "units left", err)
	}
	return units, products > 0, nil
}

// Products implements order.Store.Products. The order count is read through
// the orders_product_id index, one product at a time.
func (s *Store) Products(ctx context.Context, after string, limit int) ([]order.ProductStats, error) {
	rows, err := s.read.QueryContext(ctx, `
		SELECT p.id, p.name, p.stock, p.queue,
		       (SELECT COUNT(*) FROM orders o WHERE o.product_id = p.id)
		FROM products p WHERE p.id > ?1 ORDER BY p.id LIMIT ?2`, after, limit)
	if err != nil {
		return nil, s.wrapErr(ctx, "products", err)
	}
	defer rows.Close()
	var out []order.ProductStats
	for rows.Next() {
		var p order.ProductStats
		if err := rows.Scan(&p.ID, &p.Name, &p.Stock, &p.Queue, &p.Orders); err != nil {
			return nil, s.wrapErr(ctx, "products", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapErr(ctx, "products", err)
	}
	return out, nil
}

// Restock implements order.Store.Restock.
func (s *Store) Restock(ctx context.Context, id string, add int64) (order.Product, error) {
	if add < 1 {
		return order.Product{}, fmt.Errorf("%w: restock by at least 1, got %d", order.ErrInvalidOrder, add)
	}
	var got order.Product
	err := s.write.QueryRowContext(ctx, `
		UPDATE products SET stock = stock + ?2 WHERE id = ?1 AND stock + ?2 <= ?3
		RETURNING id, name, stock, queue`,
		id, add, order.MaxStock,
	).Scan(&got.ID, &got.Name, &got.Stock, &got.Queue)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.Product(ctx, id); err != nil {
			return order.Product{}, err
		}
		return order.Product{}, fmt.Errorf("%w: the stock would pass %d", order.ErrInvalidOrder, order.MaxStock)
	}
	if err != nil {
		return order.Product{}, s.wrapErr(ctx, "restock", err)
	}
	return got, nil
}

// CreateOrder implements order.Store.CreateOrder.
//
// The whole call holds the single write connection, work included: SQLite
// has one writer, so orders are serialised and their rate is at most one per
// work (five a second at 200 ms). beforeCommit must not call the store: the
// write connection it would need is the one this call holds.
func (s *Store) CreateOrder(ctx context.Context, o order.NewOrder, work time.Duration, beforeCommit func(context.Context, order.Order) error) (order.Order, error) {
	if err := o.Validate(); err != nil {
		return order.Order{}, err
	}
	acquired := spend.Wait(ctx)
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return order.Order{}, s.wrapErr(ctx, "create order", err)
	}
	defer acquired()()
	// Rollback after Commit is a no-op; on any early return it undoes the
	// decrement and the insert, so the token stays usable.
	defer tx.Rollback() //nolint:errcheck // the error that matters is already being returned

	if err := sleep(ctx, work); err != nil {
		return order.Order{}, s.wrapErr(ctx, "create order: work", err)
	}

	// The condition in the WHERE clause is what prevents overselling, here
	// and in PostgreSQL alike.
	res, err := tx.ExecContext(ctx,
		"UPDATE products SET stock = stock - ?2 WHERE id = ?1 AND stock >= ?2",
		o.ProductID, o.Quantity)
	if err != nil {
		return order.Order{}, s.wrapErr(ctx, "create order: decrement stock", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return order.Order{}, s.wrapErr(ctx, "create order: decrement stock", err)
	}
	if n == 0 {
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM products WHERE id = ?1)", o.ProductID).Scan(&exists); err != nil {
			return order.Order{}, s.wrapErr(ctx, "create order: find product", err)
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
		CreatedAt:          time.Now().UTC().Truncate(time.Microsecond),
		RequestFingerprint: o.RequestFingerprint,
	}
	err = tx.QueryRowContext(ctx, `
		INSERT INTO orders (product_id, user_id, quantity, token, idempotency_key, created_at, request_fingerprint)
		VALUES (?1, ?2, ?3, ?4, NULLIF(?5, ''), ?6, NULLIF(?7, ''))
		RETURNING id`,
		o.ProductID, o.UserID, o.Quantity, o.Token, o.IdempotencyKey, created.CreatedAt.Format(timeLayout), o.RequestFingerprint,
	).Scan(&created.ID)
	if err != nil {
		return order.Order{}, s.insertErr(ctx, err)
	}

	if beforeCommit != nil {
		if err := beforeCommit(ctx, created); err != nil {
			return order.Order{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return order.Order{}, s.wrapErr(ctx, "create order: commit", err)
	}
	return created, nil
}

// OrderByKey finds the order userID made with the Idempotency-Key key.
func (s *Store) OrderByKey(ctx context.Context, userID, key string) (order.Order, bool, error) {
	if key == "" {
		return order.Order{}, false, nil
	}
	o := order.Order{UserID: userID, IdempotencyKey: key}
	var createdAt string
	err := s.read.QueryRowContext(ctx, `
		SELECT id, product_id, quantity, created_at, coalesce(request_fingerprint, '') FROM orders
		WHERE user_id = ?1 AND idempotency_key = ?2`,
		userID, key,
	).Scan(&o.ID, &o.ProductID, &o.Quantity, &createdAt, &o.RequestFingerprint)
	if errors.Is(err, sql.ErrNoRows) {
		return order.Order{}, false, nil
	}
	if err != nil {
		return order.Order{}, false, s.wrapErr(ctx, "order by key", err)
	}
	if o.CreatedAt, err = time.Parse(timeLayout, createdAt); err != nil {
		return order.Order{}, false, fmt.Errorf("sqlite: order by key: created_at: %w", err)
	}
	return o, true, nil
}

// Connections implements order.Store: SQLite has one writer.
func (s *Store) Connections() int { return 1 }

// Ping reports whether the database answers. It asks the write pool, so a
// writer stuck for longer than ctx allows shows up as not ready.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.write.PingContext(ctx); err != nil {
		return s.wrapErr(ctx, "ping", err)
	}
	return nil
}

// Close closes both pools. Calls made afterwards fail with
// order.ErrUnavailable.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeErr = errors.Join(s.read.Close(), s.write.Close())
	})
	return s.closeErr
}

// useWAL switches the file to WAL mode, so that reads run beside the
// writer. The mode is stored in the file, so other connections need not set
// it. Two processes creating one new file race for this switch, and SQLite
// answers the loser SQLITE_BUSY at once rather than wait (busy_timeout does
// not apply to it), so the waiting is done here.
func useWAL(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("journal mode is %q, want wal", mode)
			}
			return nil
		}
		var sqliteErr *sqlite.Error
		if !errors.As(err, &sqliteErr) || sqliteErr.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleep waits for d, or less when ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// insertErr tells which unique key refused the order. SQLite reports the
// columns of the violated key ("UNIQUE constraint failed: orders.token").
func (s *Store) insertErr(ctx context.Context, err error) error {
	var sqliteErr *sqlite.Error
	if errors.As(err, &sqliteErr) {
		msg := sqliteErr.Error()
		switch sqliteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			if strings.Contains(msg, "orders.token") {
				return order.ErrTokenUsed
			}
			if strings.Contains(msg, "orders.idempotency_key") {
				return order.ErrDuplicateKey
			}
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY: // the product went away
			return order.ErrProductNotFound
		}
	}
	return s.wrapErr(ctx, "create order: insert", err)
}

// wrapErr names the operation that failed and adds order.ErrUnavailable when
// the database could not be reached, so the HTTP layer answers 503 (try again
// later) rather than 500.
func wrapErr(ctx context.Context, op string, err error) error {
	if !unavailable(ctx, err) {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	// Callers tell a deadline from a cancellation by the context's error,
	// which the driver does not always pass on (an interrupted statement
	// may come back as the database's own error).
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("sqlite: %s: %w: %w: %w", op, order.ErrUnavailable, ctxErr, err)
	}
	return fmt.Errorf("sqlite: %s: %w: %w", op, order.ErrUnavailable, err)
}

// wrapErr is the package's wrapErr, knowing also that every call on a
// closed store fails for that reason (database/sql reports it with an
// unexported error).
func (s *Store) wrapErr(ctx context.Context, op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: %s: %w: %w", op, order.ErrUnavailable, err)
	}
	return wrapErr(ctx, op, err)
}

// unavailable reports whether err means "the database did not answer" as
// opposed to "the database refused this".
func unavailable(ctx context.Context, err error) bool {
	// A request that ran out of time (or whose client went away) most often
	// waited for the write connection; retrying later is the right answer.
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var sqliteErr *sqlite.Error
	if errors.As(err, &sqliteErr) {
		switch sqliteErr.Code() & 0xff { // the primary code, without the extended bits
		case sqlite3.SQLITE_BUSY, // another process held the lock past busy_timeout
			sqlite3.SQLITE_LOCKED,
			sqlite3.SQLITE_INTERRUPT, // a cancelled context interrupts the statement
			sqlite3.SQLITE_NOMEM,
			sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL,
			sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_READONLY:
			return true
		}
	}
	return false
}

// dsn gives the driver the file path and the settings every connection
// needs, plus extra.
func dsn(path string, extra url.Values) string {
	q := url.Values{"_pragma": {
		fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		"foreign_keys(1)",
		// In WAL mode NORMAL may lose the last commits on power loss, never
		// consistency; FULL would fsync on every order.
		"synchronous(NORMAL)",
	}}
	for k, vs := range extra {
		q[k] = append(q[k], vs...)
	}
	return path + "?" + q.Encode()
}
