// Package testenv tells tests where the real servers are. The project's test
// command (scripts/test.sh) starts throwaway Redis and PostgreSQL servers and
// exports their addresses; under CI (CI=true) a missing server fails the test
// instead of skipping it, so a green run always means the real parts ran.
package testenv

import (
	"os"
	"testing"
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
	if InCI() {
		t.Fatalf("%s is required under CI: %s is not set (run scripts/test.sh)", what, name)
	}
	t.Skipf("no real %s: set %s or run scripts/test.sh", what, name)
	return ""
}

// InCI reports whether the tests run under CI.
func InCI() bool { return os.Getenv("CI") == "true" }
