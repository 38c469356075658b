package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// openAndAdmit moves the opening near (everyone is in), lets the late
// people enter once it has passed, and waits until Admit are let in and
// their clients have seen it. The opening is botsOpenIn ahead: more than
// the longest poll interval told before (12 s), so that every client has
// asked once since, and been told to ask every 2 s as the opening nears;
// then how soon people learn of it is alike in every run, whenever they
// entered.
func (r *botsRunner) openAndAdmit(ctx, pollCtx context.Context, pollers *sync.WaitGroup) error {
	r.opening = time.Now().Add(botsOpenIn).Truncate(time.Second)
	st, body, _, err := r.do(ctx, "PATCH", "/admin/v1/queues/"+r.queue, nil,
		map[string]any{"opensAt": r.opening.UTC().Format(time.RFC3339)})
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("moving the opening: %d %v %v", st, body, err)
	}
	// The late people come once the pre-queue is placed (within a tick or
	// two of the opening): they join the line behind it.
	if err := sleepCtx(ctx, time.Until(r.opening.Add(2*time.Second))); err != nil {
		return err
	}
	var late []*botClient
	for _, c := range r.crowd {
		if c.kind == kindLate {
			late = append(late, c)
		}
	}
	r.enterEach(ctx, pollCtx, pollers, late)
	admitted := 0
	for admitted < r.rep.Admit {
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return fmt.Errorf("%d of %d admitted: %w", admitted, r.rep.Admit, err)
		}
		st, body, _, err := r.do(ctx, "GET", "/admin/v1/queues/"+r.queue, nil, nil)
		if err != nil || st != http.StatusOK {
			return fmt.Errorf("reading the stats: %d %v %v", st, body, err)
		}
		n, _ := body["admittedTotal"].(float64)
		admitted = int(n)
	}
	// Everyone let in learns it at their next poll: the longest a client
	// is told to wait is 12 s (10 s jittered by 20%).
	deadline := time.Now().Add(20 * time.Second)
	for int(r.readySeen.Load()) < admitted && time.Now().Before(deadline) {
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// botsOpenIn is how far ahead the opening is set once the crowd is in.
const botsOpenIn = 15 * time.Second

// botsListLimit is the most places the admin suspects list is asked for.
const botsListLimit = 1000

// suspectsSeen reads the instance's own count of the shadow line (stats'
// shadowLength) and the admin list of suspects: its count, and the
// signals and hashed addresses of the places it shows.
func (r *botsRunner) suspectsSeen(ctx context.Context, run *BotsRun) {
	if st, body, _, err := r.do(ctx, "GET", "/admin/v1/queues/"+r.queue, nil, nil); err == nil && st == http.StatusOK {
		if n, ok := body["shadowLength"].(float64); ok {
			run.ShadowLength = int(n)
		}
	}
	res, err := r.request(ctx, "GET", fmt.Sprintf("/admin/v1/queues/%s/suspects?limit=%d", r.queue, botsListLimit), nil, nil)
	if err != nil {
		return
	}
	defer res.Body.Close()
	var list suspectList
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&list) != nil {
		return
	}
	list.count(run)
}

// suspectList is the admin API's SuspectList, as far as the report reads it.
type suspectList struct {
	ShadowLength int `json:"shadowLength"`
	Suspects     []struct {
		Signals []string `json:"signals"`
		Address string   `json:"address"`
	} `json:"suspects"`
}

func (l suspectList) count(run *BotsRun) {
	run.ListedLength, run.Listed = l.ShadowLength, len(l.Suspects)
	run.ListedSignals = map[string]int{}
	addrs := map[string]bool{}
	for _, s := range l.Suspects {
		for _, sig := range s.Signals {
			run.ListedSignals[sig]++
		}
		addrs[s.Address] = true
	}
	run.ListedAddresses = len(addrs)
}

// comparePolls measures the instance's CPU time (from /proc) over polls of
// shadow places and over polls of waiting people, the crowd's pollers
// stopped, in alternating rounds so that the machine's other load falls
// on both alike. Each poll is the page's: cookie, address, score, ticket.
func (r *botsRunner) comparePolls(ctx context.Context, pid int) (*BotsCPU, error) {
	var shadows, people []*botClient
	for _, c := range r.crowd {
		switch {
		case c.err != nil || c.placed.IsZero() || !c.ready.IsZero():
		case !c.kind.person(): // every bot is shadowed in this run (TestBotsShort)
			shadows = append(shadows, c)
		case c.kind == kindLate:
			people = append(people, c)
		}
	}
	// A hundred of each, spread over the crowd: data-centre and scored
	// bots alike.
	shadows, people = spread(shadows, 100), spread(people, 100)
	if len(shadows) == 0 || len(people) == 0 {
		return nil, fmt.Errorf("%d shadow places and %d waiting people to poll", len(shadows), len(people))
	}
	polls, rounds := 5000, 6
	if r.o.Short {
		polls, rounds = 300, 2
	}
	out := &BotsCPU{Polls: polls * rounds}
	var shadowCPU, personCPU time.Duration
	for i := range rounds {
		// Each kind goes first in every other round, so that a drift in
		// the machine's load falls on both alike.
		var shadow, person time.Duration
		kinds := []struct {
			clients []*botClient
			cpu     *time.Duration
		}{{shadows, &shadow}, {people, &person}}
		if i%2 == 1 {
			kinds[0], kinds[1] = kinds[1], kinds[0]
		}
		for _, k := range kinds {
			var err error
			if *k.cpu, err = r.cpuOfPolls(ctx, pid, k.clients, polls); err != nil {
				return nil, err
			}
		}
		shadowCPU, personCPU = shadowCPU+shadow, personCPU+person
		if person > 0 {
			out.RoundRatios = append(out.RoundRatios, float64(shadow)/float64(person))
		}
	}
	out.ShadowPerPoll = shadowCPU / time.Duration(out.Polls)
	out.PersonPerPoll = personCPU / time.Duration(out.Polls)
	if personCPU > 0 {
		out.Ratio = float64(shadowCPU) / float64(personCPU)
	}
	return out, nil
}

