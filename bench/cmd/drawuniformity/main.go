// Command drawuniformity tests that a draw's order is uniform (issue 57,
// docs/draws.md "Uniformity"): -draws draws of the same -n participants,
// each from a fresh seed (crypto/rand), through the whole encoding (the
// participants' hash, the final seed, the keyed order), counted in the
// n×n table of how often each participant took each place. It prints
// Pearson's chi-square over the whole table, corrected for the table's
// fixed margins, with its degrees of freedom and p-value.
//
//	go run ./bench/cmd/drawuniformity                 # 10,000 draws of 1,000
//	go run ./bench/cmd/drawuniformity -draws 2000     # a quicker look
//
// Why one test on the whole table rather than a test per place with a
// Bonferroni correction: under a uniform order every cell's count is
// Binomial(draws, 1/n), and each draw is a permutation matrix, so every
// row and every column of the table sums to draws: the table's deviations
// live in an (n-1)²-dimensional space, and the covariance of a uniform
// permutation matrix is (I-J/n)⊗(I-J/n)/(n-1). Pearson's X² = Σ(O-E)²/E
// is then n/(n-1) times a chi-square of (n-1)² degrees of freedom, so
// X²·(n-1)/n is the statistic (without the factor the mean is off by
// n-1, 0.7 standard deviations at n = 1,000). One test sees every cell at
// once, a bias spread thinly over many places included; n tests with a
// Bonferroni correction each need a deviation n times less likely to be
// chance, and cannot add up small ones. The expected count per cell is
// draws/n = 10, above the 5 the chi-square approximation asks.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
)

func main() {
	draws := flag.Int("draws", 10_000, "draws")
	n := flag.Int("n", 1_000, "participants in each draw")
	workers := flag.Int("workers", runtime.NumCPU(), "draws at once")
	flag.Parse()
	if *draws < 1 || *n < 2 || *workers < 1 {
		fmt.Fprintln(os.Stderr, "drawuniformity: want -draws ≥ 1, -n ≥ 2, -workers ≥ 1")
		os.Exit(2)
	}
	start := time.Now()
	counts, err := table(*draws, *n, *workers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drawuniformity:", err)
		os.Exit(1)
	}
	x2, df := chiSquare(counts, *draws, *n)
	fmt.Printf("%d draws of %d participants in %s (%d workers, %d CPUs)\n", *draws, *n, time.Since(start).Round(time.Millisecond), *workers, runtime.NumCPU())
	fmt.Printf("chi-square %.1f, degrees of freedom %d, p-value %.4f (Wilson-Hilferty: %.4f)\n",
		x2, df, upperGamma(float64(df)/2, x2/2), wilsonHilferty(x2, float64(df)))
	lo, hi := slices.Min(counts), slices.Max(counts)
	fmt.Printf("cells: expected %.1f each, from %d to %d\n", float64(*draws)/float64(*n), lo, hi)
}

// table counts, over draws fresh seeds, how often participant i (the i-th
// id, ascending) took place j: counts[i*n+j].
func table(draws, n, workers int) ([]int32, error) {
	p := draw.NewParticipants([]byte("drawuniformity"))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = p.Of("uniformity", fmt.Sprint("user-", i)).ID
	}
	slices.Sort(ids)
	index := make(map[string]int, n)
	for i, id := range ids {
		index[id] = i
	}
	hash := draw.ParticipantsHash(ids)
	counts := make([]int32, n*n)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan struct{})
	for range workers {
		wg.Go(func() {
			local := make([]int32, n*n)
			for range next {
				order, err := draw.Order(draw.FinalSeed(draw.NewSeed(), hash, ""), ids)
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					continue
				}
				for place, id := range order {
					local[index[id]*n+place]++
				}
			}
			mu.Lock()
			for i, c := range local {
				counts[i] += c
			}
			mu.Unlock()
		})
	}
	for range draws {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	return counts, firstErr
}

// chiSquare is Pearson's statistic over the table, times (n-1)/n for its
// fixed margins (see the package doc), and its (n-1)² degrees of freedom.
func chiSquare(counts []int32, draws, n int) (float64, int) {
	e := float64(draws) / float64(n)
	x2 := 0.0
	for _, c := range counts {
		d := float64(c) - e
		x2 += d * d / e
	}
	return x2 * float64(n-1) / float64(n), (n - 1) * (n - 1)
}

// upperGamma is the regularized upper incomplete gamma function Q(a, x):
// the chi-square's p-value is Q(df/2, x2/2). A series below a+1, Lentz's
// continued fraction above, both in logarithms (a is some 500,000 here).
func upperGamma(a, x float64) float64 {
	if x <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	prefix := a*math.Log(x) - x - lg
	if x < a+1 {
		sum, term := 1/a, 1/a
		for k := 1.0; k < 1e7; k++ {
			term *= x / (a + k)
			sum += term
			if term < sum*1e-15 {
				break
			}
		}
		return 1 - math.Exp(prefix+math.Log(sum))
	}
	const tiny = 1e-300
	b := x + 1 - a
	c, d := 1/tiny, 1/b
	h := d
	for i := 1.0; i < 1e7; i++ {
		an := -i * (i - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := d * c
		h *= delta
		if math.Abs(delta-1) < 1e-15 {
			break
		}
	}
	return math.Exp(prefix + math.Log(h))
}

// wilsonHilferty is the chi-square's p-value by the Wilson-Hilferty normal
// approximation, a cross-check of upperGamma (exact to some 1e-6 at a
// million degrees of freedom).
func wilsonHilferty(x2, df float64) float64 {
	s := 2 / (9 * df)
	z := (math.Cbrt(x2/df) - (1 - s)) / math.Sqrt(s)
	return 0.5 * math.Erfc(z/math.Sqrt2)
}
