package signals_test

import (
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// TestEveryListenerHearsItsSignals: each signal reaches every listener
// that set its field, in the order they listened, and no other field;
// a nil Line tells nothing and does not panic.
func TestEveryListenerHearsItsSignals(t *testing.T) {
	line := signals.New()
	var heard []string
	line.Listen(signals.Listener{
		Joined: func(q string) { heard = append(heard, "1 joined "+q) },
		Moved:  func(q string, users []string, _ []rollup.Wait) { heard = append(heard, "1 moved "+q+" "+users[0]) },
	})
	line.Listen(signals.Listener{
		Joined:       func(q string) { heard = append(heard, "2 joined "+q) },
		Read:         func(q string) { heard = append(heard, "2 read "+q) },
		Reconfigured: func(q string) { heard = append(heard, "2 reconfigured "+q) },
		LetIn: func(q string, users []string, at, expires time.Time) {
			heard = append(heard, "2 let in "+q+" "+users[0]+" "+expires.Sub(at).String())
		},
	})
	line.Joined("a")
	line.Moved("b", []string{"u"}, nil)
	line.Read("c")
	line.Reconfigured("d")
	line.LetIn("e", []string{"v"}, time.UnixMilli(0), time.UnixMilli(60_000))
	want := []string{"1 joined a", "2 joined a", "1 moved b u", "2 read c", "2 reconfigured d", "2 let in e v 1m0s"}
	if !slices.Equal(heard, want) {
		t.Errorf("heard %q, want %q", heard, want)
	}

	var none *signals.Line
	none.Listen(signals.Listener{Joined: func(string) { t.Error("a nil line told someone") }})
	none.Joined("a")
	none.Moved("a", nil, nil)
	none.Read("a")
	none.Reconfigured("a")
	none.LetIn("a", nil, time.Time{}, time.Time{})
}

// TestTellingAllocatesNothing: Joined runs on every enter.
func TestTellingAllocatesNothing(t *testing.T) {
	line := signals.New()
	n := 0
	line.Listen(signals.Listener{Joined: func(string) { n++ }})
	if allocs := testing.AllocsPerRun(100, func() { line.Joined("default") }); allocs != 0 {
		t.Errorf("Joined allocates %v times", allocs)
	}
}
