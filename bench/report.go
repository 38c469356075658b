package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Goals of the benchmarks issue; the ratios are the claims.
const (
	GoalHerdP95Ratio = 0.40 // spread+jitter p95 ≤ 0.4 × burst p95 (the seed's 2.42/6.10)
	// Issue 52, against the capacity swept in the same run: the capacity
	// is the highest fixed rate whose order p95 ≤ GoalCapacityP95 × the
	// order's own latency; the adaptive spread schedules settle at ≥
	// GoalSettledToCapacity of it, with their order p95 within
	// GoalCapacityP95 × that latency and their arrival-to-order p95 ≤
	// GoalArrivalToOrderToBurst × the burst's.
	GoalCapacityP95           = 1.5
	GoalSettledToCapacity     = 0.95
	GoalArrivalToOrderToBurst = 1.10
	GoalEnterRatio            = 0.65
	GoalStatusRatio           = 0.85
	GoalAccuracyPct           = 2.0
	GoalBytesPerUser          = 150.0
	GoalLatencyAtScale        = 1.2
)

func met(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

// Write puts the report's sections into doc (between <!-- bench:NAME -->
// and <!-- /bench:NAME --> markers, appending a section without them) and
// its charts as SVG files into svgDir; links are relative to doc.
func Write(r *Report, doc, svgDir, command string) error {
	if err := os.MkdirAll(svgDir, 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(doc), svgDir)
	if err != nil {
		rel = svgDir
	}
	stamp := fmt.Sprintf("%s, %s, `%s`", r.Date.Format("2006-01-02 15:04 UTC"), r.Machine, command)
	if r.Short {
		stamp += " (short mode: a smoke test, not a measurement)"
	}
	svg := func(name, content string) (string, error) {
		return filepath.ToSlash(filepath.Join(rel, name)), os.WriteFile(filepath.Join(svgDir, name), []byte(content), 0o644)
	}
	sections := map[string]string{}
	if h := r.Herd; h != nil && len(h.Modes) == 0 {
		sections["herd"] = herdMarkdown(h, stamp, "", "", "") // the sweep alone (-herd-sweep-only): no mode to chart
	} else if h != nil {
		link, err := svg("bench-herd-latency.svg", herdLatencyChart(h))
		if err != nil {
			return err
		}
		link2, err := svg("bench-herd-busy.svg", herdBusyChart(h))
		if err != nil {
			return err
		}
		link3 := ""
		if h.Adaptive {
			if link3, err = svg("bench-herd-rate.svg", herdRateChart(h)); err != nil {
				return err
			}
		}
		reports := map[string]string{}
		for _, m := range h.Modes {
			if m.Sale != nil && len(m.Sale.HTML) > 0 {
				if reports[m.Mode.Name], err = svg(HerdReportFile(m.Mode.Name), string(m.Sale.HTML)); err != nil {
					return err
				}
			}
		}
		sections["herd"] = herdMarkdown(h, stamp, link, link2, link3) + herdSaleMarkdown(h, reports)
	}
	if d := r.Degrade; d != nil {
		link, err := svg("bench-degrade-latency.svg", degradeLatencyChart(d))
		if err != nil {
			return err
		}
		link2, err := svg("bench-degrade-rate.svg", degradeRateChart(d))
		if err != nil {
			return err
		}
		sections["degrade"] = degradeMarkdown(d, stamp, link, link2)
	}
	if n := r.NoShow; n != nil {
		sections["noshow"] = noShowMarkdown(n, stamp)
	}
	if so := r.SoldOut; so != nil {
		sections["soldout"] = soldOutMarkdown(so, stamp)
	}
	if h := r.Hot; h != nil {
		link := ""
		if h.Skipped == "" {
			if link, err = svg("bench-hot-paths.svg", hotChart(h)); err != nil {
				return err
			}
		}
		sections["hot"] = hotMarkdown(h, stamp, link)
	}
	if a := r.Accuracy; a != nil {
		link, err := svg("bench-admission.svg", accuracyChart(a))
		if err != nil {
			return err
		}
		sections["accuracy"] = accuracyMarkdown(a, stamp, link)
	}
	if m := r.Memory; m != nil {
		sections["memory"] = memoryMarkdown(m, stamp)
	}
	if g := r.Gateway; g != nil {
		sections["gateway"] = gatewayMarkdown(g, stamp)
	}
	if m := r.Million; m != nil {
		sections["million"] = millionMarkdown(m, stamp)
	}
	if f := r.Front; f != nil {
		sections["front"] = frontMarkdown(f, stamp)
	}
	if l := r.Lanes; l != nil {
		sections["lanes"] = lanesMarkdown(l, stamp)
	}
	if c := r.Codes; c != nil {
		sections["codes"] = codesMarkdown(c, stamp)
	}
	if e := r.Estimates; e != nil {
		sections["estimates"] = estimatesMarkdown(e, stamp)
	}
	if rd := r.Ready; rd != nil {
		sections["ready"] = readyMarkdown(rd, stamp)
	}
	text := ""
	if b, err := os.ReadFile(doc); err == nil {
		text = string(b)
	} else if !os.IsNotExist(err) {
		return err
	}
	for _, name := range []string{"herd", "degrade", "noshow", "soldout", "hot", "accuracy", "memory", "gateway", "million", "front", "lanes", "codes", "estimates", "ready"} {
		if body, ok := sections[name]; ok {
			text = putSection(text, name, body)
		}
	}
	if err := os.WriteFile(doc, []byte(text), 0o644); err != nil {
		return err
	}
	if r.Bots != nil {
		// The bots' figures are the threat model's evidence: they go into
		// security.md beside doc.
		return writeSection(filepath.Join(filepath.Dir(doc), "security.md"), "bots", botsMarkdown(r.Bots, stamp))
	}
	return nil
}

// putSection replaces the text between <!-- bench:NAME --> and <!--
// /bench:NAME --> with body, or appends the block without them.
func putSection(text, name, body string) string {
	begin, end := "<!-- bench:"+name+" -->", "<!-- /bench:"+name+" -->"
	block := begin + "\n" + body + end
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i >= 0 && j > i {
		return text[:i] + block + text[j+len(end):]
	}
	return text + "\n" + block + "\n"
}

// writeSection puts one section into the file at path.
func writeSection(path, name, body string) error {
	text := ""
	if b, err := os.ReadFile(path); err == nil {
		text = string(b)
	} else if !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, []byte(putSection(text, name, body)), 0o644)
}

