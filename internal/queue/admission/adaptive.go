package admission

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// The adaptive rate. Every protected call (an order; a backend call through
// the gateway) reports its latency, whether it failed or timed out, and,
// where it runs on a pool of connections this instance holds (the order
// database), how long it waited for one and held it. Each instance folds those of each queue
// per window (RateController), and hands them to the store, which merges
// every instance's samples of a window and lets the first instance that
// reports in the next window claim the decision on it (Store.FoldRate, by
// the store's clock, as admission ticks are claimed): N instances make one
// decision per window, with no leader. The claimant applies NextRate and
// writes the result (Store.SetRate), which admission uses from its next
// tick.
//
// The rule aims at what the backend bears, measured, not at a latency:
//
//   - With a pool (serve): Little's law. A pool of N connections, each
//     held S a call, completes at most N ÷ S calls a second, whatever
//     latency anyone targets; S is measured on every call (spend.Wait) and
//     N is every instance's pool, so the capacity is known in each window,
//     mid-sale, with no probe, and follows the backend at once when it
//     slows down. Its mean is used, not its minimum: on a loaded machine
//     a connection is held longer than on an idle one, and N ÷ the
//     shortest hold would admit more than the pool completes.
//   - Without one (the gateway): the backend is a black box. Its latency
//     with nothing queued (the base) is the least a window measured in the
//     last baseFor windows, and a window whose mean latency is well above
//     it is queueing: what the backend completed then is what it bears
//     (TCP BBR's bottleneck bandwidth, its RTprop the base). Below that
//     the rate probes upward; when the base is too old to trust, one
//     window admits half, so the next measures the backend unqueued
//     (BBR's ProbeRTT), and the decision says what that cost.
//
// The rate is then a share of the capacity (below), less the backlog that
// waits in front of the backend (the calls waiting for a connection now;
// without a pool, Little's law: the calls' latency beyond the base, per
// second) spread over drainWithin, in users by the protected calls each
// admitted user makes. Each decision stands on its own window's measure
// of the capacity rather than on the last rate, so nothing compounds: a window measured before a cut showed cannot cut
// twice (what an AIMD rule must guard against, and did here, settling at
// 66–98% of the capacity from run to run). Latency is the guard: while
// the calls' p90 is above the target the rate never grows, and a backlog
// is drained within half the time.

// AdaptiveStart is where the adaptive rate starts when it is switched on:
// the configured rate, within its bounds. The first decision, a window
// (half a second) after the first calls, replaces it with the capacity measured
// and drains within drainWithin whatever a guess too high let queue in
// front of the backend: starting lower (half, as before) cost the longest
// line seconds at the opening, where it costs most.
func AdaptiveStart(c queue.Config) float64 { return max(c.MinRate, min(c.RatePerSecond, c.MaxRate)) }

// AdaptiveStartWhy is the reason logged for AdaptiveStart.
const AdaptiveStartWhy = "adaptive on, from the configured rate"

// DefaultRateWindow is how long samples are gathered per decision. Half a
// second, for the opening: with a second the first decision came 1.5–2 s
// after the crowd, and the backlog a configured rate a few per cent above
// the capacity built meanwhile was most of the herd's order p95.
const DefaultRateWindow = 500 * time.Millisecond

// What a decision of the adaptive rate did (queue.RateDecision.Kind).
const (
	// RateBackOff: cut for failures, or to the capacity measured lower.
	RateBackOff string = "back-off"
	// RateDraining: below the capacity, while a backlog drains.
	RateDraining string = "draining"
	// RateHold: held (too few calls, the p90 above the target).
	RateHold string = "hold"
	// RateGrow: raised toward the capacity, or probing above it.
	RateGrow string = "grow"
	// RateProbe: half the rate for one window, so that the next measures
	// the backend with nothing queued in front of it (gateway).
	RateProbe string = "probe"
)

// The share of the measured capacity the rate aims at. With a pool it is
// found, not fixed: N ÷ S is the most the pool completes, but what it
// completes with calls arriving at random is less (queueing theory: the
// wait grows without bound as the share nears one, and sooner the more
// the arrivals and the calls vary). So the share starts at startShare and
// follows the calls' wait for a connection as a share of their hold,
// smoothed over windows (a third of the way each): it comes down half a
// point a window while they wait more than waitedAbove of it or their p90
// is above the target (latency, the guard: the mean wait misses a tail
// that arrives in clumps, as ten orders let in at once every 100 ms do),
// and goes up half a point while they wait less than waitedBelow and
// the p90 is under the target, within [minShare, maxShare]. Not lower than 5%: on a loaded machine a call waits a few ms
// for a free connection's goroutine to run even when the pool is far from
// full (the herd, on two cores: 2–5% of a 200 ms hold at 88% of N ÷ S),
// and a band under that floor would sink the share. On the herd's pool,
// the highest fixed rate whose p95 stays within 1.5× the order's latency
// is 96–97% of N ÷ S. Without a pool no wait is measured, and the share
// is utilisation.
const (
	startShare  = 0.97
	minShare    = 0.8
	maxShare    = 0.99
	waitedAbove = 0.08
	waitedBelow = 0.05
	shareStep   = 0.005
	utilisation = 0.98
)

