package order

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/spend"
)

// Payment charges for an order inside its transaction; an error rolls the
// order back and keeps the entry token.
type Payment interface {
	Charge(ctx context.Context, o Order) error
}

// Request is one attempt to buy.
type Request struct {
	UserID, ProductID, Token, IdempotencyKey string
	Quantity                                 int64
	// Bypassed: a --bypass rule let the request past the product's line
	// (staff, a monitor), so no entry token is spent and the call is not
	// reported to admission; Token is then only the order's one-time id,
	// which the orders table still takes once.
	Bypassed bool
}

// Validate reports bad input before anything is locked or written.
func (r Request) Validate() error {
	switch {
	case !isText(r.ProductID, 1, 128):
		return fmt.Errorf("%w: productId must be 1-128 printable characters", ErrInvalidOrder)
	case r.Quantity < 1 || r.Quantity > MaxQuantity:
		return fmt.Errorf("%w: quantity must be 1..%d", ErrInvalidOrder, MaxQuantity)
	case r.IdempotencyKey != "" && !isText(r.IdempotencyKey, 1, 128):
		return fmt.Errorf("%w: Idempotency-Key must be at most 128 printable characters", ErrInvalidOrder)
	}
	return nil
}

// ValidProductID reports whether id can name a product.
func ValidProductID(id string) bool { return isText(id, 1, 128) }

