package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queuefile"
	"github.com/waitroom/waitroom/internal/testenv"
)

// exampleQueues is the repository's example queues file.
const exampleQueues = "../../deploy/queues.yaml"

// --queues tried as an operator runs it, on the real binary, embedded and
// on Redis: the repository's example file gives its queues its settings
// at start (read back through the admin API); an edit of the file and
// SIGHUP change them without a restart (the process, and a user's place,
// stay); a change through the admin API to a queue the file names is
// logged as drift and the next SIGHUP puts the file's settings back; a
// bad file on SIGHUP is logged naming the file, the line and the setting,
// and changes nothing; queues the file does not name are left alone until
// it says prune: true, and then only they go (never the default queue).
func TestQueuesFileOnTheBinary(t *testing.T) {
	bin := buildWaitroom(t)
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "queues.yaml")
			example, err := os.ReadFile(exampleQueues)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, file, string(example))
			args := []string{"--queues", file}
			if b.Redis {
				args = append(args, "--redis-url", testenv.RedisURL(t), "--redis-prefix", fmt.Sprintf("wrqf%d:", rand.Int64()))
			}
			p := startBinary(t, bin, args...)
			in := p.client(t)

			// At start: every queue of the example, with its settings.
			wantSettings(t, in, file)
			sale := queueSettings(in, "spring-sale")
			if sale["ratePerSecond"] != 200.0 || sale["maxActiveTokens"] != 2000.0 || sale["rateDerivation"] != "set by the queues file" {
				t.Errorf("spring-sale at start: %v", sale)
			}
			if m, _ := sale["message"].(map[string]any); m["ja"] != "春のセール：500足、お一人様一足まで。" {
				t.Errorf("spring-sale's message: %v", sale["message"])
			}
			if queueSettings(in, "backstage")["paused"] != true {
				t.Error("backstage is not paused")
			}
			// Someone in line, and a queue the file does not name.
			if r := in.Do("POST", "/api/v1/queues/backstage/entries", in.As("alice"), nil); r.Status != 200 || r.Num("position") != 1 {
				t.Fatalf("alice entering backstage: %d %s", r.Status, r.Raw)
			}
			in.PutQueue("adhoc", map[string]any{"ratePerSecond": 5})

			// An edit and SIGHUP: the file's new settings, same process.
			edited := strings.Replace(string(example), "ratePerSecond: 200", "ratePerSecond: 300", 1)
			edited = strings.Replace(edited, "    capacity: 500000\n", "", 1) // left out: the default again
			writeFile(t, file, edited)
			p.hangUp(t, 1)
			wantSettings(t, in, file)
			if got := queueSettings(in, "spring-sale"); got["ratePerSecond"] != 300.0 || got["capacity"] != float64(queue.DefaultConfig().Capacity) {
				t.Errorf("spring-sale after SIGHUP: rate %v capacity %v, want 300 and the default", got["ratePerSecond"], got["capacity"])
			}
			if r := in.Do("GET", "/api/v1/queues/backstage/entries/me", in.As("alice"), nil); r.Status != 200 || r.Num("position") != 1 {
				t.Errorf("alice after SIGHUP: %d %s, want still first in line", r.Status, r.Raw)
			}
			if r := in.Do("GET", "/admin/v1/queues/adhoc", in.AdminAuth(), nil); r.Status != 200 {
				t.Errorf("adhoc after SIGHUP without prune: %d, want left alone", r.Status)
			}
			p.wantLog(t, `msg="queue config set from the queues file".*queue=spring-sale.*ratePerSecond="200 → 300"`)

			// Drift: logged when made, undone by the next SIGHUP. The queue
			// the file does not name is changed first: its lines are in
			// the log by the time the drift of members is.
			in.PatchQueue("adhoc", map[string]any{"ratePerSecond": 6})
			in.PatchQueue("members", map[string]any{"minRatePerSecond": 7, "paused": true})
			p.wantLog(t, `level=WARN msg="queue config drifts from the queues file.*queue=members .*settings="\[paused minRatePerSecond\]" paused="true \(file: false\)" minRatePerSecond="7 \(file: 5\)"`)
			if regexp.MustCompile(`drifts from the queues file[^\n]*queue=adhoc`).MatchString(p.logs.String()) {
				t.Error("a queue the file does not name was logged as drift")
			}
			p.hangUp(t, 2)
			wantSettings(t, in, file)

			// A bad file on SIGHUP: logged, nothing changed.
			bad := strings.Replace(edited, "    batchSize: 40\n", "    batchSize: 0\n", 1)
			line := strings.Count(bad[:strings.Index(bad, "batchSize: 0")], "\n") + 1
			writeFile(t, file, strings.Replace(bad, "ratePerSecond: 300", "ratePerSecond: 400", 1))
			p.hangUp(t, 3)
			p.wantLog(t, regexp.QuoteMeta(fmt.Sprintf(`%s:%d: queue \"spring-sale\": invalid queue config: batchSize must be 1..10000, got 0`, file, line)))
			if got := queueSettings(in, "spring-sale"); got["ratePerSecond"] != 300.0 || got["batchSize"] != 40.0 {
				t.Errorf("after a bad file: rate %v batch %v, want 300 and 40 as before", got["ratePerSecond"], got["batchSize"])
			}

			// prune: true removes what the file does not name, and only that.
			writeFile(t, file, strings.Replace(edited, "prune: false", "prune: true", 1))
			p.hangUp(t, 4)
			if r := in.Do("GET", "/admin/v1/queues/adhoc", in.AdminAuth(), nil); r.Status != 404 {
				t.Errorf("adhoc after prune: %d, want 404", r.Status)
			}
			wantSettings(t, in, file)
			p.wantLog(t, `level=WARN msg="queue removed: the queues file does not name it and says prune: true".*queue=adhoc`)
			p.stop(t)
		})
	}
}

