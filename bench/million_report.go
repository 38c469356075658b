package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/identity"
)

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

// thousands writes a count with separators: 1,000,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// costStep is the sweep's step the scale law takes a poll's cost from: the
// busiest that was still answered in full (≥ 95% of the offered rate), so
// the instance's fixed costs (admission, GC of its heap) are spread over
// the most polls; its first step when none was.
func (m *MillionReport) costStep() MillionStep {
	var st MillionStep
	for i, s := range m.Sweep {
		if i == 0 || s.Result.AnsweredRate >= 0.95*s.Result.Offered {
			st = s
		}
	}
	return st
}

// goalMs writes a goal's duration: 50 ms.
func goalMs(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// stepAt is the sweep's step at the rate, if it ran.
func (m *MillionReport) stepAt(rate float64) (MillionStep, bool) {
	for _, s := range m.Sweep {
		if s.Result.Offered == rate {
			return s, true
		}
	}
	return MillionStep{}, false
}

func (m *MillionReport) slot(prefix string) (SlotRun, bool) {
	for _, s := range m.Slot {
		if strings.HasPrefix(s.Script, prefix) {
			return s, true
		}
	}
	return SlotRun{}, false
}

func (m *MillionReport) lastMemory() MemoryAt {
	if len(m.Memory) == 0 {
		return MemoryAt{}
	}
	return m.Memory[len(m.Memory)-1]
}

// goalRows are the section's goals, each with its figure and verdict.
func (m *MillionReport) goalRows() [][3]string {
	var rows [][3]string
	st, at := m.stepAt(GoalMillionPollRate)
	fig := fmt.Sprintf("knee %.0f/s", m.Knee)
	if at {
		fig += fmt.Sprintf("; at %.0f/s offered: %.0f/s answered, p99 %s", GoalMillionPollRate, st.Result.AnsweredRate, msStr(st.Result.P99))
	}
	rows = append(rows, [3]string{fmt.Sprintf("status p99 ≤ %s at ≥ %s polls/s offered open loop, one instance, %s in line", goalMs(GoalMillionPollP99), thousands(int(GoalMillionPollRate)), thousands(m.Users)),
		fig, met(m.Knee >= GoalMillionPollRate)})
	last := m.lastMemory()
	rows = append(rows, [3]string{fmt.Sprintf("instance ≤ %.0f B per remembered user", GoalTicketBytes),
		fmt.Sprintf("%.1f B at %s (the remembered tickets; %.1f B with the page's 37-byte ids)", last.TicketBytes, thousands(last.Users), last.TicketBytesLongIDs),
		met(max(last.TicketBytes, last.TicketBytesLongIDs) <= GoalTicketBytes)})
	redisB := float64(last.RedisBytes) / float64(max(1, last.Users))
	rows = append(rows, [3]string{fmt.Sprintf("Redis ≤ %.0f B per waiting user at %s", GoalRedisBytes, thousands(last.Users)),
		fmt.Sprintf("%.1f B", redisB), met(redisB <= GoalRedisBytes)})
	rows = append(rows, [3]string{fmt.Sprintf("enter ≥ %.2f× the bare endpoint, closed loop", GoalEnterRatio),
		fmt.Sprintf("%.2f× (%.0f/s vs %.0f/s)", m.EnterRatio, m.EnterClosed.AnsweredRate, m.Bare.AnsweredRate), met(m.EnterRatio >= GoalEnterRatio)})
	rows = append(rows, [3]string{fmt.Sprintf("enter p99 ≤ %s open loop at half the closed-loop maximum", goalMs(GoalEnterOpenLoopP99)),
		fmt.Sprintf("p99 %s at %.0f/s", msStr(m.EnterOpen.P99), m.EnterOpen.Offered), met(m.EnterOpen.P99 <= GoalEnterOpenLoopP99)})
	return rows
}

func millionMarkdown(m *MillionReport, stamp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", stamp)
	fmt.Fprintf(&b, "Everything on this machine's two cores: the instance process(es), Redis, and the load generator (this harness, the `%s` client, %d connections). What else was running, from `uptime` and `top` at the start and at the end of the run:\n\n```\n%s\n```\n\n",
		ClientRaw, m.Conns, m.Machine)
	b.WriteString("| goal | figure | |\n|---|---|---|\n")
	for _, r := range m.goalRows() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	b.WriteString(m.bounds())

	u := m.FillUse
	fmt.Fprintf(&b, "\n**A million entered** through the instance's `POST /api/v1/queues/million/entries` (each request a different user with its own HS256 JWT, 12-byte ids; %d JWTs signed beforehand in %.1f s), closed loop on %d connections, into a paused queue: %s users in %.1f s, **%.0f enters/s**. Per enter: instance %.1f µs CPU, Redis %.1f µs CPU and %.1f commands.\n\n",
		m.Signed, m.Signing.Seconds(), m.Conns, thousands(m.Users), m.FillTime.Seconds(), m.FillRate,
		per(u.Server, m.Users), per(u.Redis, m.Users), float64(u.Commands)/float64(max(1, m.Users)))
	b.WriteString("| in line | Redis `used_memory` growth | per user | instance heap growth (after a full GC) | per user | instance RSS | the remembered tickets alone, per user | the same, 37-byte ids |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range m.Memory {
		fmt.Fprintf(&b, "| %s | %s | **%.1f B** | %s | %.1f B | %s | **%.1f B** | %.1f B |\n", thousands(p.Users), mb(p.RedisBytes), float64(p.RedisBytes)/float64(p.Users),
			mb(p.InstanceHeap), float64(p.InstanceHeap)/float64(p.Users), mb(p.InstanceRSS), p.TicketBytes, p.TicketBytesLongIDs)
	}
	fmt.Fprintf(&b, "\nThe instance's heap holds, per user, the ticket it remembers from the store's answer (what status polls far back are answered from) and its identity cache's verified JWT (bounded at %s tokens, about 50 B each); the last two columns are the tickets alone, measured in this process on a `queue.Service` that remembered that many users, with the ids used here and with ids as long as the page's session ids (`anon-` and 32 hex digits).\n", thousands(identity.MaxVerified))

	if len(m.Clients) > 0 {
		b.WriteString("\n**The generator's own cost**, the same open-loop status load through each client:\n\n| client | offered | answered | p99 | generator CPU per request | instance CPU per request |\n|---|---|---|---|---|---|\n")
		for _, c := range m.Clients {
			fmt.Fprintf(&b, "| %s | %.0f/s | %.0f/s | %s | %.1f µs | %.1f µs |\n", c.Client, c.Result.Offered, c.Result.AnsweredRate, msStr(c.Result.P99),
				per(c.Use.Generator, c.Result.Requests), per(c.Use.Server, c.Result.Requests))
		}
		fmt.Fprintf(&b, "\nThe rest of the section loads through `%s`: the less the generator takes of the two shared cores, the more the server's figures are its own.\n", ClientRaw)
	}

	fmt.Fprintf(&b, "\n**Status polls, open loop, to the knee.** `GET …/entries/me`, each request the next of the users still waiting, in a fixed scramble of the line of %s (so no user repeats within a step; each user's JWT was verified when they entered, and the identity cache's %s tokens hold them all), %v per rate, admission running at %.0f/s. Latency from each request's intended send time. CPU per poll from `/proc/<pid>/stat` of the instance process and of the generator; Redis from `INFO cpu` and `INFO commandstats`.\n\n",
		thousands(m.Users), thousands(identity.MaxVerified), m.stepDuration(), m.Rate)
	b.WriteString("| offered | answered | p50 | p99 | p99.9 | generator lag p99 | failed | instance CPU/poll | generator CPU/poll | Redis commands/poll | Redis CPU/poll | from the snapshot | instance RSS |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range m.Sweep {
		r, n := s.Result, max(1, s.Result.Requests)
		fmt.Fprintf(&b, "| %.0f/s | %.0f/s | %s | **%s** | %s | %s | %d | %.1f µs | %.1f µs | %.3f | %.2f µs | %.1f%% | %s |\n",
			r.Offered, r.AnsweredRate, msStr(r.P50), msStr(r.P99), msStr(r.P999), msStr(r.LagP99), r.Requests-r.OK,
			per(s.Use.Server, n), per(s.Use.Generator, n), float64(s.Use.Commands)/float64(n), per(s.Use.Redis, n), 100*s.FromSnapshot, mb(s.RSS))
	}
	if m.Knee > 0 {
		fmt.Fprintf(&b, "\n**The knee: %.0f polls/s** offered, the highest rate with p99 ≤ %s, with the generator on the same two cores.", m.Knee, goalMs(GoalMillionPollP99))
	} else {
		fmt.Fprintf(&b, "\n**No knee**: even the lowest rate missed p99 ≤ %s.", goalMs(GoalMillionPollP99))
	}
	if n := len(m.Sweep); n > 0 && !m.Sweep[n-1].Pass {
		fmt.Fprintf(&b, " The last rate tried: %.0f/s.", m.Sweep[n-1].Result.Offered)
	}
	b.WriteString("\n")

	p := m.Pollers
	pu := m.PollersUse
	polls := max(1, p.Far.Answered+p.Near)
	fmt.Fprintf(&b, "\n**The night: the poller model.** %s of the line poll as the waiting page does — the first %s waiting and one in %d behind them, about %.0f polls/s nominal (80%% of the knee, or of the sweep's first rate without one: the share of the night this instance carries, the rest on other instances) — each when the last answer's `pollAfterSeconds` said, with `?waitSeconds=%d`; first polls spread over 10 s as if they had been polling all along; admission at %.0f/s. Polls that may be held (the user was about to be let in) go on connections of their own, as each person has their own. A user polls again only once answered, so a server that falls behind is offered less than nominal: the gap is the measure. Measured over %v after a warm-up:\n\n",
		thousands(p.Users), thousands(m.PollFront), m.PollEvery, float64(m.Users)/float64(max(1, m.PollEvery))/10, herdWaitSeconds, m.Rate, p.Window)
	b.WriteString("| polls offered | answered | far polls: p50 | p99 | p99.9 | generator lag p99 | failed | polls near the front (held) | let in | instance CPU/poll | Redis commands/poll | Redis CPU/poll | instance RSS |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %.0f/s | %.0f/s | %s | **%s** | %s | %s | %d | %d | %d | %.1f µs | %.3f | %.2f µs | %s |\n",
		p.Offered, p.Answered, msStr(p.Far.P50), msStr(p.Far.P99), msStr(p.Far.P999), msStr(p.Far.LagP99), p.Far.Requests-p.Far.OK, p.Near, p.Ready,
		per(pu.Server, polls), float64(pu.Commands)/float64(polls), per(pu.Redis, polls), mb(m.PollersRSS))

	fmt.Fprintf(&b, "\n**Enter.** Closed loop on %d connections for %v, new users into the line of %s: bare `GET /healthz` %.0f/s, enter %.0f/s: **%.2f×**. Open loop at half that maximum (%.0f/s), new users: p50 %s, **p99 %s**, p99.9 %s; instance %.1f µs CPU per enter, Redis %.1f µs.\n",
		m.Conns, m.stepDuration(), thousands(m.Users), m.Bare.AnsweredRate, m.EnterClosed.AnsweredRate, m.EnterRatio,
		m.EnterOpen.Offered, msStr(m.EnterOpen.P50), msStr(m.EnterOpen.P99), msStr(m.EnterOpen.P999),
		per(m.EnterOpenUse.Server, m.EnterOpen.Requests), per(m.EnterOpenUse.Redis, m.EnterOpen.Requests))
	if len(m.EnterProfile) > 0 && len(m.StatusProfile) > 0 {
		fmt.Fprintf(&b, "\nWhere the instance's CPU goes: its CPU profile over the middle of the open-loop enter run and of a status run at %.0f/s, each sample given to the first part its stack passes through, in this order, per request:\n\n| part | enter | | status | |\n|---|---|---|---|---|\n", m.StatusProfileRate)
		var te, ts float64
		for i := range m.EnterProfile {
			te, ts = te+m.EnterProfile[i].Us, ts+m.StatusProfile[i].Us
		}
		for i, e := range m.EnterProfile {
			st := m.StatusProfile[i]
			fmt.Fprintf(&b, "| %s | %.1f µs | %.0f%% | %.1f µs | %.0f%% |\n", e.Part, e.Us, 100*e.Us/math.Max(te, 1e-9), st.Us, 100*st.Us/math.Max(ts, 1e-9))
		}
		fmt.Fprintf(&b, "| sampled in all | %.1f µs | | %.1f µs | |\n", te, ts)
	}

	if len(m.Scale) > 0 {
		b.WriteString("\n**One instance and three on one Redis**: the same open-loop status load, each user always sent to the same instance (as a sticky balancer does), each run after an unmeasured pass over the same users so every instance has learnt their tickets:\n\n")
		b.WriteString("| instances | offered | answered | p99 | instances' CPU/poll | Redis commands/s | Redis commands/poll | Redis CPU |\n|---|---|---|---|---|---|---|---|\n")
		for _, s := range m.Scale {
			n := max(1, s.Result.Requests)
			fmt.Fprintf(&b, "| %d | %.0f/s | %.0f/s | %s | %.1f µs | %.0f | %.3f | %.1f%% of a core |\n", s.Instances, s.Result.Offered, s.Result.AnsweredRate,
				msStr(s.Result.P99), per(s.Use.Server, n), float64(s.Use.Commands)/s.Use.Wall.Seconds(), float64(s.Use.Commands)/float64(n),
				100*s.Use.Redis.Seconds()/s.Use.Wall.Seconds())
		}
	}

	if len(m.Slot) > 0 {
		b.WriteString("\n**One queue's slot**: each script called pipelined (256 callers on an auto-pipelined client) on one queue, so everything runs on one Redis core:\n\n| script | calls | calls/s | Redis CPU per call | inside the script | one core's ceiling |\n|---|---|---|---|---|---|\n")
		for _, s := range m.Slot {
			c := per(s.Use.Redis, s.Calls)
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.1f µs | %.1f µs | %.0f/s |\n", s.Script, s.Calls, float64(s.Calls)/s.Use.Wall.Seconds(), c,
				float64(s.Use.ScriptUsec)/float64(s.Calls), 1e6/math.Max(c, 1e-9))
		}
	}
	b.WriteString(m.scaleLaw())
	b.WriteString("\n")
	return b.String()
}

