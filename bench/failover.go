package bench

// The cluster failover run (docs/operations.md, "Chaos"): a waitroom
// instance on a Redis Cluster of three primaries, each with a replica, six
// queues spread over the primaries (two each), and a crowd entering all of
// them and polling them, while
//
//  1. one primary is killed (-9): its replica is promoted. Measured: the
//     time until its queues are served again; the places acknowledged
//     before the kill that the promoted replica does not hold (lost in the
//     asynchronous-replication window), with how long before the kill
//     each was acknowledged; that the queues on the other primaries never
//     answered anything but 200, and how fast;
//  2. the promoted primary, which has no replica now, is killed: its
//     queues answer 503 + Retry-After until it is started again from its
//     AOF, the rest untouched; measured the same way.
//
// /readyz is asked throughout: it must stay 200 and list the dead node's
// queues while they are down. TestClusterFailover runs the short form in
// the test command; bench/run.sh --chaos the long one, whose figures go in
// docs/operations.md.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/identity"
)

// FailoverCluster is the Redis Cluster the failover run kills nodes of:
// three primaries, each with one replica, whose nodes keep an AOF
// (testenv.RedisCluster).
type FailoverCluster interface {
	// URL is the go-redis cluster URL.
	URL() string
	// PrimaryOf names the node serving key's slot now ("" when no running
	// node does).
	PrimaryOf(key string) string
	// Kill kills a node (-9); Start starts it again on its port, from its
	// AOF.
	Kill(node string)
	Start(node string)
}

// FailoverOptions says what the failover run runs on.
type FailoverOptions struct {
	Cluster FailoverCluster
	// Dir holds the instance's SQLite file.
	Dir string
	// Short is the test command's form: seconds between the faults, not
	// ten.
	Short bool
	Log   io.Writer
}

func (o FailoverOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "failover: "+format+"\n", args...)
	}
}

// failoverTimeline is how long each part lasts.
type failoverTimeline struct {
	// warm is the crowd's time before the first kill; settle its time
	// after a killed node's queues are served again; down how long the
	// primary with no replica stays down.
	warm, settle, down time.Duration
	// enterEvery is each queue's pace of new users; pollEvery each
	// queue's pace of status polls.
	enterEvery, pollEvery time.Duration
	// recovery bounds the wait for a killed node's queues.
	recovery time.Duration
}

func (o FailoverOptions) timeline() failoverTimeline {
	if o.Short {
		return failoverTimeline{warm: 2 * time.Second, settle: time.Second, down: 3 * time.Second,
			enterEvery: 50 * time.Millisecond, pollEvery: 100 * time.Millisecond, recovery: 30 * time.Second}
	}
	return failoverTimeline{warm: 10 * time.Second, settle: 5 * time.Second, down: 10 * time.Second,
		enterEvery: 20 * time.Millisecond, pollEvery: 50 * time.Millisecond, recovery: time.Minute}
}

// FailoverReport is what the failover run saw.
type FailoverReport struct {
	Short bool
	// Queues is how many queues, spread over the three primaries.
	Queues int
	Faults []FailoverFault
	// Others are the answers of the queues on the primaries never killed,
	// over the whole run.
	Others FailoverAnswers
	// Readyz counts /readyz's answers by status over the whole run.
	Readyz map[int]int
	// Violations lists every broken promise; empty is a pass.
	Violations []string
}

// FailoverFault is one primary killed and what its queues saw.
type FailoverFault struct {
	What string
	// Replica: a replica took over (else the node itself came back), and
	// Promoted is when the cluster's nodes said so, from the kill.
	Replica  bool
	Promoted time.Duration
	// ServedAgain is the time from the kill until every one of the node's
	// queues answered 200 again; Down is how long the node was down
	// (Replica: 0).
	ServedAgain, Down time.Duration
	// Answers are the dead node's queues' answers from the kill until
	// they were served again.
	Answers FailoverAnswers
	// Acknowledged is how many places its queues had acknowledged until
	// they were served again (not counting those an earlier fault lost);
	// Lost how many of them the store no longer held after, and
	// LostWithin the longest time before the kill one of those was
	// acknowledged.
	Acknowledged, Lost int
	LostWithin         time.Duration
	// DegradedSeen: /readyz listed the node's queues while they were down.
	DegradedSeen bool
}