// drainWithin is how soon the backlog in front of the backend is meant to
// drain; the rate never goes below drainFloor of the capacity for it.
const (
	drainWithin = 2 * time.Second
	drainFloor  = 0.5
)

// RateMinCalls is how many protected calls a decision needs: a window
// with fewer is not decided but merged into the next one (both stores do
// this), so at a low rate a decision stands on 20 calls rather than on
// a window's handful.
const RateMinCalls = 20

// RateLateWindows: a window is decided by the first call after it up to
// this many windows late (every instance's flush delayed on a loaded
// machine); older samples are dropped (both stores do this). Dropping a
// window one late lost the decisions on a backend slowing down, when the
// machine is at its busiest and they matter most.
const RateLateWindows = 5

// minCallsToJudge: a window with fewer protected calls says too little
// about the backend to change the rate on (the stores give NextRate at
// least RateMinCalls; this guards against anything less).
const minCallsToJudge = 3

// Without a pool (the gateway): queueing is a window's mean latency above
// the base by more than queueingAbove; a window under unqueuedBelow above
// it probes probeStep above the rate; the base is trusted for baseFor
// windows.
const (
	queueingAbove = 0.1
	unqueuedBelow = 0.03
	probeStep     = 0.05
	baseFor       = 30
)

// Decision is NextRate's answer: the decision the store keeps, and the
// figures of the window it stood on.
type Decision struct {
	queue.RateDecision
	Calls, Failed int64
}

// backend is what one window says of the backend, in calls.
type backend struct {
	completed float64       // calls completed a second
	mean      time.Duration // their mean latency
	// capacity is what the backend bears, calls a second (0: the window
	// does not say); pooled: measured on a pool (serve), where waited is
	// what the calls waited for a connection, as a share of their hold;
	// conns is the pool's connections.
	capacity float64
	pooled   bool
	waited   float64
	conns    int64
	// backlog is how many calls wait in front of the backend.
	backlog float64
}

// measure reads w's samples. Without a pool, base is the backend's
// latency unqueued (0: not known).
func measure(w queue.RateWindow, base time.Duration) backend {
	s := w.Samples
	span := w.Span.Seconds()
	if span <= 0 {
		span = DefaultRateWindow.Seconds()
	}
	b := backend{completed: float64(s.Calls) / span}
	if s.Calls == 0 {
		return b
	}
	b.mean = time.Duration(s.LatencyMicros/s.Calls) * time.Microsecond
	var conns int64
	for _, n := range s.Pools {
		conns += n
	}
	if s.HeldMicros > 0 && conns > 0 {
		held := float64(s.HeldMicros) / float64(s.Calls) / 1e6 // s a call
		b.pooled, b.capacity, b.conns = true, float64(conns)/held, conns
		b.waited = float64(s.WaitedMicros) / float64(s.HeldMicros)
		// The calls waiting now, as every instance last counted them; the
		// waits of the calls that ended say how many waited on average,
		// but only once each ends: a backlog building behind a backend that
		// slowed down shows in them a window late.
		for _, n := range s.Queued {
			b.backlog += float64(n)
		}
		if s.Queued == nil {
			b.backlog = float64(s.WaitedMicros) / 1e6 / span
		}
		return b
	}
	if base > 0 && float64(b.mean) > (1+queueingAbove)*float64(base) {
		b.capacity = b.completed
		b.backlog = b.completed * (b.mean - base).Seconds()
	}
	return b
}

