package bench

import "testing"

// TestReplayedOrder: an order's 200 counts as ordered only as the replay
// of this order's own key (Go's Transport resent it after a lost
// connection); another key's 200, or any other status, does not.
func TestReplayedOrder(t *testing.T) {
	for _, c := range []struct {
		st   int
		key  any
		want bool
	}{{200, "herd-a", true}, {200, "herd-b", false}, {200, nil, false}, {409, "herd-a", false}, {201, "herd-a", false}} {
		if got := replayed(c.st, map[string]any{"idempotencyKey": c.key}, "herd-a"); got != c.want {
			t.Errorf("replayed(%d, key %v) = %v, want %v", c.st, c.key, got, c.want)
		}
	}
}
