//go:build linux

// Package difffuzz runs the real backends of the gateway's differential
// fuzzer: a servlet app on Jetty 9.4, a Flask app and an Express 4 app,
// each serving the same shop (the routes `waitroom proxy` is told to
// protect, and a catch-all) in its framework's own routing, with the
// method overrides its ecosystem documents. The fuzzer sends a request
// once straight to a backend and once through the gateway, and asks the
// backend (Hits) whether a protected handler ran.
//
// The contract, the same for all three:
//
//   - POST /checkout, POST /api/buy, PUT /items/{id}, POST /orders/{id}/pay
//     and GET /drops/{id}/buy (HEAD too, where the framework sends HEAD to a
//     GET handler) run a protected handler: it answers 200 with the body
//     "PROTECTED <route>", route as the gateway's --protect spells it (for
//     example "PROTECTED PUT /items/{id}"), and records a hit.
//   - Anything else reaches a catch-all answering 200 "OPEN <method>
//     <path>", the path as the framework routed it (Jetty: decoded and
//     normalised; Flask: decoded; Express: as sent). Whatever the
//     framework answers by itself (400, 404, 405, redirects) stands.
//   - A hit is the line "<X-Fuzz-Id> <method> <route>": the request's
//     X-Fuzz-Id header ("-" without one), the method the handler saw
//     (after any override), and the route, then " user=<X-Waitroom-User>"
//     when the request carried one (the gateway says who on a request it
//     forwarded with an entry). GET /__hits lists them, one a line, DELETE
//     /__hits clears them.
//
// Jetty and Express keep connections alive; Flask's server (Werkzeug's)
// answers every request with "Connection: close", so a client of it dials
// again for each request.
//
// Only on Linux: a backend runs in its own process group, and dies with
// the process that started it.
package difffuzz

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// sources are the three shops, written out at each start so that a
// backend runs from any working directory (a test's, the bench harness's).
//
//go:embed backends
var sources embed.FS

// BackendNames lists the backends StartBackend knows.
var BackendNames = []string{"jetty", "flask", "express"}

// Env says where the tools the backends run on are. LookupEnv fills it.
type Env struct {
	// Java and Javac are a JDK's commands; JettyClasspath lists the jars of
	// Debian's Jetty 9.4 and servlet API (jettyJars).
	Java, Javac, JettyClasspath string
	// Python is a python3 that imports flask.
	Python string
	// Node is node, and NodeModules a node_modules directory holding
	// express, body-parser and method-override (tools/npm's npm ci).
	Node, NodeModules string
}

// jettyJars are the jars in /usr/share/java an embedded Jetty 9.4 with
// servlets needs: Debian's libjetty9-java and libservlet-api-java.
var jettyJars = []string{"jetty9-server", "jetty9-servlet", "jetty9-http", "jetty9-io", "jetty9-util", "jetty9-security", "servlet-api"}

// nodeModulesVar names the node_modules directory scripts/test.sh installs
// tools/npm into (testenv.NodeModulesVar).
const nodeModulesVar = "WAITROOM_TEST_NODE_MODULES"

// debianPython is Debian's python3, which sees python3-flask: a pyenv or
// venv python3 first on PATH would not.
const debianPython = "/usr/bin/python3"

// LookupEnv finds the tools the named backends need (all of BackendNames
// when none is named): java and javac on PATH, Jetty's jars in
// /usr/share/java, Debian's python3 with flask, node on PATH, and the
// node_modules directory $WAITROOM_TEST_NODE_MODULES. It returns what is
// missing, one human-readable string for each; the caller decides whether
// that is a skip or a failure.
func LookupEnv(names ...string) (Env, []string) {
	if len(names) == 0 {
		names = BackendNames
	}
	var env Env
	var missing []string
	lookPath := func(cmd, why string) string {
		path, err := exec.LookPath(cmd)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s on PATH (%s): %v", cmd, why, err))
		}
		return path
	}
	for _, name := range names {
		switch name {
		case "jetty":
			env.Javac = lookPath("javac", "a JDK; scripts/test.sh installs default-jdk-headless")
			env.Java = lookPath("java", "scripts/test.sh installs default-jdk-headless")
			var jars []string
			for _, jar := range jettyJars {
				path := filepath.Join("/usr/share/java", jar+".jar")
				if _, err := os.Stat(path); err != nil {
					missing = append(missing, fmt.Sprintf("%s (scripts/test.sh installs libjetty9-java): %v", path, err))
				}
				jars = append(jars, path)
			}
			env.JettyClasspath = strings.Join(jars, string(os.PathListSeparator))
		case "flask":
			if out, err := exec.Command(debianPython, "-c", "import flask").CombinedOutput(); err != nil {
				missing = append(missing, fmt.Sprintf("%s with flask (scripts/test.sh installs python3-flask): %v: %s", debianPython, err, strings.TrimSpace(string(out))))
			} else {
				env.Python = debianPython
			}
		case "express":
			env.Node = lookPath("node", "scripts/test.sh installs it")
			env.NodeModules = os.Getenv(nodeModulesVar)
			if env.NodeModules == "" {
				missing = append(missing, fmt.Sprintf("Express: %s is not set (scripts/test.sh sets it to its npm ci of tools/npm)", nodeModulesVar))
				break
			}
			for _, pkg := range []string{"express", "body-parser", "method-override"} {
				if _, err := os.Stat(filepath.Join(env.NodeModules, pkg, "package.json")); err != nil {
					missing = append(missing, fmt.Sprintf("%s in %s (tools/npm pins it; scripts/test.sh installs it): %v", pkg, env.NodeModules, err))
				}
			}
		default:
			missing = append(missing, fmt.Sprintf("a backend called %q (there are %v)", name, BackendNames))
		}
	}
	return env, missing
}

