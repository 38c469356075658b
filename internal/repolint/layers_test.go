package repolint_test

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoImportPointsUpward reads the picture of the packages in DESIGN.md
// (§6, top to bottom) and checks that every package in it imports only
// packages below it, and that every package of the module is in it.
func TestNoImportPointsUpward(t *testing.T) {
	const module = "github.com/waitroom/waitroom"
	design, err := os.ReadFile("../../DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(design)
	section = section[strings.Index(section, "## 6. Shape of the code"):]
	block := strings.SplitN(section, "```", 3)[1]
	level := map[string]int{}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		pkg := strings.Fields(line)[0]
		if pkg != "waitroom" {
			pkg = "waitroom/" + pkg
		}
		level["github.com/waitroom/"+pkg] = len(order)
		order = append(order, "github.com/waitroom/"+pkg)
	}
	if len(order) < 15 {
		t.Fatalf("DESIGN.md §6 pictures %d packages: the block was not found", len(order))
	}
	err = filepath.WalkDir("../..", func(dir string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("../..", dir)
		if strings.HasPrefix(rel, ".") && rel != "." || rel == "bench" || strings.HasPrefix(rel, "bench/") ||
			strings.HasPrefix(rel, "examples") || strings.Contains(rel, "node_modules") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			return nil // no Go files here
		}
		path := module
		if rel != "." {
			path += "/" + filepath.ToSlash(rel)
		}
		mine, ok := level[path]
		if !ok {
			t.Errorf("%s is not in DESIGN.md's picture of the packages", path)
			return nil
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if theirs, ok := level[imp]; !ok || theirs <= mine {
				t.Errorf("%s imports %s, which is not below it in DESIGN.md's picture", path, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
