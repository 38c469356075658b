package bench

// Lanes (issue 53): a members lane with 30% of admission beside the
// public's 70%, members arriving faster than their share. What it
// measures, from the outside only (every person's answers, and the
// store's clock in their READY answers): whether each lane got its share
// while both had people waiting, whether any waiting person was ever told
// a higher position than before, and how the estimate shown at joining
// compared with the wait that followed, lane by lane.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// LanesReport is the lanes section: one queue, two lanes, one crowd.
type LanesReport struct {
	// Rate is the queue's admission (users/s, 10 a tick of 100 ms).
	Rate float64
	// Lanes are the members' and the public's figures, in that order.
	Lanes []LaneFigures
	// Ticks: the ticks at which both lanes had someone waiting: the
	// shares are read over them only, as the issue asks (an empty lane
	// hands its share over).
	Ticks int
	// Answers counts the WAITING answers with a position, every one
	// checked against the same person's previous answer; Rises those that
	// told a higher position than the one before (any is a failure).
	Answers, Rises int
	RiseSample     string
	// WrongLane counts WAITING answers whose lane was not the person's;
	// ReadyWrongLane the people whose READY answer named another lane
	// (READY names one only when the store kept it; the contract's, not
	// the bar, so it is reported beside Pass, not in it).
	WrongLane, ReadyWrongLane int
	WrongLaneSample           string
	// SharesWithin is the bar for each lane's ratio (0.05).
	SharesWithin float64
	// Pass: every lane's ratio within SharesWithin of 1, no rise, no
	// answer in the wrong lane, no error.
	Pass                     bool
	Errors, Retries          int
	ErrorSample, RetrySample string
	Duration                 time.Duration
	// LoadBefore and LoadAfter are the machine's 1-minute load average
	// as the run began and ended (a shared machine: the figures' context).
	LoadBefore, LoadAfter float64
}

// LaneFigures is one lane's part of the run.
type LaneFigures struct {
	Name  string
	Share float64
	// People arrived evenly over Arrival; Admitted of them were answered
	// READY; StoreAdmitted is the store's own count (laneStats' admitted,
	// -1 when the stats carry none).
	People        int
	Arrival       time.Duration
	Admitted      int
	StoreAdmitted int64
	// InTicks: admitted at the ticks where both lanes waited; RateShare
	// their part of every lane's, and Ratio RateShare ÷ Share.
	InTicks   int
	RateShare float64
	Ratio     float64
	// The estimate ratio (realised wait ÷ estimatedWaitSeconds shown on
	// joining) of the Estimated people whose join answer carried one.
	Estimated                  int
	EstimateP50, EstimateP90   float64
	WaitP50, WaitP90, ShownP50 time.Duration
}

// The run's shape (the issue's): rate 100/s; 1,500 members over the first
// 25 s (60/s, twice their share's 30/s) and 5,000 of the public over 60 s.
const (
	lanesRate           = 100
	lanesMembers        = 1500
	lanesMembersOver    = 25 * time.Second
	lanesPublic         = 5000
	lanesPublicOver     = 60 * time.Second
	lanesMembersShare   = 0.3
	lanesSharesWithin   = 0.05
	lanesMemberClaim    = "tier"
	lanesMemberValue    = "member"
	lanesMembersLane    = "members"
	lanesPublicLane     = "public"
	lanesDrainAllowance = time.Minute
)

// lanesPerson is one person of the crowd: their lane, what they were told
// and when. Only their own goroutine touches it until the run ends.
type lanesPerson struct {
	userOutcome
	lane string
	// joined: the join's answer arrived (the place exists from then on);
	// admittedAt: when admission let them in, on the store's clock.
	joined, admittedAt time.Time
	shown              float64 // estimatedWaitSeconds of the join's answer (0: none)
	answers, rises     int
	riseSample         string
	wrongLane          int
	readyWrongLane     bool
	wrongLaneSample    string
}

func runLanes(ctx context.Context, o Options) (*LanesReport, error) {
	logs := &serverLog{tee: o.Log}
	m, err := boot(ctx, o, logs, nil)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1024, MaxIdleConnsPerHost: 1024}}
	defer hc.CloseIdleConnections()
	c := &client{base: "http://" + m.Addr(), admin: "Bearer " + m.Config.AdminToken, poll: hc, order: hc}
	rep, err := lanesRun(ctx, o, c, []byte(m.Config.AuthSecret))
	if rep != nil && rep.ErrorSample != "" {
		if l := logs.First(); l != "" {
			rep.ErrorSample += "; the server logged: " + l
		}
	}
	return rep, err
}

