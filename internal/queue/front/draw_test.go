package front_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue/front"
)

// TestPendingDraw: the document shows the newest commitment while it is
// pending and to the document's opening, and nothing once it is drawn or
// withdrawn (an older pending one is never shown: the newest replaced
// it), nor while no opening is ahead or another one is.
func TestPendingDraw(t *testing.T) {
	at := time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)
	c := func(hash string, s draw.State) draw.Committed {
		return draw.Committed{Hash: hash, State: s, OpensAt: at}
	}
	for _, tc := range []struct {
		name    string
		ledger  []draw.Committed
		opensAt time.Time
		want    string
	}{
		{"no opening ahead (cleared)", []draw.Committed{c("a", draw.Pending)}, time.Time{}, ""},
		{"another opening", []draw.Committed{c("a", draw.Pending)}, at.Add(time.Hour), ""},
		{"the same opening, to the nanosecond", []draw.Committed{c("a", draw.Pending)}, at.Add(time.Nanosecond), "a"},
		{"no ledger", nil, at, ""},
		{"one pending", []draw.Committed{c("a", draw.Pending)}, at, "a"},
		{"a re-roll", []draw.Committed{c("a", draw.Withdrawn), c("b", draw.Pending)}, at, "b"},
		{"drawn", []draw.Committed{c("a", draw.Withdrawn), c("b", draw.Drawn)}, at, ""},
		{"the newest withdrawn", []draw.Committed{c("a", draw.Pending), c("b", draw.Withdrawn)}, at, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := front.PendingDraw(tc.ledger, tc.opensAt); got != tc.want {
				t.Errorf("PendingDraw = %q, want %q", got, tc.want)
			}
		})
	}
}