var modeColors = []string{"#d62728", "#1f77b4", "#2ca02c"}

func herdMarkdown(h *HerdReport, stamp, chart, busyChart, rateChart string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "%d virtual users per mode, %v order work on %d PostgreSQL connections, %d products",
		h.Users, h.OrderWork, h.PoolSize, h.Products)
	if h.Adaptive && len(h.Modes) > 0 {
		fmt.Fprintf(&b, "; burst is the seed's baseline at its fixed rate, the spread schedules run with the adaptive rate "+
			"(`adaptive`, starting at and never above the configured %g/s, never below %d/s, `targetLatencyMs` %d)",
			h.Modes[0].Mode.Rate, herdMinRate, h.Target.Milliseconds())
	}
	b.WriteString(":\n\n")
	switch h.Clients {
	case HerdPage:
		fmt.Fprintf(&b, "Clients poll as the waiting page does (`-herd-clients page`): every `pollAfterSeconds`, with `?waitSeconds=%d`, so once admission is about to reach them the server holds the poll and answers the moment they are READY.\n\n", herdWaitSeconds)
	case HerdPolling:
		b.WriteString("Clients poll every `pollAfterSeconds` without `waitSeconds` (`-herd-clients polling`), so they learn READY only at their next poll.\n\n")
	}
	if h.Capacity != nil {
		b.WriteString(herdCapacityMarkdown(h.Capacity))
	}
	if len(h.Modes) == 0 {
		return b.String() // the sweep alone (-herd-sweep-only)
	}
	b.WriteString("| mode | schedule | orders | errors | 503s retried | p50 | p95 | p99 | max | most DB connections busy | rate settled at | p95 ÷ order work | p95 ÷ burst p95 |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range h.Modes {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %d of %d | %.1f/s | %.2f× | **%.2f×** |\n",
			m.Mode.Name, m.Mode.Described, m.Orders, m.Errors, m.Retries, ms(m.P50), ms(m.P95), ms(m.P99), ms(m.Max),
			m.MaxBusyConns, h.PoolSize, m.SettledRate, m.P95Ratio, m.RatioP95ToBurst)
	}
	last := h.Modes[len(h.Modes)-1]
	fmt.Fprintf(&b, "\nGoals: spread + jitter p95 ≤ %.2f× burst p95 (the seed's 2.42 s / 6.10 s) — %s (%.2f×)",
		GoalHerdP95Ratio, met(last.RatioP95ToBurst <= GoalHerdP95Ratio), last.RatioP95ToBurst)
	if h.Adaptive {
		fmt.Fprintf(&b, ". The adaptive rate settled at %.1f/s; `--order-latency %v` derives %g/s for the pool (%d connections × 1000/%d ms)",
			last.SettledRate, h.OrderWork, h.DerivedRate, h.PoolSize, h.OrderWork.Milliseconds())
	}
	b.WriteString(".\n")
	b.WriteString(herdAgainstCapacityMarkdown(h))
	b.WriteString("\nStatus requests:")
	for i, m := range h.Modes {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %d in %.0f s (%.0f/s)", sep, m.Mode.Name, m.StatusPolls, m.Duration.Seconds(), float64(m.StatusPolls)/m.Duration.Seconds())
	}
	b.WriteString(".\n")
	for _, m := range h.Modes {
		if m.Errors > 0 {
			fmt.Fprintf(&b, "\n%s: %d errors, the first: `%s`\n", m.Mode.Name, m.Errors, m.ErrorSample)
		}
		if m.Retries > 0 {
			fmt.Fprintf(&b, "\n%s: %d answers were 503 and asked again after their Retry-After (as the page does), the first: `%s`\n", m.Mode.Name, m.Retries, m.RetrySample)
		}
	}
	fmt.Fprintf(&b, "\n![order latency over time, one line per mode](%s)\n\n![DB connections busy over time](%s)\n\n", chart, busyChart)
	if rateChart != "" {
		fmt.Fprintf(&b, "![the admission rate in force over time, one line per mode](%s)\n\n", rateChart)
	}
	return b.String()
}

