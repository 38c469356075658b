package bench

import (
	"fmt"
	"strings"
	"time"
)

// passFail is the verdict a check earned, in bold.
func passFail(ok bool) string {
	if ok {
		return "**PASS**"
	}
	return "**FAIL**"
}

func lanesMarkdown(r *LanesReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "One queue at %g/s (10 a tick of 100 ms), Redis store, lanes `members` (claim `%s=%s`) and `public`; "+
		"everyone polls as the page does (`pollAfterSeconds`, `?waitSeconds=%d`) until READY. Load average %.1f → %.1f (1 min). %v in all, %d errors",
		r.Rate, lanesMemberClaim, lanesMemberValue, herdWaitSeconds, r.LoadBefore, r.LoadAfter, r.Duration.Round(time.Second), r.Errors)
	if r.ErrorSample != "" {
		fmt.Fprintf(&b, " (first: %s)", r.ErrorSample)
	}
	fmt.Fprintf(&b, ", %d 503s retried.\n\n", r.Retries)
	fmt.Fprintf(&b, "Shares over the %d ticks at which both lanes had someone waiting:\n\n", r.Ticks)
	b.WriteString("| lane | share | people, arriving over | admitted (told / store) | admitted at those ticks | part of those ticks' admissions | ÷ share | within 5% |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, l := range r.Lanes {
		store := "–"
		if l.StoreAdmitted >= 0 {
			store = fmt.Sprint(l.StoreAdmitted)
		}
		within := l.Ratio > 0 && l.Ratio >= 1-r.SharesWithin && l.Ratio <= 1+r.SharesWithin
		fmt.Fprintf(&b, "| %s | %g | %d over %v | %d / %s | %d | %.3f | %.3f | %s |\n", l.Name, l.Share, l.People,
			l.Arrival, l.Admitted, store, l.InTicks, l.RateShare, l.Ratio, passFail(within))
	}
	fmt.Fprintf(&b, "\nPositions: %d WAITING answers, each checked against the same person's previous one; %d rose: %s",
		r.Answers, r.Rises, passFail(r.Rises == 0))
	if r.RiseSample != "" {
		fmt.Fprintf(&b, " (first: %s)", r.RiseSample)
	}
	fmt.Fprintf(&b, ". WAITING answers naming another lane than the person's: %d, %s. People whose READY answer named another lane (READY names one only when the store kept it): %d, %s",
		r.WrongLane, passFail(r.WrongLane == 0), r.ReadyWrongLane, passFail(r.ReadyWrongLane == 0))
	if r.WrongLaneSample != "" {
		fmt.Fprintf(&b, " (the first answer in the wrong lane: %s)", r.WrongLaneSample)
	}
	b.WriteString(".\n\n")
	b.WriteString("Estimates (realised wait, from the join's answer to admission, ÷ the `estimatedWaitSeconds` that answer showed):\n\n")
	b.WriteString("| lane | people shown an estimate | ratio p50 | ratio p90 | wait p50 | wait p90 | shown p50 |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, l := range r.Lanes {
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.2f | %v | %v | %v |\n", l.Name, l.Estimated, l.EstimateP50, l.EstimateP90,
			l.WaitP50.Round(100*time.Millisecond), l.WaitP90.Round(100*time.Millisecond), l.ShownP50.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "\nThe issue's bars (shares within 5%%, no position rose; no error, no WAITING answer in the wrong lane): %s.\n", passFail(r.Pass))
	return b.String()
}

func codesMarkdown(r *CodesReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "%d new single-use codes (`accesscode.New`) in one `POST /admin/v1/queues/{q}/codes`, %d rounds a store as JSON "+
		"and %[2]d as CSV (`code,lane,uses`), each into a fresh queue, against an instance process of its own; the time is the request's at the client.\n\n", r.Codes, r.Rounds)
	b.WriteString("| store | format, round (load) | time | added | MEMORY USAGE of the keys it made | used_memory before → after | Go heap before → after (after GC) | bytes a code |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Stores {
		for i, rd := range s.Rounds {
			keys, used := "–", "–"
			heap := int64(rd.HeapAfter) - int64(rd.HeapBefore)
			perCode := fmt.Sprintf("%.0f (heap)", float64(heap)/float64(max(rd.Added, 1)))
			if s.Store == "redis" {
				keys = fmt.Sprintf("%s (`%s`)", mib(rd.KeyBytes), strings.Join(rd.Keys, "`, `"))
				perCode = fmt.Sprintf("%.0f (keys)", float64(rd.KeyBytes)/float64(max(rd.Added, 1)))
				used = fmt.Sprintf("%s → %s (%+.1f MiB)", mib(rd.UsedBefore), mib(rd.UsedAfter), float64(rd.UsedAfter-rd.UsedBefore)/(1<<20))
			}
			fmt.Fprintf(&b, "| %s | %s %d (%.1f) | %v | %d | %s | %s | %s → %s (%+.1f MiB) | %s |\n", s.Store, rd.Format, i%r.Rounds+1, rd.Load,
				rd.Time.Round(time.Millisecond), rd.Added, keys, used, mib(int64(rd.HeapBefore)), mib(int64(rd.HeapAfter)),
				float64(heap)/(1<<20), perCode)
		}
	}
	b.WriteString("\n")
	for _, s := range r.Stores {
		fmt.Fprintf(&b, "- %s: the upload's median time %v as JSON, %v as CSV.\n", s.Store, s.Median.Round(time.Millisecond), s.MedianCSV.Round(time.Millisecond))
	}
	return b.String()
}

// mib is n bytes in MiB, one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
