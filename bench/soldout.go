package bench

// The sale, not only the line (issue 36): one product's stock sold to a
// crowd ten times larger, with admission capped by the stock
// (admitPerUnit 1) and without (admitPerUnit 0, the line before the cap).
// What it measures: whether anyone let in was refused for want of stock,
// whether the database sold exactly the stock, each unit once, and how soon
// those still waiting learnt that it was gone.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waitroom/waitroom/internal/identity"
)

// SoldOutReport is the sold-out section: the same sale run once per
// admitPerUnit, each on a fresh instance, queue and product.
type SoldOutReport struct {
	Users, Units int
	// Arrival: the users arrive evenly over it (a crowd at the opening of
	// a sale, some of whom come after the last unit is gone).
	Arrival   time.Duration
	Rate      float64 // admitted users/s (10 per 100 ms, jitter on)
	OrderWork time.Duration
	PoolSize  int
	Runs      []SoldOutRun
}

// SoldOutRun is one run of the sale.
type SoldOutRun struct {
	AdmitPerUnit float64
	// Users let in (answered READY), and of them refused by the order API
	// for want of stock (409 out_of_stock).
	Admitted, OutOfStock int
	// Newcomers refused 410 sold_out; users who held a place and were
	// answered SOLD_OUT.
	Refused, SawSoldOut int
	// What the database holds after the run, for the product: orders,
	// their distinct tokens, the units they bought, the stock left.
	Orders, Tokens  int
	Sold, UnitsLeft int64
	// Doubled: orders beyond one a token. Lost: orders a buyer was told of
	// (201) that the database lacks, plus any difference between the stock
	// taken and the units the orders bought (Units − UnitsLeft − Sold).
	Doubled, Lost int64
	// The last unit's order was seen sold LastSale after the first user
	// arrived (NoticeFrom says seen how); Waiting: the users in line then
	// and not yet let in.
	LastSale   time.Duration
	NoticeFrom string
	Waiting    int
	// Of those told SOLD_OUT: the time from LastSale to that answer, its
	// median and its maximum; the pollAfterSeconds the slowest was told
	// before it, and the largest any of them was told (0: none, their
	// first answer was held near the front until SOLD_OUT).
	NoticeP50, NoticeMax    time.Duration
	NoticeMaxPoll, MostPoll int64
	// Late: told later than the pollAfterSeconds they had been told, by
	// at most LateBy; LateTrip is the longest round trip of their SOLD_OUT
	// poll (the answer before it came before the last sale, so a poll sent
	// on time is late by no more than its round trip).
	Late                     int
	LateBy, LateTrip         time.Duration
	NeverTold                int // waiting at the last sale, never answered SOLD_OUT
	Errors, Retries          int
	ErrorSample, RetrySample string
	Duration                 time.Duration
}

// The sale's shape.
const (
	soldOutUsers   = 5000
	soldOutUnits   = 500
	soldOutArrival = 10 * time.Second
	soldOutRate    = 100
	// soldOutMostPoll is the longest a waiting user is told to wait
	// before asking again (pollAfter's 10 s, jittered by +20%): the
	// sold-out notice should reach everyone within it.
	soldOutMostPoll = 12 * time.Second
)

// soldOutPerUnit: admitPerUnit of each run, the cap first, then the line
// without it (the before figure).
var soldOutPerUnit = []float64{1, 0}

