package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// The suite's part for what a queue has left to sell (Store.SetStock):
// sold out, restock, and admission capped by the stock.
func init() {
	register(
		suiteTest{"SoldOutStopsTheLineAndRestockResumesIt", testSoldOut},
		suiteTest{"AdmitPerUnitCapsLiveTokensByTheStock", testAdmitPerUnit},
		suiteTest{"SaleCountsOnlyLowerTheStock", testSaleCounts},
	)
}

// units is a known stock of n units; unknown, a stock nobody told.
func units(n int64) queue.Stock { return queue.Stock{Known: true, Units: n} }

var unknown = queue.Stock{}

// testSoldOut: once the stock is 0, nobody new takes a place (entering is
// ErrSoldOut, and so is knocking, from the stock in a newcomer's status
// answer; a quiet line lets nobody straight in), admission lets nobody
// in, whoever waits is told SOLD_OUT with a long poll and keeps their
// place, and whoever is READY stays so; a restock, with or without a
// count, gives everyone their place back where it was and admission goes
// on in line order.
func testSoldOut(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig()
	c.RatePerSecond, c.BatchSize = 1000, 1 // one a tick
	c.SoldOutPoll = 2 * time.Minute
	q := newQueue(t, s, c)
	svcLine := signals.New()
	svc := queue.NewService(s, 0, svcLine)
	op := operate.New(s, svcLine)
	for _, u := range []string{"a", "b", "c", "d"} {
		mustEnter(t, s, q, u)
	}
	if got := admitDue(t, s, clock, q, 1); len(got) != 1 || got[0] != "a" {
		t.Fatalf("the first tick admitted %v, want [a]", got)
	}
	if st, err := op.SetStock(ctx, q, units(0), false); err != nil || !st.SoldOut() {
		t.Fatalf("SetStock(0): %+v, %v; want sold out", st, err)
	}

	if _, err := svc.Enter(ctx, q, "late"); !errors.Is(err, queue.ErrSoldOut) {
		t.Fatalf("a newcomer while sold out: %v, want ErrSoldOut", err)
	}
	if v, err := svc.AdmitNow(ctx, q, "late"); err != nil || v.State != queue.NotInQueue {
		t.Fatalf("a newcomer let in at once while sold out: %+v, %v; want NOT_IN_QUEUE", v, err)
	}
	// Told before being asked to solve a challenge: from the stock in the
	// line's snapshot.
	if err := svc.RefusesNewcomers(ctx, q); !errors.Is(err, queue.ErrSoldOut) {
		t.Fatalf("RefusesNewcomers while sold out: %v, want ErrSoldOut", err)
	}
	if v, err := svc.Status(ctx, q, "a"); err != nil || v.State != queue.Ready {
		t.Fatalf("a, READY before the last unit went: %+v, %v; want READY still", v, err)
	}
	for _, u := range []string{"b", "c", "d"} {
		enter := func(ctx context.Context, q, u string) (queue.View, error) { return svc.Enter(ctx, q, u) }
		status := func(ctx context.Context, q, u string) (queue.View, error) { return svc.Status(ctx, q, u) }
		for _, call := range []func(context.Context, string, string) (queue.View, error){status, enter} {
			v, err := call(ctx, q, u)
			if err != nil || v.State != queue.SoldOut || v.PollAfterSeconds == nil || *v.PollAfterSeconds < 96 || *v.PollAfterSeconds > 144 {
				t.Fatalf("%s, waiting, while sold out: %+v, %v; want SOLD_OUT, asked back after the queue's 120 s ±20%%", u, v, err)
			}
		}
	}
	for range 5 {
		if a := tickDue(t, s, clock, q, 1); len(a.Admitted) != 0 {
			t.Fatalf("a tick while sold out admitted %v", a.Admitted)
		}
	}
	if st, err := s.Stats(ctx, q); err != nil || !st.Stock.SoldOut() || st.Length != 3 {
		t.Fatalf("stats while sold out: stock %+v, length %d, %v; want sold out, 3 waiting", st.Stock, st.Length, err)
	}

	for i, restock := range []queue.Stock{units(2), unknown} {
		if _, err := op.SetStock(ctx, q, restock, false); err != nil {
			t.Fatalf("restock %+v: %v", restock, err)
		}
		waiting := []string{"b", "c", "d"}[i:]
		for j, u := range waiting {
			v, err := svc.Status(ctx, q, u)
			if err != nil || v.State != queue.Waiting || v.Position != int64(j+1) {
				t.Fatalf("%s after restock %+v: %+v, %v; want waiting at %d, the place they had", u, restock, v, err, j+1)
			}
		}
		if got := admitDue(t, s, clock, q, 1); fmt.Sprint(got) != "["+waiting[0]+"]" {
			t.Fatalf("the first tick after restock %+v admitted %v, want [%s]", restock, got, waiting[0])
		}
		if i == 0 {
			if _, err := op.SetStock(ctx, q, units(0), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := svc.RefusesNewcomers(ctx, q); err != nil {
		t.Fatalf("RefusesNewcomers after restock: %v", err)
	}
	if _, err := svc.Enter(ctx, q, "late"); err != nil {
		t.Fatalf("a newcomer after restock: %v", err)
	}
	if _, err := op.SetStock(ctx, "no-such-queue", units(0), false); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("SetStock on an unknown queue: %v, want ErrQueueNotFound", err)
	}
}

// testAdmitPerUnit: with the stock known, admission keeps the live tokens
// at most units left × AdmitPerUnit; a sale (the stock and a token gone
// together) makes no room, a token given back does, and with AdmitPerUnit
// 0 or the stock not known only the rate holds people back. A user further
// back than the units left is told so (BeyondStock).
func testAdmitPerUnit(t *testing.T, s queue.Store, clock Clock) {
	ctx := context.Background()
	c := fastConfig() // 10 a tick
	q := newQueue(t, s, c)
	svcLine := signals.New()
	svc := queue.NewService(s, 0, svcLine)
	op := operate.New(s, svcLine)
	for i := range 20 {
		mustEnter(t, s, q, fmt.Sprintf("u%02d", i))
	}
	if _, err := op.SetStock(ctx, q, units(3), false); err != nil {
		t.Fatal(err)
	}
	if v, err := svc.Status(ctx, q, "u03"); err != nil || !v.BeyondStock {
		t.Fatalf("u03, 4th in line with 3 units left: %+v, %v; want beyondStock", v, err)
	}
	if v, err := svc.Status(ctx, q, "u02"); err != nil || v.BeyondStock {
		t.Fatalf("u02, 3rd in line with 3 units left: %+v, %v; want not beyondStock", v, err)
	}
	admitted := admitDue(t, s, clock, q, 10)
	if fmt.Sprint(admitted) != "[u00 u01 u02]" {
		t.Fatalf("with 3 units left at 1 entry a unit, a tick admitted %v, want [u00 u01 u02]", admitted)
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 0 {
		t.Fatalf("with 3 live entries for 3 units, a tick admitted %v", got)
	}

	// u00 buys: its token is spent and a unit goes, so the room stays 0.
	a, err := s.Status(ctx, q, "u00")
	if err != nil || a.State != queue.Ready {
		t.Fatalf("u00: %+v, %v", a, err)
	}
	if err := s.BeginUse(ctx, q, "u00", a.Token, "order", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := op.SetStock(ctx, q, units(2), true); err != nil {
		t.Fatal(err)
	}
	if err := s.EndUse(ctx, q, "u00", a.Token, "order", true); err != nil {
		t.Fatal(err)
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 0 {
		t.Fatalf("after a sale (2 units, 2 live entries), a tick admitted %v", got)
	}
	// u01 gives its entry back: one unit, one place.
	if _, err := s.Leave(ctx, q, "u01"); err != nil {
		t.Fatal(err)
	}
	if got := admitDue(t, s, clock, q, 10); fmt.Sprint(got) != "[u03]" {
		t.Fatalf("after an entry given back (2 units, 1 live entry), a tick admitted %v, want [u03]", got)
	}

	c.AdmitPerUnit = 2.5 // ⌊2 × 2.5⌋ = 5 live entries: 3 more
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if got := admitDue(t, s, clock, q, 10); fmt.Sprint(got) != "[u04 u05 u06]" {
		t.Fatalf("at 2.5 entries a unit, 2 units and 2 live entries, a tick admitted %v, want [u04 u05 u06]", got)
	}
	c.AdmitPerUnit = 0 // off: the rate alone
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 10 {
		t.Fatalf("with admitPerUnit 0, a tick admitted %v, want a whole batch", got)
	}
	c.AdmitPerUnit = 1
	if err := s.PutConfig(ctx, q, c); err != nil {
		t.Fatal(err)
	}
	if _, err := op.SetStock(ctx, q, unknown, false); err != nil {
		t.Fatal(err)
	}
	if got := admitDue(t, s, clock, q, 10); len(got) != 3 {
		t.Fatalf("with the stock not known, a tick admitted %v, want the 3 still waiting", got)
	}

	// A quiet line lets people straight in only under the cap too.
	quiet := newQueue(t, s, fastConfig())
	if _, err := op.SetStock(ctx, quiet, units(1), false); err != nil {
		t.Fatal(err)
	}
	if v, err := svc.AdmitNow(ctx, quiet, "x"); err != nil || v.State != queue.Ready {
		t.Fatalf("x, let in at once with 1 unit left and no live entry: %+v, %v; want READY", v, err)
	}
	if v, err := svc.AdmitNow(ctx, quiet, "y"); err != nil || v.State != queue.NotInQueue {
		t.Fatalf("y, let in at once with 1 unit left and 1 live entry: %+v, %v; want NOT_IN_QUEUE", v, err)
	}
}

// testSaleCounts: a count told with onlyLower (a sale's, which may arrive
// after a later sale's) lowers a known stock and never raises it, nor
// makes it unknown; one told without it (a restock) sets it.
func testSaleCounts(t *testing.T, s queue.Store, _ Clock) {
	ctx := context.Background()
	q := newQueue(t, s, fastConfig())
	for _, step := range []struct {
		set       queue.Stock
		onlyLower bool
		want      queue.Stock
	}{
		{units(7), true, units(7)}, // not known yet: set
		{units(5), false, units(5)},
		{units(6), true, units(5)},
		{unknown, true, units(5)},
		{units(3), true, units(3)},
		{units(10), false, units(10)},
		{unknown, false, unknown},
	} {
		got, err := s.SetStock(ctx, q, step.set, step.onlyLower)
		if err != nil || got != step.want {
			t.Fatalf("SetStock(%+v, onlyLower %v): %+v, %v; want %+v", step.set, step.onlyLower, got, err, step.want)
		}
		if st, err := s.Stats(ctx, q); err != nil || st.Stock != step.want {
			t.Fatalf("stats after SetStock(%+v, onlyLower %v): %+v, %v; want %+v", step.set, step.onlyLower, st.Stock, err, step.want)
		}
	}
}
