package repolint_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestGeneratedGoClient generates a Go client of openapi.yaml with
// oapi-codegen, at the version examples/go-client/go.mod pins (a module of
// its own, so that the generator stays out of waitroom's dependencies),
// builds it, and runs examples/go-client, which uses it to walk the
// README's session against a server booted here: enter, wait with
// waitSeconds, order.
func TestGeneratedGoClient(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "go on PATH: %v", err)
	}
	spec, err := filepath.Abs("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := apptest.CopyTree(t, "../../examples/go-client")
	// A hang guard, not a budget: a cold -race build of the generator and
	// the client took over 5 minutes on a fresh clone at load 40.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	gocmd := func(in string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, goCmd, args...)
		cmd.Dir = filepath.Join(dir, in)
		// -mod=readonly added to the GOFLAGS the test runs with, not in
		// their place: scripts/test.sh's -trimpath is what lets this build
		// share the standard library the test binaries' -race build
		// compiled (without it, a cold cache compiled it again: 40
		// CPU-seconds instead of 4).
		cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly"), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// As `go generate` would, but on the spec this test holds.
	gocmd("waitroomapi", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", spec)
	gocmd(".", "vet", "./...")
	bin := filepath.Join(dir, "go-client")
	gocmd(".", append(append([]string{"build"}, apptest.GoBuildFlags...), "-o", bin, ".")...)

	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	sale := apptest.Shop{Instance: in}
	// One user a second: entering answers WAITING, and the next tick, up to
	// a second later, lets the user in while the held status poll waits.
	q, p := sale.NewSale(5, map[string]any{"ratePerSecond": 1, "batchSize": 1, "intervalMs": 1000})
	user := apptest.UniqueID("generated")
	run := exec.CommandContext(ctx, bin, "-base", in.Base, "-queue", q, "-product", p, "-timeout", "1m")
	run.Env = append(os.Environ(), "WAITROOM_JWT="+in.JWT(user))
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("go-client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	// Near the front the status poll is held until READY: one WAITING
	// answer, not a poll loop.
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "WAITING: number 1 of 1") ||
		!strings.HasPrefix(lines[1], "READY: ") || !strings.HasPrefix(lines[2], "ORDERED: order ") ||
		!strings.HasSuffix(lines[2], "1 × "+p+" for "+user) {
		t.Fatalf("go-client's session:\n%s", out)
	}
	if left := sale.Stock(p); left != 4 {
		t.Errorf("stock after the generated client's order: %d, want 4", left)
	}
	t.Logf("examples/go-client on the generated client:\n%s", out)
}
