package queue_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TestQueueExportsAtMost100: package queue is the line's types, its Store
// and the user's path (Service); the operator's calls are package
// operate's, and what is added to the line in the next features is
// expected to fit (issue 50 set the bound, and it stays a gate). A name
// counts once for each of: an exported top-level const, var, type or
// func, and an exported method (once per receiver type: Stock.SoldOut and
// Pace.Estimate are two), in the package's non-test files. Fields of exported
// structs and methods of exported interfaces are not counted.
func TestQueueExportsAtMost100(t *testing.T) {
	const most = 100
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range pkgs["queue"].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil {
					name = receiver(d.Recv.List[0].Type) + "." + name
				}
				names = append(names, name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(names) > most {
		t.Errorf("package queue exports %d names, at most %d: %s", len(names), most, strings.Join(names, " "))
	}
	if len(names) < 50 { // the count itself is broken (a file not read)
		t.Errorf("package queue exports %d names: too few to be the package", len(names))
	}
}

// receiver names a method's receiver type, *T or T alike.
func receiver(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}
