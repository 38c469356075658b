// Command luagen writes redisstore's scripts as Redis runs them: each
// scripts/<name>.lua, written in the scripts' dialect, becomes
// scripts/generated/<name>.lua (dialect.go says what it rewrites;
// scripts/README.md, for the scripts' readers, says it too). Run by
// go generate ./internal/queue/redisstore; its test fails when a
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

// generateAll is every script of src as Redis runs it, by name, given
// the queue's keys.
func generateAll(src string, keys []string) (map[string]Script, error) {
	prelude, err := os.ReadFile(filepath.Join(src, "prelude.lua"))
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(src, "*.lua"))
	if err != nil {
		return nil, err
	}
	out := map[string]Script{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		if name == "prelude" {
			continue
		}
		body, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if out[name], err = generate(name, string(prelude), string(body), keys); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// write writes every script of src into out, and removes from out what no
// script of src is generated as any more.
func write(src, out string, keys []string) error {
	scripts, err := generateAll(src, keys)
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
		if _, ok := scripts[strings.TrimSuffix(filepath.Base(f), ".lua")]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(out, name+".lua"), []byte(s.Text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
