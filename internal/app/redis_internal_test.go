package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestReachPatientlyTriesAgainOnlyOnTimeouts: a start asks a Redis that
// times out again (two timeouts, then an answer: started), and gives up at
// once on anything else (refused: one try).
func TestReachPatientlyTriesAgainOnlyOnTimeouts(t *testing.T) {
	calls := 0
	slow := func(context.Context) error {
		if calls++; calls <= 2 {
			return fmt.Errorf("read: %w", os.ErrDeadlineExceeded)
		}
		return nil
	}
	if err := reachPatiently(context.Background(), slow); err != nil || calls != 3 {
		t.Errorf("two timeouts, then an answer: %v after %d tries, want nil after 3", err, calls)
	}
	calls = 0
	refused := errors.New("connection refused")
	down := func(context.Context) error { calls++; return refused }
	if err := reachPatiently(context.Background(), down); !errors.Is(err, refused) || calls != 1 {
		t.Errorf("refused: %v after %d tries, want it after 1", err, calls)
	}
}
