package bench

// The chaos run (docs/operations.md, "Chaos"): three waitroom processes on
// one Redis (AOF, appendfsync everysec) and one PostgreSQL, a crowd polling
// and buying, while Redis is killed -9 and started again 5 s later, one
// instance is killed -9, and PostgreSQL is stopped for 5 s. Afterwards it
// checks what must hold whatever happened: everyone who entered is still in
// line in the same relative order, admitted, or has left; nobody bought
// twice; the stock never went below zero; no answer was a 5xx other than
// 503 (with Retry-After). It is run by hand: bench/run.sh --chaos (or
// --chaos --short, 60 users on a 25 s timeline).

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/testenv"
)

// ChaosOptions says what the chaos run runs on.
type ChaosOptions struct {
	// Binary is a built waitroom (go build ./cmd/waitroom).
	Binary string
	// DatabaseURL is the PostgreSQL the instances share; StopDatabase and
	// StartDatabase take it away and bring it back.
	DatabaseURL                 string
	StopDatabase, StartDatabase func(ctx context.Context) error
	// Dir holds Redis's files (its AOF) and the instances' logs.
	Dir string
	// Short runs 60 users on a 25 s timeline instead of 200 on 60 s.
	Short bool
	Log   io.Writer
}

func (o ChaosOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "chaos: "+format+"\n", args...)
	}
}

// chaosTimeline is when each fault happens, from the start of the crowd.
type chaosTimeline struct {
	users                    int
	redisKill, redisDown     time.Duration
	instanceKill             time.Duration
	databaseStop, databaseDn time.Duration
	end                      time.Duration
	// rate admits a part of the crowd before the end, so some are still in
	// line, some bought, some found the stock gone.
	rate  float64
	stock int64
}

func (o ChaosOptions) timeline() chaosTimeline {
	if o.Short {
		return chaosTimeline{users: 60, redisKill: 5 * time.Second, redisDown: 5 * time.Second,
			instanceKill: 12 * time.Second, databaseStop: 14 * time.Second, databaseDn: 5 * time.Second,
			end: 25 * time.Second, rate: 2, stock: 30}
	}
	return chaosTimeline{users: 200, redisKill: 10 * time.Second, redisDown: 5 * time.Second,
		instanceKill: 22 * time.Second, databaseStop: 30 * time.Second, databaseDn: 5 * time.Second,
		end: 60 * time.Second, rate: 2, stock: 100}
}

// ChaosReport is what happened and what was checked.
type ChaosReport struct {
	Users, Instances int
	Duration         time.Duration
	Events           []ChaosEvent
	// Requests counts the answers by status (0: no answer, the connection
	// failed: only the killed instance's).
	Requests map[int]int
	// Outcomes counts the users by what they ended as.
	Outcomes map[string]int
	// Orders is how many orders PostgreSQL holds; Stock what is left of
	// the stock the run started with.
	Orders       int
	Stock, Start int64
	// Unavailable is, per fault, the seconds in which some answer was 503,
	// and how long after the fault ended the first success came.
	Unavailable []ChaosOutage
	// Violations lists every broken promise; empty is a pass.
	Violations []string
}

// ChaosEvent is one fault, at its time from the start of the crowd.
type ChaosEvent struct {
	At   time.Duration
	What string
}

// ChaosOutage is what users saw of one fault.
type ChaosOutage struct {
	Fault string
	// Seconds503 counts the whole seconds in which any answer of the kind
	// the fault hits was 503; Answers503 counts those answers.
	Seconds503, Answers503 int
	// Recovered is the time from the end of the fault (Redis or PostgreSQL
	// back) to the first success of that kind; negative: none came.
	Recovered time.Duration
}

// chaosAnswer is one request's outcome as a client saw it.
type chaosAnswer struct {
	at       time.Duration
	kind     string // enter, poll, order, leave
	status   int    // 0: the connection failed
	instance int
}

// chaosRun is the state of one run.
type chaosRun struct {
	o        ChaosOptions
	tl       chaosTimeline
	secret   string
	admin    string
	redis    *testenv.AOFRedis
	rdb      *redis.Client
	insts    []*chaosInstance
	start    time.Time
	product  string
	http     *http.Client
	mu       sync.Mutex
	answers  []chaosAnswer
	events   []ChaosEvent
	problems []string // what the clients saw that breaks a promise
}

const chaosQueue = "chaos"

