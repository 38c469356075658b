package memstore

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/journal"
)

// The durable store (Open) is the in-memory store plus a journal in its
// directory:
//
//	LOCK          held while a process has the directory open (journal.Lock)
//	snapshot      every queue's whole state at one compaction, and the first
//	              log segment it does not hold
//	log-00000007  the steps since, one record each (record.go)
//
// Reads never touch the disk. A step that changes a queue appends its
// record under the queue's lock; one writer goroutine writes and syncs the
// log (journal.Log), so a step waits for the disk only under fsync always.
// When the log outgrows the snapshot (and 64 MiB), it is compacted: a new
// segment is begun, every queue's state copied under its lock and written
// as the new snapshot (atomically), and the older segments deleted. A
// record carries its queue's step number, so the steps of the new segment
// that the snapshot holds already are skipped when it is replayed.

// snapshotFile is the snapshot's name in the directory.
const snapshotFile = "snapshot"

// snapshotVersion changes when a snapshot can no longer be read as before.
const snapshotVersion = 1

// compactMin is the least log that is compacted.
const compactMin = 64 << 20

// Options are a durable store's.
type Options struct {
	// Fsync is when the journal is synced (journal.EverySec when empty).
	Fsync journal.Policy
	// Now is the store's clock (time.Now when nil).
	Now func() time.Time
	// Logger hears of compactions and their failures (none when nil).
	Logger *slog.Logger
}

// Recovery is what Open found in the directory.
type Recovery struct {
	Queues int
	// Places counts the users in line, in shadow lines and in pre-queues,
	// Tokens the entry tokens still alive.
	Places, Tokens int64
	// Snapshot says a snapshot was read; Records counts the log records
	// replayed after it.
	Snapshot bool
	Records  int
	// Torn is how many bytes of a torn last record were dropped (a crash
	// in the middle of a write).
	Torn int
	// Down is how long the store was not running: from its last record to
	// the start.
	Down time.Duration
	// Took is how long loading took.
	Took time.Duration
}

// Summary is the start's one line about the recovery: what was found,
// and what a crash may have cost under policy (a stop with SIGTERM costs
// nothing; a torn record is one the crash cut short, never answered
// under always).
func (r Recovery) Summary(policy journal.Policy) string {
	var b strings.Builder
	if !r.Snapshot && r.Records == 0 {
		b.WriteString("the embedded line starts empty (nothing kept in its directory yet)")
	} else {
		fmt.Fprintf(&b, "recovered %d places, %d tokens in %d queues", r.Places, r.Tokens, r.Queues)
		if r.Torn > 0 {
			fmt.Fprintf(&b, " (a torn last record of %d bytes dropped)", r.Torn)
		}
	}
	switch p := journal.SyncPeriod(policy); {
	case p == 0:
		fmt.Fprintf(&b, "; nothing answered is lost under %s", policy)
	default:
		fmt.Fprintf(&b, "; the last %d ms may be lost under %s", p.Milliseconds(), policy)
	}
	return b.String()
}

