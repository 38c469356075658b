package bench

import (
	"context"
	"errors"
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
	"syscall"
	"time"
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
type nginxProxy struct {
	Addr, Version string
	cmd           *exec.Cmd
	dir           string
	done          chan error
}

// nginxBinary is nginx on PATH or where Debian puts it (/usr/sbin, not on
// every user's PATH); "" when the machine has none.
func nginxBinary() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	return ""
}

// startNginx starts nginx in front of upstream (host:port); nil, nil when
// the machine has no nginx.
func startNginx(ctx context.Context, o Options, upstream string) (*nginxProxy, error) {
	bin := nginxBinary()
	if bin == "" {
		return nil, nil
	}
	version, err := exec.CommandContext(ctx, bin, "-v").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("nginx -v: %v: %s", err, version)
	}
	dir, err := os.MkdirTemp("", "waitroom-bench-nginx-")
	if err != nil {
		return nil, err
	}
	// Workers run as nobody when started as root; they only read here.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close() // nginx binds it next; a port taken meanwhile fails loudly below
	conf := fmt.Sprintf(`worker_processes 2;
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
`, dir, upstream, addr)
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	n := &nginxProxy{Addr: addr, Version: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(version)), "nginx version:")),
		dir: dir, done: make(chan error, 1)}
	n.cmd = exec.Command(bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", file, "-g", "daemon off;")
	n.cmd.Stdout, n.cmd.Stderr = o.Log, o.Log
	// Should the harness die without stopping it, nginx goes too.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := n.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nginx: %w", err)
	}
	go func() { n.done <- n.cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-n.done:
			n.done <- err
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			n.Stop()
			return nil, fmt.Errorf("nginx exited: %v: %s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			n.Stop()
			return nil, errors.New("nginx did not listen within 10 s")
		}
	}
	o.logf("gateway: %s on %s in front of %s", n.Version, addr, upstream)
	return n, nil
}

// pids are nginx's master and workers.
func (n *nginxProxy) pids() ([]int, error) {
	kids, err := childrenOf(n.cmd.Process.Pid)
	return append(kids, n.cmd.Process.Pid), err
}

// CPU is the CPU time nginx's master and workers have used, in user space
// and in the kernel.
func (n *nginxProxy) CPU() (user, sys time.Duration, err error) {
	pids, err := n.pids()
	if err != nil {
		return 0, 0, err
	}
	for _, pid := range pids {
		u, s, err := procTimes(pid)
		if err != nil {
			return 0, 0, err
		}
		user, sys = user+u, sys+s
	}
	return user, sys, nil
}

// Stop stops nginx at once (SIGTERM: a fast shutdown) and removes its
// files.
func (n *nginxProxy) Stop() {
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-n.done:
		n.done <- err
	case <-time.After(10 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
	}
	os.RemoveAll(n.dir)
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		_, rest, ok := strings.Cut(string(b), ") ")
		if f := strings.Fields(rest); ok && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids, nil
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
