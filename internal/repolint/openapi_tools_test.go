package repolint_test

// openapi.yaml as the tools people point at an OpenAPI file take it: the
// linter most of them run, and TypeScript types generated from it and
// compiled. The Go client oapi-codegen generates is built and driven against
// a running server beside this (apiclient_test.go, TestGeneratedGoClient).
// The versions are tools/npm's, which scripts/test.sh installs. The tools
// run from the repository's root, where their settings are (redocly.yaml,
// .redocly.lint-ignore.yaml).

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/waitroom/waitroom/internal/testenv"
)

// root is the repository's root, seen from this package's directory.
const root = "../.."

// TestOpenAPILint: `redocly lint openapi.yaml` with the recommended rules
// (redocly.yaml, .redocly.lint-ignore.yaml) finds nothing.
func TestOpenAPILint(t *testing.T) {
	t.Parallel()
	lint := exec.Command(testenv.NodeTool(t, "redocly"), "lint", "openapi.yaml", "--format=json")
	lint.Dir = root
	out, err := lint.Output()
	var report struct {
		Totals struct {
			Errors, Warnings, Ignored int
		}
		Version  string
		Problems []struct {
			RuleID   string
			Severity string
			Message  string
			Location []struct {
				Pointer string
			}
		}
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("redocly lint: %v (exit: %v): %s", jerr, err, out)
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors != 0 || report.Totals.Warnings != 0 || err != nil {
		t.Fatalf("redocly lint %s: %d errors, %d warnings (exit: %v)", report.Version, report.Totals.Errors, report.Totals.Warnings, err)
	}
	t.Logf("redocly lint %s: 0 errors, 0 warnings, %d ignored (.redocly.lint-ignore.yaml)", report.Version, report.Totals.Ignored)
}

// TestOpenAPITypeScript: openapi-typescript generates types from
// openapi.yaml, and tsc --noEmit compiles them together with
// examples/typescript/waiting.ts, which uses them as a shop's code would.
func TestOpenAPITypeScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"waiting.ts", "tsconfig.json"} {
		b, err := os.ReadFile(filepath.Join(root, "examples", "typescript", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	types := filepath.Join(dir, "waitroom.d.ts")
	generate := exec.Command(testenv.NodeTool(t, "openapi-typescript"), "openapi.yaml", "-o", types)
	generate.Dir = root
	if out, err := generate.CombinedOutput(); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	if out, err := exec.Command(testenv.NodeTool(t, "tsc"), "-p", dir).CombinedOutput(); err != nil {
		t.Fatalf("tsc --noEmit: %v\n%s", err, out)
	}
}
