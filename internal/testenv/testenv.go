// Package testenv tells tests where the real servers are. The project's test
// command (scripts/test.sh) starts throwaway Redis and PostgreSQL servers and
// exports their addresses; under CI (CI=true) a missing server fails the test
// instead of skipping it, so a green run always means the real parts ran.
package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

const (
	// RedisURLVar names the env var holding a throwaway Redis for tests.
	RedisURLVar = "WAITROOM_TEST_REDIS_URL"
	// DatabaseURLVar names the env var holding a throwaway PostgreSQL for tests.
	DatabaseURLVar = "WAITROOM_TEST_DATABASE_URL"
)

// RedisURL returns the test Redis URL, or skips the test outside CI and fails
// it under CI when none is configured.
func RedisURL(t testing.TB) string {
	t.Helper()
	return lookup(t, RedisURLVar, "Redis")
}

// RedisClient returns a client to the test Redis (RedisURL's rule when there
// is none), closed when the test ends; a Redis that does not answer fails
// the test.
func RedisClient(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("test Redis: %v", err)
	}
	return rdb
}

// DatabaseURL returns the test PostgreSQL URL, with the same rule as RedisURL.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	return lookup(t, DatabaseURLVar, "PostgreSQL")
}

func lookup(t testing.TB, name, what string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	Missing(t, "a real %s: %s is not set (run scripts/test.sh)", what, name)
	return ""
}

// Missing stops a test that lacks a real part it needs: under CI it fails
// (a green run must mean the real parts ran), elsewhere it skips. Every
// test that needs Redis, PostgreSQL or Chromium goes through here; no test
// skips on its own.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("required under CI: "+format, args...)
	}
	t.Skipf("no "+format, args...)
}

// ChromiumVar names the env var holding the browser for the page tests.
const ChromiumVar = "WAITROOM_TEST_CHROMIUM"

// Chromium returns the path of the browser the page tests drive
// ($WAITROOM_TEST_CHROMIUM, else /usr/bin/chromium), with Missing's rule
// when there is none.
func Chromium(t testing.TB) string {
	t.Helper()
	path := os.Getenv(ChromiumVar)
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		Missing(t, "chromium at %s (scripts/test.sh installs it): %v", path, err)
	}
	return path
}

// Promtool returns the path of Prometheus's promtool (on PATH; Debian's
// prometheus package has it, and scripts/test.sh installs it), with
// Missing's rule when there is none.
func Promtool(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		Missing(t, "promtool on PATH (scripts/test.sh installs Debian's prometheus): %v", err)
	}
	return path
}

// Nginx returns the path of nginx (Debian's /usr/sbin/nginx, else on
// PATH; scripts/test.sh installs it), with Missing's rule when there is
// none.
func Nginx(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"/usr/sbin/nginx", "nginx"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	Missing(t, "nginx (scripts/test.sh installs Debian's)")
	return ""
}

// InCI reports whether the tests run under CI.
func InCI() bool { return os.Getenv("CI") == "true" }

// Fonts returns the families of the installed fonts that cover a
// language (fontconfig's `fc-list :lang=LANG`: ko, ja, zh-cn, zh-tw, ar),
// with Missing's rule when there are none: without one the page in that
// language renders as empty boxes. scripts/test.sh installs them.
func Fonts(t testing.TB, lang string) map[string]bool {
	t.Helper()
	out, err := exec.Command("fc-list", ":lang="+lang, "family").Output()
	families := map[string]bool{}
	for line := range strings.SplitSeq(string(out), "\n") {
		// One font per line; a font with several names lists them all.
		for name := range strings.SplitSeq(line, ",") {
			if name = strings.TrimSpace(name); name != "" {
				families[name] = true
			}
		}
	}
	if len(families) == 0 {
		Missing(t, "font covering %s (fc-list :lang=%s; scripts/test.sh installs one): %v", lang, lang, err)
	}
	return families
}

// Node returns the path of node (Node.js, on PATH; scripts/test.sh
// installs it with npm), with Missing's rule when there is none: the
// page's JavaScript runs through it on the cases the server's Go is held
// to.
func Node(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("node")
	if err != nil {
		Missing(t, "node on PATH (scripts/test.sh installs it): %v", err)
	}
	return path
}

// NodeModulesVar names the env var holding the node_modules directory of
// the npm tools tools/npm pins (scripts/test.sh installs them with npm ci).
const NodeModulesVar = "WAITROOM_TEST_NODE_MODULES"

// NodeModules returns that directory, with Missing's rule when it is not
// set or lacks the tools.
func NodeModules(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(NodeModulesVar)
	if dir == "" {
		Missing(t, "npm tools: %s is not set (run scripts/test.sh)", NodeModulesVar)
	}
	if _, err := os.Stat(filepath.Join(dir, ".bin")); err != nil {
		Missing(t, "npm tools in %s (scripts/test.sh installs them): %v", dir, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		Missing(t, "node on PATH (scripts/test.sh installs it): %v", err)
	}
	return dir
}

// NodeTool returns the path of an npm tool's command (redocly, tsc, …).
func NodeTool(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(NodeModules(t), ".bin", name)
}

// Python returns Debian's python3 (not a pyenv's first on PATH) with the
// modules named importable, with Missing's rule otherwise
// (scripts/test.sh installs python3-jwt and python3-cryptography).
func Python(t testing.TB, modules ...string) string {
	t.Helper()
	const python = "/usr/bin/python3"
	check := "pass"
	if len(modules) > 0 {
		check = "import " + strings.Join(modules, ", ")
	}
	if out, err := exec.Command(python, "-c", check).CombinedOutput(); err != nil {
		Missing(t, "%s with %v (scripts/test.sh installs them): %v: %s", python, modules, err, out)
	}
	return python
}

// KoreanFonts is Fonts for Korean.
func KoreanFonts(t testing.TB) map[string]bool { t.Helper(); return Fonts(t, "ko") }

// Axe returns axe-core's script (the pages' accessibility audit), from the
// npm tools tools/npm pins, with Missing's rule when it is not there.
func Axe(t testing.TB) string {
	t.Helper()
	path := filepath.Join(NodeModules(t), "axe-core", "axe.min.js")
	b, err := os.ReadFile(path)
	if err != nil {
		Missing(t, "axe-core at %s (tools/npm; scripts/test.sh installs it): %v", path, err)
	}
	return string(b)
}
