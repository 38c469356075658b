//go:build race

package apptest

// GoBuildFlags are the flags the tests build example programs with: the
// test binary's own race setting, so that the build shares the packages
// (the standard library, SQLite) the test build compiled already.
var GoBuildFlags = []string{"-race"}
