package bench

// The store-error chaos run (docs/operations.md, "When the store is away"):
// `waitroom proxy --on-store-error admit|wait` in front of an upstream of
// its own whose protected route takes a fixed time, on a Redis of its own
// (AOF, appendfsync everysec), a crowd of admitted users calling the
// protected route back to back with their entries, and a line of users
// waiting in a paused queue. Redis is killed -9 for 10 s. It reports, for
// before, during and after the outage, what reached the upstream (marked
// degraded or with an entry), the protected requests' p99 as the clients
// saw it against the upstream's own, and checks that the line is where it
// was when Redis is back. bench/run.sh --chaos -on-store-error admit (or
// wait), --short for the short form.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
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

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/testenv"
)

// StoreErrorOptions says what the store-error run runs.
type StoreErrorOptions struct {
	Binary string // a built waitroom
	Dir    string // Redis's files and the gateway's log
	Mode   degraded.Mode
	// Short: 8 callers and 60 in line, 5 s before and after the outage;
	// else 32 callers and 200 in line, 10 s before and after.
	Short bool
	// Work is how long the upstream's protected route takes (50 ms, a
	// checkout page's database work).
	Work time.Duration
	Log  io.Writer
}

// StoreErrorPhase is what one phase of the run saw.
type StoreErrorPhase struct {
	Name string
	// Requests are the protected requests answered in it, by status.
	Requests map[int]int
	// Reached counts those that reached the upstream; Degraded those of
	// them marked X-Waitroom-Degraded.
	Reached, Degraded int
	// P50, P99: the clients' time of the requests that reached the
	// upstream; UpstreamP50, UpstreamP99: the upstream's own time of them.
	P50, P99, UpstreamP50, UpstreamP99 time.Duration
}

// StoreErrorReport is the run's outcome.
type StoreErrorReport struct {
	Mode            degraded.Mode
	Callers, InLine int
	Outage, Work    time.Duration
	Phases          []StoreErrorPhase
	LineKept        string        // "" when the line is as it was
	EntriesAgainIn  time.Duration // from Redis back to the first protected request forwarded with an entry
	Violations      []string
}

type storeErrorCall struct {
	at, took, upstream time.Duration
	status             int
	reached, degraded  bool
}

