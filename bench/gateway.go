package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
)

// GatewayReport is what `waitroom proxy` costs in front of a backend,
// beside its anchors: the upstream directly, the least a Go proxy does
// (BareProxy) and nginx.
type GatewayReport struct {
	Skipped  string
	Conns    int
	Threads  int
	Duration time.Duration // of one run of one round
	Rounds   int
	Users    int
	// Nginx is `nginx -v`'s version; NginxSkipped says why its runs are
	// missing (no nginx on the machine).
	Nginx, NginxSkipped string
	// DecidingSkipped says which deciding fronts (nginx + auth_request,
	// Caddy + forward_auth) did not run, and why.
	DecidingSkipped []string
	// Perf: the system calls and context switches were counted (perf).
	Perf bool
	// Fast is against an upstream that answers at once (the proxies' CPU
	// cost, worst case); Slow against routes where it takes UpstreamWork
	// per request first, as a shop's page does.
	UpstreamWork time.Duration
	Fast, Slow   GatewaySet
	// Panics the waitroom under measure logged during the section: 0, or
	// the section failed (issue 49).
	Panics int
}

// GatewaySet is one upstream's runs: in each of Rounds rounds, directly,
// the bare Go proxy, waitroom as written, spelt oddly, session-protected
// and nginx, each round starting one further along the list, so that
// every ratio compares runs seconds apart and none always runs first or
// last: on a machine shared with other work, the median of the rounds'
// ratios is what one run's ratio cannot be.
type GatewaySet struct {
	Rows []GatewayRow
	// Direct and Bare are the rows of the upstream directly and of the
	// bare Go proxy.
	Direct, Bare GatewayRow
	// Ratios to the bare Go proxy: waitroom's unprotected route as
	// written, spelt oddly, session-protected, nginx.
	ProxyToBare, SpeltToBare, SessionToBare, NginxToBare float64
	// Ratios to the upstream directly.
	BareRatio, ProxyRatio, SpeltRatio, SessionRatio, NginxRatio float64
	// AuthzSessionToSession: nginx + auth_request on the session-protected
	// route over waitroom proxy on it, the median of the rounds' ratios
	// (issue 41's goal: ≥ 1.5×); CaddyAuthzSessionToSession likewise.
	AuthzSessionToSession, CaddyAuthzSessionToSession float64
}

// GatewayRow is one way to the upstream over the rounds: req/s, p50 and
// p99 their medians, CPU per request the sum of CPU over the sum of
// requests, errors summed.
type GatewayRow struct {
	WrkRun
	// ToDirect and ToBare are the medians of the rounds' ratios of req/s to
	// the upstream directly and to the bare Go proxy in the same round.
	ToDirect, ToBare float64
	// PerRound is each round's req/s.
	PerRound []float64
}

// Names of the runs of a GatewaySet.
const (
	gwDirect  = "upstream directly"
	gwBare    = "bare Go ReverseProxy"
	gwProxy   = "waitroom proxy"
	gwSpelt   = "waitroom proxy, spelt oddly"
	gwSession = "waitroom proxy, session-protected, with an entry"
	gwNginx   = "nginx proxy_pass, keepalive"
	// The shop's own proxy forwarding, waitroom only deciding (issue 41):
	// deploy/nginx-auth-request.conf and deploy/Caddyfile as shipped.
	gwNginxAuthz        = "nginx + auth_request (waitroom decides)"
	gwNginxAuthzSession = "nginx + auth_request, session-protected, with an entry"
	gwCaddyAuthz        = "Caddy + forward_auth (waitroom decides)"
	gwCaddyAuthzSession = "Caddy + forward_auth, session-protected, with an entry"
)

// row returns the set's row of that name (zero if it did not run).
func (s GatewaySet) row(name string) GatewayRow {
	for _, r := range s.Rows {
		if r.Name == name {
			return r
		}
	}
	return GatewayRow{}
}

// median of xs (0 if none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// oddSpelling is /product as an attacker spells a route to walk past a
// gateway (a dot segment, a repeated slash, an encoded letter, upper case,
// path parameters, an extension): the gateway decodes it, removes the dot
// segment, merges the slashes, checks the ";" against every protected
// route and forwards "/PRODUCT;v=1.json" (issue 35), its most expensive
// path to an unprotected page.
const oddSpelling = "/x/..//%50RODUCT;v=1.json"

// Goals of the gateway (issue 24): against the least a Go proxy does, on
// the same machine in the same run.
const (
	GoalGatewayProxyToBare   = 1.0
	GoalGatewaySessionToBare = 0.8
	// GoalAuthzSessionToProxy: nginx + auth_request on a session-protected
	// route against `waitroom proxy` on it (issue 41).
	GoalAuthzSessionToProxy = 1.5
)