// isText accepts valid UTF-8 of min..max bytes with no control characters:
// anything else is bad input, and PostgreSQL would refuse a NUL anyway.
func isText(s string, min, max int) bool {
	if len(s) < min || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// Config tunes the order flow.
type Config struct {
	// Work is database time each order spends holding its connection (as
	// pg_sleep would): how the benchmark reproduces a 200 ms order.
	Work time.Duration
	// Degraded, if set, says whether an order may be taken on the token
	// without the line's store (--on-store-error admit: the token is the
	// user's degraded token for the product's queue and that queue's store
	// is away; degraded.Policy.Accept). Such an order spends nothing in the
	// store; the orders table still takes its token once.
	Degraded func(queue, user, token string) bool
	// TellStock, if set, tells a queue what it has left to sell
	// (operate.Operator.SetStock): after every sale and every refusal for
	// want of stock, as a sale's count (onlyLower), and after a product is
	// put or restocked, as it stands.
	TellStock func(ctx context.Context, queue string, st queue.Stock, onlyLower bool) error
	// Placed, if set, is told of each order created (not a replay), with
	// the queue that sells its product: the sale's funnel (issue 38).
	Placed func(queue string)
}

// Service places orders: one transaction (conditional stock decrement,
// unique token, payment) run as a use of the entry token (package spend:
// locked for this request alone, consumed on success, kept on failure).
type Service struct {
	store   Store
	guard   *spend.Guard
	payment Payment
	work    atomic.Int64 // Config.Work, changeable while serving (SetWork)
	// degraded is Config.Degraded (never nil).
	degraded func(queue, user, token string) bool
	// tellStock is Config.TellStock (never nil).
	tellStock func(ctx context.Context, queue string, st queue.Stock, onlyLower bool) error
	placed    func(queue string) // Config.Placed (never nil)
}

// NewService returns a Service.
func NewService(store Store, guard *spend.Guard, payment Payment, cfg Config) *Service {
	s := &Service{store: store, guard: guard, payment: payment, degraded: cfg.Degraded, tellStock: cfg.TellStock, placed: cfg.Placed}
	if s.placed == nil {
		s.placed = func(string) {}
	}
	if s.degraded == nil {
		s.degraded = func(string, string, string) bool { return false }
	}
	if s.tellStock == nil {
		s.tellStock = func(context.Context, string, queue.Stock, bool) error { return nil }
	}
	s.SetWork(cfg.Work)
	return s
}

// SetWork changes Config.Work for the orders that start from now on: how
// the benchmark makes the database slower in the middle of a run.
func (s *Service) SetWork(d time.Duration) { s.work.Store(int64(d)) }

// Place buys. replayed is true when the Idempotency-Key named an order that
// already exists: it is returned as it was, and nothing new happens.
func (s *Service) Place(ctx context.Context, r Request) (o Order, replayed bool, err error) {
	if err := r.Validate(); err != nil {
		return Order{}, false, err
	}
	if r.IdempotencyKey != "" {
		if o, ok, err := s.store.OrderByKey(ctx, r.UserID, r.IdempotencyKey); err != nil || ok {
			return replay(o, ok, err, r)
		}
	}
	p, err := s.store.Product(ctx, r.ProductID)
	if err != nil {
		return Order{}, false, err
	}
	q := queueOf(p)
	no := NewOrder{
		ProductID: r.ProductID, UserID: r.UserID, Quantity: r.Quantity,
		Token: r.Token, IdempotencyKey: r.IdempotencyKey,
	}
	if r.IdempotencyKey != "" {
		no.RequestFingerprint = Fingerprint(r.ProductID, r.Quantity)
	}
	var orderErr, useErr error
	create := func(ctx context.Context) spend.Outcome {
		o, orderErr = s.store.CreateOrder(ctx, no, time.Duration(s.work.Load()), s.payment.Charge)
		if orderErr == nil || errors.Is(orderErr, ErrOutOfStock) {
			// Before the token is spent (the guard does it once this
			// returns): the live entries never outnumber what admission's
			// cap counts as left to buy (queue.Config.AdmitPerUnit).
			s.TellStock(ctx, q, true)
		}
		return outcomeOf(orderErr)
	}
	// A degraded token is asked about before the store (whose breaker may
	// be open) and again after it failed (which opened it).
	degraded := func() bool {
		if !s.degraded(q, r.UserID, r.Token) {
			return false
		}
		create(ctx)
		return true
	}
	switch {
	case r.Bypassed:
		create(ctx)
	case degraded():
	default:
		useErr = s.guard.Use(ctx, spend.Token{Queue: q, User: r.UserID, Value: r.Token}, create)
		if errors.Is(useErr, queue.ErrUnavailable) && degraded() {
			useErr = nil
		}
	}
	err = cmp.Or(useErr, orderErr) // useErr: the order was never tried
	switch {
	case errors.Is(err, queue.ErrTokenInvalid) && r.IdempotencyKey != "",
		errors.Is(err, ErrTokenUsed) && r.IdempotencyKey != "",
		errors.Is(err, ErrDuplicateKey):
		// A retry with an Idempotency-Key can race the request it repeats:
		// it missed that order in the lookup above, then the first request
		// committed and consumed the token (the token is invalid now), or
		// both reached the database and the first won (the token or the key
		// is taken: a first try that timed out here may still commit in
		// the database, which is how a loaded run met it). Either way the
		// order its key names, if any, exists: answer with it.
		if prev, ok, lookErr := s.store.OrderByKey(ctx, r.UserID, r.IdempotencyKey); lookErr == nil && ok {
			return replay(prev, true, nil, r)
		}
	}
	if err != nil {
		return Order{}, false, err
	}
	s.placed(q)
	return o, false, nil
}

// replay answers a request whose Idempotency-Key names an existing order
// (found): with that order if the request asks for the same thing, else
// ErrIdempotencyKeyReused, as payment APIs answer a key sent again with
// another body.
func replay(prev Order, found bool, err error, r Request) (Order, bool, error) {
	if err != nil || !found {
		return prev, found, err
	}
	if prev.fingerprint() != Fingerprint(r.ProductID, r.Quantity) {
		return Order{}, false, fmt.Errorf("%w: key %q was first sent for %d × %q", ErrIdempotencyKeyReused,
			r.IdempotencyKey, prev.Quantity, prev.ProductID)
	}
	return prev, true, nil
}

// outcomeOf says how an order attempt ended for its token and for the
// database's health: a token the orders table already holds is spent,
// whatever Redis says (a failover may have resurrected it), so it is
// consumed now; the database failing or too slow is what admission must
// hear; anything else is the order's own refusal, and the token is kept.
func outcomeOf(err error) spend.Outcome {
	switch {
	case err == nil:
		return spend.Succeeded
	case errors.Is(err, ErrTokenUsed):
		return spend.Spent
	case errors.Is(err, context.DeadlineExceeded):
		return spend.TimedOut
	case errors.Is(err, ErrUnavailable):
		return spend.Failed
	case errors.Is(err, ErrOutOfStock), errors.Is(err, ErrPayment), errors.Is(err, ErrProductNotFound),
		errors.Is(err, ErrDuplicateKey), errors.Is(err, ErrInvalidOrder), errors.Is(err, context.Canceled):
		return spend.Refused
	}
	return spend.Failed
}

// TellStock tells queue what it has left to sell: the units of its
// products as committed, added up after the transaction (Store.UnitsLeft).
// Read after the commit, not inside it: two sales of a queue's last units
// of two products, each in its own transaction, each see the other's unit
// as still there under READ COMMITTED, so neither would see the queue sold
// out; whichever reads last after both commits sees 0. A sale's count may
// arrive after a later one's, so it is told as onlyLower. Telling is best
// effort: the order stands whatever the line's store says, and the next
// sale or refusal tells again.
func (s *Service) TellStock(ctx context.Context, q string, onlyLower bool) {
	n, ok, err := s.store.UnitsLeft(ctx, q)
	if err != nil || !ok {
		return
	}
	_ = s.tellStock(ctx, q, queue.Stock{Known: true, Units: n}, onlyLower) // best effort, as above
}

// Product returns a product; an id no product could have is simply not found.
func (s *Service) Product(ctx context.Context, id string) (Product, error) {
	if !ValidProductID(id) {
		return Product{}, ErrProductNotFound
	}
	return s.store.Product(ctx, id)
}

// PutProduct creates or restocks a product.
func (s *Service) PutProduct(ctx context.Context, p Product) (Product, error) {
	switch {
	case !ValidProductID(p.ID):
		return Product{}, fmt.Errorf("%w: product id must be 1-128 printable characters", ErrInvalidOrder)
	case !isText(p.Name, 1, 200):
		return Product{}, fmt.Errorf("%w: name must be 1-200 printable characters", ErrInvalidOrder)
	case p.Stock < 0 || p.Stock > MaxStock:
		return Product{}, fmt.Errorf("%w: stock must be 0..%d", ErrInvalidOrder, MaxStock)
	}
	if p.Queue != "" {
		if err := queue.ValidateQueueName(p.Queue); err != nil {
			return Product{}, fmt.Errorf("%w: %v", ErrInvalidOrder, err)
		}
	}
	before, err := s.store.Product(ctx, p.ID)
	if err != nil && !errors.Is(err, ErrProductNotFound) {
		return Product{}, err
	}
	got, err := s.store.PutProduct(ctx, p)
	if err == nil {
		s.TellStock(ctx, queueOf(got), false)
		if before.ID != "" && queueOf(before) != queueOf(got) { // moved: its old queue has less to sell
			s.TellStock(ctx, queueOf(before), false)
		}
	}
	return got, err
}

// queueOf is the queue that sells p.
func queueOf(p Product) string { return cmp.Or(p.Queue, queue.DefaultQueue) }

// MaxProductsPage bounds one page of Products.
const MaxProductsPage = 1000

// Products returns a page of at most limit products (1..MaxProductsPage)
// whose id sorts after `after`, each with its order count, and whether more
// follow.
func (s *Service) Products(ctx context.Context, after string, limit int) (page []ProductStats, more bool, err error) {
	switch {
	case limit < 1 || limit > MaxProductsPage:
		return nil, false, fmt.Errorf("%w: limit must be 1..%d", ErrInvalidOrder, MaxProductsPage)
	case after != "" && !ValidProductID(after):
		return nil, false, fmt.Errorf("%w: after must be 1-128 printable characters", ErrInvalidOrder)
	}
	// One more than asked tells whether another page follows.
	page, err = s.store.Products(ctx, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(page) > limit {
		return page[:limit], true, nil
	}
	return page, false, nil
}

// Restock adds add units (1..MaxStock) to a product's stock.
func (s *Service) Restock(ctx context.Context, id string, add int64) (Product, error) {
	switch {
	case !ValidProductID(id):
		return Product{}, ErrProductNotFound
	case add < 1 || add > MaxStock:
		return Product{}, fmt.Errorf("%w: quantity must be 1..%d", ErrInvalidOrder, MaxStock)
	}
	p, err := s.store.Restock(ctx, id, add)
	if err == nil {
		s.TellStock(ctx, queueOf(p), false)
	}
	return p, err
}

// FakePayment is the built-in payment step: it always succeeds unless
// configured to fail a share of charges or to take time, for tests and demos.
type FakePayment struct {
	FailureRate float64
	Latency     time.Duration

	mu  sync.Mutex
	rnd *rand.Rand
}

// Charge implements Payment.
func (p *FakePayment) Charge(ctx context.Context, _ Order) error {
	if p.Latency > 0 {
		select {
		case <-time.After(p.Latency):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if p.FailureRate <= 0 {
		return nil
	}
	p.mu.Lock()
	if p.rnd == nil {
		p.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	fail := p.rnd.Float64() < p.FailureRate
	p.mu.Unlock()
	if fail {
		return ErrPayment
	}
	return nil
}
