package front_test

import (
	"testing"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue/front"
)

// TestPendingDraw: the document shows the newest commitment while it is
// pending, and nothing once it is drawn or withdrawn (an older pending
// one is never shown: the newest replaced it).
func TestPendingDraw(t *testing.T) {
	c := func(hash string, s draw.State) draw.Committed { return draw.Committed{Hash: hash, State: s} }
	for _, tc := range []struct {
		name   string
		ledger []draw.Committed
		want   string
	}{
		{"no ledger", nil, ""},
		{"one pending", []draw.Committed{c("a", draw.Pending)}, "a"},
		{"a re-roll", []draw.Committed{c("a", draw.Withdrawn), c("b", draw.Pending)}, "b"},
		{"drawn", []draw.Committed{c("a", draw.Withdrawn), c("b", draw.Drawn)}, ""},
		{"the newest withdrawn", []draw.Committed{c("a", draw.Pending), c("b", draw.Withdrawn)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := front.PendingDraw(tc.ledger); got != tc.want {
				t.Errorf("PendingDraw = %q, want %q", got, tc.want)
			}
		})
	}
}