func herdRateChart(h *HerdReport) string {
	return herdChart(h, "The adaptive admission rate in force (sampled every 0.5 s)", "users / s",
		func(m HerdResult) []Point { return m.Rate })
}

func degradeMarkdown(d *DegradeReport, stamp, chart, rateChart string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "%d virtual users arrive at once, as in the herd (10 per 100 ms, jitter on, %d PostgreSQL connections); "+
		"each order's work steps from %v to %v %v into the run, which ends at %v. At a fixed %g/s, then with the adaptive rate "+
		"(ceiling %g/s, `targetLatencyMs` %d):\n\n",
		d.Users, herdPool, d.OrderWork, d.SlowWork, d.StepAt, d.RunFor, d.FixedRate, d.AdaptiveCeiling, d.Target.Milliseconds())
	b.WriteString("| run | orders | errors | still waiting at the end | p95 in the 10 s before the step | highest p95 in a second | p95 in the last 10 s | back within 1.5× the target | rate settled at |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range d.Runs {
		rec := "never"
		if r.Recovered >= 0 {
			rec = fmt.Sprintf("**%.1f s** after the step", r.Recovered.Seconds())
		}
		last := fmt.Sprintf("%.0f ms", ms(r.P95Last))
		if r.P95Last == 0 {
			last = "none finished" // the backlog outlasted the run
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.0f ms | %.0f ms | %s | %s | %.1f/s |\n",
			r.Name, r.Result.Orders, r.Result.Errors, r.Result.Unserved, ms(r.P95Before), ms(r.Peak), last, rec, r.Result.SettledRate)
	}
	if a := d.Runs[len(d.Runs)-1]; a.Recovered >= 0 {
		fmt.Fprintf(&b, "\nGoal: adaptive brings p95 back within 1.5× the target (%.0f ms) within 10 s of the step — %s (%.1f s).\n",
			1.5*ms(d.Target), met(a.Recovered <= 10*time.Second), a.Recovered.Seconds())
	} else {
		fmt.Fprintf(&b, "\nGoal: adaptive brings p95 back within 1.5× the target (%.0f ms) within 10 s of the step — %s (it did not).\n",
			1.5*ms(d.Target), met(false))
	}
	fmt.Fprintf(&b, "\n![order latency p95 per second, before and after the step](%s)\n\n![the admission rate in force](%s)\n\n", chart, rateChart)
	return b.String()
}

func degradeSeries(d *DegradeReport, points func(DegradeRun) []Point) []Series {
	var s []Series
	for i, r := range d.Runs {
		s = append(s, Series{Name: r.Name, Color: modeColors[i%len(modeColors)], Points: points(r)})
	}
	return s
}

func degradeLatencyChart(d *DegradeReport) string {
	return LineChart(fmt.Sprintf("Order latency p95 per second; work %v → %v at %v", d.OrderWork, d.SlowWork, d.StepAt),
		"seconds since the crowd arrived", "order latency p95 (ms)", degradeSeries(d, func(r DegradeRun) []Point { return r.P95PerSecond }))
}

func degradeRateChart(d *DegradeReport) string {
	return LineChart("The admission rate in force", "seconds since the crowd arrived", "users / s",
		degradeSeries(d, func(r DegradeRun) []Point { return r.Result.Rate }))
}

