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
	"strconv"
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
	Duration time.Duration
	Users    int
	// Nginx is `nginx -v`'s version; NginxSkipped says why its runs are
	// missing (no nginx on the machine).
	Nginx, NginxSkipped string
	// Fast is against an upstream that answers at once (the proxies' CPU
	// cost, worst case); Slow against routes where it takes UpstreamWork
	// per request first, as a shop's page does.
	UpstreamWork time.Duration
	Fast, Slow   GatewaySet
}

// GatewaySet is one upstream's runs, in order: directly, the bare Go
// proxy, waitroom as written, spelt oddly, session-protected, nginx, the
// bare Go proxy again, directly again. The first and last two bracket the
// others, so a drift in the machine's speed shows.
type GatewaySet struct {
	Runs []WrkRun
	// Direct and Bare are the means of the two runs of each.
	Direct, Bare WrkRun
	// Ratios to the bare Go proxy, req/s over req/s: waitroom's
	// unprotected route as written, spelt oddly, session-protected, nginx.
	ProxyToBare, SpeltToBare, SessionToBare, NginxToBare float64
	// Ratios to the upstream directly.
	BareRatio, ProxyRatio, SpeltRatio, SessionRatio, NginxRatio float64
}

// Names of the runs of a GatewaySet.
const (
	gwDirect  = "upstream directly"
	gwBare    = "bare Go ReverseProxy"
	gwProxy   = "waitroom proxy"
	gwSpelt   = "waitroom proxy, spelt oddly"
	gwSession = "waitroom proxy, session-protected, with an entry"
	gwNginx   = "nginx proxy_pass, keepalive"
)

// run returns the set's run of that name; a second of the same name is
// the mean of the two.
func (s GatewaySet) run(name string) WrkRun {
	var sum WrkRun
	n := 0
	for _, r := range s.Runs {
		if r.Name == name {
			sum.Name, sum.Path = r.Name, r.Path
			sum.ReqPerSec += r.ReqPerSec
			sum.CPUPerRequest += r.CPUPerRequest
			sum.SysCPUPerRequest += r.SysCPUPerRequest
			n++
		}
	}
	if n > 0 {
		sum.ReqPerSec /= float64(n)
		sum.CPUPerRequest /= float64(n)
		sum.SysCPUPerRequest /= float64(n)
	}
	return sum
}

// oddSpelling is /product as an attacker spells a route to walk past a
// gateway (a dot segment behind `;`, an encoded `;`, upper case, an
// extension): the gateway reads it every way a backend might (issue 19)
// before it forwards it, its most expensive path.
const oddSpelling = "/x/..;/PRODUCT%3Bjsessionid=x.json"

// Goals of the gateway (issue 24): against the least a Go proxy does, on
// the same machine in the same run.
const (
	GoalGatewayProxyToBare   = 1.0
	GoalGatewaySessionToBare = 0.8
)

// gatewayPage is what the small upstream answers: a page of about 1 KB.
var gatewayPage = []byte("<!doctype html><title>Shop</title>" + strings.Repeat("<p>A product worth queueing for.</p>", 28))

