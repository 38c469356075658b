package bench

// Likely bots (issue 51's "Must show"): an opening for people while a bot
// farm takes three places for each of theirs, run three ways on a waitroom
// of its own process (embedded line, so its CPU time from /proc is its
// own): with the signals configured, without them (the before figure), and
// without the bots (the time in line people should keep). What it
// measures: the share of people among the first admitted, that no person
// is shadowed or refused, that people behind one carrier-NAT address all
// hold a place, people's time in line, and what a shadow place's poll costs
// the instance beside a person's.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// BotsReport is the bots section: the same crowd run BotsRuns ways.
type BotsReport struct {
	// People take one place each, NAT of them from one carrier-NAT
	// address; Late more people enter after the opening (a person waiting
	// behind the admitted, whose polls the CPU figure compares with a
	// shadow place's). DCBots places come from DCAddrs data-centre
	// addresses listed in the ranges file, ScoredBots from as many
	// residential addresses the edge scores below the threshold, polling
	// Faster times faster than told.
	People, NAT, Late, DCBots, DCAddrs, ScoredBots int
	Faster                                         int
	Rate                                           float64
	// Admit: the first this many admitted are counted (maxActiveTokens
	// stops admission there; nobody spends a token).
	Admit int
	Runs  []BotsRun
}

// BotsRun is one run of the crowd on a fresh instance.
type BotsRun struct {
	Name, Described string
	Bots, Signals   bool
	// Entered is how long the crowd took to enter (all before the
	// opening).
	Entered time.Duration
	// Admitted: answered READY (at most Admit); PeopleAdmitted of them
	// people, PeopleShare their share.
	Admitted, PeopleAdmitted int
	PeopleShare              float64
	// From the instance (nothing a client is answered tells a shadow place
	// from a person's): Shadowed is its stats' shadowLength (-1: not
	// answered), PeopleShadowed that less the bots that hold a place (0
	// when no bot does, so every shadow place is a person's): exact while
	// every placed bot is shadowed, which the people's share of those
	// admitted (1.0 under shadowAdmits never) and Shadowed equal to the
	// bots' count bear out. People403 and Bots403: the answers 403.
	Shadowed, PeopleShadowed int
	People403, Bots403       int
	// From the instance: its stats' shadowLength and the admin suspects
	// list's (-1: not answered); the signals that marked the places the
	// list shows (its first botsListLimit), and their distinct hashed
	// addresses.
	ShadowLength, ListedLength int
	Listed, ListedAddresses    int
	ListedSignals              map[string]int
	// The carrier-NAT people placed, and the longest any of them took from
	// asking for a session to holding a place.
	NATPlaced int
	NATWithin time.Duration
	// People's time in line: from the opening to their READY answer.
	TimeP50, TimeP95 time.Duration
	// CPU of the instance per status poll, from /proc over CPUPolls polls
	// of each kind (the signals run only).
	CPU              *BotsCPU
	Requests, Errors int
	ErrorSample      string
	Duration         time.Duration
}

// BotsCPU compares the instance's CPU time per status poll of a shadow
// place with a waiting person's, measured in one run, alternating.
type BotsCPU struct {
	Polls                        int // of each kind
	ShadowPerPoll, PersonPerPoll time.Duration
	Ratio                        float64 // shadow ÷ person
	// RoundRatios are each round's ratio: how far the machine's load
	// moves one.
	RoundRatios []float64
}

// Goals of the "Must show".
const (
	GoalBotsPeopleShare = 0.99
	GoalBotsTimeRatio   = 0.10 // people's p50 and p95 within 10% of the run without bots
	GoalBotsCPURatio    = 1.0
)

const (
	botsScoreHeader = "X-Bot-Score"
	botsScoreBelow  = 30
	botsPersonScore = "90"
	botsBotScore    = "5"
	// botsPageWait is the waitSeconds people's polls carry, as the page's.
	botsPageWait = 20
)

// botsRunSpec is one way of running the crowd.
type botsRunSpec struct {
	name, described string
	bots, signals   bool
}

var botsRunSpecs = []botsRunSpec{
	{"signals", "the bot farm, signals on (ranges file, edge score)", true, true},
	{"before", "the bot farm, no signal configured", true, false},
	{"no bots", "people only, signals on", false, true},
}

