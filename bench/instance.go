package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/app"
)

// InstanceEnv turns the bench binary (or the bench test binary) into one
// waitroom instance of its own process when set: its value is the JSON of
// instanceConfig. The million section runs the servers it loads this way,
// so the server's CPU time and memory (from /proc) are its own and not the
// load generator's, and three instances are three processes.
const InstanceEnv = "WAITROOM_BENCH_INSTANCE"

// instanceConfig is what an instance process is told: the shared Redis,
// database, key prefix and secrets, so several instances serve one line.
type instanceConfig struct {
	RedisURL, DatabaseURL, KeyPrefix, AuthSecret, AdminToken string
	// Args are `waitroom serve` flags, read as the command reads them (the
	// bots section's --suspect-ranges, --trusted-proxies...); with
	// RedisURL and DatabaseURL empty the instance keeps its line and its
	// orders in the --data-dir they name.
	Args []string
}

// newInstanceConfig is a line of its own on the test servers: a fresh key
// prefix and fresh secrets.
func newInstanceConfig(o Options) instanceConfig {
	return instanceConfig{RedisURL: o.RedisURL, DatabaseURL: o.DatabaseURL,
		KeyPrefix: fmt.Sprintf("wrbench%d:", rand.Int64()), AuthSecret: fmt.Sprintf("bench-secret-%032x", rand.Uint64()),
		AdminToken: fmt.Sprintf("bench-admin-%032x", rand.Uint64())} // ≥ 32 bytes on Redis
}

// instanceAddrs is the one line an instance prints on stdout once serving.
type instanceAddrs struct {
	// Addr serves the API; Debug serves /debug/pprof/ and /bench/heap on
	// a loopback port of its own (not part of waitroom).
	Addr, Debug string
}

// HeapReport is an instance's Go heap after a full collection (when asked
// for: a collection of a big heap takes a while) and its status answers.
type HeapReport struct {
	HeapAlloc uint64
	// SnapshotHits and SnapshotMisses are the status answers from the
	// line's snapshot and from the store since the start.
	SnapshotHits, SnapshotMisses uint64
	// Requests counts the HTTP requests the instance has answered, by
	// route pattern, from its own waitroom_http_request_duration_seconds:
	// what reached it, whatever stood in front.
	Requests map[string]uint64
}

// ServeInstance is the process InstanceEnv asks for: it serves until its
// stdin closes (the parent ended it or died), then shuts down. It returns
// the exit code.
func ServeInstance() int {
	var cfg instanceConfig
	if err := json.Unmarshal([]byte(os.Getenv(InstanceEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench instance:", err)
		return 2
	}
	ctx := context.Background()
	m, err := bootArgs(ctx, cfg.Args, Options{RedisURL: cfg.RedisURL, DatabaseURL: cfg.DatabaseURL}, &serverLog{tee: os.Stderr}, func(c *app.Config) {
		c.KeyPrefix, c.AuthSecret, c.AdminToken = cfg.KeyPrefix, cfg.AuthSecret, cfg.AdminToken
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench instance:", err)
		return 1
	}
	defer m.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench instance:", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/bench/heap", func(w http.ResponseWriter, r *http.Request) {
		var h HeapReport
		if r.URL.Query().Get("gc") == "1" {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			h.HeapAlloc = ms.HeapAlloc
		}
		h.SnapshotHits, h.SnapshotMisses = m.Queue.SnapshotAnswers()
		h.Requests = requestsByRoute(m.Registry)
		json.NewEncoder(w).Encode(h)
	})
	debug := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go debug.Serve(ln)
	defer debug.Close()
	b, _ := json.Marshal(instanceAddrs{Addr: m.Addr(), Debug: ln.Addr().String()})
	fmt.Println(string(b))
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
	return 0
}

// instance is a waitroom process started by startInstance.
type instance struct {
	instanceAddrs
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startInstance starts one instance process on the config's line and waits
// until it serves.
func startInstance(ctx context.Context, cfg instanceConfig, log io.Writer) (*instance, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), InstanceEnv+"="+string(raw))
	if log == nil {
		log = io.Discard
	}
	cmd.Stderr = log
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	in := &instance{cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &in.instanceAddrs); err != nil || in.Addr == "" {
			in.stop()
			return nil, fmt.Errorf("instance did not start (said %q)", strings.TrimSpace(l))
		}
	case <-ctx.Done():
		in.stop()
		return nil, ctx.Err()
	case <-time.After(time.Minute):
		in.stop()
		return nil, errors.New("instance did not start within a minute")
	}
	return in, nil
}

// stop closes the instance's stdin (it shuts down) and waits for it.
func (in *instance) stop() error {
	in.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- in.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		in.cmd.Process.Kill() // our own child, by its pid
		return <-done
	}
}

func (in *instance) pid() int { return in.cmd.Process.Pid }

// heap asks the instance for its status answers so far, and with gc its
// heap after a full collection.
func (in *instance) heap(ctx context.Context, gc bool) (HeapReport, error) {
	var h HeapReport
	url := "http://" + in.Debug + "/bench/heap"
	if gc {
		url += "?gc=1"
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return h, err
	}
	defer res.Body.Close()
	return h, json.NewDecoder(res.Body).Decode(&h)
}

// profile fetches a CPU profile of the instance over the next d into path.
func (in *instance) profile(ctx context.Context, d time.Duration, path string) error {
	req, _ := http.NewRequestWithContext(ctx, "GET",
		fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", in.Debug, int(d.Seconds())), nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("profile: %s", res.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// procCPU is a process's CPU time so far (user + system), from
// /proc/<pid>/stat; pid 0 is this process.
func procCPU(pid int) (time.Duration, error) {
	user, sys, err := procTimes(pid)
	return user + sys, err
}

// procTimes is a process's CPU time in user space and in the kernel (pid
// 0: this process).
func procTimes(pid int) (user, sys time.Duration, err error) {
	p := "self"
	if pid != 0 {
		p = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name may hold spaces; the fields after it do not.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0, 0, fmt.Errorf("unexpected /proc/%s/stat", p)
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("unexpected /proc/%s/stat", p)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14 of stat
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("unexpected /proc/%s/stat", p)
	}
	return time.Duration(utime) * time.Second / clockTicks, time.Duration(stime) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// procRSS is a process's resident memory in bytes, from /proc/<pid>/status.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// requestsByRoute sums the instance's request histogram's counts by route.
func requestsByRoute(reg *prometheus.Registry) map[string]uint64 {
	out := map[string]uint64{}
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() != "waitroom_http_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" {
					out[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out
}
