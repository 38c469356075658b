package bench

import (
	"fmt"
	"strings"
	"time"
)

// herdCapacityMarkdown says how the capacity was measured, every point of
// the sweep, and the order's noise at its lowest rate.
func herdCapacityMarkdown(c *HerdCapacity) string {
	var b strings.Builder
	if c.ByHand {
		fmt.Fprintf(&b, "**What the backend bears: %.1f/s, given by hand** (`-herd-capacity`), against an order's own latency of %.0f ms "+
			"(`-herd-own-latency`, or the order's work); nothing was swept.\n\n", c.Rate, ms(c.OwnLatency))
		return b.String()
	}
	fmt.Fprintf(&b, "**What the backend bears**: the highest fixed rate whose order p95 stays at or under %.1f× the order's own latency, "+
		"swept in this run before the modes. Each point is the spread + jitter schedule at a fixed rate (adaptive off), the herd's %d users, "+
		"for %v (users not served by then are counted apart, not as errors); its p95 is over the orders of that point. "+
		"The order's own latency is the order p50 at the lowest rate (%.0f%% of the %d connections × 1000/%d ms the pool bears on paper), "+
		"where no backlog forms: **%.0f ms**. Coarse steps of %.0f%% of that rate up from there until one fails, then bisection between "+
		"the last pass and the first fail down to %.0f%% of the rate. A rate that fails with its p50 within %.0f%% of the own latency (no backlog: a spike of the machine's) "+
		"is run again (\"again\") and fails only if it fails twice. The sweep took %v.\n\n",
		GoalCapacityP95, c.Users, c.RunFor, 100*herdSweepLowest, herdPool, herdOrderWork.Milliseconds(), ms(c.OwnLatency),
		100*herdSweepStep, 100*herdSweepResolution, 100*(herdSweepSpikeP50-1), c.Took.Round(time.Second))
	b.WriteString("| fixed rate | orders | not served in time | errors | p50 | p95 | p95 ÷ own latency | load average (1 min) | |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range c.Points {
		fmt.Fprintf(&b, "| %.2f/s%s | %d | %d | %d | %.0f ms | %.0f ms | %.2f× | %s | %s |\n", p.Rate, map[bool]string{true: ", again"}[p.Again], p.Orders, p.Unserved, p.Errors,
			ms(p.P50), ms(p.P95), p.P95Ratio, loadText(p.LoadMin, p.LoadMax), map[bool]string{true: "pass", false: "**fail**"}[p.Pass])
	}
	switch {
	case c.Rate == 0:
		b.WriteString("\n**Capacity: none measured**: not even the lowest rate kept its p95 within the bound (a loaded machine?).\n\n")
	case c.AtLeast:
		fmt.Fprintf(&b, "\n**Capacity: at least %.2f/s** (every coarse step passed).\n\n", c.Rate)
	default:
		fmt.Fprintf(&b, "\n**Capacity: %.2f/s.**\n\n", c.Rate)
	}
	if n := c.Noise; n != nil {
		fmt.Fprintf(&b, "The order's latency beyond its %v of work at the lowest rate (%d orders; the noise this machine adds, "+
			"for the deterministic simulation): p10 %.1f ms, p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms.\n\n",
			herdOrderWork, n.Orders, ms(n.P10), ms(n.P50), ms(n.P90), ms(n.P99), ms(n.Max))
	}
	return b.String()
}

// loadText is a load average's range, "—" where none was read.
func loadText(lo, hi float64) string {
	if hi == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f–%.1f", lo, hi)
}

// herdAgainstCapacityMarkdown is each mode read against the capacity and
// the burst, and issue 52's goals for the adaptive spread schedules.
func herdAgainstCapacityMarkdown(h *HerdReport) string {
	c := h.Capacity
	if c == nil || len(h.Modes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nEach mode against the capacity. **Time in line** is as lived (enter asked → READY received); **arrival to order** " +
		"adds the order (enter asked → order answered), per user; both p95 over the users who ordered. The sale took from the crowd's " +
		"arrival to the last user's answer. The load average is the machine's 1-minute figure, sampled every 2 s during the mode.\n\n")
	b.WriteString("| mode | capacity | rate settled at | settled ÷ capacity | order p95 | ÷ own latency | time in line p95 | arrival to order p95 | ÷ burst's | the sale took | load average (1 min) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range h.Modes {
		fmt.Fprintf(&b, "| %s | %.1f/s | %.1f/s | **%.0f%%** | %.0f ms | **%.2f×** | %.1f s | %.1f s | **%.2f×** | %.1f s | %s |\n",
			m.Mode.Name, c.Rate, m.SettledRate, 100*m.SettledToCapacity, ms(m.P95), m.P95ToOwnLatency,
			m.LineP95.Seconds(), m.ArrivalToOrderP95.Seconds(), m.ArrivalToOrderToBurst, m.Duration.Seconds(), loadText(m.LoadMin, m.LoadMax))
	}
	b.WriteString("\nGoals (issue 52), for the adaptive spread schedules:\n\n")
	for _, m := range h.Modes {
		if !m.Mode.Adaptive {
			continue
		}
		fmt.Fprintf(&b, "- %s: settles at ≥ %.0f%% of the capacity — %s (%.1f%%, %.1f/s of %.1f/s%s); "+
			"order p95 ≤ %.1f× the order's own latency — %s (%.2f×, %.0f ms of %.0f ms); "+
			"arrival-to-order p95 ≤ %.2f× the burst's — %s (%.2f×, %.1f s against %s).\n",
			m.Mode.Name, 100*GoalSettledToCapacity, met(c.Rate > 0 && m.SettledToCapacity >= GoalSettledToCapacity),
			100*m.SettledToCapacity, m.SettledRate, c.Rate, map[bool]string{true: ", the capacity a lower bound", false: ""}[c.AtLeast],
			GoalCapacityP95, met(c.OwnLatency > 0 && m.P95ToOwnLatency <= GoalCapacityP95), m.P95ToOwnLatency, ms(m.P95), ms(c.OwnLatency),
			GoalArrivalToOrderToBurst, met(m.ArrivalToOrderToBurst > 0 && m.ArrivalToOrderToBurst <= GoalArrivalToOrderToBurst),
			m.ArrivalToOrderToBurst, m.ArrivalToOrderP95.Seconds(), burstArrivalText(h))
	}
	return b.String()
}

// burstArrivalText is the burst's arrival-to-order p95, or why there is
// none to compare with.
func burstArrivalText(h *HerdReport) string {
	if m := h.Modes[0]; m.Mode.Name == HerdModes[0].Name {
		return fmt.Sprintf("%.1f s", m.ArrivalToOrderP95.Seconds())
	}
	return "no burst in this run"
}
