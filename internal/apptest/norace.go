//go:build !race

package apptest

// GoBuildFlags: see race.go.
var GoBuildFlags []string
