package redisstore

import (
	"embed"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// The scripts are written in scripts/*.lua, in a dialect of Lua that
// names the queue's keys and config fields (scripts/README.md); go
// generate (keys.go's directive, internal/luagen) writes each as Redis
// runs it into scripts/generated, and that text is what the store embeds
// and runs: a line number in a Redis error is a line of that file.

//go:embed scripts/generated/*.lua
var generated embed.FS

// script is one of scripts/generated/*.lua.
type script struct {
	*redis.Script
	name string
	// keys are the queue's keys the script gets as KEYS (keys.go's
	// constants), in order: only those it names, since Redis builds the
	// KEYS table and go-redis sends each on every call. The generated
	// text's second line names them.
	keys []int
	// paceConfig is the config its last pace block carried, parsed: the
	// next one, nearly always the same fields, is not parsed again (reply.pace).
	paceConfig atomic.Pointer[parsedConfig]
}

// keysLine starts a generated script's second line, which names its keys
// (internal/luagen writes it).
const keysLine = "-- KEYS: "

// mustScript is scripts/generated/<name>.lua.
func mustScript(name string) *script { return newScript(name, mustRead(name)) }

func mustRead(name string) string {
	b, err := generated.ReadFile("scripts/generated/" + name + ".lua")
	if err != nil {
		panic(err) // embedded at build time; missing means go generate was not run
	}
	return string(b)
}

// newScript is the generated script text, named name.
func newScript(name, text string) *script {
	lines := strings.SplitN(text, "\n", 3)
	names, ok := strings.CutPrefix(lines[min(1, len(lines)-1)], keysLine)
	if !ok {
		panic(fmt.Sprintf("scripts/generated/%s.lua: no %q line second: run go generate ./internal/queue/redisstore", name, keysLine))
	}
	s := &script{Script: redis.NewScript(text), name: name}
	for _, n := range strings.Fields(names) {
		i := slices.Index(keyNames[:], n)
		if i < 0 {
			panic(fmt.Sprintf("scripts/generated/%s.lua: unknown key %q", name, n)) // every test that loads the package fails
		}
		s.keys = append(s.keys, i)
	}
	return s
}