func runSoldOut(ctx context.Context, o Options) (*SoldOutReport, error) {
	rep := &SoldOutReport{Users: soldOutUsers, Units: soldOutUnits, Arrival: soldOutArrival, Rate: soldOutRate,
		OrderWork: herdOrderWork, PoolSize: herdPool}
	if o.Short {
		// Sold out in a second or two, before the last arrive (who are
		// refused); everyone in line is near the front, told at once.
		rep.Users, rep.Units, rep.Arrival = 200, 20, 3*time.Second
	}
	for _, perUnit := range soldOutPerUnit {
		o.logf("soldout: admitPerUnit %g, %d users for %d units", perUnit, rep.Users, rep.Units)
		run, err := soldOutRun(ctx, o, rep, perUnit)
		if err != nil {
			return rep, fmt.Errorf("admitPerUnit %g: %w", perUnit, err)
		}
		o.logf("soldout: admitPerUnit %g: %d admitted, %d out_of_stock, %d orders, %d left, %d doubled, %d lost; "+
			"last sale at %v, %d waiting then, told in p50 %v max %v; %d refused 410, %d errors, %v",
			perUnit, run.Admitted, run.OutOfStock, run.Orders, run.UnitsLeft, run.Doubled, run.Lost,
			run.LastSale.Round(time.Millisecond), run.Waiting,
			run.NoticeP50.Round(time.Millisecond), run.NoticeMax.Round(time.Millisecond), run.Refused, run.Errors,
			run.Duration.Round(time.Millisecond))
		rep.Runs = append(rep.Runs, run)
	}
	return rep, nil
}

// soldOutBuyer is one user of the sale: what the line and the order API
// answered, and when.
type soldOutBuyer struct {
	userOutcome
	// inLine: entering was answered 200 (held near the front, that answer
	// may already be READY or SOLD_OUT).
	inLine             bool
	readyAt, soldOutAt time.Time
	lastPoll           int64 // the pollAfterSeconds told before SOLD_OUT
	refused            bool  // 410 sold_out on entering
	token              string
	boughtAt           time.Time // the order's 201 arrived
	outOfStock         bool
}

func soldOutRun(ctx context.Context, o Options, rep *SoldOutReport, perUnit float64) (SoldOutRun, error) {
	run := SoldOutRun{AdmitPerUnit: perUnit}
	m, logs, err := bootShop(ctx, o, fmt.Sprintf("wrbench-soldout-%d", rand.Int64()), true)
	if err != nil {
		return run, err
	}
	defer m.Close()
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1024, MaxIdleConnsPerHost: 1024}}
	defer hc.CloseIdleConnections()
	c := &client{base: "http://" + m.Addr(), admin: "Bearer " + m.Config.AdminToken, poll: hc, order: hc}

	q := fmt.Sprintf("soldout-%d", rand.IntN(1e9))
	product := q + "-tee"
	st, body, _, err := c.do(ctx, hc, "PUT", "/admin/v1/queues/"+q, c.admin, map[string]any{
		"ratePerSecond": rep.Rate, "batchSize": 10, "intervalMs": 100, "capacity": rep.Users * 2,
		"tokenTtlSeconds": 600, "admitPerUnit": perUnit,
	})
	if err != nil || st != 200 {
		return run, fmt.Errorf("creating queue: %d %v %v", st, body, err)
	}
	// The product tells its queue the stock it starts with.
	st, body, _, err = c.do(ctx, hc, "PUT", "/admin/v1/products/"+product, c.admin, map[string]any{
		"name": "bench tee", "stock": rep.Units, "queue": q,
	})
	if err != nil || st != 200 && st != 201 {
		return run, fmt.Errorf("creating product: %d %v %v", st, body, err)
	}
	id := identity.New([]byte(m.Config.AuthSecret))

	// Bounded: the stock sells in Units/Rate seconds, and everyone left is
	// told at their next poll; a minute over that and the arrival.
	limit := rep.Arrival + time.Duration(float64(rep.Units)/rep.Rate*float64(time.Second)) + soldOutMostPoll + time.Minute
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	wait := fmt.Sprintf("?waitSeconds=%d", herdWaitSeconds) // as the page asks
	buyers := make([]soldOutBuyer, rep.Users)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range buyers {
		jwt := "Bearer " + id.SignJWT(fmt.Sprintf("%s-u%d", q, i), time.Hour)
		arrive := time.Duration(int64(rep.Arrival) * int64(i) / int64(rep.Users))
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-runCtx.Done():
				buyers[i].err = errors.New("time limit reached before arriving")
				return
			case <-time.After(time.Until(start.Add(arrive))):
			}
			buyers[i] = soldOutBuy(runCtx, c, wait, jwt, q, product)
		}()
	}
	wg.Wait()
	run.Duration = time.Since(start)
	if err := soldOutLedger(ctx, o, product, int64(rep.Units), buyers, start, &run); err != nil {
		return run, err
	}
	soldOutCount(buyers, &run)
	if run.ErrorSample != "" {
		if l := logs.First(); l != "" {
			run.ErrorSample += "; the server logged: " + l
		}
	}
	return run, nil
}

