package sqlite_test

import (
	"context"
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
