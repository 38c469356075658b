package bench

// Estimates (issue 54): whether the wait people are shown when they join
// comes true, measured from outside as a user would: each person keeps
// what their join's answer said (estimatedWaitSeconds, the point;
// estimatedWaitRange, the 5th to 95th percentile; waitTimeKnown and its
// reason), polls as the page does until READY, and their realised wait is
// from the enter's request written to admission on the store's clock (the
// READY answer's expiresAt less the token's lifetime), as herd_sale.go's
// Bench figure is. Five scenarios, each a crowd arriving over time: a
// burst at the start, then a steady stream, so that most join a line whose
// pace has been measured and the first second's herd is seen too.
//
// The harness reads the answers' new fields only where they are: run
// against the code before the issue (whose answers carry a point alone), it
// gives the before figures, realised ÷ point.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// EstimatesReport is the estimates section: one row a scenario.
type EstimatesReport struct {
	// Date is when the run began.
	Date      time.Time
	Scenarios []EstimatesScenario
	// Before: the same section run on the code before the issue
	// (Options.EstimatesBefore; nil without one), set beside these.
	Before   *EstimatesReport `json:",omitempty"`
	Duration time.Duration
}

// EstimatesScenario is one scenario's shape and what its people lived.
type EstimatesScenario struct {
	Name, Described string
	// Admission: Rate a second in ticks of Batch every Interval, adaptive
	// (Rate its ceiling) or fixed; Jitter as the herd's spread+jitter.
	Rate     float64
	Batch    int
	Interval time.Duration
	Jitter   bool
	Adaptive bool
	// The crowd: Burst at once, then Stream evenly over Over; a share
	// Vanish of everyone enters and never comes back (abandonAfterSeconds
	// Abandon).
	Burst, Stream int
	Over          time.Duration
	Vanish        float64
	Abandon       time.Duration
	// SecondPhase: from PhaseAt on, a phase at PhaseRate (announced: set
	// before anyone arrives).
	PhaseAt   time.Duration
	PhaseRate float64
	// SlowAt: the orders' work doubles then (unannounced). PauseAt: an
	// operator pauses admission then, for PauseFor (unannounced).
	SlowAt, PauseAt, PauseFor time.Duration
	// Events are the unannounced events as they happened: since the
	// crowd's start, when the bench asked for each.
	Events []EstimatesEvent

	// People counted: Vanished (entered, never polled), Admitted (READY),
	// Errors (neither), Unknown by waitTimeUnknownReason.
	People, Vanished, Admitted, Errors int
	ErrorSample                        string
	Retries                            int
	// Scored: joined with the wait known and admitted with no unannounced
	// event in between; First: those of them who joined in the first
	// second (the herd); Apart: known at join, but an unannounced event
	// fell while they waited; Unshown: WAITING at join without a point.
	Scored, First, Apart EstimatesGroup
	// ByJoin are the scored by when they joined, estimatesBucket apart
	// (where in the sale the estimates missed, if they did).
	ByJoin  []EstimatesGroup
	Unknown map[string]int
	Unshown int
	// Ranged: some join answer carried estimatedWaitRange (false on the
	// code before the issue).
	Ranged bool
	// Every WAITING answer (joins and polls) is checked: Answers of them;
	// Unsound those whose fields disagree (known without a point or a
	// range, a range that does not hold the point, a range while not
	// known). During the pause (from its PATCH
	// answered to the resume's asked), PausedRight answers said not known,
	// "paused"; PausedWrong anything else. AfterResume answers were asked
	// a second or more after the resume was answered; AfterUnknown of them
	// still said the wait was not known for the pause ("paused"). Not
	// known for another reason is the line's say, not the pause's: a
	// loaded machine holding admission up 2 s makes it "stalled". Answers
	// without waitTimeKnown are in Unsaid only.
	// Unsaid: WAITING answers that carried no waitTimeKnown (the code
	// before the issue).
	Answers, Unsound, Unsaid                            int
	UnsoundSample                                       string
	PausedRight, PausedWrong, AfterResume, AfterUnknown int
	PausedSample                                        string
	// InForce is the rate in force (effectiveRatePerSecond) every
	// second: s since the crowd's start → users/s.
	InForce               []Point
	Duration              time.Duration
	LoadBefore, LoadAfter float64
}