// soldOutBuy enters, polls as the page does (at pollAfterSeconds, held
// near the front) until READY, then buys one unit; it stops at its first
// SOLD_OUT, or at a 410 on entering.
func soldOutBuy(ctx context.Context, c *client, wait, jwt, q, product string) (b soldOutBuyer) {
	path := "/api/v1/queues/" + q + "/entries"
	st, body, err := c.doRetrying(ctx, &b.userOutcome, c.poll, "POST", path+wait, jwt, nil)
	for {
		now := time.Now()
		switch {
		case err != nil:
			b.err = err
			return b
		case st == http.StatusGone && !b.inLine && errorCode(body) == "sold_out":
			b.refused = true
			return b
		case st != http.StatusOK:
			b.err = fmt.Errorf("queue answer %d %v", st, body)
			return b
		}
		b.inLine = true
		switch body["status"] {
		case "READY":
			b.readyAt = now
			return soldOutOrder(ctx, c, jwt, product, body, b)
		case "SOLD_OUT":
			b.soldOutAt = now
			return b
		case "WAITING":
		default:
			b.err = fmt.Errorf("unexpected answer %v", body)
			return b
		}
		after, ok := body["pollAfterSeconds"].(float64)
		if !ok {
			b.err = fmt.Errorf("no pollAfterSeconds in %v", body)
			return b
		}
		b.lastPoll = int64(after)
		st, body, err = c.pollAgain(ctx, &b.userOutcome, after, path+"/me"+wait, jwt)
	}
}

// soldOutOrder buys one unit with the token of a READY answer.
func soldOutOrder(ctx context.Context, c *client, jwt, product string, ready map[string]any, b soldOutBuyer) soldOutBuyer {
	b.token, _ = ready["token"].(string)
	key := "soldout-" + b.token
	st, body, err := c.doRetrying(ctx, &b.userOutcome, c.order, "POST", "/api/v1/orders", jwt,
		map[string]any{"productId": product, "quantity": 1}, "X-Entry-Token", b.token, "Idempotency-Key", key)
	switch {
	case err != nil:
		b.err = err
	case st == http.StatusCreated || replayed(st, body, key):
		b.boughtAt = time.Now()
	case st == http.StatusConflict && errorCode(body) == "out_of_stock":
		b.outOfStock = true
	default:
		b.err = fmt.Errorf("order answer %d %v", st, body)
	}
	return b
}

