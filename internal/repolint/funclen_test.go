package repolint_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoFunctionIsLong keeps every function of the product short enough to
// read in one screen: none over 80 lines (signature to closing brace), and
// Main.Run, the start-up read top to bottom, none over 60 (issue 22).
// Tests, the store suites' test functions (those taking a *testing.T) and
// the benchmark harness (bench/) are left out: a scenario reads best whole.
func TestNoFunctionIsLong(t *testing.T) {
	const most, run = 80, 60
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bench" || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || takesT(fn) {
				continue
			}
			limit := most
			if fn.Name.Name == "Run" && fn.Recv != nil && rel == filepath.Join("internal", "app", "app.go") {
				limit = run
			}
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > limit {
				t.Errorf("%s: %s is %d lines (at most %d): split it into named steps", fset.Position(fn.Pos()), fn.Name.Name, n, limit)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// takesT says fn is a test function of a suite package (storetest): its
// first parameter is a *testing.T.
func takesT(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) == 0 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "testing" && sel.Sel.Name == "T"
}

// TestNoGatewayFileIsLong keeps the gateway split by concern (issue 50):
// no file of the product under internal/gateway over 500 lines. A file
// that grows past it holds a second concern; give that one a file.
func TestNoGatewayFileIsLong(t *testing.T) {
	const most = 500
	seen := 0
	err := filepath.WalkDir("../gateway", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		seen++
		if n := strings.Count(string(src), "\n"); n > most {
			t.Errorf("%s is %d lines (at most %d): split it by concern", path, n, most)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("found no Go file under ../gateway: the walk no longer reaches the gateway")
	}
}
