package bench

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/proxyfront"
)

// The gateway section's anchors: what `waitroom proxy` is held against
// besides the upstream itself (docs/benchmarks.md, Gateway mode).

// bareProxy is the least a Go reverse proxy does: httputil.ReverseProxy
// with the upstream connections kept alive and the copy buffers reused as
// internal/gateway does (its transport and buffer pool, nothing else), in
// the harness's process like the upstream and waitroom, so the CPU of each
// is measured alike.
type bareProxy struct {
	Addr string
	srv  *http.Server
}

func startBareProxy(upstream string) (*bareProxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = 30 * time.Second
	transport.DisableCompression = true
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 1024, 1024
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		Transport:  transport,
		BufferPool: bareBuffers{},
		// wrk closes its connections mid-request when it stops.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// The server's limits are waitroom proxy's (internal/app).
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 16 << 10}
	go srv.Serve(ln)
	return &bareProxy{Addr: ln.Addr().String(), srv: srv}, nil
}

func (p *bareProxy) Close() error { return p.srv.Close() }

type bareBuffers struct{}

var bareBufferPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bareBuffers) Get() []byte  { return *bareBufferPool.Get().(*[]byte) }
func (bareBuffers) Put(b []byte) { bareBufferPool.Put(&b) }

// nginxProxy is nginx's proxy_pass in front of the same upstream, its
// connections to it kept alive (keepalive 64, HTTP/1.1), one worker per
// core, no access log, its files in a temp dir.
type nginxProxy struct{ *proxyfront.Front }

// startNginx starts nginx in front of upstream (host:port); nil, nil when
// the machine has no nginx.
func startNginx(ctx context.Context, o Options, upstream string) (*nginxProxy, error) {
	if proxyfront.Binary("nginx") == "" {
		return nil, nil
	}
	n, err := proxyfront.NginxWith(ctx, func(dir, addr string) (string, error) {
		return fmt.Sprintf(`worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream backend {
		server %[2]s;
		keepalive 64;
	}
	server {
		listen %[3]s;
		location / {
			proxy_pass http://backend;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
`, dir, upstream, addr), nil
	}, o.Log)
	if err != nil {
		return nil, err
	}
	o.logf("gateway: %s on %s in front of %s", n.Version, n.Addr, upstream)
	return &nginxProxy{n}, nil
}

func (n *nginxProxy) pids() ([]int, error) { return n.PIDs() }

// CPU is the CPU time nginx's master and workers have used, in user space
// and in the kernel.
func (n *nginxProxy) CPU() (user, sys time.Duration, err error) { return pidsCPU(n.PIDs) }

// pidsCPU is the CPU time the processes pids lists have used, in user
// space and in the kernel.
func pidsCPU(pids func() ([]int, error)) (user, sys time.Duration, err error) {
	ps, err := pids()
	if err != nil {
		return 0, 0, err
	}
	for _, pid := range ps {
		u, s, err := procTimes(pid)
		if err != nil {
			return 0, 0, err
		}
		user, sys = user+u, sys+s
	}
	return user, sys, nil
}

// perfCount counts the system calls and context switches of processes
// (every thread they have when it starts) with `perf stat` from its start
// to stop; nil when the machine has no perf that may count them.
type perfCount struct {
	cmd    *exec.Cmd
	stderr strings.Builder
}

// perfEvents are what perfCount counts.
const perfEvents = "raw_syscalls:sys_enter,context-switches"

// perfWorks reports whether perf can count perfEvents here (installed, and
// tracepoints open to this user).
func perfWorks(ctx context.Context) bool {
	out, err := exec.CommandContext(ctx, "perf", "stat", "-x", ",", "-e", perfEvents, "--", "true").CombinedOutput()
	return err == nil && strings.Contains(string(out), "raw_syscalls:sys_enter") && !strings.Contains(string(out), "<not")
}

