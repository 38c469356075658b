package redisstore

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/testenv"
)

// TestReplyKindsAgree: every reply kind scripts/prelude.lua names (local
// UNKNOWN_QUEUE, ... = -1, ...) is a const of reply.go named alike
// (kindUnknownQueue) with the same value, and every kind const of reply.go
// is one the prelude names: a kind renumbered on one side only fails here.
func TestReplyKindsAgree(t *testing.T) {
	lua := luaKinds(t)
	gos := goKinds(t)
	if len(lua) < 10 {
		t.Fatalf("prelude.lua names %d reply kinds: the search is broken", len(lua))
	}
	for name, v := range lua {
		goName := "kind"
		for _, w := range strings.Split(name, "_") {
			goName += w[:1] + strings.ToLower(w[1:])
		}
		if got, ok := gos[goName]; !ok {
			t.Errorf("prelude.lua's %s = %d has no const %s in reply.go", name, v, goName)
		} else if got != v {
			t.Errorf("prelude.lua's %s = %d, reply.go's %s = %d", name, v, goName, got)
		}
		delete(gos, goName)
	}
	for name, v := range gos {
		t.Errorf("reply.go's %s = %d is named by no reply kind of prelude.lua", name, v)
	}
}

// luaKinds are the prelude's constants: NAME → value.
func luaKinds(t *testing.T) map[string]int {
	t.Helper()
	prelude, err := os.ReadFile("scripts/prelude.lua")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^local ([A-Z_][A-Z_, ]*) = ([-0-9, ]+)$`).FindAllStringSubmatch(string(prelude), -1) {
		names, values := strings.Split(m[1], ", "), strings.Split(m[2], ", ")
		if len(names) != len(values) {
			t.Fatalf("prelude.lua: %q", m[0])
		}
		for i, n := range names {
			v, err := strconv.Atoi(values[i])
			if err != nil {
				t.Fatalf("prelude.lua: %q: %v", m[0], err)
			}
			out[n] = v
		}
	}
	return out
}

// goKinds are reply.go's consts named kind…: name → value.
func goKinds(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reply.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "kind") {
					continue
				}
				lit, sign := vs.Values[i], 1
				if u, ok := lit.(*ast.UnaryExpr); ok && u.Op == token.SUB {
					lit, sign = u.X, -1
				}
				b, ok := lit.(*ast.BasicLit)
				v, err := strconv.Atoi(b.Value)
				if !ok || err != nil {
					t.Fatalf("reply.go: %s is not a number written out", n.Name)
				}
				out[n.Name] = sign * v
			}
		}
	}
	return out
}

// TestPaceBlockAgrees: the prelude's pace writes the config's fields and
// then the admission state's in the order Go reads them (paceConfigFields,
// paceFields).
func TestPaceBlockAgrees(t *testing.T) {
	prelude, err := os.ReadFile("scripts/prelude.lua")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?ms)^local function pace\(.*?^end$`).FindString(string(prelude))
	// A setting a phase may change is written as the phase's, or else the
	// queue's own (adm.phase_rate or cfg.rate): it is the queue's field's place.
	fn = regexp.MustCompile(`adm\.phase_\w+ (?:and '\w*' )?or `).ReplaceAllString(fn, "")
	var cfg, adm []string
	for _, m := range regexp.MustCompile(`\b(cfg|adm)\.(\w+)`).FindAllStringSubmatch(fn, -1) {
		if m[1] == "adm" {
			adm = append(adm, m[2])
		} else if adm != nil {
			t.Errorf("pace writes cfg.%s after the admission state's fields", m[2])
		} else {
			cfg = append(cfg, m[2])
		}
	}
	if !slices.Equal(cfg, paceConfigFields) || !slices.Equal(adm, paceFields) {
		t.Errorf("prelude.lua's pace writes %v then %v; Go reads %v then %v", cfg, adm, paceConfigFields, paceFields)
	}
}

// TestGenerateNamesTheKeys: the go:generate directive names the queue's
// keys in keys.go's order, so each script's KEYS come in that order.
func TestGenerateNamesTheKeys(t *testing.T) {
	src, err := os.ReadFile("keys.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^//go:generate .* -keys (\S+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("keys.go has no go:generate directive with -keys")
	}
	if got := strings.Split(string(m[1]), ","); !slices.Equal(got, keyNames[:]) {
		t.Errorf("the directive names the keys %v, keys.go %v", got, keyNames)
	}
}

// TestScriptsNameKnownKeys: every generated function's keys are the queue's,
// in keys.go's order.
func TestScriptsNameKnownKeys(t *testing.T) {
	names := regexp.MustCompile(`(?m)^`+registration+`(\w+)_[0-9a-f]+'`).FindAllStringSubmatch(lib.text, -1)
	if len(names) < 15 {
		t.Fatalf("the generated library has %d functions", len(names))
	}
	for _, n := range names {
		sc := mustScript(n[1])
		if !slices.IsSorted(sc.keys) {
			t.Errorf("%s gets its keys as %v, not in keys.go's order", n[1], sc.keys)
		}
	}
}