// FailoverAnswers counts answers by status (0: no answer), with their
// latency.
type FailoverAnswers struct {
	ByStatus map[int]int
	P50, P99 time.Duration
	Max      time.Duration
	// NoRetryAfter counts 503s without Retry-After.
	NoRetryAfter int
}

// failoverAnswer is one request's outcome.
type failoverAnswer struct {
	queue      string
	at         time.Time
	took       time.Duration
	status     int
	retryAfter bool
}

// ackedPlace is a place the line acknowledged.
type ackedPlace struct {
	queue, user string
	at          time.Time
}

type failoverRun struct {
	o      FailoverOptions
	tl     failoverTimeline
	c      *client
	hc     *http.Client
	rdb    *redis.ClusterClient // the ground truth of who holds a place
	id     *identity.Identity
	queues []string
	// byNode is which queues each primary held at the start; killed are
	// the queues of the primary killed.
	byNode map[string][]string
	killed []string
	// lost are the places found lost, by user.
	lost map[string]bool

	mu      sync.Mutex
	answers []failoverAnswer
	acked   []ackedPlace
	readyz  []readySample
}

// readySample is one /readyz answer.
type readySample struct {
	at       time.Time
	status   int
	degraded []string
}

// RunFailover runs the failover run and checks its outcome.
func RunFailover(ctx context.Context, o FailoverOptions) (*FailoverReport, error) {
	r := &failoverRun{o: o, tl: o.timeline(), hc: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, byNode: map[string][]string{}, lost: map[string]bool{}}
	secret := fmt.Sprintf("failover-%032x", rand.Uint64())
	r.id = identity.New([]byte(secret))
	m, err := boot(ctx, Options{}, nil, func(c *app.Config) {
		c.RedisMode, c.RedisURL, c.KeyPrefix = app.RedisCluster, o.Cluster.URL(), "wr:"
		c.AuthSecret, c.DataDir = secret, o.Dir
	})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	r.c = &client{base: "http://" + m.Addr(), admin: m.Config.AdminToken}
	opt, err := redis.ParseClusterURL(o.Cluster.URL())
	if err != nil {
		return nil, err
	}
	r.rdb = redis.NewClusterClient(opt)
	defer r.rdb.Close()

	// Two queues on each primary, found by name.
	for i := 0; len(r.queues) < 6; i++ {
		if i == 1000 {
			return nil, fmt.Errorf("1000 names and still not two queues on each of three primaries: %v", r.byNode)
		}
		q := fmt.Sprintf("fo%d", i)
		node := o.Cluster.PrimaryOf("wr:{" + q + "}:cfg")
		if len(r.byNode[node]) == 2 {
			continue
		}
		r.byNode[node] = append(r.byNode[node], q)
		r.queues = append(r.queues, q)
		// Admission runs throughout, slower than the crowd arrives.
		st, body, _, err := r.c.do(ctx, r.hc, "PUT", "/admin/v1/queues/"+q, "Bearer "+r.c.admin,
			map[string]any{"ratePerSecond": 5, "batchSize": 1, "intervalMs": 200})
		if err != nil || st != http.StatusOK {
			return nil, fmt.Errorf("queue %s: %d %v %v", q, st, body, err)
		}
	}
	if len(r.byNode) != 3 {
		return nil, fmt.Errorf("the queues landed on %d primaries, want 3", len(r.byNode))
	}
	// The instance reads the list of queues every second: it knows them
	// all before any node goes (as it would, in a line that was running).
	if err := r.waitKnown(ctx); err != nil {
		return nil, err
	}

	crowd, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, q := range r.queues {
		wg.Go(func() { r.enterers(crowd, q) })
		wg.Go(func() { r.poller(crowd, q) })
	}
	wg.Go(func() { r.readiness(crowd) })
	rep := &FailoverReport{Short: o.Short, Queues: len(r.queues)}
	faultsErr := r.faults(crowd, rep)
	stop()
	wg.Wait()
	if faultsErr != nil {
		return nil, faultsErr
	}
	r.check(rep)
	return rep, nil
}

// waitKnown waits until the instance's health check has seen every queue
// (waitroom_store_queue_up on /metrics).
func (r *failoverRun) waitKnown(ctx context.Context) error {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := r.hc.Get(r.c.base + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			known := true
			for _, q := range r.queues {
				known = known && strings.Contains(string(b), `waitroom_store_queue_up{queue="`+q+`"} 1`)
			}
			if known {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the instance never checked every queue")
		}
	}
}