// EstimatesEvent is an unannounced event of a scenario: At since the
// crowd's start.
type EstimatesEvent struct {
	Name string
	At   time.Duration
}

// EstimatesGroup is a set of people's figures: Count of them; Ranged
// were shown a range, Covered of them waited within it (Coverage, a
// share); RatioP50 and RatioP90 of realised ÷ point (a point of 0 counts
// as 1 s, as rollup.Wait.Ratio does); the median person by point's range
// (Low, Point, High; Width = High ÷ Low, 0 when Low is 0); the waits'
// and points' medians.
type EstimatesGroup struct {
	Count, Ranged, Covered int
	Coverage               float64
	RatioP50, RatioP90     float64
	Low, Point, High       float64
	Width                  float64
	WaitP50, PointP50      time.Duration
}

// The goals (issue 54).
const (
	GoalEstimatesCoverage = 0.90
	GoalEstimatesRatioLo  = 0.9
	GoalEstimatesRatioHi  = 1.1
)

// estimatesScenarios are the section's runs, long or short (a tenth of
// the crowd over a tenth of the time; the same rates).
func estimatesScenarios(short bool) []EstimatesScenario {
	fixed := func(m HerdMode) EstimatesScenario {
		return EstimatesScenario{Name: m.Name + " (fixed)", Rate: m.Rate, Batch: m.Batch, Interval: m.Interval, Jitter: m.Jitter,
			Burst: 1000, Stream: 3200, Over: 32 * time.Second}
	}
	spread := HerdModes[2] // 10 per 100 ms, jitter on
	var s []EstimatesScenario
	for _, m := range HerdModes {
		s = append(s, fixed(m))
	}
	adaptive := fixed(HerdModes[0])
	adaptive.Name, adaptive.Adaptive = HerdModes[0].Name+" (adaptive)", true
	noShows := fixed(spread)
	noShows.Name, noShows.Burst, noShows.Stream, noShows.Over = "30% no-shows", 2000, 4900, 35*time.Second
	noShows.Vanish, noShows.Abandon = 0.3, 15*time.Second
	slow := fixed(spread)
	slow.Name, slow.Adaptive, slow.Burst, slow.Stream, slow.Over = "slowdown", true, 1400, 2700, 45*time.Second
	slow.SlowAt = 25 * time.Second
	phases := fixed(spread)
	phases.Name, phases.Burst, phases.Stream, phases.Over = "two phases", 1500, 3200, 40*time.Second
	phases.PhaseAt, phases.PhaseRate = 30*time.Second, 50
	pause := fixed(spread)
	pause.Name, pause.Burst, pause.Stream, pause.Over = "pause", 2000, 2400, 160*time.Second
	pause.PauseAt, pause.PauseFor = 20*time.Second, 120*time.Second
	s = append(s, adaptive, noShows, slow, phases, pause)
	if short {
		// One herd mode of the four, the rest each at a tenth.
		s = slices.Delete(s, 1, 4)
		for i := range s {
			e := &s[i]
			e.Burst, e.Stream = e.Burst/10, e.Stream/10
			e.Over, e.PhaseAt, e.SlowAt, e.PauseAt, e.PauseFor = e.Over/10, e.PhaseAt/10, e.SlowAt/10, e.PauseAt/10, e.PauseFor/10
			if e.PauseAt > 0 {
				// A fifth of the burst, not a tenth: at a tenth the line
				// at the resume drained in about two seconds, and a resume
				// answered late on a busy machine left no answer asked more
				// than a second after it (AfterResume) to check.
				e.Burst *= 2
			}
		}
	}
	for i := range s {
		s[i].Described = s[i].describe()
	}
	return s
}

