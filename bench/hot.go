package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
)

// WrkRun is one wrk scenario's result.
type WrkRun struct {
	Name        string
	Method      string
	Path        string
	ReqPerSec   float64
	P50, P99    float64 // ms
	Non2xx      int
	Errors      int
	Requests    int // finished in the run
	RatioToBare float64
	// CPUPerRequest is the CPU time, in µs, the harness's own process (the
	// server under test, and any upstream it runs) spent per request
	// answered, where a section measures it: unlike req/s it barely moves
	// when other work shares the machine.
	CPUPerRequest float64
	// SysCPUPerRequest is the part of CPUPerRequest spent in the kernel
	// (the socket calls), where a section measures it.
	SysCPUPerRequest float64
	// SyscallsPerRequest and SwitchesPerRequest are the system calls and
	// context switches of the same processes per request, where a section
	// counts them (with perf, when the machine has it).
	SyscallsPerRequest, SwitchesPerRequest float64
	// Alone says why a run finished no request, or not only 2xx: what one
	// of its requests got when sent alone right after it, with a minute to
	// answer, and the first line the server logged ("" for a run that
	// answered only 2xx). AloneOK: that request was answered 2xx.
	Alone   string
	AloneOK bool
}

var wrkResult = regexp.MustCompile(`RESULT req/s=(\S+) p50_ms=(\S+) p99_ms=(\S+) non2xx=(\d+) errors=(\d+) requests=(\d+)`)

// parseWrk reads the RESULT line of bench/wrk-*.lua into a WrkRun.
func parseWrk(name, method, path string, out []byte) (WrkRun, error) {
	mm := wrkResult.FindStringSubmatch(string(out))
	if mm == nil {
		return WrkRun{}, fmt.Errorf("wrk %s: no RESULT line in %s", name, out)
	}
	r := WrkRun{Name: name, Method: method, Path: path}
	r.ReqPerSec, _ = strconv.ParseFloat(mm[1], 64)
	r.P50, _ = strconv.ParseFloat(mm[2], 64)
	r.P99, _ = strconv.ParseFloat(mm[3], 64)
	r.Non2xx, _ = strconv.Atoi(mm[4])
	r.Errors, _ = strconv.Atoi(mm[5])
	r.Requests, _ = strconv.Atoi(mm[6])
	return r, nil
}

// wrkArgs are wrk's arguments for a run of d against base. In the short
// mode (the test command's smoke test) a request may take a minute before
// wrk counts it as an error: on a loaded machine a slow answer is not a
// wrong one.
func wrkArgs(o Options, threads, conns int, d time.Duration, script, base string) []string {
	args := []string{fmt.Sprintf("-t%d", threads), fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", int(d.Seconds())), "-s", script}
	if o.Short {
		args = append(args, "--timeout", "60s")
	}
	return append(args, base)
}

// explain fills in r.Alone when the run finished no request or not only
// 2xx: it sends one of the run's requests (method, url, hdr) alone and
// says what came back, and what the server logged.
func (r *WrkRun) explain(ctx context.Context, method, url string, hdr http.Header, logs *serverLog) {
	if r.Requests > 0 && r.Non2xx == 0 && r.Errors == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	logged := "; the server logged: " + cmp.Or(logs.First(), "nothing")
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		r.Alone = err.Error()
		return
	}
	req.Header = hdr
	sent := time.Now()
	res, err := http.DefaultClient.Do(req)
	took := time.Since(sent).Round(time.Millisecond)
	if err != nil {
		r.Alone = fmt.Sprintf("no answer after %v: %v%s", took, err, logged)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 300))
	res.Body.Close()
	r.AloneOK = res.StatusCode/100 == 2
	r.Alone = fmt.Sprintf("%d after %v", res.StatusCode, took)
	if !r.AloneOK {
		r.Alone += ": " + strings.TrimSpace(string(body))
	}
	r.Alone += logged
}

// HotReport is the hot paths section.
type HotReport struct {
	Skipped     string // why the section did not run (no wrk)
	Conns       int
	Threads     int
	Duration    time.Duration
	Users       int
	Runs        []WrkRun // bare, enter, status, bare
	BareMean    float64
	EnterRatio  float64
	StatusRatio float64
	// Profiles are the top of the server's CPU profile under the enter and
	// the status load, by scenario name.
	Profiles map[string]string
	// FromSnapshot and FromStore count the status run's answers by source.
	FromSnapshot, FromStore uint64
}

// enterAll puts bench-user-0 … bench-user-(n-1) in the bench queue (those
// already in keep their place), 64 at a time.
func enterAll(ctx context.Context, svc *queue.Service, n int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range n {
		g.Go(func() error {
			_, err := svc.Enter(ctx, "bench", fmt.Sprintf("bench-user-%d", i))
			return err
		})
	}
	return g.Wait()
}