// NextRate is the adaptive rate's rule (above), on one window of every
// instance's samples, w, for a queue configured c:
//
//   - fewer than three calls: hold;
//   - 2% or more of the calls failed or timed out (a 5xx, a lost
//     connection, an exhausted pool): back off to 70%;
//   - without a capacity known yet (a gateway whose backend never
//     queued): back off by target/p90 (to 50–90%) while the p90 is above
//     the target, else grow by twice the headroom under it (2–10%);
//   - else the share aimed at × the capacity (with a pool, found by the
//     calls' waits; without, utilisation), less the backlog over
//     drainWithin (over half of it while the p90 is above the target;
//     with a pool, what waits beyond a tenth of it), never below
//     drainFloor of the capacity, in users by the calls each makes, never
//     more than the rate in force while the p90 is above the target.
//     Without a pool, a window that did not queue may probe above it.
//
// The rate never leaves [MinRate, MaxRate]. Where the backend has a
// latency of its own above the target, the rate holds at the capacity's
// share rather than sinking to the floor: no rate would bring it down.
func NextRate(c queue.Config, w queue.RateWindow) Decision {
	s, last := w.Samples, w.Last
	d := Decision{RateDecision: last, Calls: s.Calls, Failed: s.Overloaded}
	d.Window, d.Rate, d.Why, d.P90 = w.ID, w.Rate, "", latencyPercentile(s, 0.9)
	if last.Window == 0 || last.Steady == 0 { // the first decision since the rate was switched on
		d.Steady = w.ID
	}
	if s.Calls < minCallsToJudge {
		d.Kind, d.Why = RateHold, fmt.Sprintf("hold: %d calls are too few to judge", s.Calls)
		return d
	}
	base := d.rememberBase(w)
	m := measure(w, base)
	d.learn(w, m)
	perUser := d.CallsPerUser
	if perUser == 0 {
		perUser = 1 // the order: one protected call a user, until measured
	}
	over := d.P90 > c.TargetLatency
	switch {
	case float64(s.Overloaded) >= 0.02*float64(s.Calls):
		d.Rate, d.Kind = w.Rate*0.7, RateBackOff
		d.Why = fmt.Sprintf("back off: %d of %d calls failed or timed out", s.Overloaded, s.Calls)
	case !m.pooled && base > 0 && w.ID-d.BaseAt >= baseFor && last.Kind != RateProbe:
		d.Rate, d.Kind = w.Rate*0.5, RateProbe
		d.Why = fmt.Sprintf("probe: the base latency %v is %d windows old; half the rate for a window (%.0f admissions later)",
			base, w.ID-d.BaseAt, w.Rate*0.5*w.Span.Seconds())
	case d.Capacity == 0:
		d.unknownCapacity(c, w)
	default:
		d.toCapacity(c, w, m, perUser, over)
	}
	d.Rate = max(c.MinRate, min(math.Round(d.Rate*100)/100, c.MaxRate))
	if w.Rate > 0 && math.Abs(d.Rate/w.Rate-1) > steadyWithin {
		d.Steady = w.ID + 1
	}
	return d
}

// steadyWithin: a rate that moved less than this since the window named
// Steady still counts as steady, for measuring the calls a user makes.
const steadyWithin = 0.05

// rememberBase keeps the backend's unqueued latency (gateway): the least
// window mean since it was last refreshed, refreshed by any lower mean and
// by the window after a probe.
func (d *Decision) rememberBase(w queue.RateWindow) time.Duration {
	s := w.Samples
	if s.Calls == 0 || s.HeldMicros > 0 {
		return 0
	}
	mean := time.Duration(s.LatencyMicros/s.Calls) * time.Microsecond
	if d.Base == 0 || mean <= d.Base || w.Last.Kind == RateProbe {
		d.Base, d.BaseAt = mean, w.ID
	}
	return d.Base
}

// learn folds what the window measured into the decision's memory: the
// capacity, and the calls a user makes.
func (d *Decision) learn(w queue.RateWindow, m backend) {
	switch {
	case m.capacity > 0 && d.Capacity > 0 && math.Abs(m.capacity/d.Capacity-1) < 0.2:
		d.Capacity = (d.Capacity + m.capacity) / 2 // the noise of one window, halved
	case m.capacity > 0:
		d.Capacity = m.capacity // a step: the backend changed
	case !m.pooled && d.Capacity > 0 && m.completed > d.Capacity:
		d.Capacity = m.completed // it bears at least what it completed
	}
	// The calls a user makes, measured only where the rate held for two
	// windows (after a change, the calls completed are those of users let
	// in at the rate before, and the ratio would be off by the change) and
	// the backend kept up (behind, it completes fewer than are made), with
	// fewer waiting in front of it than it completes in keptUpWithin.
	keptUp := m.backlog < m.completed*keptUpWithin.Seconds() && (m.pooled || m.capacity == 0) // without a pool, a capacity measured is a queue
	if w.Admitted >= RateMinCalls && w.ID-d.Steady >= 2 && keptUp {
		d.CallsPerUser = callsPerUser(d.CallsPerUser, float64(w.Samples.Calls)/float64(w.Admitted))
	}
}

// keptUpWithin: a backend with fewer calls waiting in front of it than it
// completes in this long kept up with what it was asked (at 98% of a
// pool's capacity, chance alone keeps one or two waiting).
const keptUpWithin = 50 * time.Millisecond