// bounds says, for each goal missed, what bounds it: the CPU each request
// costs on the two shared cores, from this run.
func (m *MillionReport) bounds() string {
	var out []string
	if m.Knee < GoalMillionPollRate && len(m.Sweep) > 0 {
		st := m.Sweep[len(m.Sweep)-1]
		n := max(1, st.Result.Requests)
		inst, gen, red := per(st.Use.Server, n), per(st.Use.Generator, n), per(st.Use.Redis, n)
		out = append(out, fmt.Sprintf("- **Status**: at %.0f/s a poll cost the instance %.1f µs of CPU, the generator %.1f µs and Redis %.1f µs: %.0f polls/s × %.1f µs = **%.2f of the 2 cores** (the rest of the machine's load comes on top); the instance alone would need %.2f cores for %.0f/s. Where its µs go: the profile below.",
			st.Result.Offered, inst, gen, red, GoalMillionPollRate, inst+gen+red, GoalMillionPollRate*(inst+gen+red)/1e6, GoalMillionPollRate*inst/1e6, GoalMillionPollRate))
	}
	if m.EnterRatio < GoalEnterRatio && m.Bare.Requests > 0 && m.EnterClosed.Requests > 0 {
		bu, eu := m.BareUse, m.EnterClosedUse
		bare := per(bu.Server+bu.Generator+bu.Redis, m.Bare.Requests)
		enter := per(eu.Server+eu.Generator+eu.Redis, m.EnterClosed.Requests)
		out = append(out, fmt.Sprintf("- **Enter against bare**: closed loop, a bare request cost %.1f µs of CPU in all (instance %.1f, generator %.1f), an enter %.1f µs (instance %.1f, generator %.1f, Redis %.1f): on the same two cores enter runs at about %.1f / %.1f = %.2f× bare (the measured ratio moves with the machine's other work). Where the instance's µs go: the profile below.",
			bare, per(bu.Server, m.Bare.Requests), per(bu.Generator, m.Bare.Requests), enter, per(eu.Server, m.EnterClosed.Requests),
			per(eu.Generator, m.EnterClosed.Requests), per(eu.Redis, m.EnterClosed.Requests), bare, enter, bare/enter))
	}
	if m.EnterOpen.P99 > GoalEnterOpenLoopP99 && m.EnterOpen.Requests > 0 {
		out = append(out, fmt.Sprintf("- **Enter open loop**: p50 %s but p99 %s at half the maximum, and the generator itself sent its p99 request %s late: the tail is time the request waited for a core (the instance, Redis, the generator and the machine's other work share two), not the enter's own work.",
			msStr(m.EnterOpen.P50), msStr(m.EnterOpen.P99), msStr(m.EnterOpen.LagP99)))
	}
	if len(out) == 0 {
		return ""
	}
	return "\nWhere a goal is missed, what bounds it (this run's figures):\n\n" + strings.Join(out, "\n") + "\n"
}

