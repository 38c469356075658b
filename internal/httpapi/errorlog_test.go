package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// syncBuffer is a bytes.Buffer safe for the logger and a flush timer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// fakeTimer is an errorLog timer on the test's clock.
type fakeTimer struct {
	at      time.Time
	f       func()
	stopped atomic.Bool
}

func (t *fakeTimer) Stop() bool { return !t.stopped.Swap(true) }

// TestErrorsAreLoggedOncePerCodePerSecond: an outage failing 1010 requests
// over 2.5 s (by the log's clock), and 5 unexpected errors among them, log
// at most a line per code per second (the first at once), and the lines
// account for every error: 1 each, or the count they carry.
func TestErrorsAreLoggedOncePerCodePerSecond(t *testing.T) {
	var buf syncBuffer
	s := New(Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	// The log's own clock, timers included: on a busy machine the loop
	// below takes longer than its 0.9 s of log time, and a real timer
	// would flush in the middle of it.
	now := time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC)
	var clock sync.Mutex
	var timers []*fakeTimer
	s.errLog.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	s.errLog.after = func(d time.Duration, f func()) stopper {
		clock.Lock()
		defer clock.Unlock()
		ft := &fakeTimer{at: now.Add(d), f: f}
		timers = append(timers, ft)
		return ft
	}
	advance := func(d time.Duration) {
		clock.Lock()
		now = now.Add(d)
		var due []*fakeTimer
		for _, ft := range timers {
			if !ft.at.After(now) && !ft.stopped.Swap(true) {
				due = append(due, ft)
			}
		}
		clock.Unlock()
		for _, ft := range due {
			ft.f()
		}
	}
	fail := func(err error) {
		s.writeError(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/queues/default/entries/me", nil), err)
	}
	down := fmt.Errorf("%w: dial tcp 127.0.0.1:6379: connection refused", queue.ErrUnavailable)
	for i := range 1000 { // the first 0.9 s
		fail(down)
		if i%200 == 0 {
			fail(errors.New("something unexpected"))
		}
		advance(900 * time.Microsecond)
	}
	if n := len(buf.lines(t)); n > 2 {
		t.Errorf("%d lines during the first second of the outage, want one per code", n)
	}
	advance(1600 * time.Millisecond)
	for range 10 {
		fail(down)
	}
	s.FlushErrorLog()

	count := map[string]int{}
	lines := map[string]int{}
	for _, l := range buf.lines(t) {
		code, _ := l["code"].(string)
		lines[code]++
		if n, ok := l["repeated"].(float64); ok {
			count[code] += int(n)
		} else {
			count[code]++
		}
		wantLevel := map[string]string{"unavailable": "WARN", "internal": "ERROR"}[code]
		if l["level"] != wantLevel {
			t.Errorf("%s logged at %v, want %s: %v", code, l["level"], wantLevel, l)
		}
	}
	if count["unavailable"] != 1010 || count["internal"] != 5 {
		t.Errorf("the lines account for %v errors, want 1010 unavailable and 5 internal", count)
	}
	// 2.5 s: a line at once, and at most one more per second after it.
	if lines["unavailable"] > 4 || lines["internal"] > 2 {
		t.Errorf("lines per code: %v, want at most 4 for unavailable over 2.5 s, 2 for internal", lines)
	}
	t.Logf("1015 errors, %d lines: %v", len(buf.lines(t)), lines)
}
