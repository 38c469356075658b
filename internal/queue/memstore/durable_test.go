package memstore_test

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/storetest"
	"github.com/waitroom/waitroom/internal/suspect"
)

// TestDurableTimeGoesOnWhileDown: tokens that expired while the store was
// closed are expired when it opens again, and admission takes up with one
// tick's quota, not the ten minutes' worth it missed.
func TestDurableTimeGoesOnWhileDown(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewFakeClock()
	dir := t.TempDir()
	s, _, err := memstore.Open(dir, memstore.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval, c.TokenTTL = 100, 10, 100*time.Millisecond, 5*time.Minute
	if err := s.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := s.Enter(ctx, "q", fmt.Sprintf("u%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if a, err := s.Admit(ctx, "q", tokens("a", 10)); err != nil || len(a.Admitted) != 10 {
		t.Fatalf("Admit: %+v, %v; want 10 admitted", a, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	clock.Sleep(10 * time.Minute)
	s, rec, err := memstore.Open(dir, memstore.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec.Places != 190 || rec.Tokens != 0 || rec.Down < 10*time.Minute {
		t.Errorf("recovery %+v: want 190 places, 0 tokens (expired while down), down ≥ 10m", rec)
	}
	if e, err := s.Status(ctx, "q", "u000"); err != nil || e.State != queue.NotInQueue {
		t.Errorf("the first admitted user after 10 minutes down: %+v, %v; want NOT_IN_QUEUE (token expired)", e, err)
	}
	if e, err := s.Status(ctx, "q", "u010"); err != nil || e.State != queue.Waiting || e.Position != 1 {
		t.Errorf("the first waiting user: %+v, %v; want WAITING at 1", e, err)
	}
	a, err := s.Admit(ctx, "q", tokens("b", 10))
	if err != nil || len(a.Admitted) != 10 {
		t.Fatalf("the first tick after the restart: %+v, %v; want its quota, 10", a, err)
	}
	if a, err := s.Admit(ctx, "q", tokens("c", 10)); err != nil || len(a.Admitted) != 0 {
		t.Errorf("a second tick at once: %d admitted, %v; want none (no burst to catch up)", len(a.Admitted), err)
	}
}

// TestDurableTornLastRecord: the image a crash leaves, with the last record
// cut short, opens without it (and without complaint the next time);
// damage before the end stops the open with an error naming the file.
func TestDurableTornLastRecord(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewFakeClock()
	dir := t.TempDir()
	s := mustOpen(t, dir, journal.Always, clock.Now)
	if err := s.PutConfig(ctx, "q", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"u1", "u2", "u3"} {
		if _, err := s.Enter(ctx, "q", u); err != nil {
			t.Fatal(err)
		}
	}
	// The crash: the directory as it is now, under fsync always every
	// answered step on disk, and the last write cut short.
	crash := func(t *testing.T, damage func(log []byte) []byte) string {
		t.Helper()
		img := t.TempDir()
		segs, err := journal.Segments(dir)
		if err != nil || len(segs) != 1 {
			t.Fatalf("segments %v, %v", segs, err)
		}
		log, err := os.ReadFile(journal.SegmentPath(dir, segs[0]))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(journal.SegmentPath(img, segs[0]), damage(log), 0o600); err != nil {
			t.Fatal(err)
		}
		return img
	}

	t.Run("torn last record", func(t *testing.T) {
		img := crash(t, func(log []byte) []byte { return log[:len(log)-3] })
		s, rec, err := memstore.Open(img, memstore.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Torn == 0 || rec.Places != 2 {
			t.Errorf("recovery %+v: want a torn record dropped and 2 places", rec)
		}
		if !strings.Contains(rec.Summary(journal.EverySec), "torn last record") {
			t.Errorf("summary %q does not tell of the torn record", rec.Summary(journal.EverySec))
		}
		for u, want := range map[string]queue.State{"u1": queue.Waiting, "u2": queue.Waiting, "u3": queue.NotInQueue} {
			if e, err := s.Status(ctx, "q", u); err != nil || e.State != want {
				t.Errorf("%s: %+v, %v; want %s", u, e, err, want)
			}
		}
		if _, err := s.Enter(ctx, "q", "u4"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, rec, err = memstore.Open(img, memstore.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if rec.Torn != 0 || rec.Places != 3 {
			t.Errorf("opened again: %+v; want nothing torn, 3 places", rec)
		}
		if e, _ := s.Status(ctx, "q", "u4"); e.Position != 3 {
			t.Errorf("u4 entered after the torn record: %+v, want position 3", e)
		}
	})
	t.Run("damage before the end", func(t *testing.T) {
		img := crash(t, func(log []byte) []byte {
			log = append([]byte(nil), log...)
			log[12] ^= 0xff // inside the first record: its checksum fails
			return log
		})
		_, _, err := memstore.Open(img, memstore.Options{Now: clock.Now})
		if err == nil || !strings.Contains(err.Error(), "log-00000001") {
			t.Errorf("Open of a journal damaged in the middle: %v; want an error naming the file", err)
		}
	})
}

// TestDurableOneProcessPerDirectory: a second open of a directory in use is
// refused, and succeeds once the first is closed.
func TestDurableOneProcessPerDirectory(t *testing.T) {
	dir := t.TempDir()
	s, _, err := memstore.Open(dir, memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := memstore.Open(dir, memstore.Options{}); !errors.Is(err, journal.ErrLocked) {
		t.Errorf("a second Open: %v; want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, _, err = memstore.Open(dir, memstore.Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, journal.LockFile)); err != nil {
		t.Error(err)
	}
}

func tokens(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-token-%d", prefix, i)
	}
	return out
}

// TestDurableDeletedQueue: a queue removed and made again under the same
// name is, after a restart, the new one (its line, not the old one's),
// whether the steps were replayed from the log or held by a snapshot taken
// between them; the removed queue stays removed.
func TestDurableDeletedQueue(t *testing.T) {
	for _, compact := range []string{"none", "after the removal", "after the new queue"} {
		t.Run("compaction "+compact, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewFakeClock()
			dir := t.TempDir()
			s := mustOpen(t, dir, journal.Always, clock.Now)
			for _, q := range []string{"sale", "gone"} {
				if err := s.PutConfig(ctx, q, queue.DefaultConfig()); err != nil {
					t.Fatal(err)
				}
				for _, u := range []string{"a", "b"} {
					if _, err := s.Enter(ctx, q, u); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, q := range []string{"sale", "gone"} {
				if err := s.DeleteQueue(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if compact == "after the removal" {
				if err := s.Compact(); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.PutConfig(ctx, "sale", queue.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Enter(ctx, "sale", "b"); err != nil {
				t.Fatal(err)
			}
			if compact == "after the new queue" {
				if err := s.Compact(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Enter(ctx, "sale", "c"); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, rec, err := memstore.Open(dir, memstore.Options{Now: clock.Now})
			if err != nil {
				t.Fatalf("open after a removal: %v", err)
			}
			defer s.Close()
			if rec.Queues != 1 {
				t.Errorf("recovered %d queues, want 1 (sale)", rec.Queues)
			}
			if names, _ := s.Queues(ctx); len(names) != 1 || names[0] != "sale" {
				t.Errorf("Queues: %v, want [sale]", names)
			}
			if _, err := s.Config(ctx, "gone"); !errors.Is(err, queue.ErrQueueNotFound) {
				t.Errorf("the removed queue: %v, want ErrQueueNotFound", err)
			}
			if e, _ := s.Status(ctx, "sale", "a"); e.State != queue.NotInQueue {
				t.Errorf("a, in the old line only: %+v, want NOT_IN_QUEUE", e)
			}
			if e, _ := s.Status(ctx, "sale", "b"); e.State != queue.Waiting || e.Position != 1 {
				t.Errorf("b, first in the new line: %+v, want WAITING at 1", e)
			}
		})
	}
}

// TestDurableShadowLine: the shadow line, its marks and the places cleared
// from it into the line come back after a restart, whether a snapshot
// holds them or the log replays them, and so do their totals.
func TestDurableShadowLine(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewFakeClock()
	dir := t.TempDir()
	s := mustOpen(t, dir, journal.Always, clock.Now)
	if err := s.PutConfig(ctx, "q", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	mark := suspect.Mark{Signals: []string{"address_range"}, Address: "h-9"}
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	for _, u := range []string{"a", "b"} {
		_, err := s.Enter(ctx, "q", u)
		step("enter "+u, err)
	}
	for _, u := range []string{"x", "y"} {
		_, err := s.EnterShadow(ctx, "q", u, mark)
		step("enter the shadow line "+u, err)
	}
	_, err := s.ClearSuspect(ctx, "q", 1)
	step("clear x", err)
	step("compact", s.Compact()) // the snapshot holds the above, the log what follows
	_, err = s.EnterShadow(ctx, "q", "z", mark)
	step("enter the shadow line z", err)
	_, err = s.Enter(ctx, "q", "c")
	step("enter c", err)
	step("close", s.Close())

	s, rec, err := memstore.Open(dir, memstore.Options{Now: clock.Now})
	step("open again", err)
	defer s.Close()
	if rec.Places != 6 {
		t.Errorf("recovered %d places, want 6 (a, b, x and c in line, y and z in the shadow line)", rec.Places)
	}
	sus, err := s.Suspects(ctx, "q", 10)
	if err != nil || len(sus) != 2 || sus[0].Ticket != 2 || sus[1].Ticket != 3 || sus[1].Behind != 2 ||
		sus[1].Address != "h-9" || fmt.Sprint(sus[1].Signals) != "[address_range]" {
		t.Fatalf("suspects after the restart: %+v, %v; want y (2) and z (3, behind 2, its mark)", sus, err)
	}
	if e, err := s.Status(ctx, "q", "x"); err != nil || e.Shadow || e.Position != 3 {
		t.Errorf("x, cleared: %+v, %v; want at 3 in the line", e, err)
	}
	if e, err := s.Status(ctx, "q", "c"); err != nil || e.Position != 4 {
		t.Errorf("c: %+v, %v; want at 4", e, err)
	}
	if sn, err := s.Snapshot(ctx, "q"); err != nil || fmt.Sprint(sn.Cleared) != "[2]" || sn.Length != 4 {
		t.Errorf("snapshot: %+v, %v; want cleared [2], 4 waiting", sn, err)
	}
	st, err := s.Stats(ctx, "q")
	if err != nil || st.ShadowEnteredTotal != 3 || st.ClearedTotal != 1 || st.ShadowLength != 2 || st.EnteredTotal != 4 {
		t.Errorf("stats: %+v, %v; want 3 shadow entries, 1 cleared, 2 in the shadow line, 4 joins", st, err)
	}
}

// TestDurableOldPlaceJournal: a journal written before Place was given
// its first ticket (issue 57; its Place records carry 0) replays with the
// meaning it had: the users at the next reserved tickets in order, those
// who left skipped, the tickets left over gaps. testdata/journal-before-57
// is the log of waitroom at 0cc9c83 (fsync always, storetest's fake
// clock): queue "sale" opening a minute on with p1..p4 in its pre-queue;
// OpenDue; p3 leaves; Place [p4 p3 p1]; "late" enters; Place [p2].
func TestDurableOldPlaceJournal(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewFakeClock()
	clock.Sleep(time.Hour)
	dir := t.TempDir()
	log, err := os.ReadFile(filepath.Join("testdata", "journal-before-57", "log-00000001"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log-00000001"), log, 0o600); err != nil {
		t.Fatal(err)
	}
	s, rec, err := memstore.Open(dir, memstore.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("opening the old journal: %v", err)
	}
	defer s.Close()
	if rec.Places != 4 || rec.Torn != 0 {
		t.Errorf("recovery %+v: want 4 places (p4, p1, p2, late)", rec)
	}
	for u, want := range map[string][2]int64{"p4": {1, 1}, "p1": {2, 2}, "p2": {3, 3}, "late": {5, 4}} {
		if e, err := s.Status(ctx, "sale", u); err != nil || e.State != queue.Waiting || e.PreQueue || e.Ticket != want[0] || e.Position != want[1] {
			t.Errorf("%s: %+v, %v; want ticket %d at %d", u, e, err, want[0], want[1])
		}
	}
	if sn, err := s.Snapshot(ctx, "sale"); err != nil || fmt.Sprint(sn.Left) != "[4]" || sn.Last != 5 || sn.Length != 4 {
		t.Errorf("snapshot %+v, %v; want ticket 4 (p3's, left over) a gap of 5", sn, err)
	}
	if o, err := s.OpenDue(ctx, "sale", "owner", time.Minute); err != nil || o.Due {
		t.Errorf("OpenDue after the old opening: %+v, %v; want it done", o, err)
	}
	if st, err := s.Stats(ctx, "sale"); err != nil || st.PreQueued != 0 || st.LeftTotal != 1 || st.EnteredTotal != st.Length+st.LeftTotal {
		t.Errorf("stats %+v, %v; want the pre-queue empty, p3 left, the totals balanced", st, err)
	}
}

// TestDurableJournalBeforeHidden: a journal written before seen marks
// said whether the page was hidden (issue 55; its Seen records carry no
// flag) replays its marks as visible ones, as they were: skipped at
// abandonAfter, not kept for abandonAfterSecondsHidden (900 s by
// default). testdata/journal-before-55 is the log of waitroom at base55
// (fsync always, storetest's fake clock): queue "q" with abandonAfter 1 s,
// rate 10,000/s in 1 ms ticks; "first", "marked" and "kept" enter; a tick
// lets "first" in; 100 ms later Seen marks "marked".
func TestDurableJournalBeforeHidden(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewFakeClock()
	clock.Sleep(time.Hour)
	dir := t.TempDir()
	log, err := os.ReadFile(filepath.Join("testdata", "journal-before-55", "log-00000001"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log-00000001"), log, 0o600); err != nil {
		t.Fatal(err)
	}
	s, rec, err := memstore.Open(dir, memstore.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("opening the old journal: %v", err)
	}
	defer s.Close()
	if rec.Places != 2 || rec.Torn != 0 {
		t.Fatalf("recovery %+v: want 2 places (marked, kept)", rec)
	}
	if err := s.Seen(ctx, "q", []string{"kept"}, true); err != nil {
		t.Fatal(err)
	}
	clock.Sleep(1500 * time.Millisecond)
	for range 1000 {
		a, err := s.Admit(ctx, "q", queue.NewTokens(2))
		if err != nil {
			t.Fatal(err)
		}
		if !a.Ticked {
			clock.Sleep(a.NextIn)
			continue
		}
		if !slices.Equal(a.Admitted, []string{"kept"}) || a.Skipped != 1 {
			t.Fatalf("the tick at 1.5 s admitted %v and skipped %d; want [kept] (a hidden mark), marked skipped (an old mark, visible)", a.Admitted, a.Skipped)
		}
		return
	}
	t.Fatal("admission never became due")
}

// TestDurableDraws: the ledger of draws and the records kept come back
// after a restart, whether the log replays them or a snapshot holds them
// (one taken while the opening is placed, too: its instant, first ticket
// and the list closed with it), and outlive the queue: deleted, it still lists them.
func TestDurableDraws(t *testing.T) {
	for _, compact := range []string{"none", "while placing", "after the opening", "after the removal"} {
		t.Run("compaction "+compact, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewFakeClock()
			dir := t.TempDir()
			s := mustOpen(t, dir, journal.Always, clock.Now)
			reopen := func(when string) {
				t.Helper()
				if compact == when {
					if err := s.Compact(); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = mustOpen(t, dir, journal.Always, clock.Now)
			}
			c := queue.DefaultConfig()
			c.OpensAt = clock.Now().Add(time.Minute).Truncate(time.Millisecond)
			if err := s.PutConfig(ctx, "sale", c); err != nil {
				t.Fatal(err)
			}
			drawer := admission.Drawer{Participants: draw.NewParticipants([]byte("k")), Seeds: mrand.NewChaCha8([32]byte{57})}
			if _, ok, err := admission.Commit(ctx, s, "sale", c.OpensAt, drawer); err != nil || !ok {
				t.Fatalf("Commit: %v, %v", ok, err)
			}
			for _, u := range []string{"a", "b", "c", "d"} {
				if _, err := s.Enter(ctx, "sale", u); err != nil {
					t.Fatal(err)
				}
			}
			clock.Sleep(time.Minute)
			o, _, err := admission.OpenLine(ctx, firstOnly{s}, "sale", "A", drawer)
			if err != nil || !o.Due {
				t.Fatalf("OpenLine by A: %+v, %v", o, err)
			}
			ledger, err := s.Draws(ctx, "sale")
			if err != nil || len(ledger) != 1 || ledger[0].State != draw.Drawn {
				t.Fatalf("Draws: %+v, %v; want one drawn", ledger, err)
			}
			rec, ok, err := s.DrawRecord(ctx, "sale", ledger[0].Hash)
			if err != nil || !ok {
				t.Fatalf("DrawRecord: %v, %v", ok, err)
			}
			reopen("while placing")
			clock.Sleep(2 * time.Minute) // A's lease lapses: B takes over from the store as it came back
			if b, err := s.OpenDue(ctx, "sale", "B", time.Minute); err != nil || !b.Due || b.First != o.First || b.Next != o.First+1 ||
				!b.OpensAt.Equal(c.OpensAt) || b.Epoch != o.Epoch || fmt.Sprint(b.Pending) != "[a b c d]" {
				t.Fatalf("OpenDue after a restart: %+v, %v; want the opening %+v, one placed, the four closed", b, err, o)
			}
			if _, placed, err := admission.OpenLine(ctx, s, "sale", "B", drawer); err != nil || placed != 3 {
				t.Fatalf("OpenLine by B: %d placed, %v; want the 3 left", placed, err)
			}
			for _, u := range []string{"a", "b", "c", "d"} {
				i := slices.Index(rec.Order, drawer.Participants.Of("sale", u).ID)
				if e, err := s.Status(ctx, "sale", u); err != nil || i < 0 || e.Ticket != rec.Tickets[i] {
					t.Errorf("%s: %+v, %v; want the record's ticket (order %d)", u, e, err, i)
				}
			}
			reopen("after the opening")
			if err := s.DeleteQueue(ctx, "sale"); err != nil {
				t.Fatal(err)
			}
			reopen("after the removal")
			if got, err := s.Draws(ctx, "sale"); err != nil || !cmp.Equal(ledger, got) {
				t.Errorf("Draws of the deleted queue after a restart: %v (-before +after):\n%s", err, cmp.Diff(ledger, got))
			}
			if got, ok, err := s.DrawRecord(ctx, "sale", rec.Commitment); err != nil || !ok || !cmp.Equal(rec, got) {
				t.Errorf("DrawRecord after a restart: %v, %v (-before +after):\n%s", ok, err, cmp.Diff(rec, got))
			}
			if err := draw.Verify(rec); err != nil {
				t.Errorf("the record kept: %v", err)
			}
		})
	}
}

// firstOnly is a store whose Place puts only the first user given in line,
// as an instance that stops after a first chunk.
type firstOnly struct{ *memstore.Store }

func (f firstOnly) Place(ctx context.Context, q, owner string, first int64, users []string, lease time.Duration) (bool, error) {
	return f.Store.Place(ctx, q, owner, first, users[:min(1, len(users))], lease)
}