func runBots(ctx context.Context, o Options) (*BotsReport, error) {
	rep := &BotsReport{People: 2000, NAT: 150, Late: 200, DCBots: 3000, DCAddrs: 30, ScoredBots: 3000,
		Faster: 5, Rate: 200, Admit: 2000}
	if o.Short {
		rep.People, rep.NAT, rep.Late, rep.DCBots, rep.DCAddrs, rep.ScoredBots, rep.Rate, rep.Admit = 200, 15, 20, 300, 3, 300, 100, 200
	}
	dir, err := os.MkdirTemp("", "waitroom-bots")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ranges := filepath.Join(dir, "ip-ranges.json")
	if err := writeBotsRanges(ranges, rep.DCAddrs); err != nil {
		return nil, err
	}
	for _, spec := range botsRunSpecs {
		if len(o.BotsRuns) > 0 && !slices.Contains(o.BotsRuns, spec.name) {
			continue
		}
		o.logf("bots: %s: %s", spec.name, spec.described)
		run, err := botsRun(ctx, o, rep, spec, ranges, filepath.Join(dir, strings.ReplaceAll(spec.name, " ", "-")))
		if err != nil {
			return rep, fmt.Errorf("%s: %w", spec.name, err)
		}
		o.logf("bots: %s: people %d of the first %d admitted (%.1f%%); shadowed %d (people %d); 403 to people %d, to bots %d; "+
			"NAT %d placed in %v; time in line p50 %v p95 %v; %d requests, %d errors, %v",
			spec.name, run.PeopleAdmitted, run.Admitted, 100*run.PeopleShare, run.Shadowed, run.PeopleShadowed, run.People403, run.Bots403,
			run.NATPlaced, run.NATWithin.Round(time.Millisecond), run.TimeP50.Round(time.Millisecond), run.TimeP95.Round(time.Millisecond),
			run.Requests, run.Errors, run.Duration.Round(time.Second))
		rep.Runs = append(rep.Runs, run)
	}
	return rep, nil
}