// lanesRun runs the crowd against the instance c speaks to, whose JWTs
// are signed with secret.
func lanesRun(ctx context.Context, o Options, c *client, secret []byte) (*LanesReport, error) {
	rep := &LanesReport{Rate: lanesRate, SharesWithin: lanesSharesWithin, Lanes: []LaneFigures{
		{Name: lanesMembersLane, Share: lanesMembersShare, People: lanesMembers, Arrival: lanesMembersOver, StoreAdmitted: -1},
		{Name: lanesPublicLane, Share: 1 - lanesMembersShare, People: lanesPublic, Arrival: lanesPublicOver, StoreAdmitted: -1},
	}}
	if o.Short {
		// A tenth of the crowd over a tenth of the time: the same rates.
		for i := range rep.Lanes {
			rep.Lanes[i].People /= 10
			rep.Lanes[i].Arrival /= 10
		}
	}
	q := fmt.Sprintf("lanes-%d", rand.IntN(1e9))
	st, body, _, err := c.do(ctx, c.poll, "PUT", "/admin/v1/queues/"+q, c.admin, map[string]any{
		"ratePerSecond": rep.Rate, "batchSize": 10, "intervalMs": 100, "capacity": 4 * (lanesMembers + lanesPublic),
		"tokenTtlSeconds": int(herdTokenTTL / time.Second),
		"lanes": []map[string]any{
			{"name": lanesMembersLane, "claim": lanesMemberClaim + "=" + lanesMemberValue, "share": lanesMembersShare},
			{"name": lanesPublicLane, "share": 1 - lanesMembersShare},
		},
	})
	if err != nil || st != 200 {
		return rep, fmt.Errorf("creating queue: %d %v %v", st, body, err)
	}
	o.logf("lanes: %d members over %v, %d of the public over %v, %g/s", rep.Lanes[0].People, rep.Lanes[0].Arrival,
		rep.Lanes[1].People, rep.Lanes[1].Arrival, rep.Rate)
	rep.LoadBefore, _ = loadAverage()
	people, err := lanesCrowd(ctx, c, q, secret, rep)
	rep.LoadAfter, _ = loadAverage()
	if err != nil {
		return rep, err
	}
	lanesStoreCounts(ctx, c, q, rep)
	lanesCount(people, rep)
	o.logf("lanes: %d ticks with both waiting; members %.3f of admissions (ratio %.3f), public %.3f (ratio %.3f); "+
		"%d answers checked, %d rises; estimate ratio p50 members %.2f public %.2f; %d errors; %v; pass %v",
		rep.Ticks, rep.Lanes[0].RateShare, rep.Lanes[0].Ratio, rep.Lanes[1].RateShare, rep.Lanes[1].Ratio,
		rep.Answers, rep.Rises, rep.Lanes[0].EstimateP50, rep.Lanes[1].EstimateP50, rep.Errors,
		rep.Duration.Round(time.Millisecond), rep.Pass)
	return rep, nil
}

// lanesCrowd sends every person at their time, each polling as the page
// does until READY, and waits for them all.
func lanesCrowd(ctx context.Context, c *client, q string, secret []byte, rep *LanesReport) ([]lanesPerson, error) {
	var people []lanesPerson
	type arrival struct {
		at  time.Duration
		jwt string
	}
	var arrivals []arrival
	for li, l := range rep.Lanes {
		for i := range l.People {
			claims := jwt.MapClaims{"sub": fmt.Sprintf("%s-%s-%d", q, l.Name, i), "exp": time.Now().Add(time.Hour).Unix()}
			if li == 0 {
				claims[lanesMemberClaim] = lanesMemberValue
			}
			raw, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
			if err != nil {
				return nil, err
			}
			people = append(people, lanesPerson{lane: l.Name})
			arrivals = append(arrivals, arrival{time.Duration(int64(l.Arrival) * int64(i) / int64(l.People)), "Bearer " + raw})
		}
	}
	longest := max(rep.Lanes[0].Arrival, rep.Lanes[1].Arrival)
	total := rep.Lanes[0].People + rep.Lanes[1].People
	// Bounded: everyone is let in within total/rate seconds of the first
	// arrival when admission keeps its rate; a minute over that.
	limit := max(longest, time.Duration(float64(total)/rep.Rate*float64(time.Second))) + lanesDrainAllowance
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range people {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-runCtx.Done():
				people[i].err = errors.New("time limit reached before arriving")
				return
			case <-time.After(time.Until(start.Add(arrivals[i].at))):
			}
			lanesWait(runCtx, c, q, arrivals[i].jwt, &people[i])
		}()
	}
	wg.Wait()
	rep.Duration = time.Since(start)
	return people, nil
}

