package memstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestLineMatchesModel checks rank, removal and popping against a plain
// slice over long random runs, through many compactions.
func TestLineMatchesModel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	l := newLine()
	var model []string
	ticket := int64(0)
	for step := range 200_000 {
		switch op := rnd.IntN(10); {
		case op < 5:
			ticket++
			u := fmt.Sprintf("u%d", ticket)
			l.push(u, ticket)
			model = append(model, u)
		case op < 6 && len(model) > 0:
			i := rnd.IntN(len(model))
			if !l.remove(model[i]) {
				t.Fatalf("step %d: remove(%s) = false", step, model[i])
			}
			model = append(model[:i:i], model[i+1:]...)
		case op < 10:
			n := rnd.IntN(8)
			got := popFront(l, n)
			want := model[:min(n, len(model))]
			if fmt.Sprint(got) != fmt.Sprint(want) && len(got)+len(want) > 0 {
				t.Fatalf("step %d: popFront(%d) = %v, want %v", step, n, got, want)
			}
			model = model[len(want):]
		}
		if l.len() != int64(len(model)) {
			t.Fatalf("step %d: len %d, want %d", step, l.len(), len(model))
		}
		if len(model) > 0 && step%97 == 0 {
			i := rnd.IntN(len(model))
			if r, ok := l.rank(model[i]); !ok || r != int64(i) {
				t.Fatalf("step %d: rank(%s) = %d,%v want %d", step, model[i], r, ok, i)
			}
			want, _ := l.ticket(model[i])
			if got, ok := l.ticketAt(int64(i)); !ok || got != want {
				t.Fatalf("step %d: ticketAt(%d) = %d,%v want %d", step, i, got, ok, want)
			}
		}
	}
	if len(l.users) > 4*len(model)+2048 {
		t.Fatalf("slots %d for %d users: the emptied front is not being dropped", len(l.users), len(model))
	}
}

// TestLinePlacesReservedTickets: an opening's users placed at tickets
// reserved below those of people who came later (an empty slot filled, or
// below the first slot) rank between those before and those after.
func TestLinePlacesReservedTickets(t *testing.T) {
	for _, before := range []int{0, 3} { // with and without people in line before the opening
		l := newLine()
		var want []string
		for i := 1; i <= before; i++ {
			u := fmt.Sprintf("b%d", i)
			l.push(u, int64(i))
			want = append(want, u)
		}
		reserved := int64(before + 1) // tickets reserved for four
		for i := range 3 {
			l.push(fmt.Sprintf("late%d", i), reserved+4+int64(i))
		}
		for i := range 4 {
			u := fmt.Sprintf("p%d", i)
			l.place(u, reserved+int64(i))
			want = append(want, u)
		}
		want = append(want, "late0", "late1", "late2")
		for i, u := range want {
			if r, ok := l.rank(u); !ok || r != int64(i) {
				t.Fatalf("before %d: rank(%s) = %d,%v want %d", before, u, r, ok, i)
			}
			tk, _ := l.ticket(u)
			if got, ok := l.ticketAt(int64(i)); !ok || got != tk {
				t.Fatalf("before %d: ticketAt(%d) = %d, want %d", before, i, got, tk)
			}
		}
		if got := popFront(l, len(want)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("before %d: popped %v, want %v", before, got, want)
		}
	}
}

// popFront reads and removes up to n users from the front, in order.
func popFront(l *line, n int) []string {
	var out []string
	for _, w := range l.front(0, int64(n)) {
		out = append(out, w.User)
		l.remove(w.User)
	}
	return out
}