// RunStoreError runs the store-error chaos run.
func RunStoreError(ctx context.Context, o StoreErrorOptions) (*StoreErrorReport, error) {
	callers, inLine, before := 32, 200, 10*time.Second
	if o.Short {
		callers, inLine, before = 8, 60, 5*time.Second
	}
	if o.Work == 0 {
		o.Work = 50 * time.Millisecond
	}
	const outage = 10 * time.Second
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "store-error: "+format+"\n", args...)
		}
	}
	rep := &StoreErrorReport{Mode: o.Mode, Callers: callers, InLine: inLine, Outage: outage, Work: o.Work}

	// The upstream: its protected route takes Work, and says what it saw.
	shop := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		time.Sleep(o.Work)
		w.Header().Set("X-Shop-Degraded", strconv.FormatBool(r.Header.Get(degraded.Header) != ""))
		w.Header().Set("X-Shop-Took", strconv.FormatInt(int64(time.Since(began)), 10))
		w.WriteHeader(http.StatusOK)
	})}
	shopLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go shop.Serve(shopLn)
	defer shop.Close()

	redisDir := filepath.Join(o.Dir, "redis")
	if err := os.MkdirAll(redisDir, 0o755); err != nil {
		return nil, err
	}
	rds, err := testenv.StartAOFRedis(ctx, redisDir)
	if err != nil {
		return nil, err
	}
	defer rds.Kill()
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr(), MaxRetries: -1})
	defer rdb.Close()

	secret, admin := "store-error-"+randomHex(16), "store-error-admin-"+randomHex(16)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logFile, err := os.Create(filepath.Join(o.Dir, "gateway.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(o.Binary, "proxy", "--addr", addr, "--upstream", "http://"+shopLn.Addr().String(),
		"--protect-session", "POST /checkout", "--redis-url", "redis://"+rds.Addr()+"/0", "--on-store-error", string(o.Mode),
		"--auth-secret", secret, "--admin-token", admin, "--drain-delay", "0", "--log-level", "info",
		"--address-entry-rate", "0", "--rate", "50")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	c := &client{base: "http://" + addr + "/_waitroom", admin: admin}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st, _, _, err := c.do(ctx, hc, "GET", "/readyz", "", nil); err == nil && st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the gateway was not ready within 30 s (log: %s)", logFile.Name())
		}
	}
	auth := func(user string) string { return "Bearer " + identity.New([]byte(secret)).SignJWT(user, time.Hour) }
	entries := "/api/v1/queues/default/entries"

	// The callers are admitted first; then the queue is paused and the
	// line joins behind them, and stays as it is.
	tokens := make([]string, callers)
	for i := range callers {
		user := fmt.Sprintf("caller-%d", i)
		if st, m, _, err := c.do(ctx, hc, "POST", entries, auth(user), nil); err != nil || st != 200 {
			return nil, fmt.Errorf("%s entering: %d %v %v", user, st, m, err)
		}
		for deadline := time.Now().Add(20 * time.Second); tokens[i] == ""; time.Sleep(50 * time.Millisecond) {
			if _, m, _, err := c.do(ctx, hc, "GET", entries+"/me", auth(user), nil); err == nil && m["status"] == "READY" {
				tokens[i], _ = m["token"].(string)
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s not admitted within 20 s", user)
			}
		}
	}
	if st, m, _, err := c.do(ctx, hc, "PATCH", "/admin/v1/queues/default", "Bearer "+admin, map[string]any{"paused": true}); err != nil || st != 200 {
		return nil, fmt.Errorf("pausing: %d %v %v", st, m, err)
	}
	for i := range inLine {
		if st, m, _, err := c.do(ctx, hc, "POST", entries, auth(fmt.Sprintf("waiting-%d", i)), nil); err != nil || st != 200 || m["status"] != "WAITING" {
			return nil, fmt.Errorf("the line: %d %v %v", st, m, err)
		}
	}
	lineKey := "wr:{default}:line"
	lineBefore, err := rdb.ZRange(ctx, lineKey, 0, -1).Result()
	if err != nil {
		return nil, err
	}
	logf("%s: %d callers admitted, %d in a paused line; %v, Redis killed for %v, %v", o.Mode, callers, len(lineBefore), before, outage, before)

	start := time.Now()
	var mu sync.Mutex
	var calls []storeErrorCall
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			a := auth(fmt.Sprintf("caller-%d", i))
			for load.Err() == nil {
				call := protectedCall(load, hc, "http://"+addr+"/checkout", a, tokens[i])
				if load.Err() != nil {
					return
				}
				call.at = time.Since(start)
				mu.Lock()
				calls = append(calls, call)
				mu.Unlock()
				if call.status == http.StatusServiceUnavailable || call.status == 0 {
					time.Sleep(100 * time.Millisecond) // a client backs off a little
				}
			}
		})
	}
	sleepUntil := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
	sleepUntil(before)
	rds.Kill()
	killedAt := time.Since(start)
	logf("%6.2f s Redis killed (-9)", killedAt.Seconds())
	sleepUntil(before + outage)
	if err := rds.Start(context.WithoutCancel(ctx)); err != nil {
		stop()
		wg.Wait()
		return nil, fmt.Errorf("restarting redis: %w", err)
	}
	backAt := time.Since(start)
	logf("%6.2f s Redis started again from its AOF", backAt.Seconds())
	sleepUntil(2*before + outage)
	stop()
	wg.Wait()

	lineAfter, err := rdb.ZRange(ctx, lineKey, 0, -1).Result()
	if err != nil {
		return nil, err
	}
	if !slices.Equal(lineBefore, lineAfter) {
		rep.LineKept = fmt.Sprintf("the line was %d long before the outage and %d after; %s", len(lineBefore), len(lineAfter), inOrderOf(lineBefore, lineAfter))
		rep.Violations = append(rep.Violations, rep.LineKept)
	}
	rep.EntriesAgainIn = -1
	for _, call := range calls {
		if call.at-call.took >= backAt && call.reached && !call.degraded && (rep.EntriesAgainIn < 0 || call.at-backAt < rep.EntriesAgainIn) {
			rep.EntriesAgainIn = call.at - backAt
		}
	}
	for _, ph := range []struct {
		name     string
		from, to time.Duration
	}{{"before", 0, killedAt}, {"Redis down", killedAt, backAt}, {"after", backAt, 1 << 62}} {
		rep.Phases = append(rep.Phases, storeErrorPhase(ph.name, calls, ph.from, ph.to))
	}
	down := rep.Phases[1]
	switch o.Mode {
	case degraded.Admit:
		if down.Degraded == 0 {
			rep.Violations = append(rep.Violations, "under admit no protected request reached the upstream marked degraded while Redis was down")
		}
		if down.UpstreamP99 > 0 && down.P99 > 2*down.UpstreamP99 {
			rep.Violations = append(rep.Violations, fmt.Sprintf("with Redis down the protected requests' p99 was %v, over twice the upstream's own %v", down.P99, down.UpstreamP99))
		}
	case degraded.Wait:
		if down.Degraded > 0 {
			rep.Violations = append(rep.Violations, fmt.Sprintf("under wait %d requests reached the upstream marked degraded", down.Degraded))
		}
	}
	for _, ph := range rep.Phases {
		for st, n := range ph.Requests {
			if st >= 500 && st != http.StatusServiceUnavailable || st == 0 {
				rep.Violations = append(rep.Violations, fmt.Sprintf("%s: %d answers %d", ph.Name, n, st))
			}
		}
	}
	if rep.EntriesAgainIn < 0 {
		rep.Violations = append(rep.Violations, "no protected request was forwarded with an entry after Redis came back")
	}
	return rep, nil
}

