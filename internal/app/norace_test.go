//go:build !race

package app_test

// GoBuildFlags: see race.go.
var GoBuildFlags []string
