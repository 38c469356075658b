package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Log is the append-only log: a run of segment files (log-00000001, …) in
// one directory. Append only copies a record into memory; one goroutine
// writes whatever has piled up with one write call, and syncs as the
// policy says, so appending never waits for the disk and, under Always,
// every change waiting for a sync shares the next one.
type Log struct {
	dir    string
	policy Policy

	mu       sync.Mutex
	synced   *sync.Cond // broadcast when durable or err moves
	pending  []byte     // framed records not yet written
	spare    []byte
	appended uint64 // the number of the last record appended
	durable  uint64 // the last record written (and synced under Always)
	err      error  // the first write or sync error; the log takes no more
	sizes    map[int]int64

	wake    chan struct{}
	rotate  chan chan rotated
	closing chan struct{}
	stopped chan struct{}
	file    *os.File
	seg     int
}

type rotated struct {
	seg int
	err error
}

// segmentName is the file of segment n.
func segmentName(n int) string { return fmt.Sprintf("log-%08d", n) }

// Segments lists the segments in dir, oldest first.
func Segments(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []int
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), "log-"); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > 0 {
				segs = append(segs, n)
			}
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// SegmentPath is the path of segment n in dir.
func SegmentPath(dir string, n int) string { return filepath.Join(dir, segmentName(n)) }

// coalesce is how long the writer lets records pile up before a write
// under EverySec and No: what a killed process may lose, at most.
const coalesce = 2 * time.Millisecond

// syncPeriod is how often EverySec syncs.
const syncPeriod = time.Second

// SyncPeriod is the most a crash of the machine loses under policy: what
// was appended since the last sync.
func SyncPeriod(p Policy) time.Duration {
	switch p {
	case Always:
		return 0
	case EverySec:
		return syncPeriod
	}
	return 30 * time.Second // Linux's dirty_expire_centisecs, plus its writeback interval
}

// OpenLog starts a new segment after every segment in dir (whose sizes it
// counts in Size) and the goroutine writing to it.
func OpenLog(dir string, policy Policy) (*Log, error) {
	segs, err := Segments(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, policy: policy, sizes: map[int]int64{}, wake: make(chan struct{}, 1),
		rotate: make(chan chan rotated), closing: make(chan struct{}), stopped: make(chan struct{})}
	l.synced = sync.NewCond(&l.mu)
	for _, n := range segs {
		st, err := os.Stat(SegmentPath(dir, n))
		if err != nil {
			return nil, err
		}
		l.sizes[n] = st.Size()
	}
	next := 1
	if len(segs) > 0 {
		next = segs[len(segs)-1] + 1
	}
	if err := l.openSegment(next); err != nil {
		return nil, err
	}
	go l.write()
	return l, nil
}

func (l *Log) openSegment(n int) error {
	f, err := os.OpenFile(SegmentPath(l.dir, n), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := SyncDir(l.dir); err != nil {
		f.Close()
		return err
	}
	l.file, l.seg = f, n
	l.mu.Lock()
	l.sizes[n] = 0
	l.mu.Unlock()
	return nil
}

// Append adds one record and returns its number, for Wait. It never
// waits for the disk.
func (l *Log) Append(record []byte) uint64 {
	l.mu.Lock()
	l.pending = AppendFrame(l.pending, record)
	l.appended++
	n := l.appended
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return n
}

// Wait returns once record n is as safe as the policy promises: under
// Always, synced; otherwise at once. It returns the log's error if the
// record cannot be made so.
func (l *Log) Wait(n uint64) error {
	if l.policy != Always {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.durable < n && l.err == nil {
		l.synced.Wait()
	}
	if l.durable < n {
		return l.err
	}
	return nil
}

// Err is the first write or sync error: after it the log keeps nothing
// more, and the store must refuse changes (it cannot keep them).
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Size is the bytes in the log's segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.sizes {
		n += s
	}
	return n
}

// Rotate closes the segment being written (synced) and starts the next;
// it returns the new segment's number: every record appended after Rotate
// returns is in it or later.
func (l *Log) Rotate() (int, error) {
	reply := make(chan rotated)
	select {
	case l.rotate <- reply:
		r := <-reply
		return r.seg, r.err
	case <-l.stopped:
		return 0, ErrClosed
	}
}

// RemoveBefore deletes the segments older than n (a snapshot holds
// everything they did).
func (l *Log) RemoveBefore(n int) error {
	segs, err := Segments(l.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range segs {
		if s >= n {
			continue
		}
		if err := os.Remove(SegmentPath(l.dir, s)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		l.mu.Lock()
		delete(l.sizes, s)
		l.mu.Unlock()
	}
	return errors.Join(append(errs, SyncDir(l.dir))...)
}

// ErrClosed is the log's error once it is closed.
var ErrClosed = errors.New("journal: the log is closed")

// Close writes and syncs what is pending and stops the writer.
func (l *Log) Close() error {
	select {
	case <-l.stopped:
	default:
		close(l.closing)
		<-l.stopped
	}
	if err := l.Err(); !errors.Is(err, ErrClosed) {
		return err
	}
	return nil
}

// write is the one goroutine that writes the log.
func (l *Log) write() {
	defer close(l.stopped)
	var tick <-chan time.Time
	if l.policy == EverySec {
		t := time.NewTicker(syncPeriod)
		defer t.Stop()
		tick = t.C
	}
	for {
		sync, final := l.policy == Always, false
		var reply chan rotated
		select {
		case <-l.wake:
			if l.policy == Always {
				break
			}
			// Nobody waits for this write: let records pile up a moment
			// so one write takes many (a write per change cost the
			// changes a third of their speed on two cores).
			pause := time.NewTimer(coalesce)
			select {
			case <-pause.C:
			case <-tick:
				sync = true
			case reply = <-l.rotate:
				sync = true
			case <-l.closing:
				sync, final = true, true
			}
			pause.Stop()
		case <-tick:
			sync = true
		case reply = <-l.rotate:
			sync = true
		case <-l.closing:
			sync, final = true, true
		}
		err := l.flush(sync)
		if reply != nil {
			if err == nil {
				err = l.file.Close()
				if err == nil {
					err = l.openSegment(l.seg + 1)
				}
				l.fail(err)
			}
			reply <- rotated{seg: l.seg, err: err}
		}
		if final {
			l.fail(l.file.Close())
			l.fail(ErrClosed) // wakes any Wait: nothing more will be written
			return
		}
	}
}

// flush writes what is pending with one call, and syncs when asked (or
// when nothing needed writing but a sync is due).
func (l *Log) flush(sync bool) error {
	l.mu.Lock()
	buf, last := l.pending, l.appended
	l.pending, l.spare = l.spare[:0], nil
	broken := l.err
	l.mu.Unlock()
	if broken != nil {
		return broken
	}
	var err error
	if len(buf) > 0 {
		_, err = l.file.Write(buf)
	}
	if err == nil && sync {
		err = l.file.Sync()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failLocked(fmt.Errorf("journal: writing %s: %w", l.file.Name(), err))
		return l.err
	}
	l.sizes[l.seg] += int64(len(buf))
	l.durable = last
	if cap(buf) <= 4<<20 { // keep the buffer unless a burst made it huge
		l.spare = buf[:0]
	}
	l.synced.Broadcast()
	return nil
}

func (l *Log) fail(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failLocked(err)
}

func (l *Log) failLocked(err error) {
	if l.err == nil {
		l.err = err
	}
	l.synced.Broadcast()
}
