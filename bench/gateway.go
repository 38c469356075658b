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
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
)

// GatewayReport is what `waitroom proxy` costs in front of a backend.
type GatewayReport struct {
	Skipped  string
	Conns    int
	Threads  int
	Duration time.Duration
	Users    int
	// Runs: direct, proxied, proxied in an attacker's spelling,
	// session-protected, direct again, against an upstream that answers
	// at once (the proxy's CPU cost, worst case).
	Runs         []WrkRun
	DirectMean   float64
	ProxyRatio   float64 // unprotected route through the proxy ÷ the upstream directly
	SpeltRatio   float64 // the same route in oddSpelling through the proxy ÷ the upstream directly
	SessionRatio float64 // session-protected route with a valid entry ÷ the upstream directly
	// Slow: the same five against routes where the upstream takes
	// UpstreamWork per request, as a shop's page does.
	UpstreamWork                                     time.Duration
	Slow                                             []WrkRun
	SlowProxyRatio, SlowSpeltRatio, SlowSessionRatio float64
}

// oddSpelling is /product as an attacker spells a route to walk past a
// gateway (a dot segment behind `;`, an encoded `;`, upper case, an
// extension): the gateway reads it every way a backend might (issue 19)
// before it forwards it, its most expensive path.
const oddSpelling = "/x/..;/PRODUCT%3Bjsessionid=x.json"

// Goals of the gateway issue.
const (
	GoalGatewayProxyRatio   = 0.7
	GoalGatewaySessionRatio = 0.5
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

	run := func(runs *[]WrkRun, name, base, path string) error {
		o.logf("gateway: wrk %s %s%s for %v", name, base, path, rep.Duration)
		cmd := exec.CommandContext(ctx, wrk, fmt.Sprintf("-t%d", rep.Threads), fmt.Sprintf("-c%d", rep.Conns),
			fmt.Sprintf("-d%ds", int(rep.Duration.Seconds())), "-s", script, base)
		cmd.Env = append(os.Environ(), "WRK_ENTRIES="+entries, "WRK_PATH="+path)
		cmd.WaitDelay = 5 * time.Second
		before, err := procCPU(0)
		if err != nil {
			return err
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("wrk %s: %v: %s", name, err, out)
		}
		after, err := procCPU(0)
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
		r.CPUPerRequest = per(after-before, int(r.ReqPerSec*rep.Duration.Seconds()))
		*runs = append(*runs, r)
		return nil
	}
	// Directly, through the proxy as written and as an attacker spells
	// it, session-protected, directly again: the two direct runs bracket
	// the others, so a drift in the machine's speed shows.
	measure := func(runs *[]WrkRun, prefix string) (proxy, spelt, session float64, err error) {
		for _, s := range []struct{ name, base, path string }{
			{"upstream directly", upstreamURL, prefix + "/product"},
			{"through the proxy", proxyURL, prefix + "/product"},
			{"through the proxy, spelt oddly", proxyURL, prefix + oddSpelling},
			{"session-protected, with an entry", proxyURL, prefix + "/checkout"},
			{"upstream directly", upstreamURL, prefix + "/product"},
		} {
			if err := run(runs, s.name, s.base, s.path); err != nil {
				return 0, 0, 0, err
			}
		}
		rs := *runs
		direct := (rs[0].ReqPerSec + rs[4].ReqPerSec) / 2
		for i := range rs {
			rs[i].RatioToBare = rs[i].ReqPerSec / direct
			o.logf("gateway: %s %s %.0f req/s p50 %.2f ms p99 %.2f ms ratio %.2f CPU %.1f µs/request non2xx %d errors %d",
				rs[i].Name, rs[i].Path, rs[i].ReqPerSec, rs[i].P50, rs[i].P99, rs[i].RatioToBare, rs[i].CPUPerRequest, rs[i].Non2xx, rs[i].Errors)
		}
		return rs[1].RatioToBare, rs[2].RatioToBare, rs[3].RatioToBare, nil
	}
	if rep.ProxyRatio, rep.SpeltRatio, rep.SessionRatio, err = measure(&rep.Runs, ""); err != nil {
		return rep, err
	}
	rep.DirectMean = (rep.Runs[0].ReqPerSec + rep.Runs[4].ReqPerSec) / 2
	if rep.SlowProxyRatio, rep.SlowSpeltRatio, rep.SlowSessionRatio, err = measure(&rep.Slow, "/slow"); err != nil {
		return rep, err
	}
	return rep, nil
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
