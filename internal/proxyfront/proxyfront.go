// Package proxyfront starts the shop's own proxy, real nginx or real Caddy,
// in front of waitroom's decision and a backend, on the configurations
// deploy/ ships, as written but for the addresses: what the gateway's
// tests, its differential fuzzer and the benchmarks put in front. It is
// also the one launcher of nginx on a whole configuration of its own
// (NginxWith: deploy/nginx.conf's cache, the benchmarks' plain proxy).
package proxyfront

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The addresses the shipped configurations name, replaced by the real ones.
const (
	WaitroomAddr = "127.0.0.1:8080"
	BackendAddr  = "127.0.0.1:3000"
)

// Front is a proxy started here.
type Front struct {
	// Addr is where it listens (host:port).
	Addr string
	// Version is nginx's ("nginx/1.22.1"); "" for Caddy.
	Version string
	cmd     *exec.Cmd
	dir     string
	done    chan error
}

// Binary finds a proxy's binary on PATH or where Debian puts it (/usr/sbin
// is not on every user's PATH); "" when the machine has none.
func Binary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	return ""
}

// Addresses says where the configuration's waitroom and backend are
// (host:port each) and, for nginx, how many workers to run (1 if 0).
type Addresses struct {
	Waitroom, Backend string
	Workers           int
}

// Nginx starts nginx on conf, a file to include in http {} (as
// deploy/nginx-auth-request.conf), with its addresses replaced and its
// "listen 80;" a free port; its own files in a temp dir.
func Nginx(ctx context.Context, conf string, a Addresses, log io.Writer) (*Front, error) {
	return NginxWith(ctx, func(dir, addr string) (string, error) {
		site, err := placed(conf, a, "listen 80;", "listen "+addr+";")
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "site.conf"), []byte(site), 0o644); err != nil {
			return "", err
		}
		return fmt.Sprintf(`worker_processes %[2]d;
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
	include %[1]s/site.conf;
}
`, dir, max(a.Workers, 1)), nil
	}, log)
}

// NginxWith starts nginx on the whole configuration conf writes for its
// dir (where its pid, logs and temp files are to go) and the address it is
// to listen on, and waits until it listens: the one way nginx is started
// here, for deploy/'s site files (Nginx), deploy/nginx.conf and the
// benchmarks' own configurations alike.
func NginxWith(ctx context.Context, conf func(dir, addr string) (string, error), log io.Writer) (*Front, error) {
	bin := Binary("nginx")
	if bin == "" {
		return nil, errors.New("no nginx on this machine (apt-get install nginx; scripts/test.sh installs it)")
	}
	version, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("nginx -v: %v: %s", err, version)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	f, err := newFront(addr)
	if err != nil {
		return nil, err
	}
	f.Version = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(version)), "nginx version:"))
	text, err := conf(f.dir, addr)
	if err != nil {
		os.RemoveAll(f.dir)
		return nil, err
	}
	if err := f.write("nginx.conf", text); err != nil {
		return nil, err
	}
	return f.start(ctx, exec.Command(bin, "-p", f.dir, "-e", filepath.Join(f.dir, "error.log"),
		"-c", filepath.Join(f.dir, "nginx.conf"), "-g", "daemon off;"), log, "error.log")
}

// Caddy starts Caddy on caddyfile (as deploy/Caddyfile), with its
// addresses replaced and its site address ":80" a free port.
func Caddy(ctx context.Context, caddyfile string, a Addresses, log io.Writer) (*Front, error) {
	bin := Binary("caddy")
	if bin == "" {
		return nil, errors.New("no caddy on this machine (apt-get install caddy; scripts/test.sh installs it)")
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	site, err := placed(caddyfile, a, "http://:80 {", "http://"+addr+" {")
	if err != nil {
		return nil, err
	}
	f, err := newFront(addr)
	if err != nil {
		return nil, err
	}
	// No admin endpoint, no storage outside the temp dir.
	site = "{\n\tadmin off\n\tstorage file_system " + f.dir + "\n}\n" + site
	if err := f.write("Caddyfile", site); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "run", "--adapter", "caddyfile", "--config", filepath.Join(f.dir, "Caddyfile"))
	cmd.Env = append(os.Environ(), "HOME="+f.dir, "XDG_DATA_HOME="+f.dir, "XDG_CONFIG_HOME="+f.dir)
	return f.start(ctx, cmd, log, "")
}

// placed is conf with the addresses replaced and its listen directive
// replaced by listenAt. A configuration that no longer names them fails:
// the test would otherwise run on addresses of its own.
func placed(conf string, a Addresses, listen, listenAt string) (string, error) {
	for _, r := range [][2]string{{WaitroomAddr, a.Waitroom}, {BackendAddr, a.Backend}, {listen, ""}} {
		if !strings.Contains(conf, r[0]) {
			return "", fmt.Errorf("the configuration no longer names %q", r[0])
		}
	}
	return strings.NewReplacer(WaitroomAddr, a.Waitroom, BackendAddr, a.Backend, listen, listenAt).Replace(conf), nil
}

// freeAddr is a loopback address with a free port for the proxy to bind
// next; a port taken meanwhile fails loudly when it starts.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func newFront(addr string) (*Front, error) {
	dir, err := os.MkdirTemp("", "waitroom-proxyfront-")
	if err != nil {
		return nil, err
	}
	// nginx's workers run as nobody when started as root; they only read here.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	return &Front{Addr: addr, dir: dir, done: make(chan error, 1)}, nil
}

func (f *Front) write(name, text string) error {
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o644); err != nil {
		os.RemoveAll(f.dir)
		return err
	}
	return nil
}

// start runs cmd and waits until it listens on f.Addr; logFile, if any, is
// the file in f.dir that says why it did not.
func (f *Front) start(ctx context.Context, cmd *exec.Cmd, log io.Writer, logFile string) (*Front, error) {
	f.cmd = cmd
	var out strings.Builder
	if log == nil {
		log = io.Discard
	}
	// One writer for both, so that exec copies them in one goroutine: out
	// and log are never written at once.
	w := io.MultiWriter(log, &out)
	cmd.Stdout, cmd.Stderr = w, w
	// Should the process that started it die without stopping it, it goes too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(f.dir)
		return nil, err
	}
	go func() { f.done <- cmd.Wait() }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", f.Addr, time.Second); err == nil {
			c.Close()
			return f, nil
		}
		select {
		case err := <-f.done:
			f.done <- err
			msg := out.String()
			if logFile != "" {
				b, _ := os.ReadFile(filepath.Join(f.dir, logFile))
				msg += string(b)
			}
			f.Stop()
			return nil, fmt.Errorf("%s exited: %v: %s", filepath.Base(cmd.Path), err, msg)
		case <-ctx.Done():
			f.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			f.Stop()
			return nil, fmt.Errorf("%s did not listen within 20 s: %s", filepath.Base(cmd.Path), out.String())
		}
	}
}

// PIDs are the proxy's processes: its main one and its children (nginx's
// workers).
func (f *Front) PIDs() ([]int, error) {
	kids, err := Children(f.cmd.Process.Pid)
	return append(kids, f.cmd.Process.Pid), err
}

// Children lists the processes whose parent is pid.
func Children(pid int) ([]int, error) {
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

// Stop stops the proxy at once (SIGTERM) and removes its files.
func (f *Front) Stop() {
	f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-f.done:
		f.done <- err
	case <-time.After(10 * time.Second):
		f.cmd.Process.Kill()
		<-f.done
	}
	os.RemoveAll(f.dir)
}
