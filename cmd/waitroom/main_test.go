package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/identity"
)

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestToken(t *testing.T) {
	devDir := t.TempDir()
	devSecret, err := app.DevSecret(devDir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		secret string // the secret the JWT must be signed with
		ttl    time.Duration
		// the server's --auth-audience and --auth-issuer
		audience, issuer string
	}{
		{"--auth-secret", []string{"--user", "alice", "--auth-secret", "s3"}, nil, "s3", time.Hour, "", ""},
		{"WAITROOM_AUTH_SECRET", []string{"--user", "alice"}, map[string]string{"WAITROOM_AUTH_SECRET": "from-env"}, "from-env", time.Hour, "", ""},
		{"the flag wins", []string{"--user", "alice", "--auth-secret", "flag"}, map[string]string{"WAITROOM_AUTH_SECRET": "env"}, "flag", time.Hour, "", ""},
		{"the dev secret by --data-dir", []string{"--user", "alice", "--data-dir", devDir, "--ttl", "10m"}, nil, devSecret, 10 * time.Minute, "", ""},
		{"the dev secret by WAITROOM_DATA_DIR", []string{"--user", "bob-7"}, map[string]string{"WAITROOM_DATA_DIR": devDir}, devSecret, time.Hour, "", ""},
		{"--auth-audience and --auth-issuer", []string{"--user", "carol", "--auth-secret", "s3", "--auth-audience", "waitroom", "--auth-issuer", "https://login.example"},
			nil, "s3", time.Hour, "waitroom", "https://login.example"},
		{"their environment twins", []string{"--user", "carol", "--auth-secret", "s3"},
			map[string]string{"WAITROOM_AUTH_AUDIENCE": "waitroom", "WAITROOM_AUTH_ISSUER": "https://login.example"}, "s3", time.Hour, "waitroom", "https://login.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := token(tt.args, env(tt.env), &out, &errOut); err != nil {
				t.Fatalf("token(%q): %v\n%s", tt.args, err, errOut.String())
			}
			raw := strings.TrimSuffix(out.String(), "\n")
			if strings.ContainsAny(raw, " \n") {
				t.Fatalf("output is not one JWT on one line: %q", out.String())
			}
			// The server accepts it, as the user asked for.
			req, _ := http.NewRequest("GET", "/", nil)
			req.Header.Set("Authorization", "Bearer "+raw)
			user, err := identity.NewWith([]byte(tt.secret), identity.Options{Audience: tt.audience, Issuer: tt.issuer}).User(req)
			if want := tt.args[1]; err != nil || user != want {
				t.Fatalf("the server reads user %q, %v; want %q", user, err, want)
			}
			claims := jwt.MapClaims{}
			if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err != nil {
				t.Fatal(err)
			}
			exp, _ := claims.GetExpirationTime()
			if d := time.Until(exp.Time); d > tt.ttl || d < tt.ttl-time.Minute {
				t.Errorf("expires in %v, want --ttl %v", d, tt.ttl)
			}
		})
	}
}

func TestTokenRefused(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string // in the error
	}{
		{"no user", []string{"--auth-secret", "s"}, "--user is required"},
		{"a user the server refuses", []string{"--user", "john doe", "--auth-secret", "s"}, "--user"},
		{"no ttl", []string{"--user", "a", "--auth-secret", "s", "--ttl", "0s"}, "--ttl"},
		{"no secret anywhere", []string{"--user", "a", "--data-dir", empty}, filepath.Join(empty, app.DevSecretFile)},
		{"a stray argument", []string{"--user", "a", "--auth-secret", "s", "extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := token(tt.args, env(nil), &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("token(%q) = %v, want an error naming %q", tt.args, err, tt.want)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q on an error", out.String())
			}
		})
	}
}