// gatewayPage is what the small upstream answers: a page of about 1 KB.
var gatewayPage = []byte("<!doctype html><title>Shop</title>" + strings.Repeat("<p>A product worth queueing for.</p>", 28))

// runGateway measures wrk against the upstream directly, then through the
// proxy on an unprotected route and on a session-protected route with a
// valid entry, then directly again, in one run; the line is on Redis.
func runGateway(ctx context.Context, o Options) (*GatewayReport, error) {
	rep := &GatewayReport{Conns: 100, Threads: 2, Duration: 2 * time.Second, Rounds: 7, Users: 2000, UpstreamWork: 20 * time.Millisecond}
	if o.Short {
		rep.Duration, rep.Rounds, rep.Users = time.Second, 1, 200
	}
	wrk := o.Wrk
	if wrk == "" {
		var err error
		if wrk, err = exec.LookPath("wrk"); err != nil {
			rep.Skipped = "wrk not found on PATH"
			o.logf("gateway: skipped: %s", rep.Skipped)
			return rep, nil
		}
	}
	script := filepath.Join(filepath.Dir(firstNonEmpty(o.WrkScript, "bench/wrk-users.lua")), "wrk-entries.lua")
	if _, err := os.Stat(script); err != nil {
		return rep, fmt.Errorf("wrk script: %w", err)
	}

	// The upstream: a plain Go server, as small as a backend gets, so the
	// ratio is the proxy's own cost; under /slow/ it takes UpstreamWork
	// first (sleeping, so it costs no CPU), as a real page does.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rep, err
	}
	upstream := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/slow/") {
			time.Sleep(rep.UpstreamWork)
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(gatewayPage)
	})}
	go upstream.Serve(ln)
	defer upstream.Close()
	upstreamURL := "http://" + ln.Addr().String()

	logs := &serverLog{tee: o.Log}
	m, err := bootProxy(ctx, o, logs, upstreamURL)
	if err != nil {
		return rep, err
	}
	defer m.Close()
	proxyURL := "http://" + m.Addr()

	// Every user holds an entry: let them straight in on a quiet line wide
	// enough for all at once.
	wide := queue.DefaultConfig()
	wide.RatePerSecond, wide.BatchSize, wide.Interval = 100_000, 10_000, 100*time.Millisecond
	wide.Capacity, wide.TokenTTL, wide.RateDerivation = 100_000, time.Hour, "bench"
	wide.Join = queue.JoinAny
	if err := m.Operator().PutConfig(ctx, queue.DefaultQueue, wide); err != nil {
		return rep, err
	}
	dir, err := os.MkdirTemp("", "waitroom-bench-gw-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	entries := filepath.Join(dir, "entries.txt")
	f, err := os.Create(entries)
	if err != nil {
		return rep, err
	}
	w := bufio.NewWriter(f)
	id := identity.New([]byte(m.Config.AuthSecret))
	var first http.Header // the first user's, for a request sent alone (WrkRun.explain)
	for i := range rep.Users {
		user := fmt.Sprintf("gw-user-%d", i)
		var v queue.View
		for range 100 { // the budget is per tick: a few ticks at most
			if v, err = m.Queue.AdmitNow(ctx, queue.DefaultQueue, user); err != nil {
				return rep, err
			}
			if v.State == queue.Ready {
				break
			}
			time.Sleep(wide.Interval)
		}
		if v.State != queue.Ready {
			return rep, fmt.Errorf("%s was not let in: %s", user, v.State)
		}
		jwt := id.SignJWT(user, 2*time.Hour)
		if first == nil {
			first = http.Header{"Authorization": {"Bearer " + jwt}, "X-Entry-Token": {v.Token}}
		}
		fmt.Fprintf(w, "%s %s\n", jwt, v.Token)
	}
	if err := w.Flush(); err != nil {
		return rep, err
	}
	f.Close()

	bare, err := startBareProxy(upstreamURL)
	if err != nil {
		return rep, err
	}
	defer bare.Close()
	bareURL := "http://" + bare.Addr
	nginx, err := startNginx(ctx, o, ln.Addr().String())
	if err != nil {
		return rep, err
	}
	if nginx == nil {
		rep.NginxSkipped = "nginx not found (bench/run.sh installs it)"
		o.logf("gateway: nginx skipped: %s", rep.NginxSkipped)
	} else {
		defer nginx.Stop()
		rep.Nginx = nginx.Version
	}

	fronts, err := startDecidingFronts(ctx, o, rep, m.Addr(), ln.Addr().String())
	if err != nil {
		return rep, err
	}
	defer fronts.stop()

	// perf counts the system calls and context switches of the same
	// processes whose CPU is measured, where the machine lets it.
	counted := []int{os.Getpid()}
	if nginx != nil {
		pids, err := nginx.pids()
		if err != nil {
			return rep, err
		}
		counted = append(counted, pids...)
	}
	counted = append(counted, fronts.pids()...)
	if rep.Perf = perfWorks(ctx); !rep.Perf {
		o.logf("gateway: no perf that may count system calls: those columns are left out")
	}
	profiles := 0
	run := func(runs *[]WrkRun, name, base, path string) error {
		o.logf("gateway: wrk %s %s%s for %v", name, base, path, rep.Duration)
		if o.GatewayProfiles != "" && name != gwDirect && name != gwNginx {
			stop, err := cpuProfile(filepath.Join(o.GatewayProfiles, fmt.Sprintf("%s-%d.pprof", profileName(path, name), profiles)))
			if err != nil {
				return err
			}
			defer stop()
			profiles++
		}
		cmd := exec.CommandContext(ctx, wrk, wrkArgs(o, rep.Threads, rep.Conns, rep.Duration, script, base)...)
		cmd.Env = append(os.Environ(), "WRK_ENTRIES="+entries, "WRK_PATH="+path)
		cmd.WaitDelay = 5 * time.Second
		// The CPU of the harness's process (the upstream, and the Go
		// proxies) and of nginx's, which is nothing unless it proxies.
		cpu := func() (user, sys time.Duration, err error) {
			user, sys, err = procTimes(0)
			if err != nil {
				return user, sys, err
			}
			u, s, err := fronts.cpu()
			user, sys = user+u, sys+s
			if err != nil || nginx == nil {
				return user, sys, err
			}
			u, s, err = nginx.CPU()
			return user + u, sys + s, err
		}
		var count *perfCount
		if rep.Perf {
			if count, err = startPerfCount(counted); err != nil {
				return err
			}
		}
		user0, sys0, err := cpu()
		if err != nil {
			return err
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("wrk %s: %v: %s", name, err, out)
		}
		user1, sys1, err := cpu()
		if err != nil {
			return err
		}
		var syscalls, switches float64
		if count != nil {
			if syscalls, switches, err = count.stop(); err != nil {
				return err
			}
		}
		r, err := parseWrk(name, "GET", path, out)
		if err != nil {
			return err
		}
		r.explain(ctx, "GET", base+path, first.Clone(), logs)
		n := int(r.ReqPerSec * rep.Duration.Seconds())
		r.CPUPerRequest, r.SysCPUPerRequest = per(user1-user0+sys1-sys0, n), per(sys1-sys0, n)
		if n > 0 {
			r.SyscallsPerRequest, r.SwitchesPerRequest = syscalls/float64(n), switches/float64(n)
		}
		*runs = append(*runs, r)
		return nil
	}
	measure := func(set *GatewaySet, prefix string) error {
		steps := []struct{ name, base, path string }{
			{gwDirect, upstreamURL, prefix + "/product"},
			{gwBare, bareURL, prefix + "/product"},
			{gwProxy, proxyURL, prefix + "/product"},
			{gwSpelt, proxyURL, prefix + oddSpelling},
			{gwSession, proxyURL, prefix + "/checkout"},
		}
		if nginx != nil {
			steps = append(steps, struct{ name, base, path string }{gwNginx, "http://" + nginx.Addr, prefix + "/product"})
		}
		if fronts.nginx != nil {
			steps = append(steps, struct{ name, base, path string }{gwNginxAuthz, "http://" + fronts.nginx.Addr, prefix + "/product"},
				struct{ name, base, path string }{gwNginxAuthzSession, "http://" + fronts.nginx.Addr, prefix + "/checkout"})
		}
		if fronts.caddy != nil {
			steps = append(steps, struct{ name, base, path string }{gwCaddyAuthz, "http://" + fronts.caddy.Addr, prefix + "/product"},
				struct{ name, base, path string }{gwCaddyAuthzSession, "http://" + fronts.caddy.Addr, prefix + "/checkout"})
		}
		rounds := make([][]WrkRun, rep.Rounds) // [round][step]
		for k := range rounds {
			rounds[k] = make([]WrkRun, len(steps))
			for j := range steps {
				i := (k + j) % len(steps)
				var one []WrkRun
				if err := run(&one, steps[i].name, steps[i].base, steps[i].path); err != nil {
					return err
				}
				rounds[k][i] = one[0]
			}
		}
		ratios := func(i, to int) []float64 {
			var rs []float64
			for _, round := range rounds {
				if round[to].ReqPerSec > 0 { // a round that finished no request has no ratio
					rs = append(rs, round[i].ReqPerSec/round[to].ReqPerSec)
				}
			}
			return rs
		}
		for i, st := range steps {
			row := GatewayRow{WrkRun: WrkRun{Name: st.name, Method: "GET", Path: st.path}}
			var p50, p99 []float64
			var cpu, sys, calls, switches, requests float64
			for _, round := range rounds {
				r := round[i]
				row.PerRound = append(row.PerRound, r.ReqPerSec)
				p50, p99 = append(p50, r.P50), append(p99, r.P99)
				row.Non2xx, row.Errors, row.Requests = row.Non2xx+r.Non2xx, row.Errors+r.Errors, row.Requests+r.Requests
				if row.Alone == "" {
					row.Alone, row.AloneOK = r.Alone, r.AloneOK
				}
				n := r.ReqPerSec * rep.Duration.Seconds()
				cpu, sys, requests = cpu+r.CPUPerRequest*n, sys+r.SysCPUPerRequest*n, requests+n
				calls, switches = calls+r.SyscallsPerRequest*n, switches+r.SwitchesPerRequest*n
			}
			row.ReqPerSec, row.P50, row.P99 = median(row.PerRound), median(p50), median(p99)
			if requests > 0 {
				row.CPUPerRequest, row.SysCPUPerRequest = cpu/requests, sys/requests
				row.SyscallsPerRequest, row.SwitchesPerRequest = calls/requests, switches/requests
			}
			row.ToDirect, row.ToBare = median(ratios(i, 0)), median(ratios(i, 1))
			set.Rows = append(set.Rows, row)
			o.logf("gateway: %s %s %.0f req/s (rounds %.0f) p50 %.2f ms p99 %.2f ms ÷ direct %.2f ÷ bare Go %.2f CPU %.1f µs/request (kernel %.1f) syscalls %.2f switches %.2f non2xx %d errors %d of %d requests %s",
				row.Name, row.Path, row.ReqPerSec, row.PerRound, row.P50, row.P99, row.ToDirect, row.ToBare,
				row.CPUPerRequest, row.SysCPUPerRequest, row.SyscallsPerRequest, row.SwitchesPerRequest, row.Non2xx, row.Errors, row.Requests, row.Alone)
		}
		set.Direct, set.Bare = set.row(gwDirect), set.row(gwBare)
		set.BareRatio, set.ProxyRatio, set.SpeltRatio = set.Bare.ToDirect, set.row(gwProxy).ToDirect, set.row(gwSpelt).ToDirect
		set.SessionRatio, set.NginxRatio = set.row(gwSession).ToDirect, set.row(gwNginx).ToDirect
		set.ProxyToBare, set.SpeltToBare = set.row(gwProxy).ToBare, set.row(gwSpelt).ToBare
		set.SessionToBare, set.NginxToBare = set.row(gwSession).ToBare, set.row(gwNginx).ToBare
		index := func(name string) int {
			return slices.IndexFunc(steps, func(st struct{ name, base, path string }) bool { return st.name == name })
		}
		if session := index(gwSession); session >= 0 {
			if i := index(gwNginxAuthzSession); i >= 0 {
				set.AuthzSessionToSession = median(ratios(i, session))
			}
			if i := index(gwCaddyAuthzSession); i >= 0 {
				set.CaddyAuthzSessionToSession = median(ratios(i, session))
			}
		}
		return nil
	}
	if err := measure(&rep.Fast, ""); err != nil {
		return rep, err
	}
	if !o.Short { // the smoke test: the slow upstream's set is the same harness again
		if err := measure(&rep.Slow, "/slow"); err != nil {
			return rep, err
		}
	}
	var firstPanic string
	if rep.Panics, firstPanic = logs.Panics(); rep.Panics > 0 {
		return rep, fmt.Errorf("waitroom logged %d panics during the section, the first: %s", rep.Panics, firstPanic)
	}
	return rep, nil
}

// cpuProfile profiles the harness's process into file until stop is called.
func cpuProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// profileName names a run's profile: gateway-slow-waitroom-proxy.
func profileName(path, name string) string {
	slug := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
	if strings.HasPrefix(path, "/slow/") {
		slug = "slow-" + slug
	}
	return "gateway-" + slug
}

// bootProxy starts `waitroom proxy` in front of upstream, on the test
// Redis, protecting GET /checkout as a session route; its warnings go to
// logs.
func bootProxy(ctx context.Context, o Options, logs *serverLog, upstream string) (*app.Main, error) {
	return boot(ctx, o, logs, func(c *app.Config) {
		c.Proxy = true
		c.Upstream = upstream
		c.Prefix = "/_waitroom"
		c.UpstreamTimeout = 30 * time.Second
		c.ProtectSession = []string{"GET /checkout", "GET /slow/checkout"}
		// The deciding fronts (nginx, Caddy) ask from loopback.
		c.TrustedProxies = "127.0.0.1"
		c.DatabaseURL = ""
	})
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
