package postgres_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/order/postgres"
	"github.com/waitroom/waitroom/internal/order/storetest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// testPoolSize keeps a test's connections well under a default server's
// max_connections (100), which other packages' tests share.
const testPoolSize = 10

func TestStore(t *testing.T) {
	dbURL := testenv.DatabaseURL(t)
	storetest.Run(t, func(t *testing.T) order.Store {
		return mustOpen(t, dbURL, testPoolSize)
	})
}

// TestOpenUnreachable: a database that is not there is "unavailable" (503),
// not a bug (500). It needs no server, so it runs everywhere.
func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, "postgres://waitroom@"+addr+"/waitroom?sslmode=disable&connect_timeout=5", testPoolSize)
	if err == nil {
		s.Close()
		t.Fatal("Open(closed port) succeeded, want an error")
	}
	if !errors.Is(err, order.ErrUnavailable) {
		t.Errorf("Open(closed port) = %v, want %v", err, order.ErrUnavailable)
	}
}

// TestOpenWaitsForASlowServer: at start, a server that takes the connection
// but is slow to answer it (a loaded host) is asked again, and the instance
// starts; one that never answers is given up on after a bounded number of
// tries.
func TestOpenWaitsForASlowServer(t *testing.T) {
	dbURL := testenv.DatabaseURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	// In front of the real server: the first two connections are taken
	// and never answered, later ones are passed through.
	front := silentThen(t, 2, u.Host)
	u.Host = front.addr
	q := u.Query()
	q.Set("connect_timeout", "1")
	u.RawQuery = q.Encode()

	s, err := postgres.Open(t.Context(), u.String(), 2)
	if err != nil {
		t.Fatalf("Open behind two silent connections: %v", err)
	}
	defer s.Close()
	if got := front.accepted.Load(); got < 3 {
		t.Errorf("the server was dialled %d times, want the two silent ones and one more", got)
	}

	silent := silentThen(t, 1000, u.Host)
	u.Host = silent.addr
	if s, err := postgres.Open(t.Context(), u.String(), 2); err == nil {
		s.Close()
		t.Fatal("Open on a server that never answers succeeded")
	} else if !errors.Is(err, order.ErrUnavailable) {
		t.Errorf("Open on a server that never answers = %v, want %v", err, order.ErrUnavailable)
	}
	if got := silent.accepted.Load(); got < 2 || got > 8 {
		t.Errorf("a server that never answers was dialled %d times, want a few and a bound", got)
	}
}

// silentFront is a TCP front that holds its first n connections unanswered
// and passes later ones to target.
type silentFront struct {
	addr     string
	accepted atomic.Int64
}

func silentThen(t *testing.T, n int64, target string) *silentFront {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &silentFront{addr: ln.Addr().String()}
	var (
		mu   sync.Mutex
		held []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if f.accepted.Add(1) <= n {
				mu.Lock()
				held = append(held, c) // closed at cleanup; never answered
				mu.Unlock()
				continue
			}
			go pipe(c, target)
		}
	}()
	return f
}

func pipe(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	go io.Copy(up, c)
	io.Copy(c, up)
}

func TestOpenInvalid(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		poolSize int
	}{
		{"pool size 0", "postgres://localhost/db", 0},
		{"negative pool size", "postgres://localhost/db", -1},
		{"bad url", "postgres://%zz", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := postgres.Open(t.Context(), tt.url, tt.poolSize)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q, %d) succeeded, want an error", tt.url, tt.poolSize)
			}
			if errors.Is(err, order.ErrUnavailable) {
				t.Errorf("Open(%q, %d) = %v, want a configuration error, not %v", tt.url, tt.poolSize, err, order.ErrUnavailable)
			}
		})
	}
}

// TestMigrateConcurrently starts several stores at once on an empty schema,
// as several waitroom processes would on a fresh database.
func TestMigrateConcurrently(t *testing.T) {
	dbURL := withFreshSchema(t, testenv.DatabaseURL(t))
	storetest.OpenConcurrently(t, 4, func(ctx context.Context) (io.Closer, error) {
		return postgres.Open(ctx, dbURL, 2)
	})

	// Each migration is recorded once, and the schema works.
	conn := mustConnect(t, dbURL)
	var applied int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM schema_migrations").Scan(&applied); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v, %v", files, err)
	}
	if applied != len(files) {
		t.Errorf("schema_migrations has %d rows, want %d (one per file)", applied, len(files))
	}
	s := mustOpen(t, dbURL, 2)
	if _, err := s.PutProduct(t.Context(), order.Product{ID: "p", Name: "p", Stock: 1}); err != nil {
		t.Errorf("PutProduct on the fresh schema: %v", err)
	}
}