// errorCode is the code of an API error body ({"error":{"code":…}}).
func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// soldOutLedger reads what the database sold of product: orders, distinct
// tokens, units, the stock left, and which order took the last unit (the
// highest id: ids are drawn under the product row's lock, so in the order
// the units were taken). The last sale's time is when its buyer saw the
// 201 (just after the commit); if that buyer saw none, the order's
// created_at (its transaction's start, before the order work and the
// commit).
func soldOutLedger(ctx context.Context, o Options, product string, units int64, buyers []soldOutBuyer, start time.Time, run *SoldOutRun) error {
	pg, err := pgx.Connect(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pg.Close(context.WithoutCancel(ctx))
	err = pg.QueryRow(ctx, `SELECT count(*), count(DISTINCT token), COALESCE(sum(quantity), 0),
			(SELECT stock FROM products WHERE id = $1) FROM orders WHERE product_id = $1`, product).
		Scan(&run.Orders, &run.Tokens, &run.Sold, &run.UnitsLeft)
	if err != nil {
		return fmt.Errorf("counting the orders: %w", err)
	}
	type sale struct {
		token string
		at    time.Time
	}
	var sales []sale
	var s sale
	rows, err := pg.Query(ctx, `SELECT token, created_at FROM orders WHERE product_id = $1 ORDER BY id`, product)
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&s.token, &s.at}, func() error { sales = append(sales, s); return nil })
	}
	if err != nil {
		return fmt.Errorf("reading the orders: %w", err)
	}
	sold := make(map[string]bool, len(sales))
	for _, s := range sales {
		sold[s.token] = true
	}
	run.Doubled = int64(run.Orders - run.Tokens)
	unaccounted := units - run.UnitsLeft - run.Sold
	run.Lost = max(unaccounted, -unaccounted)
	var lastSale time.Time
	if len(sales) > 0 {
		last := sales[len(sales)-1]
		lastSale, run.NoticeFrom = last.at, "the last order's created_at (its buyer saw no 201)"
		for _, b := range buyers {
			if b.token == last.token && !b.boughtAt.IsZero() {
				lastSale, run.NoticeFrom = b.boughtAt, "the last order's 201 at its buyer"
			}
		}
	}
	for _, b := range buyers {
		if !b.boughtAt.IsZero() && !sold[b.token] {
			run.Lost++
		}
	}
	if !lastSale.IsZero() {
		run.LastSale = lastSale.Sub(start)
		soldOutNotice(buyers, lastSale, run)
	}
	return nil
}

// soldOutNotice measures, for every user in line and not yet let in when
// the last unit sold, how long after it they were answered SOLD_OUT. Whoever
// entered was in line then: the order API tells the queue it is sold out
// before it answers the last order's 201, and from then on a newcomer is
// refused.
func soldOutNotice(buyers []soldOutBuyer, lastSale time.Time, run *SoldOutRun) {
	type told struct {
		after time.Duration
		poll  int64
	}
	var notices []told
	for _, b := range buyers {
		if !b.inLine || !b.readyAt.IsZero() && b.readyAt.Before(lastSale) {
			continue
		}
		run.Waiting++
		if b.soldOutAt.IsZero() {
			run.NeverTold++
			continue
		}
		after := b.soldOutAt.Sub(lastSale)
		if over := after - time.Duration(b.lastPoll)*time.Second; b.lastPoll > 0 && over > 0 {
			run.Late++
			run.LateBy = max(run.LateBy, over)
			if !b.polled.IsZero() {
				run.LateTrip = max(run.LateTrip, b.soldOutAt.Sub(b.polled))
			}
		}
		notices = append(notices, told{after, b.lastPoll})
		run.MostPoll = max(run.MostPoll, b.lastPoll)
	}
	if len(notices) == 0 {
		return
	}
	slices.SortFunc(notices, func(a, b told) int { return int(a.after - b.after) })
	run.NoticeP50 = notices[(len(notices)-1)/2].after
	slowest := notices[len(notices)-1]
	run.NoticeMax, run.NoticeMaxPoll = slowest.after, slowest.poll
}

// soldOutCount adds up what the users were answered.
func soldOutCount(buyers []soldOutBuyer, run *SoldOutRun) {
	for _, b := range buyers {
		run.Retries += b.retries
		if run.RetrySample == "" {
			run.RetrySample = b.retrySample
		}
		switch {
		case b.err != nil:
			run.Errors++
			if run.ErrorSample == "" {
				run.ErrorSample = b.err.Error()
			}
		case b.refused:
			run.Refused++
		case !b.soldOutAt.IsZero():
			run.SawSoldOut++
		}
		if !b.readyAt.IsZero() {
			run.Admitted++
		}
		if b.outOfStock {
			run.OutOfStock++
		}
	}
}
