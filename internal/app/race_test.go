//go:build race

package app_test

// goBuildFlags are the flags the tests build example programs with: the
// test binary's own race setting, so that the build shares the packages
// (the standard library, SQLite) the test build compiled already.
var goBuildFlags = []string{"-race"}