// describe is the scenario's shape in words, for the report.
func (e EstimatesScenario) describe() string {
	how := fmt.Sprintf("%d per %v", e.Batch, e.Interval)
	if e.Jitter {
		how += ", jitter"
	}
	rate := fmt.Sprintf("fixed %g/s", e.Rate)
	if e.Adaptive {
		rate = fmt.Sprintf("adaptive up to %g/s", e.Rate)
	}
	d := fmt.Sprintf("%s (%s); %d at once, then %d over %v", rate, how, e.Burst, e.Stream, e.Over)
	if e.Vanish > 0 {
		d += fmt.Sprintf("; %.0f%% never come back (abandonAfterSeconds %d)", 100*e.Vanish, int(e.Abandon.Seconds()))
	}
	if e.PhaseAt > 0 {
		d += fmt.Sprintf("; a phase at %g/s from %v (announced)", e.PhaseRate, e.PhaseAt)
	}
	if e.SlowAt > 0 {
		d += fmt.Sprintf("; the orders' work %v → %v at %v (unannounced)", herdOrderWork, 2*herdOrderWork, e.SlowAt)
	}
	if e.PauseAt > 0 {
		d += fmt.Sprintf("; paused at %v for %v (unannounced)", e.PauseAt, e.PauseFor)
	}
	return d
}

func runEstimates(ctx context.Context, o Options) (*EstimatesReport, error) {
	start := time.Now()
	rep := &EstimatesReport{Date: start.UTC(), Before: o.EstimatesBefore}
	var runs []EstimatesScenario
	for _, e := range estimatesScenarios(o.Short) {
		if len(o.EstimatesRuns) == 0 || slices.Contains(o.EstimatesRuns, e.Name) {
			runs = append(runs, e)
		}
	}
	// One after another, in the short form too: run at once (as they were
	// for a while, to save CI time) each scenario's clients and admitters
	// were starved on a loaded machine, and its checks (answers during a
	// pause) failed by the load, not the line.
	for i := range runs {
		e := &runs[i]
		o.logf("estimates: %s: %s", e.Name, e.Described)
		if err := estimatesRun(ctx, o, e); err != nil {
			return rep, fmt.Errorf("%s: %w", e.Name, err)
		}
		o.logf("estimates: %s: %d people, %d admitted, %d errors; scored %d: coverage %.3f, realised ÷ point p50 %.2f p90 %.2f, "+
			"width %.2f at the median person (%g–%g–%g s); apart %d, not known %v; %v",
			e.Name, e.People, e.Admitted, e.Errors, e.Scored.Count, e.Scored.Coverage, e.Scored.RatioP50, e.Scored.RatioP90,
			e.Scored.Width, e.Scored.Low, e.Scored.Point, e.Scored.High, e.Apart.Count, e.Unknown, e.Duration.Round(time.Second))
	}
	rep.Scenarios = runs
	rep.Duration = time.Since(start)
	return rep, nil
}

// estimatesRun boots a shop, makes the scenario's queue and runs its crowd
// and its events, filling e with what the people lived.
func estimatesRun(ctx context.Context, o Options, e *EstimatesScenario) error {
	m, logs, err := bootShop(ctx, o, fmt.Sprintf("wrbench-estimates-%d", rand.Int64()), e.Jitter)
	if err != nil {
		return err
	}
	defer m.Close()
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1024, MaxIdleConnsPerHost: 1024}}
	defer hc.CloseIdleConnections()
	c := &client{base: "http://" + m.Addr(), admin: "Bearer " + m.Config.AdminToken, poll: hc, order: hc}
	q := fmt.Sprintf("estimates-%d", rand.IntN(1e9))
	if err := c.estimatesQueue(ctx, q, e); err != nil {
		return err
	}
	products, err := c.herdProducts(ctx, q)
	if err != nil {
		return err
	}
	e.People = e.Burst + e.Stream
	jwts := herdJWTs(m.Config.AuthSecret, q, e.People)
	e.LoadBefore, _ = loadAverage()
	run := &estimatesCrowd{c: c, q: q, e: e, slow: func() { m.Orders.SetWork(2 * herdOrderWork) }}
	people, err := run.run(ctx, jwts, products)
	e.LoadAfter, _ = loadAverage()
	if err != nil {
		return err
	}
	estimatesCount(people, e)
	if e.ErrorSample != "" {
		if l := logs.First(); l != "" {
			e.ErrorSample += "; the server logged: " + l
		}
	}
	if n, first := logs.Panics(); n > 0 {
		return fmt.Errorf("the server logged %d panics, the first: %s", n, first)
	}
	return nil
}