// unknownCapacity decides with no capacity known (a gateway whose backend
// has not queued yet): AIMD on the p90.
func (d *Decision) unknownCapacity(c queue.Config, w queue.RateWindow) {
	target := c.TargetLatency
	if d.P90 > target {
		d.Rate, d.Kind = w.Rate*max(0.5, min(0.9, float64(target)/float64(d.P90))), RateBackOff
		d.Why = fmt.Sprintf("back off: p90 %v above the target %v", d.P90, target)
		return
	}
	d.Rate, d.Kind = w.Rate*(1+max(0.02, min(0.1, 2*float64(target-d.P90)/float64(target)))), RateGrow
	d.Why = fmt.Sprintf("grow: p90 %v under the target %v, capacity not known yet", d.P90, target)
}

// toCapacity aims at a share of the capacity, less the backlog.
func (d *Decision) toCapacity(c queue.Config, w queue.RateWindow, m backend, perUser float64, over bool) {
	within := drainWithin
	if over {
		within /= 2
	}
	share, waiting := utilisation, m.backlog
	if m.pooled {
		share = d.followWaits(m, over)
		// Chance keeps a few waiting at any share near one: only what
		// waits beyond a tenth of the pool is drained.
		waiting = max(0, m.backlog-0.1*float64(m.conns))
	}
	calls := max(drainFloor*d.Capacity, share*d.Capacity-waiting/within.Seconds())
	d.Rate = calls / perUser
	switch {
	case over && d.Rate > w.Rate:
		d.Rate, d.Kind = w.Rate, RateHold
		d.Why = fmt.Sprintf("hold: p90 %v above the target %v", d.P90, c.TargetLatency)
		return
	case !m.pooled && !over && float64(m.mean) <= (1+unqueuedBelow)*float64(d.Base):
		// The backend answers as fast as it does unqueued: it may bear more
		// than it ever had to complete (BBR's probe; TCP Vegas's band: up
		// below it, held within it, down above it).
		d.Rate, d.Kind = max(d.Rate, w.Rate)*(1+probeStep), RateGrow
		d.Why = fmt.Sprintf("grow: probing, latency %v near the base %v", m.mean, d.Base)
		return
	case waiting >= 1:
		d.Kind = RateDraining
	case d.Rate < w.Rate:
		d.Kind = RateBackOff
	default:
		d.Kind = RateGrow
	}
	how := "completed while queueing"
	if m.pooled {
		how = fmt.Sprintf("its pool; calls waited %.1f%% of their hold", 100*m.waited)
	}
	d.Why = fmt.Sprintf("%s: the backend bears %.1f calls/s (%s), aimed at %.1f%%, %.1f waiting in front of it, %.2f calls a user",
		d.Kind, d.Capacity, how, 100*share, m.backlog, perUser)
}

// followWaits moves the share of the pool's capacity aimed at by the calls'
// waits for a connection (above).
func (d *Decision) followWaits(m backend, over bool) float64 {
	waited := m.waited
	if d.Share > 0 { // not the first decision
		waited = d.Waited + (m.waited-d.Waited)/3
	}
	d.Waited = waited
	share := cmp.Or(d.Share, startShare)
	switch {
	case over || waited > waitedAbove:
		share -= shareStep
	case waited < waitedBelow:
		share += shareStep
	}
	d.Share = max(minShare, min(maxShare, share))
	return d.Share
}

// callsPerUser moves the measure of the calls an admitted user makes (one
// until measured) half a point toward a window's ratio, when that is more
// than 2% away: it follows the median of the windows' ratios, not their
// mean. One window's ratio swings with every hiccup between admission and
// the call, and not evenly: a backend slowing down completes fewer calls
// than are made before its queue shows, one draining a backlog more (herd
// runs measured 0.24, 0.8 and 2.0 in single windows of a crowd that makes
// one call each, and an average of them drifted to 1.04, admitting 4%
// fewer than the pool bore). A crowd that really makes fewer (no-shows) is
// followed in a minute: 30% fewer in sixty windows.
func callsPerUser(last, measured float64) float64 {
	last = cmp.Or(last, 1)
	switch {
	case measured > last*1.02:
		return last + perUserStep
	case measured < last*0.98:
		return max(perUserStep, last-perUserStep)
	}
	return last
}

// perUserStep is how far one window moves the calls a user makes.
const perUserStep = 0.005

// latencyPercentile is the latency below which the fraction q of the
// sampled calls fell (the upper bound of its bucket); 0 with no calls.
func latencyPercentile(s queue.RateSample, q float64) time.Duration {
	return time.Duration(rollup.Histogram(s.Latency).Quantile(q) * float64(time.Millisecond))
}
