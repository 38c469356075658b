package bench

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// run is the section's run of pages on the document (document) or of
// today's exact polls.
func (f *FrontReport) run(document bool) (FrontRun, bool) {
	for _, r := range f.Runs {
		if r.Document == document {
			return r, true
		}
	}
	return FrontRun{}, false
}

func perSecond(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// share is the requests reaching the instances as a share of the polls.
func (r FrontRun) share() float64 {
	if r.Polls == 0 {
		return 0
	}
	return float64(r.ReachedTotal()) / float64(r.Polls)
}

func (r FrontRun) readyP99() time.Duration { return percentile(r.ReadyDelays, 99) }

func frontMarkdown(f *FrontReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	if f.Skipped != "" {
		return b.String() + "Skipped: " + f.Skipped + ".\n"
	}
	doc, ok1 := f.run(true)
	exact, ok2 := f.run(false)
	if !ok1 || !ok2 {
		return b.String() + "(The section needs both runs.)\n"
	}
	fmt.Fprintf(&b, "%s people entered through an instance (%.1f s, closed loop), one in 50 of them (%d) then left, so the document lists leavers; %d instance processes on one Redis behind `deploy/nginx.conf` as shipped (%s, its cache in a temp dir); admission at %.0f/s. Each run: a warm-up (first looks spread over it, as if the pages had been polling all along), then %v measured. Pages on the document first, then today's exact polls, on the same line.\n\n",
		thousands(f.Users), f.FillTime.Seconds(), f.Left, f.Instances, f.NginxVersion, f.Rate, doc.Window)

	ratio, above := 0.0, 0.0
	if d := doc.CPUPerPersonMinute(); d > 0 {
		ratio = float64(exact.CPUPerPersonMinute()) / float64(d)
	}
	if d := f.aboveIdle(doc); d > 0 {
		above = float64(f.aboveIdle(exact)) / float64(d)
	}
	b.WriteString("| goal | figure | |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| requests reaching the instances ≤ 1%% of the polls (goal 0.1%%) | %.2f%% (%.1f/s of %.0f polls/s) | %s |\n",
		100*doc.share(), perSecond(float64(doc.ReachedTotal()), doc.Window), perSecond(float64(doc.Polls), doc.Window), frontShareVerdict(doc.share()))
	fmt.Fprintf(&b, "| instance CPU per waiting person per minute ≥ 20× less than exact polls | all of the instances' CPU: %.2f µs against %.1f µs, **%.1f×**; above what they spend with nobody asking (%.1f%% of a core each): %.2f µs against %.1f µs, **%.1f×** | %s |\n",
		float64(doc.CPUPerPersonMinute())/1e3, float64(exact.CPUPerPersonMinute())/1e3, ratio,
		100*f.Idle.Server.Seconds()/math.Max(f.Idle.Wall.Seconds(), 1e-9)/float64(f.Instances),
		float64(f.aboveIdle(doc))/1e3, float64(f.aboveIdle(exact))/1e3, above, cpuVerdict(ratio, above))
	fmt.Fprintf(&b, "| every place worked out from the document within the stated bound of the exact rank | %d places checked, %d outside; at most %d above the exact rank, %d leavers ever unlisted | %s |\n",
		doc.Placed, doc.Outside, doc.Off, doc.Unlisted, met(doc.Outside == 0 && doc.Placed > 0))
	fmt.Fprintf(&b, "| READY known no later than with exact polls (p99 from admission) | everyone let in: %s against %s; those whose page the generator kept on time (every look in the %v before admission sent < 100 ms late; %d and %d left out): **%s against %s** | %s |\n\n",
		msStr(doc.readyP99()), msStr(exact.readyP99()), lateWindow, doc.LateNear, exact.LateNear,
		msStr(percentile(doc.OnTime, 99)), msStr(percentile(exact.OnTime, 99)), readyVerdict(doc, exact))

	b.WriteString("| run | waiting | of them polling | polls/s | of them to entries/me | reaching the instances/s (front, entries/me) | share of the polls | instances' CPU | per waiting person per minute | nginx CPU per poll | Redis CPU | let in | READY seen after admission p50 / p99 / max | not seen | failed | looks sent > 100 ms late (latest) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| nobody asking (before the runs) | | | | | | | %.1f%% of a core | | | %.1f%% of a core | | | | | |\n",
		100*f.Idle.Server.Seconds()/math.Max(f.Idle.Wall.Seconds(), 1e-9), 100*f.Idle.Redis.Seconds()/math.Max(f.Idle.Wall.Seconds(), 1e-9))
	for _, r := range []FrontRun{doc, exact} {
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.0f | %.1f (%.1f, %.1f) | %.2f%% | %.1f%% of a core | **%.2f µs** | %.1f µs | %.1f%% of a core | %d | %s / %s / %s | %d | %d | %d (%s) |\n",
			r.Name, thousands(r.Waiting), thousands(r.Polling), perSecond(float64(r.Polls), r.Window), perSecond(float64(r.Asks), r.Window),
			perSecond(float64(r.ReachedTotal()), r.Window), perSecond(float64(r.Reached["GET /api/v1/queues/{queue}/front"]), r.Window),
			perSecond(float64(r.Reached["GET /api/v1/queues/{queue}/entries/me"]), r.Window), 100*r.share(),
			100*perSecond(r.Use.Server.Seconds(), r.Window), float64(r.CPUPerPersonMinute())/1e3,
			per(r.Nginx, int(r.Polls)), 100*perSecond(r.Use.Redis.Seconds(), r.Window), r.Admitted,
			msStr(percentile(r.ReadyDelays, 50)), msStr(r.readyP99()), msStr(percentile(r.ReadyDelays, 100)), r.Unseen, r.Failed, r.Late, msStr(r.LateMax))
	}
	perAdmitted := perSecond(float64(doc.Reached["GET /api/v1/queues/{queue}/entries/me"]), doc.Window) / f.Rate
	fmt.Fprintf(&b, "\nWhat reaches the instances with the document is, besides about one fetch of it a second, each person near the front asking their instance: from `askWithin` (%d seconds of admission ahead) on, every 2 s and then held until READY: %.1f requests per person let in here, however long the line, so their share of the polls is about %.1f × the admission rate ÷ (the line ÷ 10 s): %.0f/s let in from %s here; the same line let in at 100/s would be 5× the share, and ten million let in at 100/s 1/100 of it.\n",
		int(askAheadSeconds), perAdmitted, perAdmitted, f.Rate, thousands(f.Users))
	fmt.Fprintf(&b, "\nThe document as read was %.0f bytes on average (uncompressed; nginx here does not compress it, a CDN may): %d leavers above the head, listed as gaps, are most of it. Every read of it is that much egress from the cache: %.0f MB/s for these %.0f reads a second.\n",
		doc.DocumentBytes, f.Left, doc.DocumentBytes*perSecond(float64(doc.Polls-doc.Asks), doc.Window)/1e6, perSecond(float64(doc.Polls-doc.Asks), doc.Window))
	b.WriteString(f.scaleLaw())
	return b.String()
}

