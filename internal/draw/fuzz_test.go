package draw_test

import (
	"os"
	"testing"

	"github.com/waitroom/waitroom/internal/draw"
)

// FuzzDecodeRecord: a record is outside input to whoever checks it (the
// verifier reads it from a file or any server): whatever the bytes,
// decoding and verifying answer, never panic, and a record that decodes
// and verifies is one whose order is its participants'.
func FuzzDecodeRecord(f *testing.F) {
	for _, name := range []string{"testdata/vector-without-beacon.json", "testdata/vector-with-beacon.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version":1,"tickets":[true],"order":[5]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := draw.DecodeRecord(b)
		if err != nil {
			return
		}
		if draw.Verify(r) == nil && len(r.Order) != len(r.Participants) {
			t.Fatalf("a record verifies with %d placed of %d participants", len(r.Order), len(r.Participants))
		}
		draw.Verdict(r)
	})
}