// RunChaos runs the chaos run and checks its outcome.
func RunChaos(ctx context.Context, o ChaosOptions) (*ChaosReport, error) {
	r := &chaosRun{o: o, tl: o.timeline(), secret: fmt.Sprintf("chaos-%032x", rand.Uint64()),
		admin: fmt.Sprintf("chaos-admin-%032x", rand.Uint64()), product: fmt.Sprintf("chaos-tee-%x", rand.Uint32()),
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	defer r.stop()
	if err := r.boot(ctx); err != nil {
		return nil, err
	}
	users := make([]*chaosUser, r.tl.users)
	for i := range users {
		name := fmt.Sprintf("chaos-%d-%x", i, rand.Uint32())
		users[i] = &chaosUser{n: i, name: name, auth: "Bearer " + identity.New([]byte(r.secret)).SignJWT(name, time.Hour),
			leaves: i%20 == 7}
	}
	r.start = time.Now()
	crowd, stopCrowd := context.WithTimeout(ctx, r.tl.end)
	defer stopCrowd()
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Go(func() { r.user(crowd, u) })
	}
	before, faultErr := r.faults(crowd)
	wg.Wait()
	if faultErr != nil {
		return nil, faultErr
	}
	o.logf("crowd done after %v; checking", time.Since(r.start).Round(time.Millisecond))
	return r.check(ctx, users, before)
}

// boot starts Redis, three instances and the sale.
func (r *chaosRun) boot(ctx context.Context) error {
	redisDir := filepath.Join(r.o.Dir, "redis")
	if err := os.MkdirAll(redisDir, 0o755); err != nil {
		return err
	}
	var err error
	if r.redis, err = testenv.StartAOFRedis(ctx, redisDir); err != nil {
		return err
	}
	r.rdb = redis.NewClient(&redis.Options{Addr: r.redis.Addr(), MaxRetries: -1})
	for n := range 3 {
		in, err := startChaosInstance(ctx, r, n)
		if err != nil {
			return fmt.Errorf("instance %d: %w", n, err)
		}
		r.insts = append(r.insts, in)
	}
	r.o.logf("redis on %s (AOF everysec), 3 instances on %s, %s, %s", r.redis.Addr(),
		r.insts[0].addr, r.insts[1].addr, r.insts[2].addr)
	admin := "Bearer " + r.admin
	c := r.insts[0].client(r.admin)
	if st, m, _, err := c.do(ctx, r.http, "PUT", "/admin/v1/queues/"+chaosQueue, admin,
		map[string]any{"ratePerSecond": r.tl.rate, "batchSize": 10, "intervalMs": 100}); err != nil || st != 200 {
		return fmt.Errorf("creating the queue: %d %v %v", st, m, err)
	}
	if st, m, _, err := c.do(ctx, r.http, "PUT", "/admin/v1/products/"+r.product, admin,
		map[string]any{"name": "Chaos tee", "stock": r.tl.stock, "queue": chaosQueue}); err != nil || st != 200 {
		return fmt.Errorf("creating the product: %d %v %v", st, m, err)
	}
	return nil
}

// stop ends every process the run started.
func (r *chaosRun) stop() {
	for _, in := range r.insts {
		in.kill()
	}
	if r.redis != nil {
		r.redis.Kill()
	}
	if r.rdb != nil {
		r.rdb.Close()
	}
}

func (r *chaosRun) event(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := time.Since(r.start)
	r.events = append(r.events, ChaosEvent{At: at, What: what})
	r.o.logf("%6.2f s  %s", at.Seconds(), what)
}

func (r *chaosRun) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// at sleeps until d after the start; false when ctx ended first.
func (r *chaosRun) at(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(r.start.Add(d))):
		return true
	}
}

// faults runs the timeline. Before the first fault it reads the line as it
// stands (the users in it, in order), for the order check.
func (r *chaosRun) faults(ctx context.Context) (before []string, err error) {
	tl := r.tl
	if !r.at(ctx, tl.redisKill-time.Second) {
		return nil, ctx.Err()
	}
	if before, err = r.line(ctx); err != nil {
		return nil, fmt.Errorf("reading the line before the faults: %w", err)
	}
	r.event(fmt.Sprintf("%d waiting (their order is kept for the check)", len(before)))
	r.at(ctx, tl.redisKill)
	r.redis.Kill()
	r.event("Redis killed (-9)")
	r.at(ctx, tl.redisKill+tl.redisDown)
	if err := r.redis.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("restarting redis: %w", err)
	}
	r.event("Redis started again from its AOF")
	r.at(ctx, tl.instanceKill)
	r.insts[2].kill()
	r.event("instance 2 killed (-9)")
	r.at(ctx, tl.databaseStop)
	if err := r.o.StopDatabase(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("stopping postgres: %w", err)
	}
	r.event("PostgreSQL stopped")
	r.at(ctx, tl.databaseStop+tl.databaseDn)
	if err := r.o.StartDatabase(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("starting postgres: %w", err)
	}
	r.event("PostgreSQL started")
	<-ctx.Done()
	r.event("crowd stops")
	return before, nil
}

