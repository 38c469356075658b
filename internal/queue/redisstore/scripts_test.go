package redisstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
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

// TestScriptsNameKnownKeys: every generated script's keys are the queue's,
// in keys.go's order.
func TestScriptsNameKnownKeys(t *testing.T) {
	entries, err := generated.ReadDir("scripts/generated")
	if err != nil || len(entries) < 15 {
		t.Fatalf("the generated scripts: %d, %v", len(entries), err)
	}
	for _, e := range entries {
		sc := mustScript(strings.TrimSuffix(e.Name(), ".lua"))
		if !slices.IsSorted(sc.keys) {
			t.Errorf("%s gets its keys as %v, not in keys.go's order", e.Name(), sc.keys)
		}
	}
}
