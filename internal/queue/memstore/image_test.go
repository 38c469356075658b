package memstore

import (
	"bytes"
	"context"
	"encoding/gob"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// TestSnapshotBeforeRanges: a snapshot taken before places kept the range
// shown (issue 54) holds takings without one; they read as none shown
// (not as a range of 0–0 s, which would score every wait outside it),
// their median kept. A snapshot taken now keeps the range.
func TestSnapshotBeforeRanges(t *testing.T) {
	ctx := context.Background()
	s := New(nil)
	if err := s.PutConfig(ctx, "q", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "b"} {
		if _, err := s.Enter(ctx, "q", u); err != nil {
			t.Fatal(err)
		}
	}
	now := s.queues["q"].joined
	for _, ranged := range []bool{false, true} {
		img := s.queues["q"].image("q")
		img.Ranged = ranged
		if !ranged { // as an older waitroom wrote it: no range in the taking
			for u, j := range img.Joined {
				j.Low, j.High = 0, 0
				img.Joined[u] = j
			}
		}
		var buf bytes.Buffer
		var read queueImage
		if err := gob.NewEncoder(&buf).Encode(img); err != nil {
			t.Fatal(err)
		}
		if err := gob.NewDecoder(&buf).Decode(&read); err != nil {
			t.Fatal(err)
		}
		q, err := read.restore()
		if err != nil {
			t.Fatal(err)
		}
		for u, j := range q.joined {
			want := now[u]
			if !ranged {
				want.Low, want.High = rollup.NoneShown, rollup.NoneShown
			}
			if j != want || want.Low < 0 && ranged {
				t.Errorf("ranged %v: %s's taking %+v restored, want %+v", ranged, u, j, want)
			}
		}
	}
}

// TestSnapshotKeepsHiddenMarks: a snapshot keeps which seen marks are a
// hidden page's (issue 55); one from before holds none, and its marks
// read as visible, as they were.
func TestSnapshotKeepsHiddenMarks(t *testing.T) {
	ctx := context.Background()
	s := New(nil)
	c := queue.DefaultConfig()
	c.AbandonAfter = time.Minute
	if err := s.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "b"} {
		if _, err := s.Enter(ctx, "q", u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Seen(ctx, "q", []string{"b"}, true); err != nil {
		t.Fatal(err)
	}
	for _, before := range []bool{false, true} {
		img := s.queues["q"].image("q")
		if before {
			img.Hidden = nil
		}
		var buf bytes.Buffer
		var read queueImage
		if err := gob.NewEncoder(&buf).Encode(img); err != nil {
			t.Fatal(err)
		}
		if err := gob.NewDecoder(&buf).Decode(&read); err != nil {
			t.Fatal(err)
		}
		q, err := read.restore()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := q.hidden["b"], !before; got != want || q.hidden["a"] || len(q.seen) != 2 {
			t.Errorf("before %v: b hidden %v (want %v), a hidden %v, %d marks (want 2)", before, got, want, q.hidden["a"], len(q.seen))
		}
		q.hidden["c"] = true // restore gives a map to mark in (a nil one would panic at the next mark)
	}
}