// line reads the users waiting, in line order, straight from Redis (one
// command: one instant).
func (r *chaosRun) line(ctx context.Context) ([]string, error) {
	return r.rdb.ZRange(ctx, "wr:{"+chaosQueue+"}:line", 0, -1).Result()
}

// chaosUser is one person in the crowd and what their client saw.
type chaosUser struct {
	n            int
	name, auth   string
	leaves       bool // leaves the line at some point while waiting
	mu           sync.Mutex
	entered      bool
	left         bool
	ready        bool
	ordered      bool // an order answered 201, or 200 (replayed)
	soldOut      bool
	toldNotInQue bool // NOT_IN_QUEUE while neither left nor done
}

func (u *chaosUser) set(f func(u *chaosUser)) { u.mu.Lock(); defer u.mu.Unlock(); f(u) }

// request sends one request for u, to the instances in turn from u's own
// (the next when one does not answer), and records the answer.
func (r *chaosRun) request(ctx context.Context, u *chaosUser, kind, method, path string, body any, hdr ...string) (int, map[string]any, time.Duration) {
	for try := range len(r.insts) {
		n := (u.n + try) % len(r.insts)
		st, m, retryAfter, err := r.insts[n].client(r.admin).do(ctx, r.http, method, path, u.auth, body, hdr...)
		if ctx.Err() != nil {
			return 0, nil, 0
		}
		r.mu.Lock()
		r.answers = append(r.answers, chaosAnswer{at: time.Since(r.start), kind: kind, status: st, instance: n})
		r.mu.Unlock()
		if err == nil {
			if st >= 500 && st != http.StatusServiceUnavailable {
				r.problem("%s %s on instance %d: %d %v", method, path, n, st, m)
			}
			if st == http.StatusServiceUnavailable && retryAfter <= 0 {
				r.problem("%s %s on instance %d: 503 without Retry-After", method, path, n)
			}
			return st, m, retryAfter
		}
	}
	return 0, nil, 200 * time.Millisecond // nobody answered: ask again shortly
}

// user is one person: enters, polls every second, buys when READY (asking
// again after a 503 or while the token's previous order may be in flight),
// and some leave.
func (r *chaosRun) user(ctx context.Context, u *chaosUser) {
	wait := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	if !wait(time.Duration(rand.Int64N(int64(2 * time.Second)))) { // arrivals spread over 2 s
		return
	}
	entries := "/api/v1/queues/" + chaosQueue + "/entries"
	for {
		st, _, retry := r.request(ctx, u, "enter", "POST", entries, nil)
		if st == http.StatusOK {
			u.set(func(u *chaosUser) { u.entered = true })
			break
		}
		if !wait(max(retry, time.Second)) {
			return
		}
	}
	leaveAt := time.Duration(5+rand.IntN(30)) * time.Second
	var token string
	for token == "" {
		if !wait(time.Second) {
			return
		}
		st, m, _ := r.request(ctx, u, "poll", "GET", entries+"/me", nil)
		if st != http.StatusOK {
			continue
		}
		switch m["status"] {
		case "READY":
			token, _ = m["token"].(string)
			u.set(func(u *chaosUser) { u.ready = true })
		case "NOT_IN_QUEUE":
			u.set(func(u *chaosUser) { u.toldNotInQue = true })
			r.problem("%s was told NOT_IN_QUEUE while waiting, at %v", u.name, time.Since(r.start).Round(time.Millisecond))
			return
		case "WAITING":
			if u.leaves && time.Since(r.start) > leaveAt {
				if st, _, _ := r.request(ctx, u, "leave", "DELETE", entries+"/me", nil); st == http.StatusNoContent {
					u.set(func(u *chaosUser) { u.left = true })
					return
				}
			}
		}
	}
	order := map[string]any{"productId": r.product, "quantity": 1}
	for {
		st, m, retry := r.request(ctx, u, "order", "POST", "/api/v1/orders", order,
			"X-Entry-Token", token, "Idempotency-Key", "chaos-"+u.name)
		code := ""
		if e, ok := m["error"].(map[string]any); ok {
			code, _ = e["code"].(string)
		}
		switch {
		case st == http.StatusCreated || st == http.StatusOK:
			u.set(func(u *chaosUser) { u.ordered = true })
			return
		case code == "out_of_stock":
			u.set(func(u *chaosUser) { u.soldOut = true })
			return
		case st == http.StatusServiceUnavailable || code == "order_in_progress" || st == 0:
			// The store is away, or this token's order on the killed
			// instance still holds its lock (30 s): ask again.
			if !wait(max(retry, time.Second)) {
				return
			}
		default:
			if ctx.Err() == nil {
				r.problem("%s's order: %d %v", u.name, st, m)
			}
			return
		}
	}
}