// spread is n of cs, evenly spaced (all of them if fewer).
func spread(cs []*botClient, n int) []*botClient {
	if len(cs) <= n {
		return cs
	}
	out := make([]*botClient, n)
	for i := range out {
		out[i] = cs[i*len(cs)/n]
	}
	return out
}

// cpuOfPolls is the instance's CPU time over n polls of clients.
func (r *botsRunner) cpuOfPolls(ctx context.Context, pid int, clients []*botClient, n int) (time.Duration, error) {
	before, err := threadsCPU(pid)
	if err != nil {
		return 0, err
	}
	if err := r.pollMany(ctx, clients, n); err != nil {
		return 0, err
	}
	after, err := threadsCPU(pid)
	return after - before, err
}

// threadsCPU is a process's CPU time to the nanosecond: the sum of its
// threads' time on a CPU (/proc/<pid>/task/*/schedstat). /proc/<pid>/stat
// counts in 10 ms ticks, a few percent of a round's time: enough to move
// a ratio of two rounds by more than the difference it is after. A thread
// that ended took its time with it, so the times are read where threads
// stay (the Go runtime keeps its threads).
func threadsCPU(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended between the two reads
		}
		onCPU, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(onCPU, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected %s/%s/schedstat: %q", dir, t.Name(), b)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// pollMany sends n status polls, round-robin over clients, from 8
// workers; every answer must be 200.
func (r *botsRunner) pollMany(ctx context.Context, clients []*botClient, n int) error {
	path := "/api/v1/queues/" + r.queue + "/entries/me"
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				st, body, _, err := r.do(ctx, "GET", path, clients[i%len(clients)], nil)
				if err == nil && st != http.StatusOK {
					err = fmt.Errorf("a poll answered %d %v", st, body)
				}
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// count adds up what the clients were answered.
func (r *botsRunner) count(run *BotsRun) {
	var inLine []time.Duration
	botsPlaced := 0
	for _, c := range r.crowd {
		if !c.ready.IsZero() {
			run.Admitted++
			if c.kind.person() {
				run.PeopleAdmitted++
			}
			if c.kind == kindPerson || c.kind == kindNAT {
				inLine = append(inLine, c.ready.Sub(r.opening))
			}
		}
		if !c.kind.person() && !c.placed.IsZero() {
			botsPlaced++
		}
		if c.got403 && c.kind.person() {
			run.People403++
		} else if c.got403 {
			run.Bots403++
		}
		if c.kind == kindNAT && !c.placed.IsZero() {
			run.NATPlaced++
			run.NATWithin = max(run.NATWithin, c.placed.Sub(c.tried))
		}
	}
	if run.Admitted > 0 {
		run.PeopleShare = float64(run.PeopleAdmitted) / float64(run.Admitted)
	}
	// The shadow line's count is the instance's: no answer tells a shadow
	// place (BotsRun.Shadowed).
	run.Shadowed, run.PeopleShadowed = run.ShadowLength, max(0, run.ShadowLength-botsPlaced)
	slices.Sort(inLine)
	run.TimeP50, run.TimeP95 = percentile(inLine, 50), percentile(inLine, 95)
	run.Requests = int(r.requests.Load())
	run.Errors, run.ErrorSample = r.errors, r.errSample
}

// request sends one request as client c (nil: the operator): its address
// in X-Forwarded-For (the harness is the trusted proxy), its edge score,
// its session and its ticket.
func (r *botsRunner) request(ctx context.Context, method, path string, c *botClient, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return nil, err
	}
	if c == nil {
		req.Header.Set("Authorization", r.admin)
	} else {
		req.Header.Set("X-Forwarded-For", c.addr)
		if c.score != "" {
			req.Header.Set(botsScoreHeader, c.score)
		}
		if c.cookie != "" {
			req.Header.Set("Cookie", c.cookie)
		}
		if c.ticket != "" {
			req.Header.Set("X-Waitroom-Ticket", c.ticket)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r.requests.Add(1)
	return r.hc.Do(req)
}

// do is request with the JSON answer read, and its Retry-After (1 s when
// absent).
func (r *botsRunner) do(ctx context.Context, method, path string, c *botClient, body any) (int, map[string]any, time.Duration, error) {
	res, err := r.request(ctx, method, path, c, body)
	if err != nil {
		return 0, nil, 0, err
	}
	status, m, wait := readAnswer(res)
	return status, m, wait, nil
}

// readAnswer reads and closes an answer: its status, its JSON body (nil
// when empty or not JSON) and its Retry-After (1 s when absent).
func readAnswer(res *http.Response) (int, map[string]any, time.Duration) {
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return res.StatusCode, m, retryAfter(res)
}

// retryAfter is the answer's Retry-After, 1 s when absent.
func retryAfter(res *http.Response) time.Duration {
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return time.Second
}

// sleepCtx waits d, or less if ctx ends (then its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
