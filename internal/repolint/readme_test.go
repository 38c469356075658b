package repolint_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
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
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestREADMESession is a newcomer's first ten minutes: the README's run
// command and then its curl session, each run by bash as the README has
// them, from the repository root. Two things differ, so that the test may
// run beside others: the server listens on a free port (WAITROOM_ADDR, read
// back from its banner; the session's localhost:8080 is replaced by it) and
// keeps its data in a fresh directory (WAITROOM_DATA_DIR, for both). The
// session must end with a 201 order for tee, the product a first start
// makes.
func TestREADMESession(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sed", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "%s on PATH (scripts/test.sh installs curl): %v", tool, err)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	run, session := readmeBlock(t, readme, "readme-test:run"), readmeBlock(t, readme, "readme-test:session")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "WAITROOM_ADDR=127.0.0.1:0", "WAITROOM_DATA_DIR="+t.TempDir())

	// The run command, in its own process group: go run and the program
	// it builds stop together.
	server := exec.Command("bash", "-c", run)
	server.Dir, server.Env = root, env
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &apptest.SyncWriter{}
	server.Stderr = logs
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-server.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-server.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	// go run may compile first: a cold build cache takes minutes on 2 cores.
	addr := make(chan string, 1)
	banner := &apptest.SyncWriter{}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(banner, sc.Text())
			if m := regexp.MustCompile(`page:\s+http://(\S+)/`).FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-addr:
	case err := <-exited:
		t.Fatalf("the run command ended: %v\nstderr:\n%s", err, logs.String())
	case <-time.After(5 * time.Minute):
		t.Fatalf("no page address in the banner after 5 minutes; stdout:\n%s\nstderr:\n%s", banner.String(), logs.String())
	}
	t.Logf("the run command serves on %s", base)

	if !strings.Contains(session, "localhost:8080") {
		t.Fatalf("the session does not talk to localhost:8080, the run command's address:\n%s", session)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", strings.ReplaceAll(session, "localhost:8080", base))
	cmd.Dir, cmd.Env = root, env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("the session failed: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	t.Logf("the session printed:\n%s", out.String())

	// It ends with the order: 201 and the tee alice bought.
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(out.String(), "\r\n", "\n")), "\n")
	var order struct {
		ID        int64  `json:"id"`
		ProductID string `json:"productId"`
		UserID    string `json:"userId"`
		Quantity  int64  `json:"quantity"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &order); err != nil {
		t.Fatalf("the session's last line is not an order: %q (%v)", lines[len(lines)-1], err)
	}
	if order.ProductID != "tee" || order.UserID != "alice" || order.Quantity != 1 || order.ID < 1 {
		t.Errorf("the session bought %+v, want one tee for alice", order)
	}
	status := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "HTTP/") {
			status = l
		}
	}
	if status != "HTTP/1.1 201 Created" {
		t.Errorf("the order's status line is %q, want HTTP/1.1 201 Created", status)
	}
	// And the server agrees.
	res, err := http.Get("http://" + base + "/api/v1/products/tee")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var tee struct{ Stock int64 }
	json.NewDecoder(res.Body).Decode(&tee)
	if tee.Stock != 999 {
		t.Errorf("tee's stock after the session: %d, want 999", tee.Stock)
	}
}

// readmeBlock returns the first ```sh block after the marker.
func readmeBlock(t *testing.T, readme []byte, marker string) string {
	t.Helper()
	_, after, ok := bytes.Cut(readme, []byte(marker))
	if !ok {
		t.Fatalf("README.md has no %q marker", marker)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(after)
	if m == nil {
		t.Fatalf("no ```sh block after %q in README.md", marker)
	}
	return string(m[1])
}

// Every setting of serve and proxy has its row in the README's settings
// tables: the flag, its environment twin.
func TestEverySettingInREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var c app.Config
	fs := flag.NewFlagSet("settings", flag.ContinueOnError)
	c.Flags(fs)
	c.GatewayFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		row := "| `--" + f.Name + "` | `" + app.EnvName(f.Name) + "` |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no settings row starting %s", row)
		}
	})
}