// call sends one request as user and records its answer.
func (r *failoverRun) call(ctx context.Context, q, method, path, user string) (int, map[string]any) {
	began := time.Now()
	a := failoverAnswer{queue: q, at: began}
	var body map[string]any
	req, err := http.NewRequestWithContext(ctx, method, r.c.base+path, nil)
	if err != nil {
		panic(err) // the run's own paths
	}
	req.Header.Set("Authorization", "Bearer "+r.id.SignJWT(user, time.Hour))
	if res, err := r.hc.Do(req); err == nil {
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		_ = json.Unmarshal(raw, &body)
		a.status, a.retryAfter = res.StatusCode, res.Header.Get("Retry-After") != ""
	}
	if ctx.Err() != nil {
		return 0, nil
	}
	a.took = time.Since(began)
	r.mu.Lock()
	r.answers = append(r.answers, a)
	r.mu.Unlock()
	return a.status, body
}

// enterers brings a new user to q every enterEvery.
func (r *failoverRun) enterers(ctx context.Context, q string) {
	n := 0
	<-every(ctx, nil, r.tl.enterEvery, func() {
		user := fmt.Sprintf("%s-u%d", q, n)
		n++
		if st, _ := r.call(ctx, q, "POST", "/api/v1/queues/"+q+"/entries", user); st == http.StatusOK {
			r.mu.Lock()
			r.acked = append(r.acked, ackedPlace{queue: q, user: user, at: time.Now()})
			r.mu.Unlock()
		}
	})
}

// poller asks the status of q's first user every pollEvery.
func (r *failoverRun) poller(ctx context.Context, q string) {
	<-every(ctx, nil, r.tl.pollEvery, func() { r.call(ctx, q, "GET", "/api/v1/queues/"+q+"/entries/me", q+"-u0") })
}

// readiness asks /readyz every 200 ms.
func (r *failoverRun) readiness(ctx context.Context) {
	<-every(ctx, nil, 200*time.Millisecond, func() {
		st, body, _, err := r.c.do(ctx, r.hc, "GET", "/readyz", "", nil)
		if ctx.Err() != nil {
			return
		}
		s := readySample{at: time.Now(), status: st, degraded: anyStrings(body["degradedQueues"])}
		if err != nil {
			s.status = 0
		}
		r.mu.Lock()
		r.readyz = append(r.readyz, s)
		r.mu.Unlock()
	})
}

