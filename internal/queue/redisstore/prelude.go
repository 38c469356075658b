package redisstore

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// script is one of scripts/*.lua as Redis runs it, and the fields its
// config and admission readers read, in the order its reply carries them
// (the pace block): Go reads them by name.
type script struct {
	*redis.Script
	cfg, adm []string
	// keys are the queue's keys the script touches (keys.go's constants), in
	// the order it gets them as KEYS: only those, since Redis builds the
	// KEYS table and go-redis sends each on every call.
	keys []int
	// paceConfig is the config its last pace block carried, parsed: the
	// next one, nearly always the same fields, is not parsed again (reply.pace).
	paceConfig atomic.Pointer[parsedConfig]
}

// mustScript is scripts/<name>.lua after the parts of the prelude it uses.
// Redis runs a script's whole text on every call, so the prelude costs
// only what a script takes from it (measured in docs/benchmarks.md, "The
// prelude's cost"): the functions it calls (and those they call), the
// lists it names, and the two readers written for it here (configReader,
// readAdmission), one HMGET each of only the fields the script names
// (cfg.x, adm.x, those config checks) and those its reply carries for Go
// (the pace block's, and goReads). K.name is written as KEYS[i] (keys.go),
// cfg.x and adm.x as the index of x in the list read, so no table of
// names is built per call.
func mustScript(name string, goReads ...string) *script { return newScript(mustRead(name), goReads...) }

// newScript is mustScript of a script's text.
func newScript(body string, goReads ...string) *script {
	code := preludeFor(body) + body
	s := &script{}
	pace := usesCall(code, "pace")
	readsAdmission := usesCall(code, "readAdmission")
	if readsAdmission {
		if pace {
			s.adm = slices.Clone(paceFields)
		}
		s.adm = appendNew(s.adm, fieldsOf(code, "adm")...)
	}
	if m := configCall.FindStringSubmatch(code); m != nil {
		need, may := quotedNames(m[1]), quotedNames(m[2])
		s.cfg = []string{"epoch", "rate"} // a queue is known by either
		if pace {
			s.cfg = appendNew(s.cfg, paceSettings...)
		}
		s.cfg = appendNew(s.cfg, goReads...)
		s.cfg = appendNew(s.cfg, fieldsOf(code, "cfg")...)
		s.cfg = appendNew(appendNew(s.cfg, need...), may...)
		code = strings.Replace(code, m[0], "config()", 1)
		code = configReader(s.cfg, need, may, s.adm) + code
	} else if readsAdmission {
		code = reader("readAdmission", s.adm) + code
	}
	for _, l := range []struct {
		name  string
		items []string
	}{{"TICK", tickReads}, {"SETTINGS", settingFields}} {
		if regexp.MustCompile(`\b` + l.name + `\b`).MatchString(code) {
			code = luaList(l.name, l.items) + code
		}
	}
	code = fieldsToIndexes(code, "cfg", s.cfg)
	code = fieldsToIndexes(code, "adm", s.adm)
	code, s.keys = keyNamesToKeys(code)
	s.Script = redis.NewScript(code)
	return s
}

// preludeChunks are scripts/prelude.lua's functions, each with its comment,
// in the file's order (its opening comment dropped).
var preludeChunks = func() (out []struct{ name, text string }) {
	def := regexp.MustCompile(`(?m)^local function (\w+)\(`)
	for _, chunk := range strings.Split(mustRead("prelude"), "\n\n") {
		if m := def.FindStringSubmatch(chunk); m != nil {
			out = append(out, struct{ name, text string }{m[1], chunk + "\n\n"})
		}
	}
	return out
}()

// preludeFor is the prelude's functions body calls, and those they call.
func preludeFor(body string) string {
	used := map[string]bool{}
	for grown := true; grown; {
		grown = false
		text := body
		for _, c := range preludeChunks {
			if used[c.name] {
				text += c.text
			}
		}
		for _, c := range preludeChunks {
			if !used[c.name] && usesCall(text, c.name) {
				used[c.name], grown = true, true
			}
		}
	}
	var b strings.Builder
	for _, c := range preludeChunks {
		if used[c.name] {
			b.WriteString(c.text)
		}
	}
	return b.String()
}

var (
	configCall = regexp.MustCompile(`\bconfig\((\{[^}]*\})?(?:, (\{[^}]*\}))?\)`)
	quotedName = regexp.MustCompile(`'(\w+)'`)
	keyName    = regexp.MustCompile(`\bK\.(\w+)\b`)
)

func quotedNames(list string) []string {
	var out []string
	for _, q := range quotedName.FindAllStringSubmatch(list, -1) {
		out = append(out, q[1])
	}
	return out
}

func usesCall(code, fn string) bool {
	return regexp.MustCompile(`\b` + fn + `\(`).MatchString(code)
}

