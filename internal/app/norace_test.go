//go:build !race

package app_test

// goBuildFlags: see race_test.go.
var goBuildFlags []string