func anyStrings(v any) []string {
	var out []string
	s, _ := v.([]any)
	for _, e := range s {
		if str, ok := e.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

// faults runs the two kills.
func (r *failoverRun) faults(ctx context.Context, rep *FailoverReport) error {
	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	if err := wait(r.tl.warm); err != nil {
		return err
	}
	// 1. A primary with a replica.
	victim := r.o.Cluster.PrimaryOf("wr:{" + r.queues[0] + "}:cfg")
	queues := r.byNode[victim]
	r.killed = queues
	f, err := r.kill(ctx, victim, queues, true)
	if err != nil {
		return err
	}
	rep.Faults = append(rep.Faults, f)
	if err := wait(r.tl.settle); err != nil {
		return err
	}
	// 2. The promoted replica, now a primary with no replica.
	promoted := r.o.Cluster.PrimaryOf("wr:{" + queues[0] + "}:cfg")
	if promoted == "" || promoted == victim {
		return fmt.Errorf("no promoted primary serves %s after the failover", queues[0])
	}
	if f, err = r.kill(ctx, promoted, queues, false); err != nil {
		return err
	}
	rep.Faults = append(rep.Faults, f)
	return wait(r.tl.settle)
}

// kill kills node, which serves queues, and waits until they are served
// again: by its replica (replica), or once it is started again after
// down. It then reads which of the places acknowledged before the kill
// the store still holds.
func (r *failoverRun) kill(ctx context.Context, node string, queues []string, replica bool) (FailoverFault, error) {
	f := FailoverFault{Replica: replica}
	if replica {
		f.What = "a primary killed (-9); its replica promoted"
	} else {
		f.What = fmt.Sprintf("the promoted primary, with no replica, killed (-9); started again from its AOF after %v", r.tl.down)
	}
	r.o.Cluster.Kill(node)
	// From when the process is gone: a request sent before may still have
	// been answered by it.
	killed := time.Now()
	r.o.logf("killed %s (serving %v) at %s", node, queues, killed.Format("15:04:05.000"))
	if replica {
		// When Redis promoted the replica, as the cluster's nodes say.
		for deadline := killed.Add(r.tl.recovery); ; time.Sleep(100 * time.Millisecond) {
			if p := r.o.Cluster.PrimaryOf("wr:{" + queues[0] + "}:cfg"); p != "" && p != node {
				f.Promoted = time.Since(killed)
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return f, fmt.Errorf("no replica of %s promoted within %v", node, r.tl.recovery)
			}
		}
		r.o.logf("replica promoted %v after the kill", f.Promoted.Round(time.Millisecond))
	} else {
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(r.tl.down):
		}
		r.o.Cluster.Start(node)
		f.Down = time.Since(killed)
		r.o.logf("started %s again after %v", node, f.Down.Round(time.Millisecond))
	}
	// Served again: every queue of the node answered 200 after the kill.
	for deadline := killed.Add(r.tl.recovery); ; time.Sleep(20 * time.Millisecond) {
		last := r.servedSince(queues, killed)
		if !last.IsZero() {
			f.ServedAgain = last.Sub(killed)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return f, fmt.Errorf("%v not served again %v after %s was killed", queues, r.tl.recovery, node)
		}
	}
	r.o.logf("%v served again %v after the kill", queues, f.ServedAgain.Round(time.Millisecond))
	end := killed.Add(f.ServedAgain)
	r.mu.Lock()
	f.Answers = summarize(r.answers, func(a failoverAnswer) bool {
		return slices.Contains(queues, a.queue) && !a.at.Before(killed) && a.at.Before(end)
	})
	for _, s := range r.readyz {
		if s.at.After(killed) && s.at.Before(end) && len(s.degraded) > 0 && slices.Contains(s.degraded, queues[0]) {
			f.DegradedSeen = true
		}
	}
	// The places acknowledged until the queues were served again (some
	// replies of the killed node may arrive just after the kill), but for
	// those an earlier fault lost.
	var acked []ackedPlace
	for _, a := range r.acked {
		if slices.Contains(queues, a.queue) && a.at.Before(end) && !r.lost[a.user] {
			acked = append(acked, a)
		}
	}
	r.mu.Unlock()

	// Which of them are gone: read from Redis itself (the instance may
	// answer a far-back user from its snapshot). A place is kept while its
	// user is in line or holds the token admission gave them.
	f.Acknowledged = len(acked)
	held := make([]*redis.Cmd, len(acked))
	if _, err := r.rdb.Pipelined(context.WithoutCancel(ctx), func(p redis.Pipeliner) error {
		for i, a := range acked {
			held[i] = p.Eval(ctx, holdsPlace, []string{"wr:{" + a.queue + "}:line", "wr:{" + a.queue + "}:tokens"}, a.user)
		}
		return nil
	}); err != nil {
		return f, fmt.Errorf("reading the places after the failover: %w", err)
	}
	for i, a := range acked {
		if n, _ := held[i].Int(); n == 0 {
			f.Lost++
			f.LostWithin = max(f.LostWithin, killed.Sub(a.at), 0)
			r.mu.Lock()
			r.lost[a.user] = true
			r.mu.Unlock()
		}
	}
	r.o.logf("%d of %d acknowledged places lost (acknowledged up to %v before the kill)", f.Lost, f.Acknowledged, f.LostWithin.Round(time.Millisecond))
	return f, nil
}

// holdsPlace is 1 while the user (ARGV[1]) is in line (KEYS[1]) or holds
// an entry token (KEYS[2]), else 0.
const holdsPlace = `if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 1 end
return 0`

// servedSince is when the last of queues first answered 200 after t; zero
// when one has not yet.
func (r *failoverRun) servedSince(queues []string, t time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := map[string]time.Time{}
	for _, a := range r.answers {
		if a.status == http.StatusOK && a.at.After(t) && slices.Contains(queues, a.queue) {
			if f, ok := first[a.queue]; !ok || a.at.Before(f) {
				first[a.queue] = a.at
			}
		}
	}
	var last time.Time
	for _, q := range queues {
		f, ok := first[q]
		if !ok {
			return time.Time{}
		}
		if f.After(last) {
			last = f
		}
	}
	return last
}

// summarize counts the answers keep accepts.
func summarize(answers []failoverAnswer, keep func(failoverAnswer) bool) FailoverAnswers {
	s := FailoverAnswers{ByStatus: map[int]int{}}
	var lats []time.Duration
	for _, a := range answers {
		if !keep(a) {
			continue
		}
		s.ByStatus[a.status]++
		if a.status == http.StatusServiceUnavailable && !a.retryAfter {
			s.NoRetryAfter++
		}
		lats = append(lats, a.took)
	}
	slices.Sort(lats)
	s.P50, s.P99 = percentile(lats, 50), percentile(lats, 99)
	if len(lats) > 0 {
		s.Max = lats[len(lats)-1]
	}
	return s
}

// failoverWindow bounds how long before a kill a lost place may have been
// acknowledged: the replica (or the AOF) trails the primary's replies by
// milliseconds on one machine; a second or two covers a busy one.
const failoverWindow = 2 * time.Second

// check lists every broken promise.
func (r *failoverRun) check(rep *FailoverReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep.Others = summarize(r.answers, func(a failoverAnswer) bool { return !slices.Contains(r.killed, a.queue) })
	for st, n := range rep.Others.ByStatus {
		if st != http.StatusOK {
			rep.Violations = append(rep.Violations, fmt.Sprintf("the queues on the primaries never killed answered %d × %d", n, st))
		}
	}
	rep.Readyz = map[int]int{}
	for _, s := range r.readyz {
		rep.Readyz[s.status]++
		if s.status != http.StatusOK {
			rep.Violations = append(rep.Violations, fmt.Sprintf("/readyz answered %d at %s", s.status, s.at.Format("15:04:05.000")))
		}
	}
	for _, f := range rep.Faults {
		for st, n := range f.Answers.ByStatus {
			if st != http.StatusOK && st != http.StatusServiceUnavailable {
				rep.Violations = append(rep.Violations, fmt.Sprintf("%s: the node's queues answered %d × %d (only 200 or 503 may be)", f.What, n, st))
			}
		}
		if f.Answers.NoRetryAfter > 0 {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s: %d answers 503 without Retry-After", f.What, f.Answers.NoRetryAfter))
		}
		if f.Lost > 0 && f.LostWithin > failoverWindow {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s: a place acknowledged %v before the kill was lost (beyond the %v window)", f.What, f.LostWithin, failoverWindow))
		}
		if !f.Replica && !f.DegradedSeen {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s: /readyz never listed the node's queues as degraded while they were down", f.What))
		}
	}
}

// Markdown is the report as a part of docs/operations.md's "Chaos".
func (rep *FailoverReport) Markdown(command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s, `%s`: one instance, a Redis Cluster of 3 primaries each with a replica (`cluster-node-timeout` 1000 ms, AOF everysec), %d queues (2 per primary) admitting 5/s, new users entering each and a status poll of each, continuously.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine(), command, rep.Queues)
	b.WriteString("| fault | replica promoted after | its queues served again after | their answers meanwhile | places acknowledged | lost | lost ones acknowledged within | readyz listed them |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range rep.Faults {
		lostWithin, promoted := "—", "—"
		if f.Lost > 0 {
			lostWithin = fmt.Sprintf("%d ms before the kill", f.LostWithin.Milliseconds())
		}
		if f.Replica {
			promoted = fmt.Sprintf("%.2f s", f.Promoted.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f s | %s | %d | %d | %s | %v |\n", f.What, promoted, f.ServedAgain.Seconds(), statusCounts(f.Answers.ByStatus),
			f.Acknowledged, f.Lost, lostWithin, yesNo(f.DegradedSeen))
	}
	fmt.Fprintf(&b, "\nThe queues on the primaries never killed, over the whole run: %s, p50 %.1f ms, p99 %.1f ms, max %.1f ms. `/readyz`: %s.\n\n",
		statusCounts(rep.Others.ByStatus), ms(rep.Others.P50), ms(rep.Others.P99), ms(rep.Others.Max), statusCounts(rep.Readyz))
	writeViolations(&b, rep.Violations, "Every promise held: the other primaries' queues answered 200 throughout, the dead node's queues answered 200 or 503 with Retry-After, `/readyz` stayed 200, and no place acknowledged more than 2 s before a kill was lost.\n")
	return b.String()
}

func statusCounts(by map[int]int) string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(by)) {
		name := fmt.Sprint(st)
		if st == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s × %d", name, by[st]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