// fieldsOf are the fields code reads as table.field.
func fieldsOf(code, table string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\b`+table+`\.(\w+)\b`).FindAllStringSubmatch(code, -1) {
		out = append(out, m[1])
	}
	return out
}

// appendNew appends the items not in list yet.
func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

// configReader is the Lua function config() of a script that calls
// config(need, may) (written as config() in the text Redis gets: the names
// are Go's, checked here, never a table built per call): the config's
// fields by name, and the list its replies carry (fields' order); or the
// refusal to answer with: {-1} for an unknown queue, or a DAMAGED error
// when a field named in need is missing or not a number, or one in may is
// there and not a number. Scripts check what they read before their first
// write (Redis does not roll a script back); a read-only one answers
// clearly rather than with 0.
//
// When the script also calls readAdmission (adm, its fields, not nil),
// config's one HMGET reads them too, after the config's, since both live
// in the queue's one hash (keys.go): config moves them off the end of its
// list, so the list still ends with the config's last field, and
// readAdmission returns them.
func configReader(fields, need, may, adm []string) string {
	var b strings.Builder
	if adm != nil {
		b.WriteString("local admission\nlocal function readAdmission()\n  return admission\nend\n")
	}
	fmt.Fprintf(&b, "local function config()\n  local cfg = %s\n", hmget(append(slices.Clone(fields), adm...)))
	if adm != nil {
		// From the end backwards, so the list's one border is its last config field.
		fmt.Fprintf(&b, "  admission = {}\n  for i = %d, 1, -1 do\n    admission[i], cfg[%d + i] = cfg[%d + i], nil\n  end\n",
			len(adm), len(fields), len(fields))
	}
	b.WriteString("  if not (cfg.rate or cfg.epoch) then\n    return nil, nil, {-1}\n  end\n")
	for i, f := range append(slices.Clone(need), may...) {
		cond := "not tonumber(cfg." + f + ")"
		if i >= len(need) {
			cond = "cfg." + f + " and " + cond
		}
		fmt.Fprintf(&b, "  if %s then\n    return nil, nil, redis.error_reply('DAMAGED queue config ' .. K.cfg .. ': %s missing or not a number')\n  end\n", cond, f)
	}
	b.WriteString("  return cfg, cfg\nend\n")
	return b.String()
}

// reader is the Lua function name: one HMGET of fields of the queue's
// hash, the list in fields' order (read by name: fieldsToIndexes).
func reader(name string, fields []string) string {
	return fmt.Sprintf("local function %s()\n  return %s\nend\n", name, hmget(fields))
}

// hmget is the Lua call reading fields of the queue's hash.
func hmget(fields []string) string {
	return fmt.Sprintf("redis.call('HMGET', K.cfg, '%s')", strings.Join(fields, "', '"))
}

// fieldsToIndexes writes each table.field in code as table[i], field's
// place in fields (the list a reader read; nil: table is not one).
func fieldsToIndexes(code, table string, fields []string) string {
	if fields == nil {
		return code
	}
	return regexp.MustCompile(`\b`+table+`\.(\w+)\b`).ReplaceAllStringFunc(code, func(m string) string {
		i := slices.Index(fields, m[len(table)+1:])
		if i < 0 {
			panic("scripts: " + m + " not read") // fieldsOf put every one in fields
		}
		return fmt.Sprintf("%s[%d]", table, i+1)
	})
}

// keyNamesToKeys writes each K.name as a KEYS[i], and says which of the
// queue's keys the script gets, in keys.go's order: those it names, and
// nothing else (K.adm, the admission state, is the config's hash). K.used
// or K.old_adm is the one key a script may get after them (Store.run's
// extra).
func keyNamesToKeys(code string) (string, []int) {
	var used []int
	for _, m := range keyName.FindAllStringSubmatch(code, -1) {
		if i := queueKey(m[1]); i >= 0 && !slices.Contains(used, i) {
			used = append(used, i)
		}
	}
	slices.Sort(used)
	return keyName.ReplaceAllStringFunc(code, func(m string) string {
		i := queueKey(m[len("K."):])
		if i < 0 {
			return fmt.Sprintf("KEYS[%d]", len(used)+1)
		}
		return fmt.Sprintf("KEYS[%d]", slices.Index(used, i)+1)
	}), used
}

// queueKey is the index (keys.go) of the queue's key K.name names, or -1
// for the key after them.
func queueKey(name string) int {
	switch name {
	case "used", "old_adm":
		return -1
	case "adm":
		name = keyNames[kCfg]
	}
	i := slices.Index(keyNames[:], name)
	if i < 0 {
		panic("scripts: unknown key K." + name) // caught by every test that loads the package
	}
	return i
}
