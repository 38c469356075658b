// Command luagen writes redisstore's scripts as Redis runs them: the
// scripts/<name>.lua, written in the scripts' dialect, become one library
// of Redis functions, scripts/generated/waitroom.lua, the prelude once and
// each script a function (dialect.go says what it rewrites;
// scripts/README.md, for the scripts' readers, says it too). Run by
// go generate ./internal/queue/redisstore; its test fails when the
// generated file differs from what it would write.
//
//	go run ./internal/luagen -src scripts -out scripts/generated -keys line,seq,cfg,...
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	src := flag.String("src", "scripts", "the folder of the scripts in the dialect, with prelude.lua")
	out := flag.String("out", "scripts/generated", "the folder to write them in, as Redis runs them")
	keys := flag.String("keys", "", "the queue's keys, comma-separated, in the order scripts get them (keys.go's)")
	flag.Parse()
	if err := write(*src, *out, strings.Split(*keys, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "luagen:", err)
		os.Exit(1)
	}
}

// libraryFile is the generated library's name in the out folder.
const libraryFile = "waitroom.lua"

// generateAll is the library of every script of src as Redis runs it,
// given the queue's keys.
func generateAll(src string, keys []string) (Library, error) {
	prelude, err := os.ReadFile(filepath.Join(src, "prelude.lua"))
	if err != nil {
		return Library{}, err
	}
	files, err := filepath.Glob(filepath.Join(src, "*.lua"))
	if err != nil {
		return Library{}, err
	}
	var scripts []source
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		if name == "prelude" {
			continue
		}
		body, err := os.ReadFile(f)
		if err != nil {
			return Library{}, err
		}
		scripts = append(scripts, source{name, string(body)})
	}
	return generate(string(prelude), scripts, keys)
}

// write writes the library of the scripts of src into out, and removes
// from out every other .lua file (the scripts' files of the versions
// before the library).
func write(src, out string, keys []string) error {
	lib, err := generateAll(src, keys)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(out, "*.lua"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if filepath.Base(f) != libraryFile {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(out, libraryFile), []byte(lib.Text), 0o644)
}