// runGateway measures wrk against the upstream directly, then through the
// proxy on an unprotected route and on a session-protected route with a
// valid entry, then directly again, in one run; the line is on Redis.
func runGateway(ctx context.Context, o Options) (*GatewayReport, error) {
	rep := &GatewayReport{Conns: 100, Threads: 2, Duration: 10 * time.Second, Users: 2000, UpstreamWork: 20 * time.Millisecond}
	if o.Short {
		rep.Duration, rep.Users = time.Second, 200
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

	m, err := bootProxy(ctx, o, upstreamURL)
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
	wide.Entry = queue.EntryAny
	if err := m.Queue.PutConfig(ctx, queue.DefaultQueue, wide); err != nil {
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
		fmt.Fprintf(w, "%s %s\n", id.SignJWT(user, 2*time.Hour), v.Token)
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

	run := func(runs *[]WrkRun, name, base, path string) error {
		o.logf("gateway: wrk %s %s%s for %v", name, base, path, rep.Duration)
		if o.GatewayProfiles != "" && name != gwDirect && name != gwNginx {
			stop, err := cpuProfile(filepath.Join(o.GatewayProfiles, fmt.Sprintf("%s-%d.pprof", profileName(path, name), len(*runs))))
			if err != nil {
				return err
			}
			defer stop()
		}
		cmd := exec.CommandContext(ctx, wrk, fmt.Sprintf("-t%d", rep.Threads), fmt.Sprintf("-c%d", rep.Conns),
			fmt.Sprintf("-d%ds", int(rep.Duration.Seconds())), "-s", script, base)
		cmd.Env = append(os.Environ(), "WRK_ENTRIES="+entries, "WRK_PATH="+path)
		cmd.WaitDelay = 5 * time.Second
		// The CPU of the harness's process (the upstream, and the Go
		// proxies) and of nginx's, which is nothing unless it proxies.
		cpu := func() (user, sys time.Duration, err error) {
			user, sys, err = procTimes(0)
			if err != nil || nginx == nil {
				return user, sys, err
			}
			u, s, err := nginx.CPU()
			return user + u, sys + s, err
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
		mm := wrkResult.FindStringSubmatch(string(out))
		if mm == nil {
			return fmt.Errorf("wrk %s: no RESULT line in %s", name, out)
		}
		r := WrkRun{Name: name, Method: "GET", Path: path}
		r.ReqPerSec, _ = strconv.ParseFloat(mm[1], 64)
		r.P50, _ = strconv.ParseFloat(mm[2], 64)
		r.P99, _ = strconv.ParseFloat(mm[3], 64)
		r.Non2xx, _ = strconv.Atoi(mm[4])
		r.Errors, _ = strconv.Atoi(mm[5])
		n := int(r.ReqPerSec * rep.Duration.Seconds())
		r.CPUPerRequest, r.SysCPUPerRequest = per(user1-user0+sys1-sys0, n), per(sys1-sys0, n)
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
		steps = append(steps, steps[1], steps[0])
		for _, s := range steps {
			if err := run(&set.Runs, s.name, s.base, s.path); err != nil {
				return err
			}
		}
		set.Direct, set.Bare = set.run(gwDirect), set.run(gwBare)
		for i, r := range set.Runs {
			set.Runs[i].RatioToBare = r.ReqPerSec / set.Direct.ReqPerSec
			o.logf("gateway: %s %s %.0f req/s p50 %.2f ms p99 %.2f ms ÷ direct %.2f ÷ bare Go %.2f CPU %.1f µs/request (kernel %.1f) non2xx %d errors %d",
				r.Name, r.Path, r.ReqPerSec, r.P50, r.P99, r.ReqPerSec/set.Direct.ReqPerSec, r.ReqPerSec/set.Bare.ReqPerSec,
				r.CPUPerRequest, r.SysCPUPerRequest, r.Non2xx, r.Errors)
		}
		ratio := func(name string, to WrkRun) float64 {
			if r := set.run(name); r.ReqPerSec > 0 {
				return r.ReqPerSec / to.ReqPerSec
			}
			return 0
		}
		set.BareRatio, set.ProxyRatio, set.SpeltRatio = ratio(gwBare, set.Direct), ratio(gwProxy, set.Direct), ratio(gwSpelt, set.Direct)
		set.SessionRatio, set.NginxRatio = ratio(gwSession, set.Direct), ratio(gwNginx, set.Direct)
		set.ProxyToBare, set.SpeltToBare = ratio(gwProxy, set.Bare), ratio(gwSpelt, set.Bare)
		set.SessionToBare, set.NginxToBare = ratio(gwSession, set.Bare), ratio(gwNginx, set.Bare)
		return nil
	}
	if err := measure(&rep.Fast, ""); err != nil {
		return rep, err
	}
	if err := measure(&rep.Slow, "/slow"); err != nil {
		return rep, err
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
// Redis, protecting GET /checkout as a session route.
func bootProxy(ctx context.Context, o Options, upstream string) (*app.Main, error) {
	return boot(ctx, o, &serverLog{tee: o.Log}, func(c *app.Config) {
		c.Proxy = true
		c.Upstream = upstream
		c.Prefix = "/_waitroom"
		c.UpstreamTimeout = 30 * time.Second
		c.ProtectSession = []string{"GET /checkout", "GET /slow/checkout"}
		c.DatabaseURL = ""
	})
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
