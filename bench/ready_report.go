package bench

import (
	"fmt"
	"strings"
	"time"
)

// readyMarkdown is the ready section of docs/benchmarks.md.
func readyMarkdown(r *ReadyReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%s; %d instances (processes) on one Redis, a queue at %g users/s (%d every %v) with `notifyOnReady`, "+
		"%s signed-in users arriving evenly over %v, each entering through one instance and polling through the next until READY; "+
		"every instance sends to one receiver, which verifies each signature and keeps each id once; load average %.1f → %.1f; %v in all.*\n\n",
		stamp, r.Instances, r.Rate, r.Batch, r.Interval, thousands(r.Users), r.Arrival, r.LoadBefore, r.LoadAfter, r.Duration.Round(time.Second))
	b.WriteString("| told READY | entry.ready taken | distinct ids | duplicates (dropped by id) | missing | strangers | refused | published (per instance) | lag p50 | lag p99 | lag max | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var per []string
	for _, n := range r.ByInstance {
		per = append(per, fmt.Sprintf("%.0f", n))
	}
	fmt.Fprintf(&b, "| %s | %s | %s | %d | **%d** | %d | %d | %.0f (%s) | %s | %s | %s | %d |\n\n",
		thousands(r.Admitted), thousands(r.Received), thousands(r.Unique), r.Duplicates, r.Missing, r.Strangers, r.Refused,
		r.Published, strings.Join(per, " + "), readyMs(r.LagP50), readyMs(r.LagP99), readyMs(r.LagMax), r.Errors)
	fmt.Fprintf(&b, "Every user told READY told to the shop, none missing, nothing unasked: %s.", met(r.Pass))
	if r.MissingSample != "" {
		fmt.Fprintf(&b, " A user missing: %s.", r.MissingSample)
	}
	if r.ErrorSample != "" {
		fmt.Fprintf(&b, " An error: %s.", r.ErrorSample)
	}
	b.WriteString(" The lag is from `at` (the tick's time by Redis's clock) to the receiver's taking the POST, on one machine.\n")
	return b.String()
}

func readyMs(d time.Duration) string { return fmt.Sprintf("%.0f ms", ms(d)) }
