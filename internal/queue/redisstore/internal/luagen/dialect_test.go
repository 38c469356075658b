package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "write testdata/*.golden anew from what the generator writes")

// testKeys are the golden tests' queue keys, in the order scripts get them.
var testKeys = []string{"line", "seq", "cfg", "pre"}

// TestGolden generates each testdata/<case>.lua with testdata/prelude.lua
// and compares the text with testdata/<case>.golden (go test -update
// writes those anew: read the diff before committing it), or the error
// with the one the case expects.
func TestGolden(t *testing.T) {
	prelude := mustReadFile(t, "testdata/prelude.lua")
	for _, tc := range []struct{ name, err string }{
		{"keys", ""},
		{"config", ""},
		{"noconfig", "names adm.next but never calls config()"},
		{"bothtables", "moved is named both cfg.moved and adm.moved"},
		{"twoconfigs", "config({'rate'}) called, then config({'batch'})"},
		{"unknownkey", "K.nope is none of the queue's keys (line, seq, cfg, pre)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := generate(prelude, []source{{tc.name, mustReadFile(t, "testdata/"+tc.name+".lua")}}, testKeys)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			golden := "testdata/" + tc.name + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got.Text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(mustReadFile(t, golden), got.Text); diff != "" {
				t.Errorf("%s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestLinesOfCode: blank lines and comments do not count, a line of code
// with a comment after it does.
func TestLinesOfCode(t *testing.T) {
	text := "-- a comment\n\nlocal a = 1 -- and one after code\n  -- indented\n  return a\n"
	if got := linesOfCode(text); got != 2 {
		t.Errorf("linesOfCode = %d, want 2", got)
	}
}

func mustReadFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadsOnly: a function is no-writes only when every call names a
// command that writes nothing, as a string; a write in a comment does not count.
func TestReadsOnly(t *testing.T) {
	for code, want := range map[string]bool{
		"local n = redis.call('ZCARD', K.line) -- redis.call('DEL', K.line)": true,
		"redis.call('HMGET', K.cfg, 'rate')\nreturn redis.pcall('time')":     true,
		"redis.call('ZCARD', K.line)\nredis.call('HSET', K.cfg, 'a', 1)":     false,
		"local cmd = 'GET'\nreturn redis.call(cmd, K.seq)":                   false,
	} {
		if got := readsOnly(code); got != want {
			t.Errorf("readsOnly(%q) = %v, want %v", code, got, want)
		}
	}
}