// Backend is a real backend the fuzzer runs against.
type Backend struct {
	Name string // "jetty", "flask", "express"
	Addr string // 127.0.0.1:port

	cmd        *exec.Cmd
	dir        string        // the sources (and Jetty's classes)
	stderr     *tail         // the end of the process's stderr
	stdoutDone chan struct{} // closed once its stdout is read to the end
	client     *http.Client  // for /__hits, kept apart from the fuzzer's connections

	closeOnce sync.Once
	closeErr  error
}

// startTimeout bounds the wait for "PORT n": a JVM on a loaded two-core
// machine can take most of a minute.
const startTimeout = 2 * time.Minute

// StartBackend starts the named backend (one of BackendNames) on a free
// loopback port and returns once it listens. ctx bounds the start only;
// the process runs until Close.
func StartBackend(ctx context.Context, name string, env Env) (*Backend, error) {
	dir, err := os.MkdirTemp("", "waitroom-difffuzz-"+name+"-")
	if err != nil {
		return nil, err
	}
	cmd, err := command(ctx, name, env, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b := &Backend{
		Name:       name,
		cmd:        cmd,
		dir:        dir,
		stderr:     &tail{},
		stdoutDone: make(chan struct{}),
		client:     &http.Client{Transport: &http.Transport{}, Timeout: time.Minute},
	}
	cmd.Dir = dir
	// Its own process group, so that Close kills whatever it started too;
	// and killed with the process that started it, so that a test binary
	// killed at its timeout leaves no JVM behind. (The kernel sends
	// Pdeathsig when the thread that started it ends, and Go ends a thread
	// only when a goroutine locked to it exits: do not call StartBackend
	// from one.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = b.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	port := make(chan int, 1)
	go func() {
		defer close(b.stdoutDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "PORT "); ok {
				if n, err := strconv.Atoi(s); err == nil {
					select {
					case port <- n:
					default:
					}
				}
			}
		}
		// Past a line too long for the scanner: keep reading, or the
		// process blocks writing.
		io.Copy(io.Discard, stdout)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case n := <-port:
		b.Addr = "127.0.0.1:" + strconv.Itoa(n)
		return b, nil
	case <-b.stdoutDone:
		err = errors.New("exited before it listened")
	case <-timer.C:
		err = fmt.Errorf("did not listen within %v", startTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.Close()
	return nil, fmt.Errorf("%s: %w; its stderr ends:\n%s", name, err, b.stderr.String())
}

// command writes the backend's source into dir (compiling it, for Jetty)
// and returns the command that runs it.
func command(ctx context.Context, name string, env Env, dir string) (*exec.Cmd, error) {
	write := func(file string) (string, error) {
		src, err := sources.ReadFile("backends/" + file)
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, file)
		return path, os.WriteFile(path, src, 0o644)
	}
	switch name {
	case "jetty":
		src, err := write("Shop.java")
		if err != nil {
			return nil, err
		}
		if out, err := exec.CommandContext(ctx, env.Javac, "-nowarn", "-cp", env.JettyClasspath, "-d", dir, src).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("javac: %w\n%s", err, out)
		}
		// Client VM-like flags: a quick start matters more than peak speed.
		return exec.Command(env.Java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
			"-cp", env.JettyClasspath+string(os.PathListSeparator)+dir, "Shop"), nil
	case "flask":
		src, err := write("shop.py")
		if err != nil {
			return nil, err
		}
		return exec.Command(env.Python, src), nil
	case "express":
		src, err := write("shop.js")
		if err != nil {
			return nil, err
		}
		// Beside the script, node_modules is where require looks first:
		// no NODE_PATH, and no node_modules further up can stand in.
		if err := os.Symlink(env.NodeModules, filepath.Join(dir, "node_modules")); err != nil {
			return nil, err
		}
		return exec.Command(env.Node, src), nil
	}
	return nil, fmt.Errorf("no such backend (there are %v)", BackendNames)
}

// Hits returns the hits recorded since the last Clear, one a string:
// "<X-Fuzz-Id> <method> <route>", in the order the handlers ran.
func (b *Backend) Hits(ctx context.Context) ([]string, error) {
	body, err := b.hitsRequest(ctx, http.MethodGet)
	if err != nil {
		return nil, err
	}
	var hits []string
	for line := range strings.Lines(body) {
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			hits = append(hits, line)
		}
	}
	return hits, nil
}

// Clear forgets the hits recorded so far.
func (b *Backend) Clear(ctx context.Context) error {
	_, err := b.hitsRequest(ctx, http.MethodDelete)
	return err
}

func (b *Backend) hitsRequest(ctx context.Context, method string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+b.Addr+"/__hits", nil)
	if err != nil {
		return "", err
	}
	res, err := b.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: %w", b.Name, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return "", fmt.Errorf("%s: %s /__hits: %w", b.Name, method, err)
	}
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s /__hits: %s: %s", b.Name, method, res.Status, body)
	}
	return string(body), nil
}

// Close kills the backend's process group, waits for it, and removes its
// temp directory. Closing twice is fine.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.stdoutDone // before Wait, which closes the pipe
		b.cmd.Wait()   // killed: its exit status says so, and nothing more
		b.client.CloseIdleConnections()
		b.closeErr = os.RemoveAll(b.dir)
	})
	return b.closeErr
}

// tail keeps the last tailSize bytes written to it (a backend's stderr,
// for the error when it does not start), however much is written.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailSize = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailSize { // drop the front now and then, not on every write
		t.b = append(t.b[:0], t.b[len(t.b)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b[max(0, len(t.b)-tailSize):])
}