// readyVerdict: met when the document's p99 is no later than the exact
// polls' (within 20 ms, the admission watch's resolution) for everyone let
// in, or else for those the generator kept on time, and nobody missed READY.
func readyVerdict(doc, exact FrontRun) string {
	noLater := func(a, b []time.Duration) bool { return percentile(a, 99) <= percentile(b, 99)+20*time.Millisecond }
	switch {
	case doc.Unseen > 0:
		return "**not met**"
	case noLater(doc.ReadyDelays, exact.ReadyDelays):
		return "**met**"
	case len(doc.OnTime) > 0 && len(exact.OnTime) > 0 && noLater(doc.OnTime, exact.OnTime):
		return "**met for the pages the generator kept on time**, not for everyone"
	}
	return "**not met**"
}

func cpuVerdict(all, above float64) string {
	switch {
	case all >= GoalFrontCPURatio:
		return "**met**"
	case above >= GoalFrontCPURatio:
		return "**met above the floor**, not counting it"
	}
	return "**not met**"
}

// aboveIdle is a run's instance CPU per waiting person per minute less
// what the instances spent with nobody asking.
func (f *FrontReport) aboveIdle(r FrontRun) time.Duration {
	if r.Polling == 0 || r.Window <= 0 || f.Idle.Wall <= 0 {
		return 0
	}
	floor := float64(f.Idle.Server) / f.Idle.Wall.Seconds() * r.Window.Seconds()
	return time.Duration(max(0, float64(r.Use.Server)-floor) / float64(r.Polling) / r.Window.Minutes())
}

func frontShareVerdict(share float64) string {
	switch {
	case share <= GoalFrontReachedShare/10:
		return "**met**, goal too"
	case share <= GoalFrontReachedShare:
		return "**met** (not the 0.1% goal)"
	}
	return "**not met**"
}

// Assumed for the scale law besides the million's (lawPollEvery,
// lawEnterWithin, lawCoresPerBox, lawUtilisation).
const (
	lawNightRate  = 100.0 // people let in per second on the night
	lawRedisBytes = 25e9  // what one primary is given to hold
)

