package app_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/identity"
)

// TestSIGTERMDrains boots the real binary, sends SIGTERM while orders are
// in flight, and checks every one of them is answered, new work is refused
// and the process exits 0.
func TestSIGTERMDrains(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "waitroom")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/waitroom")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	const secret, admin = "drain-secret", "drain-admin"
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data-dir", dir,
		"--auth-secret", secret, "--admin-token", admin, "--order-work", "300ms",
		"--drain-delay", "5s", "--shutdown-timeout", "10s", "--log-format", "text")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &apptest.SyncWriter{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })

	// The banner names the address it listens on.
	base := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := regexp.MustCompile(`page:\s+(http://\S+)/`).FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("no address in the banner; logs:\n%s", logs.String())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	in := &apptest.Instance{T: t, Base: base, AuthSecret: secret, AdminToken: admin}
	if r := in.Do("PUT", "/admin/v1/products/drain-tee", in.AdminAuth(), map[string]any{"name": "tee", "stock": 100}); r.Status != 200 {
		t.Fatalf("product: %d %s", r.Status, r.Raw)
	}
	const buyers = 5
	tokens := make([]string, buyers)
	for i := range buyers {
		in.Do("POST", "/api/v1/queues/default/entries", in.As(fmt.Sprintf("d%d", i)), nil)
	}
	for i := range buyers {
		tokens[i] = in.WaitReady("default", fmt.Sprintf("d%d", i))
	}

	// Five orders of 300 ms each on SQLite's single writer: about 1.5 s of
	// work in flight when the signal lands. The signal waits until every
	// order has been written to its connection (however slow the machine),
	// not for a fixed time.
	statuses := make([]int, buyers)
	errs := make([]error, buyers)
	var wg, sent sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range buyers {
		wg.Add(1)
		sent.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			wrote := func() { once.Do(sent.Done) }
			defer wrote() // also when the request fails before it is written
			req, _ := http.NewRequest("POST", base+"/api/v1/orders",
				strings.NewReader(`{"productId":"drain-tee","quantity":1}`))
			req = req.WithContext(httptrace.WithClientTrace(req.Context(),
				&httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote() }}))
			req.Header.Set("Authorization", "Bearer "+identity.New([]byte(secret)).SignJWT(fmt.Sprintf("d%d", i), time.Hour))
			req.Header.Set("X-Entry-Token", tokens[i])
			res, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		}()
	}
	// And a crowd polling its status, as waiting users do, until the server
	// stops taking connections.
	pollers, polls := 20, make(chan int, 100_000)
	var pollWG sync.WaitGroup
	for i := range pollers {
		pollWG.Add(1)
		go func() {
			defer pollWG.Done()
			c := &http.Client{Transport: &http.Transport{}}
			auth := "Bearer " + identity.New([]byte(secret)).SignJWT(fmt.Sprintf("poller%d", i), time.Hour)
			for {
				req, _ := http.NewRequest("GET", base+"/api/v1/queues/default/entries/me", nil)
				req.Header.Set("Authorization", auth)
				res, err := c.Do(req)
				if err != nil {
					return // the listener is closed: polling ends
				}
				res.Body.Close()
				polls <- res.StatusCode
			}
		}()
	}
	sent.Wait()
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// During the drain delay the instance still serves but says it is not
	// ready, so a load balancer takes it out of rotation. It says so once
	// it has handled the signal, which a busy machine may delay: asked until
	// (the drain's 5 s are the bound: after them nothing answers).
	for {
		r, err := in.Send(http.DefaultClient, apptest.Call{Method: "GET", Path: "/readyz"})
		if err != nil {
			t.Errorf("/readyz during the drain: %v, want 503 draining", err)
			break
		}
		if r.Status == 503 && r.ErrorCode() == "draining" {
			break
		}
		if r.Status != 200 {
			t.Errorf("/readyz %v after SIGTERM: %d %s, want 503 draining", time.Since(signalled), r.Status, r.Raw)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	pollWG.Wait()
	close(polls)
	answered := 0
	for code := range polls {
		answered++
		if code != http.StatusOK {
			t.Errorf("a status poll during the drain was answered %d, want 200", code)
		}
	}
	if answered == 0 {
		t.Error("no status poll was answered: the load never ran")
	}
	t.Logf("%d status polls answered during the run", answered)
	for i := range buyers {
		if errs[i] != nil || statuses[i] != http.StatusCreated {
			t.Errorf("in-flight order %d: status %d, err %v; want 201", i, statuses[i], errs[i])
		}
	}

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; logs:\n%s", err, logs.String())
		}
	case <-time.After(apptest.Patience):
		t.Fatalf("still running %v after SIGTERM (its bound: 5 s drain + 10 s); logs:\n%s", apptest.Patience, logs.String())
	}
	t.Logf("exited 0, %v after SIGTERM", time.Since(signalled).Round(time.Millisecond))
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("still answering after exit")
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("no 'stopped' in the logs:\n%s", logs.String())
	}
}

// TestCloseLeaksNothing: after Close every goroutine the program started
// (HTTP server, admission loops, Redis and database pools) is gone.
// Not parallel, so the goroutines of paused parallel tests stay put.
func TestCloseLeaksNothing(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			in := apptest.Boot(t, b, nil)
			in.Do("POST", "/api/v1/queues/default/entries", in.As("leak"), nil)
			in.WaitReady("default", "leak")
			http.DefaultClient.CloseIdleConnections()
			if err := in.Main.Close(); err != nil {
				t.Fatal(err)
			}
			goleak.VerifyNone(t, ignore)
		})
	}
}