// writeBotsRanges writes the data-centre list as AWS publishes its own
// (ip-ranges.json): n /24s in 198.18.0.0/15, the benchmarking block.
func writeBotsRanges(path string, n int) error {
	type prefix struct {
		IPPrefix string `json:"ip_prefix"`
		Region   string `json:"region"`
		Service  string `json:"service"`
		Border   string `json:"network_border_group"`
	}
	doc := struct {
		SyncToken  string   `json:"syncToken"`
		CreateDate string   `json:"createDate"`
		Prefixes   []prefix `json:"prefixes"`
		IPv6       []prefix `json:"ipv6_prefixes"`
	}{SyncToken: "1733443202", CreateDate: "2026-12-06-00-00-02", IPv6: []prefix{}}
	for i := range n {
		doc.Prefixes = append(doc.Prefixes, prefix{fmt.Sprintf("198.18.%d.0/24", i), "us-east-1", "EC2", "us-east-1"})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// botsArgs are the instance's flags: X-Forwarded-For believed from the
// harness (the trusted proxy), per-address limits raised as a shop with
// carrier-NAT customers raises them (150 people behind one address would
// otherwise wait 50 s for their sessions at 1/s past the burst of 100),
// and with signals, the ranges file, the edge's score header and the
// poll-rate signal at the factor the docs recommend (people poll as told,
// so it must mark none of them).
func botsArgs(dataDir, ranges string, signals bool) []string {
	args := []string{"--data-dir", dataDir, "--trusted-proxies", "127.0.0.1/32",
		"--address-entry-burst", "200", "--address-session-burst", "200"}
	if signals {
		args = append(args, "--suspect-ranges", ranges,
			"--bot-score-header", botsScoreHeader, "--bot-score-below", strconv.Itoa(botsScoreBelow),
			"--suspect-poll-factor", "3")
	}
	return args
}

// botKind is who a client is.
type botKind int

const (
	kindPerson botKind = iota
	kindNAT            // a person behind the carrier-NAT address
	kindLate           // a person who enters after the opening
	kindDC             // a bot from a data-centre address
	kindScored         // a bot from a residential address, scored low
)

func (k botKind) person() bool { return k <= kindLate }

// botClient is one place's client: its address and score as the trusted
// proxy forwards them, its session, and what it was answered. Only its own
// goroutine touches it until the run's pollers have stopped.
type botClient struct {
	kind           botKind
	addr, score    string
	cookie, ticket string
	after          float64 // the last pollAfterSeconds told
	tried, placed  time.Time
	ready          time.Time
	got403         bool
	err            error
}

// botsCrowd is every client of a run, people first, in the report's
// numbers: residential people in 81/8, the carrier-NAT address 100.64.7.7,
// late people in 83/8, data-centre bots in the ranges file's /24s, scored
// bots in 82/8.
func botsCrowd(rep *BotsReport, bots bool) []*botClient {
	resi := func(first, i int) string { return fmt.Sprintf("%d.%d.%d.%d", first, i>>16&0xff, i>>8&0xff, 1+i&0x7f) }
	var cs []*botClient
	for i := range rep.People {
		c := &botClient{kind: kindPerson, addr: resi(81, i), score: botsPersonScore}
		if i < rep.NAT {
			c.kind, c.addr = kindNAT, "100.64.7.7"
		}
		cs = append(cs, c)
	}
	for i := range rep.Late {
		cs = append(cs, &botClient{kind: kindLate, addr: resi(83, i), score: botsPersonScore})
	}
	if !bots {
		return cs
	}
	for i := range rep.DCBots {
		// No score: a trusted request without the header is "unknown";
		// only the ranges file tells these apart.
		cs = append(cs, &botClient{kind: kindDC, addr: fmt.Sprintf("198.18.%d.10", i%rep.DCAddrs)})
	}
	for i := range rep.ScoredBots {
		cs = append(cs, &botClient{kind: kindScored, addr: resi(82, i), score: botsBotScore})
	}
	return cs
}

// botsRunner is one run's instance, queue and crowd.
type botsRunner struct {
	o         Options
	rep       *BotsReport
	hc        *http.Client
	base      string
	admin     string
	queue     string
	crowd     []*botClient
	opening   time.Time
	readySeen atomic.Int64
	requests  atomic.Int64
	errMu     sync.Mutex
	errors    int
	errSample string
}

func botsRun(ctx context.Context, o Options, rep *BotsReport, spec botsRunSpec, ranges, dataDir string) (BotsRun, error) {
	run := BotsRun{Name: spec.name, Described: spec.described, Bots: spec.bots, Signals: spec.signals, ShadowLength: -1, ListedLength: -1}
	cfg := newInstanceConfig(Options{})
	cfg.Args = botsArgs(dataDir, ranges, spec.signals)
	in, err := startInstance(ctx, cfg, o.Log)
	if err != nil {
		return run, err
	}
	defer in.stop()
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxConnsPerHost: 256, MaxIdleConnsPerHost: 256},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer hc.CloseIdleConnections()
	r := &botsRunner{o: o, rep: rep, hc: hc, base: "http://" + in.Addr, admin: "Bearer " + cfg.AdminToken,
		queue: fmt.Sprintf("bots-%d", rand.IntN(1e9)), crowd: botsCrowd(rep, spec.bots)}
	if err := r.createQueue(ctx); err != nil {
		return run, err
	}
	// Bounded: entering, the opening, admission at the rate, a poll or
	// two to learn it, and the CPU comparison.
	limit := 3*time.Minute + time.Duration(float64(rep.Admit)/rep.Rate*float64(time.Second))
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	pollCtx, stopPolls := context.WithCancel(runCtx)
	var pollers sync.WaitGroup
	if err := r.enterAll(runCtx, pollCtx, &pollers); err != nil {
		stopPolls()
		return run, err
	}
	run.Entered = time.Since(start)
	err = r.openAndAdmit(runCtx, pollCtx, &pollers)
	if err == nil {
		r.suspectsSeen(runCtx, &run)
	}
	stopPolls()
	pollers.Wait()
	if err != nil {
		return run, err
	}
	if spec.bots && spec.signals {
		if run.CPU, err = r.comparePolls(runCtx, in.pid()); err != nil {
			return run, fmt.Errorf("comparing polls: %w", err)
		}
	}
	run.Duration = time.Since(start)
	r.count(&run)
	return run, nil
}

// createQueue makes the run's queue: anyone may join (the proof of work
// is not what is measured), an opening far ahead (moved near once
// everyone is in), admission stopped at Admit live tokens that nobody
// spends.
func (r *botsRunner) createQueue(ctx context.Context) error {
	st, body, _, err := r.do(ctx, "PUT", "/admin/v1/queues/"+r.queue, nil, map[string]any{
		"ratePerSecond": r.rep.Rate, "batchSize": int(r.rep.Rate / 10), "intervalMs": 100, "entry": "any",
		"capacity": 100_000, "tokenTtlSeconds": 3600, "maxActiveTokens": r.rep.Admit,
		"opensAt": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339),
	})
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("creating the queue: %d %v %v", st, body, err)
	}
	return nil
}

