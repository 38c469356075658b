package redisstore

import (
	"context"
	_ "embed" // the library
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// The scripts are written in scripts/*.lua, in a dialect of Lua that
// names the queue's keys and config fields (scripts/README.md); go
// generate (keys.go's directive, internal/luagen) writes them as Redis
// runs them into one library of Redis functions,
// scripts/generated/waitroom.lua: the prelude once, each script a
// function. That text is what the store embeds, loads and calls: a line
// number in a Redis error is a line of that file.

//go:embed scripts/generated/waitroom.lua
var libraryText string

// lib is scripts/generated/waitroom.lua.
var lib = &library{text: libraryText}

// library is a library of Redis functions, named in its first line by its
// text's hash: a version's instances call their own functions whatever
// another version loaded beside them (a rolling deploy).
type library struct {
	text  string
	mu    sync.Mutex    // held while loading: one load at a time
	loads atomic.Uint64 // loads done by this process, on any server
}

// script is one function of the library, a script of scripts/.
type script struct {
	lib  *library
	name string // the script's: scripts/<name>.lua
	fn   string // the function's, which FCALL names: <name>_<hash>
	// keys are the queue's keys the script gets as KEYS (keys.go's
	// constants), in order: only those it names, since go-redis sends
	// each on every call. The line above its registration names them.
	keys []int
	// paceConfig is the config its last pace block carried, parsed: the
	// next one, nearly always the same fields, is not parsed again (reply.pace).
	paceConfig atomic.Pointer[parsedConfig]
}

// keysLine starts the line above each function's registration, which
// names its keys (internal/luagen writes it).
const keysLine = "-- KEYS: "

// registration starts a function's registration, up to its name: in a call
// of its own, or in a table when it has flags (no-writes).
const registration = `redis\.register_function(?:\('|\{function_name = ')`

// mustScript is the function of scripts/generated/waitroom.lua made of
// scripts/<name>.lua.
func mustScript(name string) *script { return lib.script(name) }

// script is the function of l made of scripts/<name>.lua.
func (l *library) script(name string) *script {
	m := regexp.MustCompile(`(?m)^` + keysLine + `(.*)\n` + registration + `(` + regexp.QuoteMeta(name) + `_[0-9a-f]+)'`).FindStringSubmatch(l.text)
	if m == nil {
		panic(fmt.Sprintf("scripts/generated/waitroom.lua: no function of %s.lua: run go generate ./internal/queue/redisstore", name))
	}
	s := &script{lib: l, name: name, fn: m[2]}
	for _, n := range strings.Fields(m[1]) {
		i := slices.Index(keyNames[:], n)
		if i < 0 {
			panic(fmt.Sprintf("scripts/generated/waitroom.lua: %s: unknown key %q", name, n)) // every test that loads the package fails
		}
		s.keys = append(s.keys, i)
	}
	return s
}

// call calls the script's function with keys and args, and when Redis
// does not have it (its first call on a server, or Redis lost its
// functions: a restart without persistence, FUNCTION FLUSH, a Cluster node
// new to the slot) loads the library and calls again, as go-redis's
// Script.Run sends EVAL after EVALSHA's NOSCRIPT. Of the calls that all
// found it missing at once (the first after a start) one loads it; the
// others, finding a load done since they called, call again at once, side
// by side. A load may have been another server's (a process with stores
// on two), so a call still missing it goes round again, a bounded number
// of times.
func (sc *script) call(ctx context.Context, c rediser, keys []string, args []any) *redis.Cmd {
	var cmd *redis.Cmd
	for round := 0; ; round++ {
		loadsBefore := sc.lib.loads.Load()
		cmd = c.FCall(ctx, sc.fn, keys, args...)
		if !missing(cmd) || round == 3 {
			return cmd
		}
		if err := sc.lib.loadUnless(ctx, c, loadsBefore); err != nil {
			cmd = c.FCall(ctx, sc.fn, keys, args...)
			if missing(cmd) {
				cmd.SetErr(fmt.Errorf("%w (loading the library: %w)", cmd.Err(), err))
			}
			return cmd
		}
	}
}

// loadUnless loads the library unless a load was done since the caller
// counted loadsBefore.
func (l *library) loadUnless(ctx context.Context, c rediser, loadsBefore uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loads.Load() != loadsBefore {
		return nil
	}
	err := l.load(ctx, c)
	l.loads.Add(1)
	return err
}

// missing says whether Redis answered cmd that it has no such function.
func missing(cmd *redis.Cmd) bool { return redis.HasErrorPrefix(cmd.Err(), "Function not found") }

// load loads the library wherever the queues' keys may be: on every
// primary of a Cluster (one down fails the load, not the others), else on
// the server (a Sentinel's primary replicates it to its replicas).
func (l *library) load(ctx context.Context, c rediser) error {
	if p, ok := c.(*pipelineWhenBusy); ok {
		c = p.alone
	}
	if cluster, ok := c.(*redis.ClusterClient); ok {
		return cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return node.FunctionLoadReplace(ctx, l.text).Err()
		})
	}
	return c.FunctionLoadReplace(ctx, l.text).Err()
}
