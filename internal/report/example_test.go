package report_test

import (
	"fmt"
	"math"

	"github.com/waitroom/waitroom/internal/report"
)

// A store's histogram of waits, counts by bucket index with buckets 4.4%
// wide (Prometheus's schema 4), made the report's, and its median.
func ExampleExponential() {
	growth := math.Pow(2, 1.0/16)
	h := report.Exponential(growth, 2, map[int]int64{96: 5, 97: 3, 112: 1}) // 2 let in at once; 5 near 63 s, 3 near 66 s, 1 near 127 s
	median, _ := h.Quantile(0.5)
	fmt.Printf("%d waits, %d buckets, median %.0f s\n", h.Count(), len(h), median)
	// Output: 11 waits, 4 buckets, median 63 s
}