// estimatesQueue creates the scenario's queue: its rate, and the
// adaptive rate's bounds as the herd's (degrade's target when the orders
// slow down: above what the slowed database takes on its own).
func (c *client) estimatesQueue(ctx context.Context, q string, e *EstimatesScenario) error {
	cfg := map[string]any{
		"ratePerSecond": e.Rate, "batchSize": e.Batch, "intervalMs": e.Interval.Milliseconds(),
		"capacity": 4 * (e.Burst + e.Stream), "tokenTtlSeconds": herdTokenTTL.Seconds(),
		"abandonAfterSeconds": int(e.Abandon.Seconds()),
	}
	if e.Adaptive {
		target := herdTarget
		if e.SlowAt > 0 {
			target = degradeTarget
		}
		cfg["adaptive"], cfg["minRatePerSecond"], cfg["maxRatePerSecond"] = true, herdMinRate, e.Rate
		cfg["targetLatencyMs"] = target.Milliseconds()
	}
	st, body, _, err := c.do(ctx, c.poll, "PUT", "/admin/v1/queues/"+q, c.admin, cfg)
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("creating queue: %d %v %v", st, body, err)
	}
	return nil
}

// estimatesPerson is one person of a crowd. Only their own goroutine
// touches it until the run ends.
type estimatesPerson struct {
	userOutcome
	// joinedAt: their enter's request written, since the crowd's start.
	joinedAt time.Duration
	// What the join's answer said: WAITING with a point (shown); the
	// range (ranged); waitTimeKnown (knownSaid: the answer carried it).
	waiting, shown, ranged, known, knownSaid bool
	point, low, high                         float64
	reason                                   string
}

// estimatesCrowd is one scenario's crowd on its queue, and the instants
// its events took place at, which every person's answers are read
// against (as Unix nanoseconds; 0 until then).
type estimatesCrowd struct {
	c    *client
	q    string
	e    *EstimatesScenario
	slow func()
	// pausedFrom: the pause's PATCH answered; resumeAsked and
	// resumedAt: the resume's PATCH asked and answered.
	pausedFrom, resumeAsked, resumedAt atomic.Int64
	// checks are the answers' checks, kept by every person's goroutine.
	mu     sync.Mutex
	checks estimatesChecks
}

// estimatesChecks are the counts of EstimatesScenario's checks of every
// WAITING answer.
type estimatesChecks struct {
	answers, unsound, unsaid                            int
	unsoundSample, pausedSample                         string
	pausedRight, pausedWrong, afterResume, afterUnknown int
}

