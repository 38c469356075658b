package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// redisstore is the folder of the store whose scripts this generates.
const redisstore = "../.."

// TestGeneratedScriptsAreCurrent generates redisstore's scripts as the
// go:generate directive in its keys.go does, and fails on any difference
// from the files in scripts/generated: a script, the prelude or this
// generator changed without running go generate, or a generated file
// edited by hand.
func TestGeneratedScriptsAreCurrent(t *testing.T) {
	src, out, keys := directive(t)
	lib, err := generateAll(src, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(lib.Functions) < 15 {
		t.Fatalf("%d scripts in %s: the folder was not found", len(lib.Functions), src)
	}
	files, err := filepath.Glob(filepath.Join(out, "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) != libraryFile {
			t.Errorf("%s is not the library: run go generate ./internal/queue/redisstore", f)
		}
	}
	f := filepath.Join(out, libraryFile)
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatalf("%v: run go generate ./internal/queue/redisstore", err)
	}
	if diff := cmp.Diff(lib.Text, string(b)); diff != "" {
		t.Errorf("%s is not what the generator writes: run go generate ./internal/queue/redisstore (-generated +on disk):\n%s", f, diff)
	}
}

// TestGeneratedScriptsAreShort: every script as Redis runs it, a function
// of the library, has at most 100 lines of code (issue 40: a script that
// needs more does more than one step). The prelude is loaded once with
// the library, not run with each call, and counts apart: at most 200
// lines of code, what a reader can hold beside the scripts (issue 50).
func TestGeneratedScriptsAreShort(t *testing.T) {
	const most = 100
	src, _, keys := directive(t)
	lib, err := generateAll(src, keys)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range lib.Functions {
		if n := linesOfCode(f.Text); n > most {
			t.Errorf("%s.lua as Redis runs it has %d lines of code, more than %d", name, n, most)
		}
	}
	prelude, err := os.ReadFile(filepath.Join(src, "prelude.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if n := linesOfCode(string(prelude)); n > 2*most {
		t.Errorf("prelude.lua has %d lines of code, more than %d", n, 2*most)
	}
}

// directive reads the go:generate directive of redisstore's keys.go: the
// folders it names, from here, and the keys.
func directive(t *testing.T) (src, out string, keys []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(redisstore, "keys.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^//go:generate go run ./internal/luagen -src (\S+) -out (\S+) -keys (\S+)$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("keys.go has no go:generate directive of the form this test reads")
	}
	keys = strings.Split(m[3], ",")
	if slices.Contains(keys, "") {
		t.Fatalf("the directive's keys %q", m[3])
	}
	return filepath.Join(redisstore, m[1]), filepath.Join(redisstore, m[2]), keys
}