func noShowMarkdown(n *NoShowReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "%d virtual users arrive at once; %.0f%% of them enter and never come back (a closed tab). Admission at a fixed %g/s "+
		"(10 per 100 ms, jitter on); the present poll as the page does and order when let in:\n\n", n.Users, n.Share*100, n.Rate)
	b.WriteString("| run | no-shows | given a token all the same | skipped at admission | last present user let in after | orders | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range n.Runs {
		res := r.Result
		fmt.Fprintf(&b, "| %s | %d | **%d** | %d | **%.1f s** | %d | %d |\n",
			r.Name, res.Vanished, res.NoShowTokens, res.Abandoned, res.LastPresentReady.Seconds(), res.Orders, res.Errors)
	}
	if len(n.Runs) == 2 {
		off, on := n.Runs[0].Result, n.Runs[1].Result
		fmt.Fprintf(&b, "\nSkipping gave %d fewer tokens to no-shows (%.2f× as many) and let the last present user in %.1f s sooner (%.2f× the time).\n",
			off.NoShowTokens-on.NoShowTokens, float64(on.NoShowTokens)/float64(max(off.NoShowTokens, 1)),
			(off.LastPresentReady - on.LastPresentReady).Seconds(), on.LastPresentReady.Seconds()/max(off.LastPresentReady.Seconds(), 0.001))
	}
	b.WriteString("\n")
	return b.String()
}

// pollTold is a pollAfterSeconds told before SOLD_OUT, or that none was.
func pollTold(secs int64) string {
	if secs == 0 {
		return "none: held until told"
	}
	return fmt.Sprintf("%d s", secs)
}