// scaleLaw is the instances and Redis primaries a night needs, with and
// without a CDN in front, from this run's measured costs.
func (f *FrontReport) scaleLaw() string {
	doc, _ := f.run(true)
	exact, _ := f.run(false)
	if f.Users == 0 || doc.Window <= 0 || exact.Window <= 0 || exact.Waiting == 0 {
		return ""
	}
	enterUs := per(f.FillUse.Server, f.Users)
	enterRedisUs := per(f.FillUse.Redis, f.Users)
	// Per person per second, above the instances' floor; the floor is paid
	// per instance.
	exactPersonUs := float64(f.aboveIdle(exact)) / 1e3 / 60
	floorCores := f.Idle.Server.Seconds() / math.Max(f.Idle.Wall.Seconds(), 1e-9) / float64(f.Instances)
	// With the document the instances' work does not grow with the line:
	// a fetch a second, and the front's asks, which grow with the rate.
	docCores := float64(f.aboveIdle(doc)) * float64(doc.Polling) * doc.Window.Minutes() / float64(time.Second) / doc.Window.Seconds() * lawNightRate / f.Rate
	redisPerInstance := map[bool]float64{}
	for _, r := range []FrontRun{doc, exact} {
		redisPerInstance[r.Document] = r.Use.Redis.Seconds() / r.Window.Seconds() / float64(f.Instances)
	}
	bytesPerUser := float64(f.RedisBytes) / float64(f.Users)
	var b strings.Builder
	fmt.Fprintf(&b, "\n**The scale law, with and without a CDN**, from this run's measured costs: an enter costs an instance %.1f µs and Redis %.1f µs of CPU, and Redis keeps %.0f B per person; an instance spends %.1f%% of a core with nobody asking; above that, with exact polls, %.2f µs per waiting person per second (a poll every 10 s or so each), and with the document %.1f%% of a core in all at %.0f/s let in, whatever the line's length, so %.1f%% at %.0f/s; Redis spends %.1f%% of a core per instance with exact polls and %.1f%% with the document (the line's reads and admission, which do not grow with the line). Assumed: everyone enters within %.0f s of the sale's start, %.0f let in a second, instances of %.0f cores at %.0f%%, a primary at %.0f%% of its core and holding at most %.0f GB, a CDN answering every read of the document but about one a second per edge.\n\n",
		enterUs, enterRedisUs, bytesPerUser, 100*floorCores, exactPersonUs, 100*docCores*f.Rate/lawNightRate, f.Rate, 100*docCores, lawNightRate,
		100*redisPerInstance[false], 100*redisPerInstance[true], lawEnterWithin, lawNightRate, lawCoresPerBox, 100*lawUtilisation, 100*lawUtilisation, lawRedisBytes/1e9)
	b.WriteString("| waiting | enters/s | polls/s | without a CDN: instances | Redis primaries | with a CDN: instances | Redis primaries | requests reaching the instances with it | the CDN's egress at this document's size | Redis memory |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range []float64{1e6, 1e7, 1e8} {
		enters := n / lawEnterWithin
		enterCores := enters * enterUs / 1e6
		// Each instance pays its floor first.
		boxes := func(cores float64) float64 {
			return math.Max(2, math.Ceil(cores/(lawCoresPerBox*lawUtilisation-floorCores)))
		}
		without := boxes(enterCores + n*exactPersonUs/1e6)
		with := boxes(enterCores + docCores)
		memory := n * bytesPerUser
		primaries := func(instances float64, document bool) float64 {
			cores := enters*enterRedisUs/1e6 + instances*redisPerInstance[document]
			return math.Max(math.Ceil(cores/lawUtilisation), math.Ceil(memory/lawRedisBytes))
		}
		reached := perSecond(float64(doc.ReachedTotal()), doc.Window) * lawNightRate / f.Rate
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | **%.0f** | %.0f | **%.0f** | %.0f | %.0f/s (%.3f%% of the polls) | %.1f GB/s | %.1f GB |\n",
			thousands(int(n)), enters, n/lawPollEvery, without, primaries(without, false), with, primaries(with, true), reached, 100*reached/(n/lawPollEvery),
			n/lawPollEvery*doc.DocumentBytes/1e9, memory/1e9)
	}
	fmt.Fprintf(&b, "\nWith a CDN the instances are sized by the sale's opening, not by the wait: everyone entering within %.0f s is what they carry, and the polls of the whole line cost them about one request a second per edge. Redis is what does not shrink: one queue lives in one hash slot, so its enters run on one core (§5: about 177,000 enters/s), and its people in one primary's memory; a hundred million in one queue is past both, and needs the line split over queues (or sub-lines in several slots).\n",
		lawEnterWithin)
	return b.String()
}
