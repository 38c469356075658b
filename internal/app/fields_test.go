package app_test

import (
	"reflect"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
)

// TestMainKeepsWhatItCloses: Main holds what its callers give it and read
// back, and each start-up step's result whole (what Close stops, what a
// reload changes, what /readyz reads), not what the steps pass each other
// (issue 50: it had 45 fields). A step that builds something new returns
// it within its own result.
func TestMainKeepsWhatItCloses(t *testing.T) {
	const most = 15
	main := reflect.TypeFor[app.Main]()
	if n := main.NumField(); n > most {
		var names []string
		for f := range main.Fields() {
			names = append(names, f.Name)
		}
		t.Errorf("app.Main has %d fields, at most %d: %v", n, most, names)
	}
}