func soldOutMarkdown(so *SoldOutReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "%d units of one product, %d virtual users who each want one, arriving evenly over %g s; admission at a fixed %g/s "+
		"(10 per 100 ms, jitter on), %d ms order work on %d PostgreSQL connections. Users poll as the waiting page does, buy one unit "+
		"with their token once READY, and stop at their first SOLD_OUT. Each run on a fresh instance, queue and product:\n\n",
		so.Units, so.Users, so.Arrival.Seconds(), so.Rate, so.OrderWork.Milliseconds(), so.PoolSize)
	b.WriteString("| |")
	sep := "|---|"
	for _, r := range so.Runs {
		name := fmt.Sprintf("admitPerUnit %g", r.AdmitPerUnit)
		if r.AdmitPerUnit == 0 {
			name += " (no cap: before)"
		}
		b.WriteString(" " + name + " |")
		sep += "---|"
	}
	b.WriteString("\n" + sep + "\n")
	row := func(what string, cell func(SoldOutRun) string) {
		b.WriteString("| " + what + " |")
		for _, r := range so.Runs {
			b.WriteString(" " + cell(r) + " |")
		}
		b.WriteString("\n")
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	row("admitted users answered 409 out_of_stock", func(r SoldOutRun) string { return fmt.Sprintf("**%d**", r.OutOfStock) })
	row(fmt.Sprintf("orders in the database (of %d units)", so.Units), func(r SoldOutRun) string { return fmt.Sprint(r.Orders) })
	row("units left in the database", func(r SoldOutRun) string { return fmt.Sprint(r.UnitsLeft) })
	row("orders doubled (two on one token) / lost", func(r SoldOutRun) string { return fmt.Sprintf("%d / %d", r.Doubled, r.Lost) })
	row("the last unit sold, after the first user arrived", func(r SoldOutRun) string { return secs(r.LastSale) })
	row("users in line, not yet let in, when the last unit sold", func(r SoldOutRun) string { return fmt.Sprint(r.Waiting) })
	row("their SOLD_OUT notice after the last sale: p50", func(r SoldOutRun) string { return secs(r.NoticeP50) })
	row("p100 (the pollAfterSeconds that user was told before)", func(r SoldOutRun) string {
		return fmt.Sprintf("**%s** (%s)", secs(r.NoticeMax), pollTold(r.NoticeMaxPoll))
	})
	row("largest pollAfterSeconds any of them was told", func(r SoldOutRun) string { return pollTold(r.MostPoll) })
	row("of them told later than their own pollAfterSeconds: by at most (that poll's longest round trip)", func(r SoldOutRun) string {
		return fmt.Sprintf("%d: %.0f ms (%.0f ms)", r.Late, ms(r.LateBy), ms(r.LateTrip))
	})
	row("of them never told SOLD_OUT (let in after the last sale)", func(r SoldOutRun) string { return fmt.Sprint(r.NeverTold) })
	row("users admitted (READY)", func(r SoldOutRun) string { return fmt.Sprint(r.Admitted) })
	row("users who saw SOLD_OUT", func(r SoldOutRun) string { return fmt.Sprint(r.SawSoldOut) })
	row("newcomers refused 410 sold_out", func(r SoldOutRun) string { return fmt.Sprint(r.Refused) })
	row("errors / 503s retried", func(r SoldOutRun) string { return fmt.Sprintf("%d / %d", r.Errors, r.Retries) })
	row("wall time", func(r SoldOutRun) string { return secs(r.Duration) })
	if len(so.Runs) > 0 {
		fmt.Fprintf(&b, "\nThe notice is timed from %s, to the user's first SOLD_OUT answer.\n", so.Runs[0].NoticeFrom)
	}
	for _, r := range so.Runs {
		whole := r.Orders == so.Units && r.UnitsLeft == 0 && r.Doubled == 0 && r.Lost == 0
		// Within one poll: the longest anyone was told to wait, and never
		// past the longest the line tells (0: every notice came on a held
		// request, which answers as soon as it knows).
		bound := soldOutMostPoll
		if r.MostPoll > 0 {
			bound = min(bound, time.Duration(r.MostPoll)*time.Second)
		}
		fmt.Fprintf(&b, "\nadmitPerUnit %g: the stock sold whole, each unit once — %s; everyone waiting told within one poll "+
			"(p100 ≤ %g s: the largest pollAfterSeconds told, at most %g s) — %s", r.AdmitPerUnit, met(whole),
			bound.Seconds(), soldOutMostPoll.Seconds(), met(r.NoticeMax <= bound))
		if r.AdmitPerUnit > 0 {
			fmt.Fprintf(&b, "; nobody let in refused for want of stock — %s", met(r.OutOfStock == 0))
		}
		b.WriteString(".\n")
		if r.Errors > 0 {
			fmt.Fprintf(&b, "\nadmitPerUnit %g: %d errors, the first: `%s`\n", r.AdmitPerUnit, r.Errors, r.ErrorSample)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// bucketed turns (x, y) samples into one point per width of x: the given
// percentile (or the max when p is 100) of the ys in it.
func bucketed(pts []Point, width, p float64) []Point {
	buckets := map[int][]float64{}
	top := 0
	for _, q := range pts {
		k := int(q.X / width)
		buckets[k] = append(buckets[k], q.Y)
		top = max(top, k)
	}
	var out []Point
	for k := 0; k <= top; k++ {
		ys := buckets[k]
		if len(ys) == 0 {
			continue
		}
		slices.Sort(ys)
		i := int(math.Ceil(p/100*float64(len(ys)))) - 1
		out = append(out, Point{(float64(k) + 0.5) * width, ys[max(0, min(i, len(ys)-1))]})
	}
	return out
}

func herdLatencyChart(h *HerdReport) string {
	return herdChart(h, fmt.Sprintf("Order latency, p95 of the orders started in each second (%d users)", h.Users),
		"order latency p95 (ms)", func(m HerdResult) []Point { return bucketed(m.Latency, 1, 95) })
}

func herdBusyChart(h *HerdReport) string {
	return herdChart(h, fmt.Sprintf("Order connections busy in pg_sleep (most per 0.5 s, pool %d)", h.PoolSize),
		"connections", func(m HerdResult) []Point { return bucketed(m.Busy, 0.5, 100) })
}

// herdChart draws one line per mode over the seconds since the crowd arrived.
func herdChart(h *HerdReport, title, yLabel string, points func(HerdResult) []Point) string {
	var s []Series
	for i, m := range h.Modes {
		s = append(s, Series{Name: m.Mode.Name, Color: modeColors[i%len(modeColors)], Points: points(m)})
	}
	return LineChart(title, "seconds since the crowd arrived", yLabel, s)
}

func hotMarkdown(h *HotReport, stamp, chart string) string {
	var b strings.Builder
	if h.Skipped != "" {
		fmt.Fprintf(&b, "%s\n\nSkipped: %s.\n\n", stamp, h.Skipped)
		return b.String()
	}
	fmt.Fprintf(&b, "%s\n\n`wrk -t%d -c%d -d%v`, %d users (each request a different user with its own HS256 JWT), a paused queue:\n\n",
		stamp, h.Threads, h.Conns, h.Duration, h.Users)
	b.WriteString("| scenario | req/s | p50 | p99 | non-2xx | ratio to bare |\n|---|---|---|---|---|---|\n")
	for i, r := range h.Runs {
		name := r.Name + " (`" + r.Method + " " + r.Path + "`)"
		ratio := "—"
		if r.Name != "bare" {
			ratio = fmt.Sprintf("**%.2f×**", r.RatioToBare)
		} else if i == 0 {
			name += ", before"
		} else {
			name += ", after"
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.2f ms | %.2f ms | %d | %s |\n", name, r.ReqPerSec, r.P50, r.P99, r.Non2xx+r.Errors, ratio)
	}
	fmt.Fprintf(&b, "\nRatios are to the mean of the two bare runs (%.0f req/s). Goals: enter ≥ %.2f× — %s (%.2f×); status ≥ %.2f× — %s (%.2f×).\n",
		h.BareMean, GoalEnterRatio, met(h.EnterRatio >= GoalEnterRatio), h.EnterRatio,
		GoalStatusRatio, met(h.StatusRatio >= GoalStatusRatio), h.StatusRatio)
	if n := h.FromSnapshot + h.FromStore; n > 0 {
		fmt.Fprintf(&b, "\nBefore the status run every user is in line (those the enter run did not reach are entered through the same instance). Status answers: %d from the snapshot of the line (%.1f%%), %d from Redis (`waitroom_status_answers_total`).\n",
			h.FromSnapshot, 100*float64(h.FromSnapshot)/float64(n), h.FromStore)
	}
	if chart != "" {
		fmt.Fprintf(&b, "\n![req/s of each scenario](%s)\n", chart)
	}
	for _, name := range []string{"enter", "status"} {
		if p := h.Profiles[name]; p != "" {
			fmt.Fprintf(&b, "\n<details><summary>Server CPU profile under the %s load (top 30, cumulative)</summary>\n\n```\n%s\n```\n</details>\n", name, p)
		}
	}
	b.WriteString("\n")
	return b.String()
}

func hotChart(h *HotReport) string {
	var labels, notes []string
	var vals []float64
	for i, r := range h.Runs {
		l := r.Name
		if r.Name == "bare" {
			l += map[bool]string{true: " (before)", false: " (after)"}[i == 0]
			notes = append(notes, "")
		} else {
			notes = append(notes, fmt.Sprintf("%.2f× bare", r.RatioToBare))
		}
		labels, vals = append(labels, l), append(vals, r.ReqPerSec)
	}
	return BarChart(fmt.Sprintf("Hot paths, wrk -c%d, req/s", h.Conns), "req/s", labels, vals, notes)
}

func accuracyMarkdown(a *AccuracyReport, stamp, chart string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nAdmitted users counted by Redis (`admittedTotal`) over %v after a %v warm-up, a line longer than the window drains:\n\n", stamp, a.Window, a.WarmUp)
	b.WriteString("| admitting instances | configured | per tick | admitted | measured | error |\n|---|---|---|---|---|---|\n")
	worst := 0.0
	for _, r := range a.Runs {
		fmt.Fprintf(&b, "| %d | %g/s | %s | %d | %.2f/s | **%+.2f%%** |\n", r.Instances, r.Configured, r.PerTick, r.Admitted, r.Measured, r.ErrorPct)
		worst = math.Max(worst, math.Abs(r.ErrorPct))
	}
	fmt.Fprintf(&b, "\nGoal: within ±%.0f%% — %s (worst %.2f%%).\n\n![admitted per second](%s)\n\n", GoalAccuracyPct, met(worst <= GoalAccuracyPct), worst, chart)
	return b.String()
}

func accuracyChart(a *AccuracyReport) string {
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"}
	var s []Series
	for i, r := range a.Runs {
		s = append(s, Series{Name: fmt.Sprintf("%g/s, %d inst.", r.Configured, r.Instances), Color: colors[i%len(colors)],
			Points: r.PerSecond, Dashed: r.Instances > 1})
	}
	return LineChart("Admitted per second, configured 100/s and 37/s", "seconds", "users admitted in that second", s)
}

func memoryMarkdown(m *MemoryReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nRedis `used_memory` growth over the empty queue, %d-byte user ids, filled through the store's enter script on an auto-pipelined client (%.0f users/s):\n\n", stamp, m.UserIDLen, m.FillRate)
	b.WriteString("| waiting | used_memory growth | bytes per waiting user |\n|---|---|---|\n")
	worst := 0.0
	for _, p := range m.Points {
		fmt.Fprintf(&b, "| %d | %.1f MB | **%.1f B** |\n", p.Waiting, float64(p.UsedBytes)/1e6, p.BytesPerUser)
		worst = math.Max(worst, p.BytesPerUser)
	}
	fmt.Fprintf(&b, "\nStore-level `Enter` of a new user, one caller, one round trip each:\n\n| waiting | calls | p50 | p99 |\n|---|---|---|---|\n")
	for _, l := range m.Latency {
		fmt.Fprintf(&b, "| %d | %d | %s | %s |\n", l.Waiting, l.Calls, us(l.P50), us(l.P99))
	}
	fmt.Fprintf(&b, "\nGoals: ≤ %.0f B per waiting user — %s (worst %.1f B); enter at the long line ≤ %.1f× the short one — %s (p50 %.2f×, p99 %.2f×).\n\n",
		GoalBytesPerUser, met(worst <= GoalBytesPerUser), worst, GoalLatencyAtScale,
		met(m.LatencyRatio <= GoalLatencyAtScale), m.LatencyRatio, m.P99Ratio)
	return b.String()
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func gatewayMarkdown(g *GatewayReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run: %s.\n\n", stamp)
	if g.Skipped != "" {
		fmt.Fprintf(&b, "Skipped: %s.\n", g.Skipped)
		return b.String()
	}
	fmt.Fprintf(&b, "Panics in waitroom's log during the section: %d.\n\n", g.Panics)
	nginx := "nginx " + g.Nginx
	if g.NginxSkipped != "" {
		nginx = "nginx (skipped: " + g.NginxSkipped + ")"
	}
	fmt.Fprintf(&b, "wrk -t%d -c%d -d%s, %d rounds, against a small Go upstream (a 1 KB page) on loopback: directly; through "+
		"a bare Go `httputil.ReverseProxy` (waitroom's transport and buffer pool, nothing else); through `waitroom proxy` "+
		"(line on Redis; %d users each with a valid entry) as written, spelt oddly and session-protected; through %s "+
		"(`proxy_pass`, upstream `keepalive 64`, 2 workers); through nginx + `auth_request` and Caddy + `forward_auth` forwarding "+
		"themselves while waitroom decides (deploy/nginx-auth-request.conf and deploy/Caddyfile as shipped, unprotected and "+
		"session-protected); each round starts one further along that list. All on the same 2 cores. "+
		"First the upstream answers at once (the proxies' own cost, worst case: their CPU competes with the upstream's and wrk's), "+
		"then under `/slow/` it takes %v per request first, as a shop's page does:\n\n",
		g.Threads, g.Conns, g.Duration, g.Rounds, g.Users, nginx, g.UpstreamWork)
	perf, perfSep := "", ""
	if g.Perf {
		perf, perfSep = " the proxy's own system calls, context switches per request |", "---|"
	}
	b.WriteString("| upstream | run | req/s | p50 | p99 | ÷ upstream directly | ÷ bare Go proxy | CPU per request (in the kernel) | the proxy's own (in the kernel) |" +
		perf + " non-2xx | errors |\n|---|---|---|---|---|---|---|---|---|" + perfSep + "---|---|\n")
	for _, set := range []struct {
		name string
		set  GatewaySet
	}{{"answers at once", g.Fast}, {fmt.Sprintf("takes %v", g.UpstreamWork), g.Slow}} {
		for _, r := range set.set.Rows {
			own, calls := "—", ""
			d := set.set.Direct
			if r.Name != gwDirect {
				own = fmt.Sprintf("%.1f µs (%.1f)", r.CPUPerRequest-d.CPUPerRequest, r.SysCPUPerRequest-d.SysCPUPerRequest)
			}
			if g.Perf {
				calls = " — |"
				if r.Name != gwDirect {
					calls = fmt.Sprintf(" %.2f, %.2f |", r.SyscallsPerRequest-d.SyscallsPerRequest, r.SwitchesPerRequest-d.SwitchesPerRequest)
				}
			}
			fmt.Fprintf(&b, "| %s | %s `GET %s` | %.0f | %.2f ms | %.2f ms | %.2f | **%.2f** | %.1f µs (%.1f) | %s |%s %d | %d |\n",
				set.name, r.Name, r.Path, r.ReqPerSec, r.P50, r.P99, r.ToDirect, r.ToBare,
				r.CPUPerRequest, r.SysCPUPerRequest, own, calls, r.Non2xx, r.Errors)
		}
	}
	b.WriteString("\nCPU per request: the CPU time of the harness's process (the upstream, the bare Go proxy and waitroom proxy " +
		"all run in it), plus nginx's master and workers, per request answered (in brackets: the part spent in the kernel); not wrk's, not Redis'. The proxy's own is that " +
		"less the direct runs', where the upstream's alone is spent. req/s, p50 and p99 are the medians of the rounds; the ratios " +
		"are the medians of each round's ratio, req/s over req/s of the upstream directly or the bare Go proxy in the same round.")
	if g.Perf {
		b.WriteString(" System calls and context switches: counted by `perf stat` (raw_syscalls:sys_enter, context-switches) on the " +
			"same processes, less the direct runs'.")
	}
	b.WriteString("\n\n")
	f, s := g.Fast, g.Slow
	fmt.Fprintf(&b, "- `waitroom proxy`, unprotected route: **%.2f×** the bare Go proxy when the upstream answers at once "+
		"(goal ≥ %.1f×: %s); **%.2f×** when it takes %v.\n",
		f.ProxyToBare, GoalGatewayProxyToBare, met(f.ProxyToBare >= GoalGatewayProxyToBare), s.ProxyToBare, g.UpstreamWork)
	fmt.Fprintf(&b, "- Session-protected route with a valid entry (identity, the token read from Redis or trusted for a second, "+
		"the X-Waitroom-Entry signature): **%.2f×** the bare Go proxy at once (goal ≥ %.1f×: %s); **%.2f×** when it takes %v.\n",
		f.SessionToBare, GoalGatewaySessionToBare, met(f.SessionToBare >= GoalGatewaySessionToBare), s.SessionToBare, g.UpstreamWork)
	fmt.Fprintf(&b, "- The unprotected route spelt `%s` (decoded, its dot segment removed and its `;` checked against the protected routes before it is forwarded): "+
		"**%.2f×** the bare Go proxy at once, **%.2f×** when it takes %v.\n", oddSpelling, f.SpeltToBare, s.SpeltToBare, g.UpstreamWork)
	if g.NginxSkipped == "" {
		fmt.Fprintf(&b, "- nginx: **%.2f×** the bare Go proxy at once, **%.2f×** when it takes %v.\n", f.NginxToBare, s.NginxToBare, g.UpstreamWork)
	}
	decidingMarkdown(&b, g)
	fmt.Fprintf(&b, "- Against the upstream directly, at once: bare Go proxy %.2f×, waitroom %.2f× (session-protected %.2f×)",
		f.BareRatio, f.ProxyRatio, f.SessionRatio)
	if g.NginxSkipped == "" {
		fmt.Fprintf(&b, ", nginx %.2f×", f.NginxRatio)
	}
	b.WriteString(".\n")
	own := func(name string) string {
		r := f.row(name)
		cpu, sys := r.CPUPerRequest-f.Direct.CPUPerRequest, r.SysCPUPerRequest-f.Direct.SysCPUPerRequest
		calls := ""
		if g.Perf {
			calls = fmt.Sprintf("; %.1f system calls, %.1f context switches", r.SyscallsPerRequest-f.Direct.SyscallsPerRequest,
				r.SwitchesPerRequest-f.Direct.SwitchesPerRequest)
		}
		return fmt.Sprintf("**%.1f µs** (%.1f in user space, %.1f in the kernel%s)", cpu, cpu-sys, sys, calls)
	}
	fmt.Fprintf(&b, "- Each proxy's own CPU per request, upstream answering at once: bare Go proxy %s; waitroom %s "+
		"as written, %s spelt oddly, %s session-protected", own(gwBare), own(gwProxy), own(gwSpelt), own(gwSession))
	if g.NginxSkipped == "" {
		fmt.Fprintf(&b, "; nginx %s", own(gwNginx))
	}
	b.WriteString(".\n")
	return b.String()
}

// decidingMarkdown says what the shop's own proxy costs with waitroom
// deciding (issue 41): its goal, nginx + auth_request on the
// session-protected route ≥ 1.5× waitroom proxy there, and the unprotected
// route's cost, one decision per request (the shipped configuration asks
// for every request).
func decidingMarkdown(b *strings.Builder, g *GatewayReport) {
	f, s := g.Fast, g.Slow
	for _, why := range g.DecidingSkipped {
		fmt.Fprintf(b, "- Deciding front skipped: %s.\n", why)
	}
	if r := f.row(gwNginxAuthzSession); r.Name != "" {
		fmt.Fprintf(b, "- nginx + auth_request, waitroom deciding, session-protected route with a valid entry: **%.2f×** `waitroom proxy` "+
			"on that route in the same rounds when the upstream answers at once (goal ≥ %.1f×: %s); **%.2f×** when it takes %v. "+
			"Unprotected, the shipped configuration asks for every request: %.0f req/s, %.2f× nginx alone, %.2f× `waitroom proxy`.\n",
			f.AuthzSessionToSession, GoalAuthzSessionToProxy, met(f.AuthzSessionToSession >= GoalAuthzSessionToProxy),
			s.AuthzSessionToSession, g.UpstreamWork, f.row(gwNginxAuthz).ReqPerSec,
			ratioOf(f.row(gwNginxAuthz), f.row(gwNginx)), ratioOf(f.row(gwNginxAuthz), f.row(gwProxy)))
	}
	if r := f.row(gwCaddyAuthzSession); r.Name != "" {
		fmt.Fprintf(b, "- Caddy + forward_auth, session-protected with a valid entry: **%.2f×** `waitroom proxy` on that route at once, "+
			"**%.2f×** when it takes %v; unprotected %.0f req/s.\n", f.CaddyAuthzSessionToSession, s.CaddyAuthzSessionToSession,
			g.UpstreamWork, f.row(gwCaddyAuthz).ReqPerSec)
	}
}

// ratioOf is a's median req/s over b's (0 when b did not run).
func ratioOf(a, b GatewayRow) float64 {
	if b.ReqPerSec == 0 {
		return 0
	}
	return a.ReqPerSec / b.ReqPerSec
}
