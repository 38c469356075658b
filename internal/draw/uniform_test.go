package draw_test

import (
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/draw"
)

// TestOrderIsUniform: all 24 orders of four participants come up equally
// often over 24,000 draws, each from its own seed through the whole
// encoding (the participants' hash, the final seed, the keyed order):
// chi-square, 23 degrees of freedom, p > 0.01 below 41.64. The seeds come
// from a seeded source, so the test repeats; a real draw's from
// crypto/rand. (The table of 10,000 draws of 1,000 is
// bench/cmd/drawuniformity, too long for the test command.)
func TestOrderIsUniform(t *testing.T) {
	src := mrand.NewChaCha8([32]byte{1})
	ids := []string{"0a", "1b", "2c", "3d"}
	hash := draw.ParticipantsHash(ids)
	counts := map[string]int{}
	const draws = 24_000
	for range draws {
		var seed draw.Seed
		src.Read(seed[:])
		order, err := draw.Order(draw.FinalSeed(seed, hash, ""), ids)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(slices.Sorted(slices.Values(order)), ids) {
			t.Fatalf("the order %v lost or repeated participants", order)
		}
		counts[strings.Join(order, " ")]++
	}
	if len(counts) != 24 {
		t.Fatalf("%d orders seen, want 24", len(counts))
	}
	chi := 0.0
	for _, n := range counts {
		d := float64(n) - draws/24
		chi += d * d / (draws / 24)
	}
	if chi > 41.638 {
		t.Fatalf("chi-square %.2f: not uniform: %v", chi, counts)
	}
	t.Logf("chi-square %.2f over 23 degrees of freedom", chi)
}
