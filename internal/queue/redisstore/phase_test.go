package redisstore

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestScriptsReadOnlyPhasedFields: a script reads a phase's value of a
// setting (adm.phase_x before cfg.x) only where the setting's row says a
// phase may change it (queue.Setting.Phased), so the tick keeps that field
// (phaseFieldNames), and only with the queue's own after it.
func TestScriptsReadOnlyPhasedFields(t *testing.T) {
	files, err := filepath.Glob("scripts/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	ref := regexp.MustCompile(`adm\.(phase_\w+)(\s+or\s+cfg\.(\w+))?`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllStringSubmatch(string(src), -1) {
			if !slices.Contains(phaseFieldNames, m[1]) {
				t.Errorf("%s reads adm.%s, not a phased setting's field %v", f, m[1], phaseFieldNames)
			}
			if m[3] != "" && phasePrefix+m[3] != m[1] {
				t.Errorf("%s reads %s, a phase's value of another setting than its own", f, m[0])
			}
		}
	}
}