// lanesWait joins and polls as the page does (at pollAfterSeconds, held
// near the front) until READY, checking every answer's lane and position.
func lanesWait(ctx context.Context, c *client, q, jwt string, p *lanesPerson) {
	path := "/api/v1/queues/" + q + "/entries"
	wait := fmt.Sprintf("?waitSeconds=%d", herdWaitSeconds)
	p.asked = time.Now()
	st, body, err := c.doRetrying(ctx, &p.userOutcome, c.poll, "POST", path+wait, jwt, nil)
	p.joined = time.Now()
	if est, ok := body["estimatedWaitSeconds"].(float64); ok && body["status"] == "WAITING" {
		p.shown = est
	}
	var last float64
	for {
		switch {
		case err != nil:
			p.err = err
			return
		case st != http.StatusOK:
			p.err = fmt.Errorf("queue answer %d %v", st, body)
			return
		}
		// A READY answer names a lane only when the store kept it (a
		// token keeps none): absent there, it is not wrong.
		if l, named := body["lane"].(string); l != p.lane && (named || body["status"] != "READY") {
			if p.wrongLaneSample == "" {
				// Status and lane only: a READY answer carries a token.
				p.wrongLaneSample = fmt.Sprintf("a %s person's %v answer named lane %q", p.lane, body["status"], l)
			}
			if body["status"] == "READY" {
				p.readyWrongLane = true
			} else {
				p.wrongLane++
			}
		}
		if body["status"] == "READY" {
			p.told = time.Now()
			if p.admittedAt = admittedAt(body); p.admittedAt.IsZero() {
				p.admittedAt = p.told
			}
			return
		}
		after, ok := body["pollAfterSeconds"].(float64)
		if !ok || body["status"] != "WAITING" {
			p.err = fmt.Errorf("unexpected answer %v", body)
			return
		}
		if pos, ok := body["position"].(float64); ok {
			p.answers++
			if last > 0 && pos > last {
				if p.rises++; p.riseSample == "" {
					p.riseSample = fmt.Sprintf("a %s person told position %g, then %g", p.lane, last, pos)
				}
			}
			last = pos
		}
		st, body, err = c.pollAgain(ctx, &p.userOutcome, after, path+"/me"+wait, jwt)
	}
}

// lanesStoreCounts reads each lane's admissions as the store counts them
// (the admin stats' laneStats), to set beside what the people were told.
func lanesStoreCounts(ctx context.Context, c *client, q string, rep *LanesReport) {
	st, body, _, err := c.do(ctx, c.poll, "GET", "/admin/v1/queues/"+q, c.admin, nil)
	if err != nil || st != http.StatusOK {
		return
	}
	stats, _ := body["laneStats"].([]any)
	for _, s := range stats {
		s, _ := s.(map[string]any)
		name, _ := s["name"].(string)
		admitted, ok := s["admitted"].(float64)
		for i := range rep.Lanes {
			if rep.Lanes[i].Name == name && ok {
				rep.Lanes[i].StoreAdmitted = int64(admitted)
			}
		}
	}
}