// TestTwinsTableNamesWhatExists: the package doc's table of twins names
// every script and every function of the prelude, and each memstore name,
// page function and conformance case it gives exists: an index that has
// drifted fails here.
func TestTwinsTableNamesWhatExists(t *testing.T) {
	rows := twinsTable(t, readAll(t, "doc.go"))
	if len(rows) < 20 {
		t.Fatalf("doc.go's table has %d rows: the search is broken", len(rows))
	}
	memstore, storetest := readAll(t, "../memstore/*.go"), readAll(t, "../storetest/*.go")
	tests, scripts, page := readAll(t, "*_test.go"), readAll(t, "scripts/*.lua"), readAll(t, "../../web/static/waiting.js")
	var lua []string
	for _, r := range rows {
		if r[4] != "" && !strings.Contains(page, "function "+r[4]+"(") {
			t.Errorf("the table names the page's %s, which waiting.js does not declare", r[4])
		}
		lua = append(lua, r[1])
		for _, m := range regexp.MustCompile(`(\w+)\.lua's (\w+)(?:, (\w+))?|prelude's (\w+)(?:, (\w+))?`).FindAllStringSubmatch(r[1], -1) {
			for _, fn := range slices.DeleteFunc(m[2:], func(s string) bool { return s == "" }) {
				if fn != "config" && !strings.Contains(scripts, "local function "+fn+"(") { // the generator writes config
					t.Errorf("the table names %s, a function no script declares", fn)
				}
			}
		}
		for _, m := range regexp.MustCompile(`\b(Store|state)\.(\w+)|\b(sameToken)\b`).FindAllStringSubmatch(r[2], -1) {
			if m[3] != "" {
				m[2] = m[3]
			}
			if !regexp.MustCompile(`func (\(\w+ \*(Store|state)\) )?` + m[2] + `\(|\bq\.` + m[2] + `\b`).MatchString(memstore) {
				t.Errorf("the table names memstore's %s, which memstore does not have", m[0])
			}
		}
		for _, c := range regexp.MustCompile(`\b[A-Z]\w+\b`).FindAllString(r[3], -1) {
			if !strings.Contains(storetest, `"`+c+`"`) && !(strings.HasPrefix(c, "Test") && strings.Contains(tests, "func "+c+"(")) {
				t.Errorf("the table names %s, neither a conformance case nor a test of this package", c)
			}
		}
	}
	named := strings.Join(lua, "\n")
	files, _ := filepath.Glob("scripts/*.lua")
	for _, f := range files {
		if name := filepath.Base(f); name != "prelude.lua" && !strings.Contains(named, name) {
			t.Errorf("the table has no row for %s", name)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^local function (\w+)\(`).FindAllStringSubmatch(readAll(t, "scripts/prelude.lua"), -1) {
		if !regexp.MustCompile(`prelude's (\w+, )?`+m[1]+`\b`).MatchString(named) && m[1] != "append" { // a list's, no twin
			t.Errorf("the table has no row for the prelude's %s", m[1])
		}
	}
}

// twinsTable is the rows of doc's table of twins, each as a match is:
// the row, then its cells (Lua, memstore, storetest case, page), cut
// where the header's titles start.
func twinsTable(t *testing.T, doc string) [][]string {
	t.Helper()
	header := regexp.MustCompile(`(?m)^//\tLua \(scripts/\) +memstore +page \(\S+\) +storetest case$`).FindString(doc)
	if header == "" {
		t.Fatal("doc.go's table of twins: no header Lua (scripts/), memstore, page (…), storetest case")
	}
	at := []int{3, strings.Index(header, "memstore"), strings.Index(header, "page ("), strings.Index(header, "storetest case")}
	var rows [][]string
	for _, line := range strings.Split(doc[strings.Index(doc, header)+len(header)+1:], "\n") {
		if !strings.HasPrefix(line, "//\t") {
			break
		}
		if len(line) <= at[3] {
			t.Fatalf("doc.go's table of twins: a row without its conformance case: %q", line)
		}
		cell := func(i, j int) string { return strings.TrimSpace(line[at[i]:j]) }
		rows = append(rows, []string{line, cell(0, at[1]), cell(1, at[2]), line[at[3]:], cell(2, at[3])})
	}
	return rows
}

// readAll is the files matching pattern, one after the other.
func readAll(t *testing.T, pattern string) string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: %v, %v", pattern, files, err)
	}
	var b strings.Builder
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(text)
	}
	return b.String()
}

// TestRedisErrorNamesALineOfTheGeneratedFile: a script that fails in Redis
// (here the queue's hash is a string: WRONGTYPE) fails with an error that
// names its generated file, and the line Redis names is the line of that
// file that failed.
func TestRedisErrorNamesALineOfTheGeneratedFile(t *testing.T) {
	rdb := testenv.RedisClient(t)
	prefix := fmt.Sprintf("wrline%d:", rand.Int64())
	if err := rdb.Set(context.Background(), keysFor(prefix, "q")[kCfg], "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := New(rdb, prefix).Status(context.Background(), "q", "u")
	m := regexp.MustCompile(`(scripts/generated/\w+\.lua) \(status\.lua\): .*@user_function:(\d+)`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("Status on a damaged queue: %v; want an error naming the generated file and a line", err)
	}
	line, _ := strconv.Atoi(m[2])
	lines := strings.Split(readAll(t, m[1]), "\n")
	if line < 1 || line > len(lines) || !strings.Contains(lines[line-1], "redis.call('HMGET'") {
		t.Errorf("%v: line %d of %s is not the HMGET that failed", err, line, m[1])
	}
}
