package order_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/order/postgres"
	"github.com/waitroom/waitroom/internal/order/sqlite"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/spend"
	"github.com/waitroom/waitroom/internal/testenv"
)

// missFirstLookup is an order store whose first OrderByKey misses: the
// retry looked before the try it repeats had committed.
type missFirstLookup struct {
	order.Store
	looked atomic.Bool
}

func (s *missFirstLookup) OrderByKey(ctx context.Context, user, key string) (order.Order, bool, error) {
	if !s.looked.Swap(true) {
		return order.Order{}, false, nil
	}
	return s.Store.OrderByKey(ctx, user, key)
}

// TestRetryRacingItsFirstTryReplays: a first try timed out here but its
// transaction committed in the database, its token still valid in the
// line's store; the retry (same Idempotency-Key) missed the order in its
// lookup and met the token, or the key, taken in the orders table (which
// one a store reports first is its own: PostgreSQL names the token). It
// answers with the first try's order, not 403 (a loaded benchmark run on
// PostgreSQL met this).
func TestRetryRacingItsFirstTryReplays(t *testing.T) {
	stores := map[string]func(t *testing.T) order.Store{
		"sqlite": func(t *testing.T) order.Store {
			db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "orders.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
		"postgres": func(t *testing.T) order.Store {
			db, err := postgres.Open(context.Background(), testenv.DatabaseURL(t), 2)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) { testRetryRacingItsFirstTry(t, open(t)) })
	}
}

func testRetryRacingItsFirstTry(t *testing.T, db order.Store) {
	ctx := context.Background()
	// Names of their own: the PostgreSQL database is shared with other tests.
	product, tok := "tee-"+rand.Text()[:8], "tok-"+rand.Text()
	if _, err := db.PutProduct(ctx, order.Product{ID: product, Name: "Tee", Stock: 5}); err != nil {
		t.Fatal(err)
	}
	line := memstore.New(time.Now)
	if err := line.PutConfig(ctx, queue.DefaultQueue, queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := line.Enter(ctx, queue.DefaultQueue, "ann"); err != nil {
		t.Fatal(err)
	}
	if a, err := line.Admit(ctx, queue.DefaultQueue, []string{tok}); err != nil || len(a.Admitted) != 1 {
		t.Fatalf("Admit: %+v, %v", a, err)
	}
	first, err := db.CreateOrder(ctx, order.NewOrder{ProductID: product, UserID: "ann", Quantity: 1, Token: tok,
		IdempotencyKey: "k1-" + tok, RequestFingerprint: order.Fingerprint(product, 1)}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}

	svc := order.NewService(&missFirstLookup{Store: db}, spend.NewGuard(line, spend.DefaultLockTTL, nil),
		&order.FakePayment{}, order.Config{})
	got, replayed, err := svc.Place(ctx, order.Request{UserID: "ann", ProductID: product, Quantity: 1, Token: tok, IdempotencyKey: "k1-" + tok})
	if err != nil || !replayed || got.ID != first.ID {
		t.Fatalf("retry = %+v, replayed %v, %v; want the first try's order %d, replayed", got, replayed, err, first.ID)
	}
	if p, _ := db.Product(ctx, product); p.Stock != 4 {
		t.Errorf("stock %d, want 4 (one order)", p.Stock)
	}
}