// A queues file that cannot work stops the start, naming the file, the
// line and the setting.
func TestQueuesFileRefusedAtStart(t *testing.T) {
	bin := buildWaitroom(t)
	dir := t.TempDir()
	tests := []struct{ name, yaml, want string }{
		{"unknown setting", "queues:\n  sale:\n    ratePerSecond: 10\n    rate: 5\n", `:4: queue "sale": unknown setting "rate"`},
		{"out of range", "queues:\n  sale:\n    tokenTtlSeconds: 0\n", `:3: queue "sale": invalid queue config: tokenTtlSeconds must be 1..86400, got 0`},
		{"no such file", "", "--queues: open "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if tt.yaml != "" {
				writeFile(t, file, tt.yaml)
			}
			cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--queues", file)
			out, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
				t.Fatalf("started (exit %d, %v):\n%s", code, err, out)
			}
			for _, want := range []string{"waitroom: ", file, tt.want} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output does not say %q:\n%s", want, out)
				}
			}
		})
	}
}

// Through the program in process: `proxy` takes --queues as serve does,
// and ReloadQueues (what SIGHUP calls) without --queues is an error that
// changes nothing.
func TestQueuesFileProxyAndNoFile(t *testing.T) {
	cfg, err := app.ParseProxy([]string{"--upstream", "http://127.0.0.1:9", "--protect", "POST /buy queue=spring-sale", "--queues", exampleQueues},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QueuesFile != exampleQueues {
		t.Fatalf("proxy --queues: %q", cfg.QueuesFile)
	}
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) {
		c.Proxy, c.Upstream, c.Protect, c.QueuesFile, c.Prefix = cfg.Proxy, cfg.Upstream, cfg.Protect, cfg.QueuesFile, cfg.Prefix
	})
	if r := in.Do("GET", cfg.Prefix+"/admin/v1/queues/spring-sale", in.AdminAuth(), nil); r.Status != 200 || r.Body["ratePerSecond"] != 200.0 {
		t.Errorf("proxy: spring-sale %d %s", r.Status, r.Raw)
	}
	plain := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	if err := plain.Main.ReloadQueues(t.Context()); err == nil {
		t.Error("ReloadQueues without --queues: no error")
	}
}