// run sends every person at their time and runs the events, and waits
// for them all.
func (r *estimatesCrowd) run(ctx context.Context, jwts, products []string) ([]estimatesPerson, error) {
	e := r.e
	// Bounded: everyone is let in within people ÷ the slowest rate of
	// the last arrival, the adaptive rate's floor at worst; a minute over.
	slowest := min(e.Rate, cmp.Or(e.PhaseRate, e.Rate))
	if e.Adaptive {
		slowest = herdMinRate
	}
	limit := e.Over + e.PauseFor + time.Duration(float64(e.People)/slowest*float64(time.Second)) + time.Minute
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if e.PhaseAt > 0 {
		// The phase is set before anyone arrives: it is announced.
		if err := r.patch(ctx, map[string]any{"phases": []map[string]any{{"name": "second",
			"startsAt": time.Now().Add(e.PhaseAt).UTC().Format(time.RFC3339Nano), "ratePerSecond": e.PhaseRate}}}); err != nil {
			return nil, err
		}
	}
	people := make([]estimatesPerson, e.People)
	start := time.Now()
	stop := make(chan struct{})
	rateDone := every(runCtx, stop, time.Second, func() { r.sampleRate(runCtx, start) })
	eventsDone := make(chan error, 1)
	go func() { eventsDone <- r.events(runCtx, start) }()
	var wg sync.WaitGroup
	for i := range people {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Duration(0)
			if i >= e.Burst {
				at = time.Duration(int64(e.Over) * int64(i-e.Burst+1) / int64(e.Stream))
			}
			if sleepCtx(runCtx, time.Until(start.Add(at))) != nil {
				people[i].err = errors.New("time limit reached before arriving")
				return
			}
			vanish := e.Vanish > 0 && float64(i%100) < 100*e.Vanish
			r.person(runCtx, jwts[i], products[i%len(products)], start, vanish, &people[i])
		}()
	}
	wg.Wait()
	e.Duration = time.Since(start)
	close(stop)
	<-rateDone
	err := <-eventsDone
	ch := r.checks
	e.Answers, e.Unsound, e.Unsaid, e.UnsoundSample, e.PausedSample = ch.answers, ch.unsound, ch.unsaid, ch.unsoundSample, ch.pausedSample
	e.PausedRight, e.PausedWrong, e.AfterResume, e.AfterUnknown = ch.pausedRight, ch.pausedWrong, ch.afterResume, ch.afterUnknown
	return people, err
}

// events runs the scenario's unannounced events at their times, noting
// when each was asked for.
func (r *estimatesCrowd) events(ctx context.Context, start time.Time) error {
	e := r.e
	type event struct {
		name string
		at   time.Duration
		do   func() error
	}
	var evs []event
	if e.SlowAt > 0 {
		evs = append(evs, event{"slowdown", e.SlowAt, func() error { r.slow(); return nil }})
	}
	if e.PauseAt > 0 {
		evs = append(evs, event{"pause", e.PauseAt, func() error {
			err := r.patch(ctx, map[string]any{"paused": true})
			r.pausedFrom.Store(time.Now().UnixNano())
			return err
		}}, event{"resume", e.PauseAt + e.PauseFor, func() error {
			r.resumeAsked.Store(time.Now().UnixNano())
			err := r.patch(ctx, map[string]any{"paused": false})
			r.resumedAt.Store(time.Now().UnixNano())
			return err
		}})
	}
	for _, ev := range evs {
		if err := sleepCtx(ctx, time.Until(start.Add(ev.at))); err != nil {
			return fmt.Errorf("the %s: %w", ev.name, err)
		}
		e.Events = append(e.Events, EstimatesEvent{Name: ev.name, At: time.Since(start)})
		if err := ev.do(); err != nil {
			return fmt.Errorf("the %s: %w", ev.name, err)
		}
	}
	return nil
}

// patch changes some of the queue's config.
func (r *estimatesCrowd) patch(ctx context.Context, cfg map[string]any) error {
	st, body, _, err := r.c.do(ctx, r.c.poll, "PATCH", "/admin/v1/queues/"+r.q, r.c.admin, cfg)
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("PATCH %v: %d %v %v", cfg, st, body, err)
	}
	return nil
}

// sampleRate keeps the rate in force (effectiveRatePerSecond).
func (r *estimatesCrowd) sampleRate(ctx context.Context, start time.Time) {
	st, b, _, err := r.c.do(ctx, r.c.poll, "GET", "/admin/v1/queues/"+r.q, r.c.admin, nil)
	if err != nil || st != http.StatusOK {
		return
	}
	if v, ok := b["effectiveRatePerSecond"].(float64); ok {
		r.e.InForce = append(r.e.InForce, Point{time.Since(start).Seconds(), v})
	}
}