func (m *MillionReport) stepDuration() time.Duration {
	if len(m.Sweep) > 0 && m.Sweep[0].Result.Offered > 0 {
		return (time.Duration(float64(m.Sweep[0].Result.Requests)/m.Sweep[0].Result.Offered) * time.Second).Round(time.Second)
	}
	return 0
}

// Scale-law assumptions, stated in the report.
const (
	lawPollEvery    = 10.0 // s: the far band's pollAfter (8–12 s jittered), where nearly everyone is
	lawEnterWithin  = 600.0
	lawCoresPerBox  = 2.0
	lawUtilisation  = 0.7
	lawTicksPerSec  = 10.0 // admission ticks and snapshot reads per instance per queue
	lawHeldPerQueue = 20.0 // users within two batches of the front, rechecked by the store every 100 ms
)

// scaleLaw derives instances and Redis primaries for bigger nights from
// this run's measured per-request costs.
func (m *MillionReport) scaleLaw() string {
	st := m.costStep()
	pollUs := per(st.Use.Server, st.Result.Requests)
	enterUs := per(m.EnterOpenUse.Server, m.EnterOpen.Requests)
	enterSlot, ok1 := m.slot("enter")
	statusSlot, ok2 := m.slot("status")
	snapSlot, ok3 := m.slot("snapshot")
	admitSlot, ok4 := m.slot("tick")
	if pollUs == 0 || enterUs == 0 || !ok1 || !ok2 || !ok3 || !ok4 {
		return "\n(The scale law needs the sweep, the enter runs and the slot runs.)\n"
	}
	enterRedisUs := per(enterSlot.Use.Redis, enterSlot.Calls)
	statusRedisUs := per(statusSlot.Use.Redis, statusSlot.Calls)
	snapRedisUs := per(snapSlot.Use.Redis, snapSlot.Calls)
	admitRedisUs := per(admitSlot.Use.Redis, admitSlot.Calls)
	last := m.lastMemory()
	redisB := float64(last.RedisBytes) / float64(max(1, last.Users))
	var b strings.Builder
	fmt.Fprintf(&b, "\n**The scale law**, from this run's measured costs: an instance spends %.1f µs of CPU per status poll (at %.0f/s, the busiest rate of the sweep still answered in full) and %.1f µs per enter; Redis spends %.1f µs per enter, %.1f µs per status read from the store, %.1f µs per snapshot read and %.1f µs per admission call (the slot runs above), and %.1f B per waiting user; an instance keeps %.1f B per remembered user. Assumed: people poll every %.0f s (the far band, where nearly all of a long line is), enter within %.0f s of the sale's start, instances of %.0f cores run at %.0f%%, each instance reads each queue's snapshot and calls admission %.0f times a second, and %.0f users per queue near the front are read from the store every 100 ms while held.\n\n",
		pollUs, st.Result.Offered, enterUs, enterRedisUs, statusRedisUs, snapRedisUs, admitRedisUs, redisB, last.TicketBytes,
		lawPollEvery, lawEnterWithin, lawCoresPerBox, 100*lawUtilisation, lawTicksPerSec, lawHeldPerQueue)
	b.WriteString("| night | polls/s | enters/s | instance cores → instances | Redis CPU → primaries | busiest slot | Redis memory | tickets per instance |\n|---|---|---|---|---|---|---|---|\n")
	for _, n := range []struct {
		name           string
		waiting        float64
		queues         float64
		slotShareEnter float64 // the busiest slot's share of the enters
	}{
		{"1,000,000 on one queue", 1e6, 1, 1},
		{"10,000,000 on one queue", 1e7, 1, 1},
		{"10,000,000 over 100 queues", 1e7, 100, 0.01},
	} {
		polls := n.waiting / lawPollEvery
		enters := n.waiting / lawEnterWithin
		cores := (polls*pollUs + enters*enterUs) / 1e6
		inst := math.Ceil(cores / (lawCoresPerBox * lawUtilisation))
		perQueue := inst*lawTicksPerSec*(snapRedisUs+admitRedisUs) + lawHeldPerQueue*lawTicksPerSec*statusRedisUs
		redisCores := (enters*enterRedisUs + n.queues*perQueue) / 1e6
		slotCore := (enters*n.slotShareEnter*enterRedisUs + perQueue) / 1e6
		primaries := math.Max(1, math.Ceil(redisCores/lawUtilisation))
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.1f → **%.0f** | %.2f cores → **%.0f** | %.0f%% of a core | %.2f GB | %.0f MB |\n",
			n.name, polls, enters, cores, inst, redisCores, primaries, 100*slotCore, n.waiting*redisB/1e9, n.waiting*last.TicketBytes/1e6)
	}
	ceiling := 1e6 / enterRedisUs
	fmt.Fprintf(&b, "\nOne queue lives in one hash slot, so its enters and its admission run on one Redis core whatever the cluster's size: at %.1f µs per enter that core takes **%.0f enters/s** (%.0f/s measured pipelined here, with the client on the same cores), so ten million people need at least %.0f s to get in line, and a crowd arriving faster than that waits on Redis, not on the instances. Polls do not touch it: far back they are answered from each instance's snapshot. What would lift it: splitting a hot queue into K sub-lines in K slots (tickets interleaved as seq × K + k and admitted round robin from the K heads, fair to within K places), or a cheaper enter script (it reads the config, the user's place, the token table and the length before it writes: four of its seven commands are checks).\n",
		enterRedisUs, ceiling, float64(enterSlot.Calls)/enterSlot.Use.Wall.Seconds(), 1e7/ceiling)
	fmt.Fprintf(&b, "\nWhat grows with instances × queues is Redis's fixed cost: every instance reads every queue's snapshot and calls its admission script about %.0f times a second (%.1f µs of Redis each), which is what takes a hundred queues past one primary above; a longer snapshot age far from the front, or one admitting instance per queue, would cut it.\n",
		lawTicksPerSec, snapRedisUs+admitRedisUs)
	fmt.Fprintf(&b, "\nEach instance behind a round-robin balancer sees every user, so it remembers every ticket: %.0f MB at ten million with the tickets as measured, but an instance remembers at most 2^20 users per queue (then it starts over), so a queue of more than that needs a sticky balancer (each instance then knows 1/N of the line) or a higher bound; past it, polls fall through to Redis at %.1f µs each.\n",
		1e7*last.TicketBytes/1e6, statusRedisUs)
	return b.String()
}