// The stock a queues file starts a sale with (unitsLeft), in gateway
// mode, where no order API counts it: applied at start and on SIGHUP only
// while the queue's stock is not known, so a reload mid-sale never puts
// back what was sold, nor reopens a sold-out queue.
func TestQueuesFileUnitsLeft(t *testing.T) {
	cfg, err := app.ParseProxy([]string{"--upstream", "http://127.0.0.1:9", "--protect", "POST /buy queue=spring-sale", "--queues", exampleQueues},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) {
		c.Proxy, c.Upstream, c.Protect, c.QueuesFile, c.Prefix = cfg.Proxy, cfg.Upstream, cfg.Protect, cfg.QueuesFile, cfg.Prefix
	})
	admin := cfg.Prefix + "/admin/v1/queues/spring-sale"
	stock := func(when string, want any) {
		t.Helper()
		if r := in.Do("GET", admin, in.AdminAuth(), nil); r.Status != 200 || r.Body["unitsLeft"] != want {
			t.Errorf("%s: %d unitsLeft %v, want %v", when, r.Status, r.Body["unitsLeft"], want)
		}
	}
	reload := func() {
		t.Helper()
		if err := in.Main.ReloadQueues(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	stock("at start", 500.0)
	for _, step := range []struct {
		name, path string
		body       any
		want       any // units left after the command and after a reload
	}{
		{"counted down", "/restock", map[string]any{"unitsLeft": 3}, 3.0},
		{"sold out", "/sold-out", nil, 0.0},
		{"restocked by hand", "/restock", map[string]any{"unitsLeft": 900}, 900.0},
	} {
		if r := in.Do("POST", admin+step.path, in.AdminAuth(), step.body); r.Status != 200 {
			t.Fatalf("%s: %d %s", step.name, r.Status, r.Raw)
		}
		reload()
		stock(step.name+", then SIGHUP", step.want)
	}
	// Not known again (a restock without a count, in gateway mode): the
	// file's stock is the one to start from.
	if r := in.Do("POST", admin+"/restock", in.AdminAuth(), nil); r.Status != 200 || r.Body["unitsLeft"] != nil {
		t.Fatalf("restock without a count: %d %s", r.Status, r.Raw)
	}
	reload()
	stock("not known, then SIGHUP", 500.0)
}

// wantSettings: every queue of file has, through the admin API, every
// setting as the file and the defaults for new queues say.
func wantSettings(t *testing.T, in *apptest.Instance, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := app.Parse(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	base, err := cfg.QueueConfig()
	if err != nil {
		t.Fatal(err)
	}
	f, err := queuefile.Parse(file, raw, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range f.Queues {
		got := queueSettings(in, q.Name)
		for _, s := range queue.Settings {
			want, _ := json.Marshal(s.Value(q.Config))
			have, _ := json.Marshal(got[s.Name])
			if string(want) != string(have) {
				t.Errorf("queue %s: %s is %s, want %s as the file says", q.Name, s.Name, have, want)
			}
		}
	}
}

// queueSettings reads a queue through the admin API.
func queueSettings(in *apptest.Instance, name string) map[string]any {
	in.T.Helper()
	r := in.Do("GET", "/admin/v1/queues/"+name, in.AdminAuth(), nil)
	if r.Status != 200 {
		in.T.Fatalf("GET queue %s: %d %s", name, r.Status, r.Raw)
	}
	return r.Body
}

// buildWaitroom builds the program as an operator runs it.
func buildWaitroom(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "waitroom")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/waitroom").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// binaryProcess is the program running as a process of its own.
type binaryProcess struct {
	cmd                 *exec.Cmd
	base, secret, admin string
	logs                *apptest.SyncWriter
}

// startBinary runs `waitroom serve` with args on a free port and returns
// once it serves.
func startBinary(t *testing.T, bin string, args ...string) *binaryProcess {
	t.Helper()
	p := &binaryProcess{secret: fmt.Sprintf("secret-%032x", rand.Uint64()), admin: fmt.Sprintf("admin-%032x", rand.Uint64()),
		logs: &apptest.SyncWriter{}}
	p.cmd = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--auth-secret", p.secret, "--admin-token", p.admin, "--log-format", "text", "--drain-delay", "0"}, args...)...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = io.Discard
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	started := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(p.logs, sc.Text())
			if m := regexp.MustCompile(`msg="waitroom started" addr=(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				started <- m[1]
			}
		}
		close(started)
	}()
	select {
	case addr, ok := <-started:
		if !ok {
			p.cmd.Wait()
			t.Fatalf("the program ended before serving:\n%s", p.logs.String())
		}
		p.base = "http://" + addr
	case <-time.After(60 * time.Second):
		t.Fatalf("not serving after 60 s:\n%s", p.logs.String())
	}
	return p
}

func (p *binaryProcess) client(t *testing.T) *apptest.Instance {
	return &apptest.Instance{T: t, Base: p.base, AuthSecret: p.secret, AdminToken: p.admin, Logs: p.logs}
}

// hangUp sends SIGHUP and waits for the n-th answer to one in the log
// (applied, or not).
func (p *binaryProcess) hangUp(t *testing.T, n int) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	answered := regexp.MustCompile(`msg="the queues file (was applied|was not applied|was applied in part)`)
	deadline := time.Now().Add(apptest.Patience)
	for len(answered.FindAllString(p.logs.String(), -1)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to SIGHUP %d within %v:\n%s", n, apptest.Patience, p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantLog waits for a line of the log to match pattern (the process's
// log reaches the test a moment after its answers do).
func (p *binaryProcess) wantLog(t *testing.T, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	for deadline := time.Now().Add(apptest.Patience); !re.MatchString(p.logs.String()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("no log line matches %s within %v:\n%s", pattern, apptest.Patience, p.logs.String())
			return
		}
	}
}

// stop ends the process with SIGTERM, as an orchestrator does.
func (p *binaryProcess) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("SIGTERM: %v\n%s", err, p.logs.String())
	}
}