// person enters (without waitSeconds, so that the join's answer is the
// estimate shown at joining, never a held READY), keeps what it said, and
// polls as the page does (pollAfterSeconds, held near the front with
// ?waitSeconds=) until READY, then orders; or, vanishing, never comes
// back.
func (r *estimatesCrowd) person(ctx context.Context, jwt, product string, start time.Time, vanish bool, p *estimatesPerson) {
	path := "/api/v1/queues/" + r.q + "/entries"
	var written atomic.Int64
	p.asked = time.Now()
	st, body, err := r.c.doRetrying(timeEnter(ctx, &written), &p.userOutcome, r.c.poll, "POST", path, jwt, nil)
	p.placed = p.asked
	if w := written.Load(); w != 0 {
		p.placed = time.Unix(0, w)
	}
	p.joinedAt = p.placed.Sub(start)
	p.vanished = vanish
	if err == nil && st == http.StatusOK {
		p.join(body)
	}
	sent := p.asked
	for !vanish {
		switch {
		case err != nil:
			p.err = err
			return
		case st != http.StatusOK:
			p.err = fmt.Errorf("queue answer %d %v", st, body)
			return
		case body["status"] == "READY":
			r.c.orderOnce(ctx, &p.userOutcome, jwt, product, body, start)
			return
		}
		after, ok := body["pollAfterSeconds"].(float64)
		if !ok || body["status"] != "WAITING" {
			p.err = fmt.Errorf("unexpected answer %v", body)
			return
		}
		r.check(sent, time.Now(), body)
		st, body, err = r.c.pollAgain(ctx, &p.userOutcome, after, path+"/me"+fmt.Sprintf("?waitSeconds=%d", herdWaitSeconds), jwt)
		sent = p.polled
	}
	if err != nil || st != http.StatusOK {
		p.err = fmt.Errorf("a no-show's enter: %d %v %v", st, body, err)
	}
}

// join keeps what the join's answer said of the wait.
func (p *estimatesPerson) join(body map[string]any) {
	p.waiting = body["status"] == "WAITING"
	p.point, p.shown = body["estimatedWaitSeconds"].(float64)
	p.known, p.knownSaid = body["waitTimeKnown"].(bool)
	p.low, p.high, p.ranged = waitRange(body)
	p.reason, _ = body["waitTimeUnknownReason"].(string)
}

// waitRange is an answer's estimatedWaitRange, if it has one.
func waitRange(body map[string]any) (low, high float64, ok bool) {
	rg, _ := body["estimatedWaitRange"].(map[string]any)
	low, okLow := rg["low"].(float64)
	high, okHigh := rg["high"].(float64)
	return low, high, okLow && okHigh
}