func runHot(ctx context.Context, o Options) (*HotReport, error) {
	rep := &HotReport{Conns: 100, Threads: 2, Duration: 10 * time.Second, Users: 200_000}
	if o.Short {
		// Two seconds, not one: the short run is the test command's smoke
		// test, under -race on a shared machine, where a status run of one
		// second once finished no request at all (load average 19: the
		// first answers took longer than the run; checkWrk now says so
		// rather than failing, if one request sent alone is answered).
		rep.Duration, rep.Users = 2*time.Second, 20_000
	}
	wrk := o.Wrk
	if wrk == "" {
		var err error
		if wrk, err = exec.LookPath("wrk"); err != nil {
			rep.Skipped = "wrk not found on PATH"
			o.logf("hot paths: skipped: %s", rep.Skipped)
			return rep, nil
		}
	}
	script := o.WrkScript
	if script == "" {
		script = "bench/wrk-users.lua"
	}
	if _, err := os.Stat(script); err != nil {
		return rep, fmt.Errorf("wrk script: %w", err)
	}
	logs := &serverLog{tee: o.Log}
	m, err := boot(ctx, o, logs, nil)
	if err != nil {
		return rep, err
	}
	defer m.Close()
	c := &client{base: "http://" + m.Addr(), admin: "Bearer " + m.Config.AdminToken, poll: httpClient()}
	// A paused queue big enough for every user: this measures the line, not admission.
	if st, body, _, err := c.do(ctx, c.poll, "PUT", "/admin/v1/queues/bench", c.admin,
		map[string]any{"paused": true, "capacity": 10_000_000}); err != nil || st != 200 {
		return rep, fmt.Errorf("creating the bench queue: %d %v %v", st, body, err)
	}
	dir, err := os.MkdirTemp("", "waitroom-bench-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	jwtFile := filepath.Join(dir, "jwts.txt")
	f, err := os.Create(jwtFile)
	if err != nil {
		return rep, err
	}
	w := bufio.NewWriter(f)
	id := identity.New([]byte(m.Config.AuthSecret))
	firstJWT := id.SignJWT("bench-user-0", 2*time.Hour) // for a request sent alone (WrkRun.explain)
	for i := range rep.Users {
		fmt.Fprintln(w, id.SignJWT(fmt.Sprintf("bench-user-%d", i), 2*time.Hour))
	}
	if err := w.Flush(); err != nil {
		return rep, err
	}
	f.Close()

	run := func(name, method, path string, profile bool) error {
		o.logf("hot paths: wrk %s %s %s for %v", name, method, path, rep.Duration)
		cmd := exec.CommandContext(ctx, wrk, wrkArgs(o, rep.Threads, rep.Conns, rep.Duration, script, c.base)...)
		cmd.Env = append(os.Environ(), "WRK_JWTS="+jwtFile, "WRK_METHOD="+method, "WRK_PATH="+path)
		cmd.WaitDelay = 5 * time.Second
		if profile {
			path := filepath.Join(dir, name+".pprof")
			pf, err := os.Create(path)
			if err == nil && pprof.StartCPUProfile(pf) == nil {
				defer func() {
					pprof.StopCPUProfile()
					pf.Close()
					top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=30", path).Output()
					if err != nil {
						o.logf("hot paths: go tool pprof: %v", err)
						return
					}
					if rep.Profiles == nil {
						rep.Profiles = map[string]string{}
					}
					rep.Profiles[name] = strings.TrimSpace(string(top))
				}()
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("wrk %s: %v: %s", name, err, out)
		}
		r, err := parseWrk(name, method, path, out)
		if err != nil {
			return err
		}
		r.explain(ctx, method, c.base+path, http.Header{"Authorization": {"Bearer " + firstJWT}}, logs)
		rep.Runs = append(rep.Runs, r)
		return nil
	}
	for _, s := range []struct {
		name, method, path string
		profile            bool
	}{
		{"bare", "GET", "/healthz", false},
		{"enter", "POST", "/api/v1/queues/bench/entries", o.Profile},
		{"status", "GET", "/api/v1/queues/bench/entries/me", o.Profile},
		{"bare", "GET", "/healthz", false},
	} {
		var hits, misses uint64
		if s.name == "status" {
			// Status is what people in line ask: put every user the
			// enter run did not reach in line too, through this instance
			// as on sale night.
			if err := enterAll(ctx, m.Queue, rep.Users); err != nil {
				return rep, err
			}
			hits, misses = m.Queue.SnapshotAnswers()
		}
		if err := run(s.name, s.method, s.path, s.profile); err != nil {
			return rep, err
		}
		if s.name == "status" {
			h, m := m.Queue.SnapshotAnswers()
			rep.FromSnapshot, rep.FromStore = h-hits, m-misses
		}
	}
	rep.BareMean = (rep.Runs[0].ReqPerSec + rep.Runs[3].ReqPerSec) / 2
	for i := range rep.Runs {
		if rep.Runs[i].Name != "bare" && rep.BareMean > 0 {
			rep.Runs[i].RatioToBare = rep.Runs[i].ReqPerSec / rep.BareMean
		}
	}
	rep.EnterRatio, rep.StatusRatio = rep.Runs[1].RatioToBare, rep.Runs[2].RatioToBare
	for _, r := range rep.Runs {
		o.logf("hot paths: %s %.0f req/s p50 %.2f ms p99 %.2f ms ratio %.2f non2xx %d errors %d of %d requests %s",
			r.Name, r.ReqPerSec, r.P50, r.P99, r.RatioToBare, r.Non2xx, r.Errors, r.Requests, r.Alone)
	}
	return rep, nil
}
