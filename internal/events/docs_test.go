package events_test

import (
	"os"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/events"
)

// TestOperationsDocListsTheEvents: docs/operations.md's table of events
// has a row for every kind found in a queue's state and every kind told
// directly, saying what the table's Means says, and the breakers' row.
func TestOperationsDocListsTheEvents(t *testing.T) {
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, k := range append(append([]events.Kind(nil), events.Kinds...), events.ToldDirectly...) {
		if row := "| `" + string(k.Type) + "` | " + k.Means + " |"; !strings.Contains(doc, row) {
			t.Errorf("docs/operations.md has no row\n%s", row)
		}
	}
	if row := "| `" + string(events.BreakerOpened) + "`, `" + string(events.BreakerClosed) + "` | "; !strings.Contains(doc, row) {
		t.Errorf("docs/operations.md has no row starting %s", row)
	}
}