// protectedCall is one call of the protected route with an entry.
func protectedCall(ctx context.Context, hc *http.Client, url, auth, token string) storeErrorCall {
	began := time.Now()
	req, err := http.NewRequestWithContext(ctx, "POST", url, nil)
	if err != nil {
		return storeErrorCall{}
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("X-Entry-Token", token)
	req.Header.Set("Accept", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return storeErrorCall{took: time.Since(began)}
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	call := storeErrorCall{took: time.Since(began), status: res.StatusCode}
	if took := res.Header.Get("X-Shop-Took"); took != "" {
		n, _ := strconv.ParseInt(took, 10, 64)
		call.reached, call.upstream = true, time.Duration(n)
		call.degraded = res.Header.Get("X-Shop-Degraded") == "true"
	}
	return call
}

// storeErrorPhase sums up the calls that ended in [from, to).
func storeErrorPhase(name string, calls []storeErrorCall, from, to time.Duration) StoreErrorPhase {
	ph := StoreErrorPhase{Name: name, Requests: map[int]int{}}
	var took, upstream []time.Duration
	for _, c := range calls {
		if c.at < from || c.at >= to {
			continue
		}
		ph.Requests[c.status]++
		if !c.reached {
			continue
		}
		ph.Reached++
		if c.degraded {
			ph.Degraded++
		}
		took, upstream = append(took, c.took), append(upstream, c.upstream)
	}
	slices.Sort(took)
	slices.Sort(upstream)
	ph.P50, ph.P99 = percentile(took, 50), percentile(took, 99)
	ph.UpstreamP50, ph.UpstreamP99 = percentile(upstream, 50), percentile(upstream, 99)
	return ph
}

// Markdown is the report as a section of docs/operations.md.
func (rep *StoreErrorReport) Markdown(command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s, `%s`: `--on-store-error %s`, %d callers of a protected route (the upstream takes %v) with entries, %d in a paused line, Redis killed -9 for %v.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine(), command, rep.Mode, rep.Callers, rep.Work, rep.InLine, rep.Outage)
	b.WriteString("| phase | answers | reached the upstream | marked degraded | p50 / p99 (clients) | p50 / p99 (upstream's own) | p99 ratio |\n|---|---|---|---|---|---|---|\n")
	for _, ph := range rep.Phases {
		ratio := "–"
		if ph.UpstreamP99 > 0 {
			ratio = fmt.Sprintf("%.2f×", float64(ph.P99)/float64(ph.UpstreamP99))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f / %.1f ms | %.1f / %.1f ms | %s |\n", ph.Name, statusCounts(ph.Requests),
			ph.Reached, ph.Degraded, ms(ph.P50), ms(ph.P99), ms(ph.UpstreamP50), ms(ph.UpstreamP99), ratio)
	}
	if rep.EntriesAgainIn >= 0 {
		fmt.Fprintf(&b, "\nThe first protected request forwarded with an entry again: %.2f s after Redis was back.", rep.EntriesAgainIn.Seconds())
	}
	if rep.LineKept == "" {
		fmt.Fprintf(&b, " The line: the same %d users in the same order after the outage.\n", rep.InLine)
	}
	b.WriteString("\n")
	writeViolations(&b, rep.Violations, "Every promise of the mode held.\n")
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// writeViolations ends a report: held when nothing broke, else the list.
func writeViolations(b *strings.Builder, violations []string, held string) {
	if len(violations) == 0 {
		b.WriteString(held)
		return
	}
	fmt.Fprintf(b, "**%d promises broken:**\n\n", len(violations))
	for _, v := range violations {
		fmt.Fprintf(b, "- %s\n", v)
	}
}
