package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

func estimatesMarkdown(r *EstimatesReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "%d runs in %v. Each a shop on Redis and PostgreSQL (orders of %v on %d connections), a crowd arriving over time; "+
		"everyone keeps what their join's answer said and polls as the page does until READY; realised wait: the enter's request written → "+
		"admission (the READY answer's `expiresAt` less the token's lifetime). **Scored**: shown a point with `waitTimeKnown` true (or, on the "+
		"code before the issue, a point), and no unannounced event (the slowdown, the pause, the resume) between joining and admission.\n\n",
		len(r.Scenarios), r.Duration.Round(time.Second), herdOrderWork, herdPool)
	if r.Before != nil {
		fmt.Fprintf(&b, "**Before**: the same section on the code before the issue, run %s (%v).\n\n", r.Before.Date.Format("2006-01-02 15:04 UTC"),
			r.Before.Duration.Round(time.Second))
	}
	b.WriteString("| scenario | people (admitted, no-shows, errors) | scored | coverage (goal ≥ 90%) | realised ÷ point p50 (goal 0.9–1.1) | p90 | " +
		"the median person: low – point – high (high ÷ low) | wait p50 / point p50 | the first second's herd: scored, coverage, ÷ point p50 | before: ÷ point p50 / p90 (scored) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range r.Scenarios {
		s, f := e.Scored, e.First
		fmt.Fprintf(&b, "| %s | %d (%d, %d, %d) | %d | %s | %s | %.2f | %s | %v / %v | %d, %s, %.2f | %s |\n",
			e.Name, e.People, e.Admitted, e.Vanished, e.Errors, s.Count, estimatesCoverage(s, e.Ranged), estimatesRatio(s),
			s.RatioP90, estimatesMedianPerson(s), s.WaitP50.Round(100*time.Millisecond), s.PointP50.Round(time.Second),
			f.Count, estimatesCoverage(f, e.Ranged), f.RatioP50, r.before(e.Name))
	}
	b.WriteString("\nEveryone else, and every answer checked:\n\n")
	b.WriteString("| scenario | unannounced events (since the start) | apart: count, coverage, ÷ point p50 / p90 | not known at join, by reason | " +
		"WAITING at join without a point | WAITING answers: checked, unsound, without `waitTimeKnown` | while paused: said paused / anything else; after the resume: still said paused |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, e := range r.Scenarios {
		a := e.Apart
		paused := "–"
		if e.PauseAt > 0 {
			paused = fmt.Sprintf("%d / %d; %d of %d", e.PausedRight, e.PausedWrong, e.AfterUnknown, e.AfterResume)
		}
		apart := "0"
		if a.Count > 0 {
			apart = fmt.Sprintf("%d, %s, %.2f / %.2f", a.Count, estimatesCoverage(a, e.Ranged), a.RatioP50, a.RatioP90)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d, %d, %d | %s |\n", e.Name, estimatesEvents(e.Events),
			apart, estimatesReasons(e.Unknown), e.Unshown, e.Answers, e.Unsound, e.Unsaid, paused)
	}
	fmt.Fprintf(&b, "\nThe scored by when they joined (%v apart from the start): coverage, realised ÷ point p50 (count):\n\n", estimatesBucket)
	b.WriteString("| scenario | by joining time |\n|---|---|\n")
	for _, e := range r.Scenarios {
		var cells []string
		for i, g := range e.ByJoin {
			if g.Count == 0 {
				continue
			}
			from := time.Duration(i) * estimatesBucket
			cov := "–"
			if g.Ranged > 0 {
				cov = fmt.Sprintf("%.0f%%", 100*g.Coverage)
			}
			cells = append(cells, fmt.Sprintf("%v–%v: %s, %.2f (%d)", from, from+estimatesBucket, cov, g.RatioP50, g.Count))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", e.Name, strings.Join(cells, "; "))
	}
	b.WriteString("\nThe scenarios:\n\n")
	for _, e := range r.Scenarios {
		fmt.Fprintf(&b, "- **%s**: %s. Load average %.1f → %.1f, %v", e.Name, e.Described, e.LoadBefore, e.LoadAfter, e.Duration.Round(time.Second))
		if e.ErrorSample != "" {
			fmt.Fprintf(&b, "; first error: %s", e.ErrorSample)
		}
		if e.UnsoundSample != "" {
			fmt.Fprintf(&b, "; first unsound answer: %s", e.UnsoundSample)
		}
		if e.PausedSample != "" {
			fmt.Fprintf(&b, "; first answer while paused not saying so: %s", e.PausedSample)
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// estimatesCoverage is a group's coverage against the goal, or why none.
func estimatesCoverage(g EstimatesGroup, ranged bool) string {
	switch {
	case !ranged:
		return "no range shown"
	case g.Ranged == 0:
		return "–"
	}
	return fmt.Sprintf("%.1f%% of %d %s", 100*g.Coverage, g.Ranged, met(g.Coverage >= GoalEstimatesCoverage))
}

// estimatesRatio is a group's median ratio against the goal.
func estimatesRatio(g EstimatesGroup) string {
	if g.Count == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f %s", g.RatioP50, met(g.RatioP50 >= GoalEstimatesRatioLo && g.RatioP50 <= GoalEstimatesRatioHi))
}

// estimatesMedianPerson is the range shown to the median person by point.
func estimatesMedianPerson(g EstimatesGroup) string {
	switch {
	case g.Ranged == 0:
		return "–"
	case g.Low == 0:
		return fmt.Sprintf("%g – %g – %g s (low 0)", g.Low, g.Point, g.High)
	}
	return fmt.Sprintf("%g – %g – %g s (%.2f×)", g.Low, g.Point, g.High, g.Width)
}

func estimatesEvents(evs []EstimatesEvent) string {
	if len(evs) == 0 {
		return "none"
	}
	var s []string
	for _, ev := range evs {
		s = append(s, fmt.Sprintf("%s at %.1f s", ev.Name, ev.At.Seconds()))
	}
	return strings.Join(s, ", ")
}

func estimatesReasons(n map[string]int) string {
	if len(n) == 0 {
		return "0"
	}
	var s []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		s = append(s, fmt.Sprintf("%d %s", n[k], k))
	}
	return strings.Join(s, ", ")
}

// before is the scenario's figures in the run before the issue, if any.
func (r *EstimatesReport) before(name string) string {
	if r.Before == nil {
		return "–"
	}
	for _, e := range r.Before.Scenarios {
		if e.Name == name && e.Scored.Count > 0 {
			return fmt.Sprintf("%.2f / %.2f (%d)", e.Scored.RatioP50, e.Scored.RatioP90, e.Scored.Count)
		}
	}
	return "–"
}