// disk is what a durable store keeps beside its memory.
type disk struct {
	dir       string
	log       *journal.Log
	unlock    func() error
	logger    *slog.Logger
	compactMu sync.Mutex // one compaction at a time
	snapSize  int64
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// snapshotHeader is a snapshot's first record.
type snapshotHeader struct {
	Version int
	TakenAt time.Time
	// Next is the first log segment whose steps the snapshot may not hold.
	Next   int
	Epoch  int64
	Queues int
}

// Open loads the store kept in dir (made if missing) and keeps it there
// from now on: the snapshot, then the log's steps after it, replayed on
// their own clock. A torn last record is dropped; damage anywhere else
// stops the start with an error naming the file, never a line rebuilt
// from part of its steps. Only one process may have dir open (LOCK).
func Open(dir string, o Options) (*Store, Recovery, error) {
	start := time.Now()
	if o.Fsync == "" {
		o.Fsync = journal.EverySec
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, Recovery{}, err
	}
	unlock, err := journal.Lock(dir)
	if err != nil {
		return nil, Recovery{}, err
	}
	s := New(o.Now)
	d := &disk{dir: dir, unlock: unlock, logger: o.Logger, stop: make(chan struct{}), done: make(chan struct{})}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	rec, err := s.load(d)
	if err == nil {
		d.log, err = journal.OpenLog(dir, o.Fsync)
	}
	if err != nil {
		unlock()
		return nil, rec, err
	}
	s.disk = d
	now := s.now()
	if rec.Down > 0 {
		s.resume(now.Truncate(time.Millisecond), rec.Down, true)
	}
	s.mu.Lock()
	for _, q := range s.queues {
		if q.removed {
			continue
		}
		rec.Queues++
		rec.Places += q.waitingAll() + int64(len(q.pre)+len(q.sh.Places))
		rec.Tokens += q.live(now)
	}
	s.mu.Unlock()
	rec.Took = time.Since(start)
	go s.keep()
	return s, rec, nil
}

// load reads what d's directory keeps into s: the snapshot, then each log
// segment after it, every step on the clock it ran at. It reports how
// long the store was down: from the latest step (records of different
// queues may interleave a little out of order) to s's clock now.
func (s *Store) load(d *disk) (Recovery, error) {
	var rec Recovery
	clock := s.now
	var at, last time.Time
	s.now = func() time.Time { return at }
	defer func() { s.now = clock }()
	next, size, err := s.loadSnapshot(filepath.Join(d.dir, snapshotFile), &last)
	if err != nil {
		return rec, err
	}
	at = last
	rec.Snapshot, d.snapSize = next > 0, size
	segs, err := journal.Segments(d.dir)
	if err != nil {
		return rec, err
	}
	for i, n := range segs {
		path := journal.SegmentPath(d.dir, n)
		if n < next { // held by the snapshot; a crash came before it was deleted
			if err := os.Remove(path); err != nil {
				return rec, err
			}
			continue
		}
		err := s.replaySegment(path, i == len(segs)-1, &rec, func(o *op) {
			at = o.at
			if at.After(last) {
				last = at
			}
		})
		if err != nil {
			return rec, err
		}
	}
	if now := clock(); !last.IsZero() && now.After(last) {
		rec.Down = now.Sub(last)
	}
	return rec, nil
}

// replaySegment replays the log segment at path, calling clock with each
// record before it runs. A torn end of the last segment is cut off (the
// write a crash cut short: never answered under always, the last
// milliseconds under everysec); any other damage is an error.
func (s *Store) replaySegment(path string, last bool, rec *Recovery, clock func(*op)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	good, err := journal.ReadFrames(data, func(payload []byte) error {
		o, err := decodeOp(payload)
		if err != nil {
			return err
		}
		clock(&o)
		rec.Records++
		return s.replayRecord(o)
	})
	switch {
	case errors.Is(err, journal.ErrTorn) && last:
		rec.Torn = len(data) - good
		return os.Truncate(path, int64(good))
	case errors.Is(err, journal.ErrTorn) || errors.Is(err, journal.ErrDamaged):
		return fmt.Errorf("%s: a damaged record at byte %d with more after it: the disk lost data; "+
			"move the directory aside to start with an empty line, or restore it from a backup", path, good)
	case err != nil:
		return fmt.Errorf("%s: record at byte %d: %w", path, good, err)
	}
	return nil
}

// replayRecord replays o unless the snapshot holds it already; a step
// missing before it is damage.
func (s *Store) replayRecord(o op) error {
	switch o.kind {
	case opClock:
		return nil
	case opResume:
		s.resume(o.at, o.dur, false)
		return nil
	case opFirstUse, opRoll, opPutToken, opDeleteToken, opTouchToken, opPutSession, opDeleteSession, opAudit:
		if o.seq <= s.usedOps {
			return nil
		}
		if o.seq != s.usedOps+1 {
			return fmt.Errorf("first use or row %d follows %d: %w", o.seq, s.usedOps, errMissing)
		}
		err := s.replayUsed(o)
		s.usedOps = o.seq
		return err
	}
	var have int64
	if q, ok := s.queues[o.queue]; ok {
		have = q.ops
	}
	if o.seq <= have {
		return nil
	}
	if o.seq != have+1 {
		return fmt.Errorf("queue %q: step %d follows %d: %w", o.queue, o.seq, have, errMissing)
	}
	if err := s.replay(o); err != nil {
		return fmt.Errorf("queue %q: step %d: %w", o.queue, o.seq, err)
	}
	s.queues[o.queue].ops = o.seq
	return nil
}

var errMissing = errors.New("a record is missing")

// resume starts every queue again at now after down of not running, and
// journals that it did (a replay does it again at the same point). Token
// expiry, tick due times and the opening keep the wall clock: what lapsed
// while down has lapsed, and a tick due long ago is due now, once, not
// made up. The line's own clocks skip the time down: nobody waiting is
// taken for a no-show for not asking while the store could not answer,
// and the pace does not count it as time the front stood still.
func (s *Store) resume(now time.Time, down time.Duration, journal bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.queues {
		q.mu.Lock()
		t := &q.tick
		if !t.Next.IsZero() && t.Next.Before(now) {
			t.Next = now
		}
		for _, at := range []*time.Time{&t.PaceAt, &t.Moved, &t.WinStart} {
			if !at.IsZero() {
				*at = at.Add(down)
			}
		}
		for i := range t.Checkpoints {
			t.Checkpoints[i].At = t.Checkpoints[i].At.Add(down)
		}
		for u, at := range q.seen {
			q.seen[u] = at.Add(down)
		}
		q.mu.Unlock()
	}
	if journal {
		s.record(&op{kind: opResume, dur: down}, 0, now)
	}
}

// keep runs while the store is open: a clock record every second (so a
// restart knows how long it was down), and a compaction when the log has
// grown past the snapshot.
func (s *Store) keep() {
	d := s.disk
	defer close(d.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		s.record(&op{kind: opClock}, 0, s.now())
		d.compactMu.Lock()
		due := d.log.Size() >= max(compactMin, d.snapSize)
		d.compactMu.Unlock()
		if due {
			if err := s.Compact(); err != nil {
				d.logger.Error("compacting the embedded line's journal failed; the log keeps growing until it succeeds", "dir", d.dir, "err", err)
			}
		}
	}
}

// Close stops keeping the store: what the journal holds is written and
// synced, and the directory let go. The store must not be used after.
func (s *Store) Close() error {
	d := s.disk
	if d == nil {
		return nil
	}
	d.closeOnce.Do(func() {
		close(d.stop)
		<-d.done
		s.record(&op{kind: opClock}, 0, s.now())
		d.closeErr = errors.Join(d.log.Close(), d.unlock())
	})
	return d.closeErr
}

// Compact writes every queue's state as the new snapshot and deletes the
// log segments it holds. Steps go on meanwhile: each queue is copied under
// its own lock, in turn.
func (s *Store) Compact() error {
	d := s.disk
	if d == nil {
		return errors.New("memstore: Compact on a store kept in memory only")
	}
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	start := time.Now()
	next, err := d.log.Rotate()
	if err != nil {
		return err
	}
	s.mu.Lock()
	names := make([]string, 0, len(s.queues))
	states := make([]*state, 0, len(s.queues))
	for name, q := range s.queues {
		names, states = append(names, name), append(states, q)
	}
	head := snapshotHeader{Version: snapshotVersion, TakenAt: s.now(), Next: next, Epoch: s.epoch, Queues: len(states)}
	s.mu.Unlock()
	var size int64
	path := filepath.Join(d.dir, snapshotFile)
	err = journal.WriteFileAtomic(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		cw := &countingWriter{w: bw}
		var buf bytes.Buffer
		frame := func(v any) error {
			buf.Reset()
			if err := gob.NewEncoder(&buf).Encode(v); err != nil {
				return err
			}
			_, err := cw.Write(journal.AppendFrame(nil, buf.Bytes()))
			return err
		}
		if err := frame(head); err != nil {
			return err
		}
		for i, q := range states {
			q.mu.Lock()
			img := q.image(names[i])
			q.mu.Unlock()
			if err := frame(img); err != nil {
				return err
			}
		}
		s.usedMu.Lock()
		used := usedImage{Ops: s.usedOps, Rows: s.rowImages(), Tokens: slices.Clone(s.tokens), Sessions: s.sessionImages(), Audit: slices.Clone(s.audit)}
		for k, until := range s.used {
			used.Queue, used.Key, used.Until = append(used.Queue, k.queue), append(used.Key, k.key), append(used.Until, until)
		}
		s.usedMu.Unlock()
		if err := frame(used); err != nil {
			return err
		}
		size = cw.n
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("writing the snapshot: %w", err)
	}
	before := d.log.Size()
	if err := d.log.RemoveBefore(next); err != nil {
		return err
	}
	d.snapSize = size
	d.logger.Info("compacted the embedded line's journal", "dir", d.dir, "snapshot_bytes", size,
		"log_bytes_dropped", before-d.log.Size(), "queues", len(states), "took", time.Since(start))
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// loadSnapshot reads the snapshot at path, if there is one, into s. It
// returns the first log segment to replay after it (0: no snapshot), its
// size, and sets last to when it was taken.
func (s *Store) loadSnapshot(path string, last *time.Time) (int, int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	var head snapshotHeader
	i := 0
	good, err := journal.ReadFrames(data, func(payload []byte) error {
		defer func() { i++ }()
		dec := gob.NewDecoder(bytes.NewReader(payload))
		switch {
		case i == 0:
			if err := dec.Decode(&head); err != nil {
				return err
			}
			if head.Version != snapshotVersion {
				return fmt.Errorf("snapshot version %d, this waitroom reads %d", head.Version, snapshotVersion)
			}
			s.epoch = head.Epoch
		case i <= head.Queues:
			var img queueImage
			if err := dec.Decode(&img); err != nil {
				return err
			}
			q, err := img.restore()
			if err != nil {
				return fmt.Errorf("queue %q: %w", img.Name, err)
			}
			s.queues[img.Name] = q
		default:
			var used usedImage
			if err := dec.Decode(&used); err != nil {
				return err
			}
			s.usedOps = used.Ops
			s.restoreRows(used.Rows)
			s.restoreSessions(used.Sessions)
			s.tokens = used.Tokens
			s.audit = used.Audit
			for j := range used.Key {
				s.used[usedKey{used.Queue[j], used.Key[j]}] = used.Until[j]
			}
		}
		return nil
	})
	if err == nil && i != head.Queues+2 {
		err = fmt.Errorf("%d records, want %d", i, head.Queues+2)
	}
	if err != nil {
		// Written whole and renamed into place: damage is the disk's.
		return 0, 0, fmt.Errorf("%s at byte %d: %w; move the directory aside to start with an empty line, or restore it from a backup", path, good, err)
	}
	*last = head.TakenAt
	return head.Next, int64(len(data)), nil
}
