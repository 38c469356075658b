package draw_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
)

// TestADrawVerifies: a record drawn here verifies, and one changed in an
// entry is pointed at that entry.
func TestADrawVerifies(t *testing.T) {
	p := draw.NewParticipants([]byte("key"))
	var ids []string
	for i := range 50 {
		ids = append(ids, p.Of("sale", fmt.Sprint("user", i)).ID)
	}
	c := draw.NewCommitted("sale", time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC), nil)
	r, err := draw.Draw(c, ids, nil, 101, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := draw.Verify(r); err != nil {
		t.Fatalf("a fresh record: %v", err)
	}
	r.Order[17], r.Order[18] = r.Order[18], r.Order[17]
	var m *draw.Mismatch
	if err := draw.Verify(r); !errors.As(err, &m) || m.Entry != "order[17]" {
		t.Fatalf("two places swapped: %v, want order[17] named", err)
	}
}