// check reads the outcome from Redis, PostgreSQL and the instances left,
// and lists every broken promise.
func (r *chaosRun) check(ctx context.Context, users []*chaosUser, before []string) (*ChaosReport, error) {
	rep := &ChaosReport{Users: len(users), Instances: len(r.insts), Duration: r.tl.end, Events: r.events,
		Requests: map[int]int{}, Outcomes: map[string]int{}, Start: r.tl.stock}
	rep.Violations = append(rep.Violations, r.problems...)
	for _, a := range r.answers {
		rep.Requests[a.status]++
		if a.status == 0 && a.instance != 2 {
			rep.Violations = append(rep.Violations, fmt.Sprintf("instance %d did not answer a request at %v", a.instance, a.at))
		}
	}

	// Orders: one per user at most, and the stock adds up.
	db, err := pgx.Connect(ctx, r.o.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("postgres after the run: %w", err)
	}
	defer db.Close(context.WithoutCancel(ctx))
	orders := map[string]int{}
	rows, err := db.Query(ctx, "SELECT user_id, count(*) FROM orders WHERE product_id = $1 GROUP BY user_id", r.product)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var user string
		var n int
		if err := rows.Scan(&user, &n); err != nil {
			return nil, err
		}
		orders[user] = n
		rep.Orders += n
		if n > 1 {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s has %d orders", user, n))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := db.QueryRow(ctx, "SELECT stock FROM products WHERE id = $1", r.product).Scan(&rep.Stock); err != nil {
		return nil, err
	}
	if rep.Stock < 0 || rep.Stock+int64(rep.Orders) != r.tl.stock {
		rep.Violations = append(rep.Violations, fmt.Sprintf("stock %d and %d orders, from %d", rep.Stock, rep.Orders, r.tl.stock))
	}

	// Everyone who entered is in line, admitted (a token, or an order), or
	// has left; those in line before the faults and still in line now are
	// in the same order.
	after, err := r.line(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the line after the run: %w", err)
	}
	inLine := map[string]bool{}
	for _, name := range after {
		inLine[name] = true
	}
	tokens, err := r.rdb.HGetAll(ctx, "wr:{"+chaosQueue+"}:tokens").Result()
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		var outcome string
		switch {
		case !u.entered:
			outcome = "never got in (Redis away at their arrival)"
		case u.left:
			outcome = "left"
			if inLine[u.name] || tokens[u.name] != "" {
				rep.Violations = append(rep.Violations, fmt.Sprintf("%s left but is still held", u.name))
			}
		case orders[u.name] > 0:
			outcome = "bought"
		case u.soldOut:
			outcome = "admitted, found it sold out"
		case tokens[u.name] != "":
			outcome = "admitted, not bought yet"
		case inLine[u.name]:
			outcome = "still in line"
		default:
			outcome = "LOST"
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s entered and is neither in line, admitted, nor gone by choice (ready %v, ordered %v)",
				u.name, u.ready, u.ordered))
		}
		if u.ordered && orders[u.name] == 0 {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s was told their order was made, and it is not in the database", u.name))
		}
		rep.Outcomes[outcome]++
	}
	if prev := inOrderOf(before, after); prev != "" {
		rep.Violations = append(rep.Violations, prev)
	}
	rep.Unavailable = []ChaosOutage{
		r.outage("Redis killed -9, back after 5 s (polls)", "poll", r.tl.redisKill, r.tl.redisKill+r.tl.redisDown, r.tl.instanceKill),
		r.outage("PostgreSQL stopped 5 s (orders)", "order", r.tl.databaseStop, r.tl.databaseStop+r.tl.databaseDn, r.tl.end),
	}
	return rep, nil
}

// inOrderOf says how after breaks the relative order of before ("" if not).
func inOrderOf(before, after []string) string {
	rank := make(map[string]int, len(before))
	for i, name := range before {
		rank[name] = i
	}
	last, lastName := -1, ""
	for _, name := range after {
		i, ok := rank[name]
		if !ok {
			continue // joined after the first reading
		}
		if i < last {
			return fmt.Sprintf("%s was behind %s before the faults and is ahead of them after", lastName, name)
		}
		last, lastName = i, name
	}
	return ""
}