// BenchmarkCreateOrder measures orders per second with no simulated work,
// through a pool of the design's default size (40) with one goroutine per
// connection:
//
//	WAITROOM_TEST_DATABASE_URL=... go test -run '^$' -bench CreateOrder ./internal/order/postgres
//
// "one_product" is the sale: every buyer takes the same row lock, so this is
// the ceiling for a single product. "product_per_goroutine" removes that
// contention and shows what the pool and the server can do.
func BenchmarkCreateOrder(b *testing.B) {
	const poolSize = 40
	s := mustOpen(b, testenv.DatabaseURL(b), poolSize)
	run := "bench-" + rand.Text()[:12]
	var seq atomic.Int64
	newOrder := func(productID string) order.NewOrder {
		n := seq.Add(1)
		return order.NewOrder{
			ProductID: productID,
			UserID:    fmt.Sprintf("%s-user-%d", run, n),
			Quantity:  1,
			Token:     fmt.Sprintf("%s-token-%d", run, n),
		}
	}
	putProduct := func(b *testing.B) string {
		p := order.Product{ID: fmt.Sprintf("%s-product-%d", run, seq.Add(1)), Name: "bench", Stock: 1 << 40}
		if _, err := s.PutProduct(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		return p.ID
	}
	parallelism := max(1, poolSize/runtime.GOMAXPROCS(0))

	b.Run("one_product", func(b *testing.B) {
		id := putProduct(b)
		b.SetParallelism(parallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.CreateOrder(context.Background(), newOrder(id), 0, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "orders/s")
	})
	b.Run("product_per_goroutine", func(b *testing.B) {
		b.SetParallelism(parallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			id := putProduct(b)
			for pb.Next() {
				if _, err := s.CreateOrder(context.Background(), newOrder(id), 0, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "orders/s")
	})
}

func mustOpen(tb testing.TB, dbURL string, poolSize int) *postgres.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dbURL, poolSize)
	if err != nil {
		tb.Fatalf("postgres.Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func mustConnect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatalf("pgx.Connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// withFreshSchema creates an empty schema, dropped after the test, and
// returns dbURL with it as the search path, so a test can watch migrations
// run from nothing without a database of its own.
func withFreshSchema(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("%s must be a postgres:// URL: %v", testenv.DatabaseURLVar, err)
	}
	schema := "waitroom_test_" + strings.ToLower(rand.Text()[:12])
	admin := mustConnect(t, dbURL)
	if _, err := admin.Exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled during cleanup.
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema) // pgx sends unknown URL parameters as run-time settings
	u.RawQuery = q.Encode()
	return u.String()
}

// BenchmarkOrdersOnTwentyConnections is the seed's bottleneck: the order
// API's 20 connections (pool 40 × share 0.5), 40 buyers of one product at
// once, each order holding its connection for `work`. With 200 ms of work
// the ceiling is 20 × 1000/200 = 100 orders/s; the benchmark reports the
// measured rate and its share of that ceiling:
//
//	scripts/test.sh -run '^$' -bench OrdersOnTwenty -benchtime 3s ./internal/order/postgres/
func BenchmarkOrdersOnTwentyConnections(b *testing.B) {
	const conns = 20
	s := mustOpen(b, testenv.DatabaseURL(b), conns)
	run := "bench20-" + rand.Text()[:12]
	for _, work := range []time.Duration{0, 200 * time.Millisecond} {
		b.Run(fmt.Sprintf("work=%v", work), func(b *testing.B) {
			p := order.Product{ID: fmt.Sprintf("%s-%v", run, work), Name: "bench", Stock: 1 << 40}
			if _, err := s.PutProduct(context.Background(), p); err != nil {
				b.Fatal(err)
			}
			var seq atomic.Int64
			round := rand.Text()[:8] // b.N rounds rerun this function: tokens must stay unique
			b.SetParallelism(max(1, 2*conns/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					o := order.NewOrder{ProductID: p.ID, UserID: fmt.Sprintf("%s-%s-u%d", p.ID, round, n), Quantity: 1,
						Token: fmt.Sprintf("%s-%s-t%d", p.ID, round, n)}
					if _, err := s.CreateOrder(context.Background(), o, work, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "orders/s")
			if work > 0 {
				b.ReportMetric(rate/(conns*float64(time.Second)/float64(work)), "of_ceiling")
			}
		})
	}
}
