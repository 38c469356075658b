package bench

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// botsMarkdown is the bots section of docs/security.md.
func botsMarkdown(rep *BotsReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "An opening for %d people (anonymous sessions, one place each, scored %s by the edge; %d of them behind one "+
		"carrier-NAT address) while a bot farm takes %d places: %d from %d data-centre addresses listed in an AWS-shaped "+
		"ranges file (`--suspect-ranges`, no score sent), and %d from as many residential addresses the edge scores %s "+
		"(`--bot-score-header %s --bot-score-below %d`), polling %d× faster than told (`--suspect-poll-factor 3` watches everyone's polling). Everyone enters in one random "+
		"order before the opening, through the trusted proxy (`X-Forwarded-For`); `entry: any`, so the proof of work "+
		"is not the variable; %g/s; per-address bursts raised to 200 (a shop with carrier-NAT customers); admission "+
		"stops at %d live tokens (`maxActiveTokens`, nobody spends one), so the admitted are the first %d. %d more "+
		"people enter after the opening (they wait behind: the CPU comparison polls them). Each run has a fresh "+
		"instance of its own process (embedded line).\n\n",
		rep.People, botsPersonScore, rep.NAT, rep.DCBots+rep.ScoredBots, rep.DCBots, rep.DCAddrs, rep.ScoredBots, botsBotScore,
		botsScoreHeader, botsScoreBelow, rep.Faster, rep.Rate, rep.Admit, rep.Admit, rep.Late)
	b.WriteString("| run | people among the first admitted | places shadowed (people) | 403 to people / to bots | `shadowLength`: stats / suspects list | carrier-NAT people placed (the slowest took) | people's time in line p50 / p95 | entering took | requests | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Runs {
		fmt.Fprintf(&b, "| %s: %s | **%d of %d (%.1f%%)** | %d (%d) | %d / %d | %s / %s | %d of %d (%.1f s) | %.2f s / %.2f s | %.1f s | %d | %d |\n",
			r.Name, r.Described, r.PeopleAdmitted, r.Admitted, 100*r.PeopleShare, r.Shadowed, r.PeopleShadowed,
			r.People403, r.Bots403, known(r.ShadowLength), known(r.ListedLength), r.NATPlaced, rep.NAT,
			r.NATWithin.Seconds(), r.TimeP50.Seconds(), r.TimeP95.Seconds(), r.Entered.Seconds(), r.Requests, r.Errors)
	}
	for _, r := range rep.Runs {
		if r.Listed > 0 {
			fmt.Fprintf(&b, "\n%s: the suspects list's first %d places were marked by %s, from %d distinct (hashed) addresses.\n",
				r.Name, r.Listed, signalCounts(r.ListedSignals), r.ListedAddresses)
		}
	}
	b.WriteString("\nPlaces shadowed are the instance's count (stats' `shadowLength`): no answer tells a shadow place from a person's, its signed ticket included; people among them are that count less the bots that hold a place, exact while every bot is shadowed (the people's share of those admitted and the count equal to the bots' bear it out). Time in line runs from the opening to the READY answer.\n")
	botsGoals(&b, rep)
	for _, r := range rep.Runs {
		if r.Errors > 0 {
			fmt.Fprintf(&b, "\n%s: %d errors, the first: `%s`\n", r.Name, r.Errors, r.ErrorSample)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// botsGoals states each goal of the issue against the runs that hold it.
func botsGoals(b *strings.Builder, rep *BotsReport) {
	runs := map[string]*BotsRun{}
	for i := range rep.Runs {
		runs[rep.Runs[i].Name] = &rep.Runs[i]
	}
	sig, before, nobots := runs["signals"], runs["before"], runs["no bots"]
	if sig == nil {
		return
	}
	b.WriteString("\nGoals:\n")
	fmt.Fprintf(b, "- ≥ %.0f%% of the first %d admitted are people: %s (%.1f%%", 100*GoalBotsPeopleShare, rep.Admit,
		met(sig.PeopleShare >= GoalBotsPeopleShare), 100*sig.PeopleShare)
	if before != nil {
		fmt.Fprintf(b, "; %.1f%% without the signals", 100*before.PeopleShare)
	}
	b.WriteString(").\n")
	fmt.Fprintf(b, "- no person shadowed or refused with 403: %s (%d shadowed, %d refused); the %d behind one address all hold a place within a minute: %s (%d, the slowest in %.1f s).\n",
		met(sig.PeopleShadowed == 0 && sig.People403 == 0), sig.PeopleShadowed, sig.People403, rep.NAT,
		met(sig.NATPlaced == rep.NAT && sig.NATWithin <= time.Minute), sig.NATPlaced, sig.NATWithin.Seconds())
	if nobots != nil && nobots.TimeP50 > 0 && nobots.TimeP95 > 0 {
		d50 := sig.TimeP50.Seconds()/nobots.TimeP50.Seconds() - 1
		d95 := sig.TimeP95.Seconds()/nobots.TimeP95.Seconds() - 1
		fmt.Fprintf(b, "- people's time in line within %.0f%% of the run without bots: %s (p50 %+.1f%%, p95 %+.1f%%).\n",
			100*GoalBotsTimeRatio, met(math.Abs(d50) <= GoalBotsTimeRatio && math.Abs(d95) <= GoalBotsTimeRatio), 100*d50, 100*d95)
	}
	if sig.CPU != nil && len(sig.CPU.RoundRatios) > 0 {
		c := sig.CPU
		fmt.Fprintf(b, "- a shadow poll costs the instance no more CPU than a person's: %s (%s against %s a poll, %.2f×, over %d polls of each in %d alternating rounds, whose ratios ran %.2f–%.2f×).\n",
			met(c.Ratio <= GoalBotsCPURatio), us(c.ShadowPerPoll), us(c.PersonPerPoll), c.Ratio, c.Polls,
			len(c.RoundRatios), slices.Min(c.RoundRatios), slices.Max(c.RoundRatios))
	}
}

// signalCounts is "address_range 500, edge_score 500", by name.
func signalCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("`%s` %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func known(n int) string {
	if n < 0 {
		return "—"
	}
	return fmt.Sprint(n)
}
