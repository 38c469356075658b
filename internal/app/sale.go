package app

// What watches the protected calls and the sale, and the orders (guardCalls).

import (
	"context"
	"fmt"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/order/postgres"
	"github.com/waitroom/waitroom/internal/order/sqlite"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/spend"
	"github.com/waitroom/waitroom/internal/telemetry"
)

// guardCalls sets up what watches the protected calls — an order, or a
// backend call through the gateway: the metrics, the adaptive rate that
// follows them, and the guard that spends tokens on them — and, for serve,
// the orders themselves.
func (m *Main) guardCalls(ctx context.Context) (*sale, error) {
	if m.Registry == nil {
		m.Registry = prometheus.NewRegistry()
		m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	s := &sale{telemetry: telemetry.New(m.Registry, lineReader{m.Queue, m.line.operate})}
	m.line.signals.Listen(signals.Listener{Moved: s.admitted})
	telemetry.RegisterStoreHealth(m.Registry, m.line.health.Last)
	telemetry.RegisterBreaker(m.Registry, m.line.breaker.OpenQueues)
	lockTTL := spend.DefaultLockTTL
	if m.Config.Proxy { // a use holds its lock for as long as the upstream may take
		lockTTL = max(lockTTL, m.Config.UpstreamTimeout+10*time.Second)
	}
	s.rates = admission.NewRateController(m.line.loopStore, m.Logger)
	s.guard = spend.NewGuard(m.line.store, lockTTL, func(c spend.Call) {
		s.telemetry.ProtectedCall(c.Queue, c.Took, c.Outcome)
		s.rates.Observe(c.Queue, c.Took, c.Waited, c.Held, c.Outcome.Overloaded())
	})
	if m.Config.Proxy { // gateway mode sells nothing itself: the shop's backend does
		return s, nil
	}
	return s, m.openOrders(ctx, s)
}

// openOrders opens the order database (PostgreSQL, or SQLite in the data
// directory) and the order service on it.
func (m *Main) openOrders(ctx context.Context, s *sale) (err error) {
	c := m.Config
	// Each Open returns a nil *Store on failure: kept only on success, so
	// an order store that is not nil is one that opened (closeStores).
	var opened order.Store
	if c.DatabaseURL != "" {
		opened, err = postgres.Open(ctx, c.DatabaseURL, c.DBPoolSize)
	} else {
		if err := os.MkdirAll(c.DataDir, 0o750); err != nil {
			return fmt.Errorf("--data-dir: %w", err)
		}
		opened, err = sqlite.Open(ctx, filepath.Join(c.DataDir, "waitroom.db"))
	}
	if err != nil {
		return fmt.Errorf("order database: %w", err)
	}
	s.orderStore = opened
	s.rates.SetPool(opened.Connections(), s.guard.Queued)
	payment := &order.FakePayment{FailureRate: c.PaymentFailureRate, Latency: c.PaymentLatency}
	m.Orders = order.NewService(s.orderStore, s.guard, payment, order.Config{Work: c.OrderWork,
		Degraded: func(q, user, token string) bool {
			ok := m.line.degraded.Accept(q, user, token)
			if ok {
				s.telemetry.Degraded("order")
			}
			return ok
		},
		TellStock: func(ctx context.Context, q string, st queue.Stock, onlyLower bool) error {
			_, err := m.line.operate.SetStock(ctx, q, st, onlyLower)
			return err
		},
		Placed: func(q string) {
			s.telemetry.OrderPlaced(q)
			s.pending.Ordered(q)
		}})
	// What each queue has left to sell, as the database has it now: a
	// restart, or a change made while no instance ran, shows at once.
	for _, q := range m.line.operate.KnownQueues(ctx) {
		m.Orders.TellStock(ctx, q, false)
	}
	return nil
}