// outage sums up the answers of kind from the fault's start until next
// (the next fault): the seconds with a 503, and how long after the fault
// ended (ended) the first success came.
func (r *chaosRun) outage(fault, kind string, began, ended, next time.Duration) ChaosOutage {
	o := ChaosOutage{Fault: fault, Recovered: -1}
	seconds := map[int]bool{}
	for _, a := range r.answers {
		if a.kind != kind || a.at < began || a.at >= next {
			continue
		}
		if a.status == http.StatusServiceUnavailable {
			o.Answers503++
			seconds[int(a.at/time.Second)] = true
		}
		if a.status/100 == 2 && a.at >= ended && o.Recovered < 0 {
			o.Recovered = a.at - ended
		}
	}
	o.Seconds503 = len(seconds)
	return o
}

// Markdown is the report as a section of docs/operations.md.
func (rep *ChaosReport) Markdown(command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s, `%s`: %d users, %d instances, %v.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		machine(), command, rep.Users, rep.Instances, rep.Duration)
	b.WriteString("| at | fault |\n|---|---|\n")
	for _, e := range rep.Events {
		fmt.Fprintf(&b, "| %.1f s | %s |\n", e.At.Seconds(), e.What)
	}
	b.WriteString("\n| what users saw | seconds with a 503 | 503 answers | first success after it ended |\n|---|---|---|---|\n")
	for _, o := range rep.Unavailable {
		rec := "none"
		if o.Recovered >= 0 {
			rec = fmt.Sprintf("%.2f s", o.Recovered.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", o.Fault, o.Seconds503, o.Answers503, rec)
	}
	statuses := slices.Sorted(maps.Keys(rep.Requests))
	b.WriteString("\nAnswers by status: ")
	for i, st := range statuses {
		if i > 0 {
			b.WriteString(", ")
		}
		name := strconv.Itoa(st)
		if st == 0 {
			name = "no answer (the killed instance)"
		}
		fmt.Fprintf(&b, "%s × %d", name, rep.Requests[st])
	}
	b.WriteString(". Users: ")
	outcomes := slices.Sorted(maps.Keys(rep.Outcomes))
	for i, o := range outcomes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", o, rep.Outcomes[o])
	}
	fmt.Fprintf(&b, ". Orders %d, stock %d of %d.\n\n", rep.Orders, rep.Stock, rep.Start)
	writeViolations(&b, rep.Violations, "Every promise held: everyone who entered is in line (in the same relative order), admitted, or left; nobody bought twice; the stock never went below zero; no answer was a 5xx other than 503 with Retry-After.\n")
	return b.String()
}

// chaosInstance is one waitroom process.
type chaosInstance struct {
	n    int
	addr string
	cmd  *exec.Cmd
	log  *os.File
}

func startChaosInstance(ctx context.Context, r *chaosRun, n int) (*chaosInstance, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	in := &chaosInstance{n: n, addr: "127.0.0.1:" + strconv.Itoa(port)}
	if in.log, err = os.Create(filepath.Join(r.o.Dir, fmt.Sprintf("instance-%d.log", n))); err != nil {
		return nil, err
	}
	in.cmd = exec.Command(r.o.Binary, "serve", "--addr", in.addr,
		"--redis-url", "redis://"+r.redis.Addr()+"/0", "--database-url", r.o.DatabaseURL, "--db-pool-size", "10",
		"--auth-secret", r.secret, "--admin-token", r.admin, "--drain-delay", "0", "--log-level", "warn")
	in.cmd.Stdout, in.cmd.Stderr = in.log, in.log
	if err := in.cmd.Start(); err != nil {
		return nil, err
	}
	c := in.client(r.admin)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st, _, _, err := c.do(ctx, r.http, "GET", "/readyz", "", nil); err == nil && st == http.StatusOK {
			return in, nil
		}
		if time.Now().After(deadline) {
			in.kill()
			return nil, fmt.Errorf("not ready within 30 s (log: %s)", in.log.Name())
		}
	}
}

func (in *chaosInstance) client(admin string) *client {
	return &client{base: "http://" + in.addr, admin: admin}
}

// kill is kill -9; killing twice is fine.
func (in *chaosInstance) kill() {
	if in.cmd != nil && in.cmd.Process != nil {
		in.cmd.Process.Signal(syscall.SIGKILL)
		in.cmd.Wait()
		in.cmd = nil
		in.log.Close()
	}
}

// freePort is a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
