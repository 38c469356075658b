package fairness

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The model's weakenings, each on a history small enough to read: allowed
// within its bound, refused beyond it.

func TestModelNoShows(t *testing.T) {
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	history := func(spec *Spec, sinceSeen time.Duration) []porcupine.Operation {
		return []porcupine.Operation{
			call(spec, Enter, "a", ms(0), ms(1), Output{State: Waiting, Position: 1, Length: 1}),
			call(spec, Enter, "b", ms(2), ms(3), Output{State: Waiting, Position: 2, Length: 2}),
			// b is let in while a, ahead, was away: a was a no-show, or
			// was let in first.
			call(spec, Status, "b", ms(20_000), ms(20_001), Output{State: Ready, Token: "tb"}),
			withSinceSeen(call(spec, Status, "a", ms(21_000), ms(21_001), Output{State: NotInQueue}), sinceSeen),
		}
	}
	for _, c := range []struct {
		name         string
		abandonAfter time.Duration
		sinceSeen    time.Duration
		want         porcupine.CheckResult
	}{
		{"away longer than abandonAfter: dropped", 15 * time.Second, 21 * time.Second, porcupine.Ok},
		{"seen within abandonAfter: not a no-show", 15 * time.Second, 5 * time.Second, porcupine.Illegal},
		{"no-shows not skipped", 0, 21 * time.Second, porcupine.Illegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := &Spec{Queue: "q", Capacity: 100, AbandonAfter: c.abandonAfter}
			v := Check(&History{Ops: history(spec, c.sinceSeen)}, 0, time.Minute, t.TempDir(), "no-show")
			if v.Result != c.want {
				t.Fatalf("check says %s %v; want %s", v.Result, v.Violations, c.want)
			}
		})
	}
}

func TestModelEnterSentTwice(t *testing.T) {
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		name      string
		mayRepeat bool
		want      porcupine.CheckResult
	}{
		// a's enter.lua ran at once (b, after, is counted behind a), its
		// reply was late, and its second run found a let in.
		{"sent twice: answered later than it joined", true, porcupine.Ok},
		{"sent once: joined and answered at one instant", false, porcupine.Illegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := &Spec{Queue: "q", Capacity: 100}
			a := call(spec, Enter, "a", ms(0), ms(400), Output{State: Ready, Token: "ta"})
			in := a.Input.(Input)
			in.MayRepeat = c.mayRepeat
			a.Input = in
			ops := []porcupine.Operation{a,
				call(spec, Enter, "b", ms(100), ms(101), Output{State: Waiting, Position: 2, Length: 2}),
				call(spec, Status, "b", ms(500), ms(501), Output{State: Waiting, Position: 1, Length: 1}),
			}
			v := Check(&History{Ops: ops}, 0, time.Minute, t.TempDir(), "enter")
			if v.Result != c.want {
				t.Fatalf("check says %s %v; want %s", v.Result, v.Violations, c.want)
			}
		})
	}
}

func call(spec *Spec, kind Kind, user string, at, ret int64, out Output) porcupine.Operation {
	return porcupine.Operation{Input: Input{Spec: spec, Kind: kind, User: user}, Call: at, Return: ret, Output: out}
}

func withSinceSeen(op porcupine.Operation, d time.Duration) porcupine.Operation {
	in := op.Input.(Input)
	in.SinceSeen = d
	op.Input = in
	return op
}

// The end state beside the model: the stock left is what the orders'
// answers say, within the ones of unknown outcome.
func TestStockAddsUp(t *testing.T) {
	spec := &Spec{Queue: "q", Capacity: 100}
	ops := []porcupine.Operation{
		call(spec, Order, "a", 0, 1, Output{Order: Bought}),
		call(spec, Order, "b", 2, 3, Output{Order: Kept}),
		call(spec, Order, "c", 4, infinity, Output{Unknown: true}),
	}
	for _, c := range []struct {
		name string
		left int64
		ok   bool
	}{
		{"the unknown order not made", stock - 1, true},
		{"the unknown order made", stock - 2, true},
		{"an order answered 201 lost", stock, false},
		{"a unit sold with no answer for it", stock - 3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{Ops: ops, Specs: []*Spec{spec}, StockLeft: map[string]int64{"q": c.left}}
			if got := stockAddsUp(h); (len(got) == 0) != c.ok {
				t.Fatalf("stockAddsUp says %q; want ok %v", got, c.ok)
			}
		})
	}
}
