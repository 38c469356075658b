package draw_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
)

// BenchmarkOpeningOf100000: what the draw adds to an opening of 100,000
// people, on one core: their ids, and the record drawn from them.
func BenchmarkOpeningOf100000(b *testing.B) {
	p := draw.NewParticipants([]byte("key"))
	users := make([]string, 100_000)
	for i := range users {
		users[i] = fmt.Sprintf("bench-user-%d", i)
	}
	c := draw.NewCommitted("sale", time.Now(), nil)
	b.Run("ids", func(b *testing.B) {
		for b.Loop() {
			p.IDs("sale", users)
		}
	})
	ids := p.IDs("sale", users)
	b.Run("draw", func(b *testing.B) {
		for b.Loop() {
			if _, err := draw.Draw(c, ids, nil, 1, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestIDsAreOf: the opening's batch of ids is Of's, person by person.
func TestIDsAreOf(t *testing.T) {
	p := draw.NewParticipants([]byte("key"))
	users := make([]string, 20_000) // more than one part per core
	for i := range users {
		users[i] = fmt.Sprintf("user-%d-é", i)
	}
	users[7] = ""
	for i, id := range p.IDs("sale", users) {
		if want := p.Of("sale", users[i]).ID; id != want {
			t.Fatalf("IDs[%d] = %s, Of says %s", i, id, want)
		}
	}
}