// enterAll takes every place but the late people's, in a random
// interleaved order, from a few dozen workers (many clients at once, as a
// crowd and a farm arrive); each client polls from its place on.
func (r *botsRunner) enterAll(ctx, pollCtx context.Context, pollers *sync.WaitGroup) error {
	var order []*botClient
	for _, c := range r.crowd {
		if c.kind != kindLate {
			order = append(order, c)
		}
	}
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	r.enterEach(ctx, pollCtx, pollers, order)
	return ctx.Err()
}

func (r *botsRunner) enterEach(ctx, pollCtx context.Context, pollers *sync.WaitGroup, order []*botClient) {
	next := make(chan *botClient)
	var wg sync.WaitGroup
	for range 48 {
		wg.Go(func() {
			for c := range next {
				if err := r.enter(ctx, c); err != nil {
					r.fail(c, err)
					continue
				}
				if !c.placed.IsZero() && c.ready.IsZero() {
					pollers.Go(func() { r.poll(pollCtx, c) })
				}
			}
		})
	}
	for _, c := range order {
		next <- c
	}
	close(next)
	wg.Wait()
}

// enter takes a session from the queue's page, then a place, as the page
// does; a 429 (the per-address limits) or 503 is waited out for its
// Retry-After. A 403 is recorded (a person must never see one).
func (r *botsRunner) enter(ctx context.Context, c *botClient) error {
	c.tried = time.Now()
	for try := 0; try < 120; try++ {
		if c.cookie == "" {
			res, err := r.request(ctx, "GET", "/q/"+r.queue, c, nil)
			if err != nil {
				return err
			}
			res.Body.Close()
			if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
				if err := sleepCtx(ctx, retryAfter(res)); err != nil {
					return err
				}
				continue
			}
			for _, ck := range res.Cookies() {
				if ck.Name == "wr_session" {
					c.cookie = ck.Name + "=" + ck.Value
				}
			}
			if res.StatusCode != http.StatusOK || c.cookie == "" {
				return fmt.Errorf("the page answered %d with no session", res.StatusCode)
			}
		}
		st, body, wait, err := r.do(ctx, "POST", "/api/v1/queues/"+r.queue+"/entries", c, nil)
		switch {
		case err != nil:
			return err
		case st == http.StatusOK:
			c.placed = time.Now()
			r.note(c, body)
			return nil
		case st == http.StatusForbidden:
			c.got403 = true
			return nil
		case st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable:
			if err := sleepCtx(ctx, wait); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entering answered %d %v", st, body)
		}
	}
	return fmt.Errorf("no place after 120 tries")
}

// poll asks for the client's standing as the page does (people at
// pollAfterSeconds, with waitSeconds and their ticket), scored bots Faster
// times sooner, until READY or the run's pollers stop.
func (r *botsRunner) poll(ctx context.Context, c *botClient) {
	path := "/api/v1/queues/" + r.queue + "/entries/me"
	speed := 1.0
	if c.kind == kindScored {
		speed = float64(r.rep.Faster)
	} else if c.kind.person() {
		path += "?waitSeconds=" + strconv.Itoa(botsPageWait)
	}
	for c.ready.IsZero() {
		after := time.Duration(max(c.after, 1) / speed * float64(time.Second))
		if sleepCtx(ctx, after) != nil {
			return
		}
		st, body, wait, err := r.do(ctx, "GET", path, c, nil)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.fail(c, err)
			return
		case st == http.StatusOK:
			r.note(c, body)
		case st == http.StatusServiceUnavailable:
			c.after = wait.Seconds()
		case st == http.StatusForbidden:
			c.got403 = true
			r.fail(c, fmt.Errorf("a poll answered 403 %v", body))
			return
		default:
			r.fail(c, fmt.Errorf("a poll answered %d %v", st, body))
			return
		}
	}
}

// note reads an answer: READY, the poll interval, and the signed ticket
// the page shows back. (Nothing in it tells a shadow place's from a
// person's: the instance counts them, suspectsSeen.)
func (r *botsRunner) note(c *botClient, body map[string]any) {
	if after, ok := body["pollAfterSeconds"].(float64); ok {
		c.after = after
	}
	if t, ok := body["ticket"].(string); ok && t != "" {
		c.ticket = t
	}
	if body["status"] == "READY" && c.ready.IsZero() {
		c.ready = time.Now()
		r.readySeen.Add(1)
	}
}

func (r *botsRunner) fail(c *botClient, err error) {
	c.err = err
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.errors++; r.errSample == "" {
		r.errSample = err.Error()
	}
}