// check counts a WAITING answer, asked at sent and received at got,
// against the contract and, in a paused scenario, against the pause.
func (r *estimatesCrowd) check(sent, got time.Time, body map[string]any) {
	known, said := body["waitTimeKnown"].(bool)
	point, pointed := body["estimatedWaitSeconds"].(float64)
	low, high, ranged := waitRange(body)
	reason, _ := body["waitTimeUnknownReason"].(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := &r.checks
	ch.answers++
	if !said {
		ch.unsaid++
	}
	if said && known && (!pointed || !ranged || low > point || point > high) || said && !known && ranged {
		if ch.unsound++; ch.unsoundSample == "" {
			ch.unsoundSample = fmt.Sprintf("%v", body)
		}
	}
	// An answer that does not say (the code before the issue) is counted
	// in unsaid only.
	if from, until := r.pausedFrom.Load(), r.resumeAsked.Load(); said && from != 0 && sent.UnixNano() > from && (until == 0 || got.UnixNano() < until) {
		if said && !known && reason == "paused" {
			ch.pausedRight++
		} else if ch.pausedWrong++; ch.pausedSample == "" {
			ch.pausedSample = fmt.Sprintf("%v", body)
		}
	}
	if resumed := r.resumedAt.Load(); resumed != 0 && sent.UnixNano() > resumed+int64(time.Second) {
		ch.afterResume++
		if said && !known && reason == "paused" {
			ch.afterUnknown++
		}
	}
}

// estimatesCount sorts the people into the report's groups: not known at
// join (by reason), apart (an unannounced event fell while they waited),
// scored (the rest who were shown a point), and counts the rest.
func estimatesCount(people []estimatesPerson, e *EstimatesScenario) {
	e.Unknown = map[string]int{}
	var scored, first, apart []estimatesPerson
	for _, p := range people {
		e.Retries += p.retries
		if p.vanished {
			e.Vanished++
		}
		if p.err != nil {
			if e.Errors++; e.ErrorSample == "" {
				e.ErrorSample = p.err.Error()
			}
		}
		if p.vanished || p.admitted.IsZero() {
			continue
		}
		e.Admitted++
		e.Ranged = e.Ranged || p.ranged
		switch {
		case p.knownSaid && !p.known:
			e.Unknown[p.reason]++
		case !p.waiting || !p.shown:
			e.Unshown++
		case estimatesApart(p, e.Events):
			apart = append(apart, p)
		default:
			scored = append(scored, p)
			if p.joinedAt < time.Second {
				first = append(first, p)
			}
		}
	}
	e.Scored, e.First, e.Apart = estimatesFigures(scored), estimatesFigures(first), estimatesFigures(apart)
	var byJoin [][]estimatesPerson
	for _, p := range scored {
		i := int(p.joinedAt / estimatesBucket)
		for len(byJoin) <= i {
			byJoin = append(byJoin, nil)
		}
		byJoin[i] = append(byJoin[i], p)
	}
	e.ByJoin = nil
	for _, ps := range byJoin {
		e.ByJoin = append(e.ByJoin, estimatesFigures(ps))
	}
}

// estimatesBucket is the span of joining times of EstimatesScenario.ByJoin.
const estimatesBucket = 10 * time.Second

// estimatesApart says whether an unannounced event fell between p's join
// and their admission.
func estimatesApart(p estimatesPerson, events []EstimatesEvent) bool {
	admitted := p.joinedAt + p.admitted.Sub(p.placed)
	return slices.ContainsFunc(events, func(ev EstimatesEvent) bool { return p.joinedAt < ev.At && ev.At < admitted })
}

// estimatesFigures are a group's figures. The arithmetic is
// rollup.Wait's (Ratio, Covered), written again here because the bench
// runs against the code before the issue too, whose rollup has no range.
func estimatesFigures(ps []estimatesPerson) EstimatesGroup {
	g := EstimatesGroup{Count: len(ps)}
	if len(ps) == 0 {
		return g
	}
	var ratios []float64
	var waits, points []time.Duration
	var ranged []estimatesPerson
	for _, p := range ps {
		wait := max(p.admitted.Sub(p.placed), 0)
		ratios = append(ratios, wait.Seconds()/max(p.point, 1))
		waits = append(waits, wait)
		points = append(points, time.Duration(p.point*float64(time.Second)))
		if p.ranged {
			ranged = append(ranged, p)
			if s := wait.Seconds(); s >= p.low && s <= p.high {
				g.Covered++
			}
		}
	}
	slices.Sort(ratios)
	slices.Sort(waits)
	slices.Sort(points)
	g.RatioP50, g.RatioP90 = nearestRank(ratios, 50), nearestRank(ratios, 90)
	g.WaitP50, g.PointP50 = percentile(waits, 50), percentile(points, 50)
	if g.Ranged = len(ranged); g.Ranged > 0 {
		g.Coverage = float64(g.Covered) / float64(g.Ranged)
		slices.SortStableFunc(ranged, func(a, b estimatesPerson) int { return cmp.Compare(a.point, b.point) })
		mid := ranged[max(0, (len(ranged)+1)/2-1)]
		g.Low, g.Point, g.High = mid.low, mid.point, mid.high
		if mid.low > 0 {
			g.Width = mid.high / mid.low
		}
	}
	return g
}

// nearestRank is the p-th percentile of sorted (nearest rank), 0 when empty.
func nearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