// lanesCount adds up the people's answers: errors, positions, lanes, the
// shares over the ticks where both lanes waited, the estimate ratios.
func lanesCount(people []lanesPerson, rep *LanesReport) {
	for _, p := range people {
		rep.Retries += p.retries
		if rep.RetrySample == "" {
			rep.RetrySample = p.retrySample
		}
		if p.err != nil {
			if rep.Errors++; rep.ErrorSample == "" {
				rep.ErrorSample = p.err.Error()
			}
		}
		rep.Answers += p.answers
		if rep.Rises += p.rises; rep.RiseSample == "" {
			rep.RiseSample = p.riseSample
		}
		if rep.WrongLane += p.wrongLane; rep.WrongLaneSample == "" {
			rep.WrongLaneSample = p.wrongLaneSample
		}
		if p.readyWrongLane {
			rep.ReadyWrongLane++
		}
	}
	for i := range rep.Lanes {
		lanesEstimates(people, &rep.Lanes[i])
	}
	lanesShares(people, rep)
	rep.Pass = rep.Rises == 0 && rep.WrongLane == 0 && rep.Errors == 0 && rep.Ticks > 0
	for _, l := range rep.Lanes {
		rep.Pass = rep.Pass && math.Abs(l.Ratio-1) <= rep.SharesWithin
	}
}

// lanesShares counts each lane's admissions over the ticks at which both
// lanes had someone waiting. A tick is known by its admissions: everyone
// one tick lets in is let in at the same instant of the store's clock
// (their READY answers' expiresAt less the token's lifetime). A lane had
// someone waiting at a tick when one of its people had sent their enter
// before it and was let in at it or later.
func lanesShares(people []lanesPerson, rep *LanesReport) {
	type tick struct {
		at       time.Time
		admitted []int // by lane
	}
	var ticks []tick
	byAt := map[time.Time]int{}
	for _, p := range people {
		li := slices.IndexFunc(rep.Lanes, func(l LaneFigures) bool { return l.Name == p.lane })
		if p.admittedAt.IsZero() || li < 0 {
			continue
		}
		rep.Lanes[li].Admitted++
		at := p.admittedAt.Round(time.Millisecond)
		ti, ok := byAt[at]
		if !ok {
			ti = len(ticks)
			byAt[at] = ti
			ticks = append(ticks, tick{at: at, admitted: make([]int, len(rep.Lanes))})
		}
		ticks[ti].admitted[li]++
	}
	total := 0
	for _, t := range ticks {
		if !lanesAllWaiting(people, rep, t.at) {
			continue
		}
		rep.Ticks++
		for li, n := range t.admitted {
			rep.Lanes[li].InTicks += n
			total += n
		}
	}
	for i := range rep.Lanes {
		l := &rep.Lanes[i]
		if total > 0 && l.Share > 0 {
			l.RateShare = float64(l.InTicks) / float64(total)
			l.Ratio = l.RateShare / l.Share
		}
	}
}

// lanesAllWaiting says whether every lane had someone waiting at the tick
// at: their enter sent before it, let in at it or later.
func lanesAllWaiting(people []lanesPerson, rep *LanesReport, at time.Time) bool {
	waiting := make([]bool, len(rep.Lanes))
	for _, p := range people {
		if p.asked.IsZero() || !p.asked.Before(at) || p.admittedAt.IsZero() || p.admittedAt.Round(time.Millisecond).Before(at) {
			continue
		}
		if li := slices.IndexFunc(rep.Lanes, func(l LaneFigures) bool { return l.Name == p.lane }); li >= 0 {
			waiting[li] = true
		}
	}
	return !slices.Contains(waiting, false)
}

// lanesEstimates is one lane's realised wait (from the join's answer to
// admission) against the estimate that answer showed: median and p90 of
// their ratio, of the waits and of the estimates.
func lanesEstimates(people []lanesPerson, l *LaneFigures) {
	var ratios []float64
	var waits, shown []time.Duration
	for _, p := range people {
		if p.lane != l.Name || p.admittedAt.IsZero() || p.shown <= 0 {
			continue
		}
		wait := p.admittedAt.Sub(p.joined)
		ratios = append(ratios, wait.Seconds()/p.shown)
		waits = append(waits, wait)
		shown = append(shown, time.Duration(p.shown*float64(time.Second)))
	}
	l.Estimated = len(ratios)
	if len(ratios) == 0 {
		return
	}
	slices.Sort(ratios)
	slices.Sort(waits)
	slices.Sort(shown)
	at := func(p float64) int { return max(0, min(int(p/100*float64(len(ratios))+0.5)-1, len(ratios)-1)) }
	l.EstimateP50, l.EstimateP90 = ratios[at(50)], ratios[at(90)]
	l.WaitP50, l.WaitP90, l.ShownP50 = percentile(waits, 50), percentile(waits, 90), percentile(shown, 50)
}