func startPerfCount(pids []int) (*perfCount, error) {
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(p)
	}
	c := &perfCount{}
	c.cmd = exec.Command("perf", "stat", "-x", ",", "-e", perfEvents, "-p", strings.Join(list, ","))
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	time.Sleep(100 * time.Millisecond) // attached before the load starts
	return c, nil
}

// stop ends the count and returns it.
func (c *perfCount) stop() (syscalls, switches float64, err error) {
	c.cmd.Process.Signal(os.Interrupt)
	c.cmd.Wait() // perf stat exits non-zero on SIGINT
	for line := range strings.SplitSeq(c.stderr.String(), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		switch f[2] {
		case "raw_syscalls:sys_enter":
			syscalls = v
		case "context-switches":
			switches = v
		}
	}
	if syscalls == 0 {
		return 0, 0, fmt.Errorf("perf stat counted nothing: %s", c.stderr.String())
	}
	return syscalls, switches, nil
}

// decidingFronts are the shop's own proxies forwarding to the upstream
// while waitroom only decides (issue 41), on deploy/'s configurations as
// shipped: nginx + auth_request and Caddy + forward_auth; either is nil
// when the machine lacks it.
type decidingFronts struct {
	nginx, caddy *proxyfront.Front
	// procs: their processes, listed once (reading /proc for them at
	// every measurement would cost the harness's CPU in every row).
	procs []int
}

func startDecidingFronts(ctx context.Context, o Options, rep *GatewayReport, waitroom, upstream string) (*decidingFronts, error) {
	f := &decidingFronts{}
	a := proxyfront.Addresses{Waitroom: waitroom, Backend: upstream, Workers: 2}
	// deploy/ beside bench/, found as the wrk scripts are.
	deploy := filepath.Join(filepath.Dir(firstNonEmpty(o.WrkScript, "bench/wrk-users.lua")), "..", "deploy")
	for _, c := range []struct {
		name, file string
		start      func(context.Context, string, proxyfront.Addresses, io.Writer) (*proxyfront.Front, error)
		into       **proxyfront.Front
	}{
		{"nginx", filepath.Join(deploy, "nginx-auth-request.conf"), proxyfront.Nginx, &f.nginx},
		{"caddy", filepath.Join(deploy, "Caddyfile"), proxyfront.Caddy, &f.caddy},
	} {
		if proxyfront.Binary(c.name) == "" {
			rep.DecidingSkipped = append(rep.DecidingSkipped, c.name+" not found (scripts/test.sh installs it)")
			o.logf("gateway: %s + decision skipped: no %s", c.name, c.name)
			continue
		}
		conf, err := os.ReadFile(c.file)
		if err != nil {
			f.stop()
			return nil, err
		}
		if *c.into, err = c.start(ctx, string(conf), a, nil); err != nil {
			f.stop()
			return nil, fmt.Errorf("%s on %s: %w", c.name, c.file, err)
		}
		o.logf("gateway: %s on %s, deciding by waitroom at %s", c.name, (*c.into).Addr, waitroom)
	}
	f.each(func(p *proxyfront.Front) {
		pids, _ := p.PIDs()
		f.procs = append(f.procs, pids...)
	})
	return f, nil
}

func (f *decidingFronts) each(do func(*proxyfront.Front)) {
	for _, p := range []*proxyfront.Front{f.nginx, f.caddy} {
		if p != nil {
			do(p)
		}
	}
}

func (f *decidingFronts) stop() { f.each((*proxyfront.Front).Stop) }

// pids are the fronts' processes (nginx's master and workers, Caddy's one).
func (f *decidingFronts) pids() []int { return f.procs }

// cpu is the CPU time the fronts have used.
func (f *decidingFronts) cpu() (user, sys time.Duration, err error) {
	for _, pid := range f.pids() {
		u, s, err := procTimes(pid)
		if err != nil {
			return 0, 0, err
		}
		user, sys = user+u, sys+s
	}
	return user, sys, nil
}
