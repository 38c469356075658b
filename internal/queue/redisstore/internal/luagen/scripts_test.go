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
	scripts, err := generateAll(src, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) < 15 {
		t.Fatalf("%d scripts in %s: the folder was not found", len(scripts), src)
	}
	files, err := filepath.Glob(filepath.Join(out, "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		if _, ok := scripts[name]; !ok {
			t.Errorf("%s is generated from no script: run go generate ./internal/queue/redisstore", f)
		}
	}
	for name, s := range scripts {
		f := filepath.Join(out, name+".lua")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("%v: run go generate ./internal/queue/redisstore", err)
			continue
		}
		if diff := cmp.Diff(s.Text, string(b)); diff != "" {
			t.Errorf("%s is not what the generator writes: run go generate ./internal/queue/redisstore (-generated +on disk):\n%s", f, diff)
		}
	}
}

// TestGeneratedScriptsAreShort: every script as Redis runs it, prelude
// included, has at most 100 lines of code (issue 40): a script that needs
// more does more than one step, or takes more of the prelude than it
// should.
func TestGeneratedScriptsAreShort(t *testing.T) {
	const most = 100
	src, _, keys := directive(t)
	scripts, err := generateAll(src, keys)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range scripts {
		if n := linesOfCode(s.Text); n > most {
			t.Errorf("%s.lua as Redis runs it has %d lines of code, more than %d", name, n, most)
		}
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
