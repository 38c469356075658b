// Package schema holds what the order stores (postgres, sqlite) share: the
// bookkeeping of their schema migrations. Each store keeps its own SQL and
// its own way to apply it under a lock.
package schema

import (
	"io/fs"
	"path"
)

// Migration is one embedded SQL file, named by its file name.
type Migration struct{ Name, SQL string }

// Pending returns the migrations/*.sql files of fsys that applied does not
// list, in file name order (the order to apply them).
func Pending(fsys fs.FS, applied map[string]bool) ([]Migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql") // lexical order
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, file := range files {
		name := path.Base(file)
		if applied[name] {
			continue
		}
		body, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Name: name, SQL: string(body)})
	}
	return out, nil
}