// TestVersionAndHelp runs the built binary: `version` and `--version` print
// what `go version -m` finds stamped in it (the module version and, in a
// git checkout built with -buildvcs, the revision); `help` names every
// command; an unknown one fails with the help.
func TestVersionAndHelp(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "waitroom")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		// -buildvcs=true refuses to build outside a repository: build
		// without and expect no revision.
		if out2, err2 := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err2 != nil {
			t.Fatalf("build: %v\n%s\n%s", err2, out, out2)
		}
	}
	stamped, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	field := func(re string) string {
		if m := regexp.MustCompile(re).FindSubmatch(stamped); m != nil {
			return string(m[1])
		}
		return ""
	}
	modVersion := field(`(?m)^\s*mod\s+github.com/waitroom/waitroom\s+(\S+)`)
	rev := field(`(?m)^\s*build\s+vcs\.revision=(\S+)`)
	if modVersion == "" {
		t.Fatalf("go version -m found no module version:\n%s", stamped)
	}
	t.Logf("stamped: version %s, revision %q", modVersion, rev)

	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("waitroom %s: %v", arg, err)
		}
		got := string(out)
		if !strings.HasPrefix(got, "waitroom "+modVersion+", ") {
			t.Errorf("waitroom %s = %q, want the module version %s first", arg, got, modVersion)
		}
		if rev != "" && !strings.Contains(got, "revision "+rev) {
			t.Errorf("waitroom %s = %q, want the revision %s", arg, got, rev)
		}
		if rev == "" && !strings.Contains(got, "revision unknown") {
			t.Errorf("waitroom %s = %q, want it to say the revision is unknown", arg, got)
		}
	}

	out, err := exec.Command(bin, "help").Output()
	if err != nil {
		t.Fatalf("waitroom help: %v", err)
	}
	for _, cmd := range []string{"serve", "proxy", "token", "sold-out", "restock", "codes", "report", "solve", "verify-draw", "version", "help"} {
		if !regexp.MustCompile(`(?m)^  ` + cmd + `\s+\S`).Match(out) {
			t.Errorf("help does not describe %s:\n%s", cmd, out)
		}
	}
	cmd := exec.Command(bin, "nope")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), `unknown command "nope"`) || !strings.Contains(stderr.String(), "Commands:") {
		t.Errorf("waitroom nope: %v, stderr %q; want a failure naming it, with the help", err, stderr.String())
	}
}

