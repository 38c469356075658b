package journal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/waitroom/waitroom/internal/journal"
)

func frames(payloads ...string) []byte {
	var b []byte
	for _, p := range payloads {
		b = journal.AppendFrame(b, []byte(p))
	}
	return b
}

// TestReadFrames: whole records are read; a cut or zero-filled tail is torn
// (a crash's), a bad record with data after it is damage.
func TestReadFrames(t *testing.T) {
	whole := frames("one", "two", "three")
	firstTwo := len(frames("one", "two"))
	flipped := bytes.Clone(whole)
	flipped[frameStart(1)+9] ^= 1 // a payload byte of "two"
	for _, tc := range []struct {
		name    string
		data    []byte
		read    int
		good    int
		wantErr error
	}{
		{"whole", whole, 3, len(whole), nil},
		{"cut in the last payload", whole[:len(whole)-2], 2, firstTwo, journal.ErrTorn},
		{"cut in the last header", whole[:firstTwo+5], 2, firstTwo, journal.ErrTorn},
		{"zeros after the last record", append(bytes.Clone(whole), make([]byte, 4096)...), 3, len(whole), journal.ErrTorn},
		{"a bad record before others", flipped, 1, frameStart(1), journal.ErrDamaged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			good, err := journal.ReadFrames(tc.data, func([]byte) error { n++; return nil })
			if n != tc.read || good != tc.good || !errors.Is(err, tc.wantErr) && err != tc.wantErr {
				t.Errorf("read %d, good %d, err %v; want %d, %d, %v", n, good, err, tc.read, tc.good, tc.wantErr)
			}
		})
	}
}

func frameStart(i int) int { return len(frames([]string{"one", "two", "three"}[:i]...)) }

// FuzzReadFrames: whatever a disk hands back, reading it never panics and
// never claims more whole bytes than there are.
func FuzzReadFrames(f *testing.F) {
	f.Add(frames("one", "two"))
	f.Add(frames("a")[:5])
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, data []byte) {
		good, _ := journal.ReadFrames(data, func([]byte) error { return nil })
		if good < 0 || good > len(data) {
			t.Fatalf("good = %d of %d bytes", good, len(data))
		}
	})
}

// TestLogAppendsAndRotates: records appended reach their segment, Rotate
// starts the next one, RemoveBefore deletes the older.
func TestLogAppendsAndRotates(t *testing.T) {
	for _, p := range journal.Policies {
		t.Run(string(p), func(t *testing.T) {
			dir := t.TempDir()
			l, err := journal.OpenLog(dir, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Wait(l.Append([]byte("a"))); err != nil {
				t.Fatal(err)
			}
			next, err := l.Rotate()
			if err != nil || next != 2 {
				t.Fatalf("Rotate: %d, %v", next, err)
			}
			l.Append([]byte("b"))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for seg, want := range map[int]string{1: "a", 2: "b"} {
				data, err := os.ReadFile(journal.SegmentPath(dir, seg))
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				journal.ReadFrames(data, func(p []byte) error { got = append(got, string(p)); return nil })
				if len(got) != 1 || got[0] != want {
					t.Errorf("segment %d holds %q, want [%s]", seg, got, want)
				}
			}
			l, err = journal.OpenLog(dir, p)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.RemoveBefore(2); err != nil {
				t.Fatal(err)
			}
			if segs, _ := journal.Segments(dir); len(segs) != 2 || segs[0] != 2 {
				t.Errorf("segments after RemoveBefore(2): %v, want [2 3]", segs)
			}
			if _, err := os.Stat(filepath.Join(dir, "log-00000001")); !os.IsNotExist(err) {
				t.Errorf("segment 1: %v", err)
			}
		})
	}
}
