package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/order/sqlite"
	"github.com/waitroom/waitroom/internal/order/storetest"
)

func TestStore(t *testing.T) {
	// One file for the whole suite: each subtest opens it again (the
	// migrations are already there) and names its rows uniquely.
	path := filepath.Join(t.TempDir(), "waitroom.db")
	storetest.Run(t, func(t *testing.T) order.Store {
		return mustOpen(t, path)
	})
}

func TestOpenInvalidPath(t *testing.T) {
	for _, path := range []string{"", ":memory:", "a.db?mode=ro", "a#b.db"} {
		t.Run(path, func(t *testing.T) {
			s, err := sqlite.Open(t.Context(), path)
			if err == nil {
				s.Close()
				t.Errorf("Open(%q) succeeded, want an error", path)
			}
		})
	}
}

func TestOpenUnwritableDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "waitroom.db")
	s, err := sqlite.Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatalf("Open(%q) succeeded, want an error", path)
	}
	if !errors.Is(err, order.ErrUnavailable) {
		t.Errorf("Open(%q) = %v, want %v", path, err, order.ErrUnavailable)
	}
}

// TestMigrateConcurrently opens one new file from several stores at once, as
// several processes would.
func TestMigrateConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "waitroom.db")
	storetest.OpenConcurrently(t, 4, func(ctx context.Context) (io.Closer, error) {
		return sqlite.Open(ctx, path)
	})
	s := mustOpen(t, path)
	if _, err := s.PutProduct(t.Context(), order.Product{ID: "p", Name: "p", Stock: 1}); err != nil {
		t.Errorf("PutProduct on the new file: %v", err)
	}
}

// TestTwoStoresOneFile: two stores on one file stand for two processes. They
// do not share the Go-side write queue, so here SQLite's own lock (BEGIN
// IMMEDIATE with busy_timeout) must keep them apart without "database is
// locked" errors and without overselling.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "waitroom.db")
	stores := []*sqlite.Store{mustOpen(t, path), mustOpen(t, path)}
	const stock = 50
	if _, err := stores[0].PutProduct(t.Context(), order.Product{ID: "p", Name: "p", Stock: stock}); err != nil {
		t.Fatal(err)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[string]int{}
	)
	for i := range 200 {
		wg.Go(func() {
			_, err := stores[i%2].CreateOrder(t.Context(), order.NewOrder{
				ProductID: "p",
				UserID:    fmt.Sprintf("user-%d", i),
				Quantity:  1,
				Token:     fmt.Sprintf("token-%d", i),
			}, 0, nil)
			kind := "ok"
			switch {
			case err == nil:
			case errors.Is(err, order.ErrOutOfStock):
				kind = "out of stock"
			default:
				kind = err.Error()
			}
			mu.Lock()
			outcomes[kind]++
			mu.Unlock()
		})
	}
	wg.Wait()
	want := map[string]int{"ok": stock, "out of stock": 200 - stock}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	p, err := stores[1].Product(t.Context(), "p")
	if err != nil {
		t.Fatal(err)
	}
	if p.Stock != 0 {
		t.Errorf("stock = %d, want 0", p.Stock)
	}
}

// TestDemoProduct: a new file (the embedded default's first start) has the
// demo product; it never comes back once changed or deleted, and a file that
// held products before the migration existed does not get it.
func TestDemoProduct(t *testing.T) {
	path := filepath.Join(t.TempDir(), "waitroom.db")
	reopen := func() *sqlite.Store {
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	exec := func(query string) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(t.Context(), query); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}

	s := reopen()
	want := order.Product{ID: "tee", Name: "waitroom tee", Stock: 1000}
	if got, err := s.Product(t.Context(), "tee"); err != nil || got != want {
		t.Fatalf("on a new file Product(tee) = %+v, %v; want %+v", got, err, want)
	}
	changed := order.Product{ID: "tee", Name: "Renamed", Stock: 5}
	if _, err := s.PutProduct(t.Context(), changed); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got, err := reopen().Product(t.Context(), "tee"); err != nil || got != changed {
		t.Errorf("after a restart Product(tee) = %+v, %v; want the operator's %+v", got, err, changed)
	}

	exec("DELETE FROM products WHERE id = 'tee'")
	if _, err := reopen().Product(t.Context(), "tee"); !errors.Is(err, order.ErrProductNotFound) {
		t.Errorf("after deleting it and a restart Product(tee) = %v, want %v", err, order.ErrProductNotFound)
	}

	// As if the file were made before the migration, with a shop's products.
	exec("INSERT INTO products (id, name, stock) VALUES ('mug', 'Mug', 3)")
	exec("DELETE FROM schema_migrations WHERE version = '0004_demo_product.sql'")
	if _, err := reopen().Product(t.Context(), "tee"); !errors.Is(err, order.ErrProductNotFound) {
		t.Errorf("a file with products of its own got the demo product: %v", err)
	}
}

func mustOpen(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}
