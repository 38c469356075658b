package apptest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/internal/proxyfront"
)

// NginxBinary is nginx on PATH or where Debian puts it (/usr/sbin, not on
// every user's PATH); "" when the machine has none. scripts/test.sh and
// bench/run.sh install Debian's.
func NginxBinary() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	return ""
}

// Nginx is an nginx process of its own: its config and files in a temp dir,
// listening on a loopback port, stopped by Stop.
type Nginx struct {
	Addr, Version string
	cmd           *exec.Cmd
	dir           string
	done          chan error
}

// StartNginx starts nginx with the config conf writes for its dir and the
// address it is to listen on, and waits until it listens. Its own output
// goes to log (nil: discarded).
func StartNginx(conf func(dir, addr string) (string, error), log io.Writer) (*Nginx, error) {
	bin := NginxBinary()
	if bin == "" {
		return nil, errors.New("no nginx on this machine (apt-get install nginx)")
	}
	version, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("nginx -v: %v: %s", err, version)
	}
	dir, err := os.MkdirTemp("", "waitroom-nginx-")
	if err != nil {
		return nil, err
	}
	// Workers run as nobody when started as root; they only read here,
	// and write where the config says (its own subdirectories).
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close() // nginx binds it next; a port taken meanwhile fails loudly below
	text, err := conf(dir, addr)
	file := filepath.Join(dir, "nginx.conf")
	if err == nil {
		err = os.WriteFile(file, []byte(text), 0o644)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	n := &Nginx{Addr: addr, Version: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(version)), "nginx version:")),
		dir: dir, done: make(chan error, 1)}
	n.cmd = exec.Command(bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", file, "-g", "daemon off;")
	if log == nil {
		log = io.Discard
	}
	n.cmd.Stdout, n.cmd.Stderr = log, log
	// Should the caller die without stopping it, nginx goes too.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := n.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nginx: %w", err)
	}
	go func() { n.done <- n.cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return n, nil
		}
		select {
		case err := <-n.done:
			n.done <- err
			errs, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			n.Stop()
			return nil, fmt.Errorf("nginx exited: %v: %s", err, errs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			n.Stop()
			return nil, errors.New("nginx did not listen within 10 s")
		}
	}
}

// PIDs are nginx's master and workers.
func (n *Nginx) PIDs() ([]int, error) {
	kids, err := proxyfront.Children(n.cmd.Process.Pid)
	return append(kids, n.cmd.Process.Pid), err
}

// Stop stops nginx at once (SIGTERM: a fast shutdown) and removes its
// files.
func (n *Nginx) Stop() {
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

// DeployedNginxConf is the shipped deploy/nginx.conf (read from the module's
// root, found upward from the working directory) changed only where a
// machine of its own must: it listens on addr, sends to upstreams
// (host:port) instead of compose's waitroom-1 and waitroom-2, keeps its
// pid, logs, temp files and cache under dir, logs no access, and runs one
// worker per core. Everything that makes it a cache stays as shipped.
func DeployedNginxConf(dir, addr string, upstreams []string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "nginx.conf"))
	if err != nil {
		return "", err
	}
	text := string(raw)
	servers := ""
	for _, u := range upstreams {
		servers += "    server " + u + ";\n"
	}
	for _, edit := range []struct{ old, new string }{
		{"  upstream waitroom {\n", "  upstream waitroom {\n" + servers},
		{"listen 8080;", "listen " + addr + ";"},
		{"/var/cache/nginx/waitroom-front", filepath.Join(dir, "front")},
		{"events {}", fmt.Sprintf("worker_processes auto;\npid %[1]s/nginx.pid;\nerror_log %[1]s/error.log warn;\nevents { worker_connections 4096; }", dir)},
		{"http {", fmt.Sprintf("http {\n  access_log off;\n  client_body_temp_path %[1]s/body;\n  proxy_temp_path %[1]s/proxy;\n"+
			"  fastcgi_temp_path %[1]s/fastcgi;\n  uwsgi_temp_path %[1]s/uwsgi;\n  scgi_temp_path %[1]s/scgi;", dir)},
	} {
		if !strings.Contains(text, edit.old) {
			return "", fmt.Errorf("deploy/nginx.conf: no %q to change (the test's edits need updating)", edit.old)
		}
		text = strings.Replace(text, edit.old, edit.new, 1)
	}
	return composeServers.ReplaceAllString(text, ""), nil
}

// composeServers are deploy/nginx.conf's upstream servers, compose's
// service names.
var composeServers = regexp.MustCompile(`(?m)^    server waitroom-\d:8080.*\n`)

// moduleRoot is the nearest directory upward with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