// `waitroom page check DIR`: the example brand passes, a broken template
// fails naming its file and line, and anything else is a usage error.
func TestPageCheck(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := page([]string{"check", "../../examples/page"}, &out, &errOut); err != nil {
		t.Fatalf("the example brand: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "../../examples/page: ok") || !strings.Contains(out.String(), "queues/vip/waiting.html") {
		t.Errorf("the example brand: %q", out.String())
	}

	broken := t.TempDir()
	file := filepath.Join(broken, "waiting.html")
	if err := os.WriteFile(file, []byte("<!doctype html>\n<html lang=\"{{.Lang}}\" dir=\"{{.Dir}}\">\n<title>{{if .Lang}}Shop</title>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := page([]string{"check", broken}, &out, &errOut)
	if err == nil || !regexp.MustCompile(regexp.QuoteMeta(file)+`:\d+: `).MatchString(err.Error()) {
		t.Errorf("a broken template: %v, want its file and line", err)
	}

	errOut.Reset()
	if err := page([]string{"lint", broken}, &out, &errOut); err == nil || !strings.Contains(errOut.String(), "Usage: waitroom page check DIR") {
		t.Errorf("page lint: %v, %q", err, errOut.String())
	}
}

// `waitroom sold-out` and `waitroom restock` against a running instance:
// each changes the queue's stock as the admin API does and prints it; a
// refusal is an error with the API's code and message, and nothing is
// printed.
func TestStockCommands(t *testing.T) {
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	q := apptest.UniqueID("sale")
	in.PutQueue(q, map[string]any{"paused": true})
	addr := []string{"--addr", in.Base, "--queue", q}
	withToken := map[string]string{"WAITROOM_ADMIN_TOKEN": in.AdminToken}
	listen := ":" + strings.TrimPrefix(in.Base, "http://127.0.0.1:") // as serve's --addr

	for _, tt := range []struct {
		name, command string
		args          []string
		env           map[string]string
		want          string // printed
		unitsLeft     any    // the queue's stats after it
		soldOut       bool
	}{
		{"sold out", "sold-out", addr, withToken, q + ": sold out (0 units left)\n", 0.0, true},
		{"restocked with units", "restock", append(addr, "--units", "500", "--admin-token", in.AdminToken), nil, q + ": 500 units left\n", 500.0, false},
		{"sold out again, the address as serve listens", "sold-out", []string{"--queue", q},
			map[string]string{"WAITROOM_ADMIN_TOKEN": in.AdminToken, "WAITROOM_ADDR": listen}, q + ": sold out (0 units left)\n", 0.0, true},
		// No product names the queue: the recount finds nothing to sell.
		{"restocked, units not given", "restock", addr, withToken, q + ": units left not known (admission is not capped by the stock)\n", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := stock(tt.command, tt.args, env(tt.env), &out, &errOut); err != nil {
				t.Fatalf("%s %q: %v\n%s", tt.command, tt.args, err, errOut.String())
			}
			if out.String() != tt.want {
				t.Errorf("printed %q, want %q", out.String(), tt.want)
			}
			st := in.QueueStats(q)
			if st.Body["unitsLeft"] != tt.unitsLeft || st.Body["soldOut"] != tt.soldOut {
				t.Errorf("the queue's stats: unitsLeft %v soldOut %v, want %v %v", st.Body["unitsLeft"], st.Body["soldOut"], tt.unitsLeft, tt.soldOut)
			}
		})
	}

	// Each command is logged as a settings PATCH is: the queue, the
	// request, what changed (a restock without units is recounted from the
	// products: none names this queue, so not known).
	logs := in.Logs.String()
	for _, want := range []string{
		`msg="queue stock changed" queue=` + q + ` request_id=\w+ command=sold-out unitsLeft=0 soldOut=true\n`,
		`msg="queue stock changed" queue=` + q + ` request_id=\w+ command=restock unitsLeft=500 soldOut=false\n`,
		`msg="queue stock changed" queue=` + q + ` request_id=\w+ command=restock unitsLeft=<nil> soldOut=false recounted=true\n`,
	} {
		if !regexp.MustCompile(want).MatchString(logs) {
			t.Errorf("no log line %s in:\n%s", want, logs)
		}
	}

	// The embedded default's own token, read from its data dir.
	t.Run("the token kept in --data-dir", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, app.AdminTokenFile), []byte(in.AdminToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		if err := stock("restock", append(addr, "--units", "3", "--data-dir", dir), env(nil), &out, &errOut); err != nil || out.String() != q+": 3 units left\n" {
			t.Errorf("restock with the token in --data-dir: %v, %q %s", err, out.String(), errOut.String())
		}
	})
}

func TestStockCommandsRefused(t *testing.T) {
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	q := apptest.UniqueID("sale")
	in.PutQueue(q, map[string]any{})
	token := []string{"--addr", in.Base, "--admin-token", in.AdminToken}
	empty := t.TempDir()
	for _, tt := range []struct {
		name, command string
		args          []string
		want          string // in the error
	}{
		{"no queue", "sold-out", token, "--queue is required"},
		{"a queue that does not exist", "sold-out", append(token, "--queue", "nosuchqueue"), "404 queue_not_found: queue not found"},
		{"a name no queue can have", "restock", append(token, "--queue", "bad*name"), "400 invalid_queue_name"},
		{"a wrong token", "restock", []string{"--addr", in.Base, "--admin-token", "wrong", "--queue", q}, "401 admin_unauthorized"},
		{"no token anywhere", "sold-out", []string{"--addr", in.Base, "--queue", q, "--data-dir", empty}, filepath.Join(empty, app.AdminTokenFile)},
		{"negative units", "restock", append(token, "--queue", q, "--units", "-1"), "--units"},
		{"units to sold-out", "sold-out", append(token, "--queue", q, "--units", "1"), "flag provided but not defined: -units"},
		{"an address that is none", "sold-out", append(token, "--queue", q, "--addr", "nowhere"), "--addr"},
		{"nobody there", "sold-out", []string{"--addr", "http://127.0.0.1:1", "--admin-token", "t", "--queue", q}, "connection refused"},
		{"a stray argument", "restock", append(token, "--queue", q, "500"), "unexpected arguments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := stock(tt.command, tt.args, env(nil), &out, &errOut)
			if err == nil || !strings.Contains(err.Error()+errOut.String(), tt.want) {
				t.Errorf("%s %q = %v (%s), want an error naming %q", tt.command, tt.args, err, errOut.String(), tt.want)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q on an error", out.String())
			}
		})
	}
	if st := in.QueueStats(q); st.Body["unitsLeft"] != nil || st.Body["soldOut"] != false {
		t.Errorf("refused commands changed the queue: %s", st.Raw)
	}
}
