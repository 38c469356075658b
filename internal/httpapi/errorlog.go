package httpapi

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// errorLog writes the log lines of error answers at most once per error
// code per second. The first error of a code is logged at once, in full;
// the same code again within the second is only counted, and one line a
// second later says how many there were and the last of them. During an
// outage every request fails: this keeps that to a line a second per code
// instead of a line per request (the log storm the access log avoids by
// being at debug level).
type errorLog struct {
	logger *slog.Logger
	every  time.Duration
	now    func() time.Time
	// after runs f once d has passed on now's clock (time.AfterFunc).
	after func(d time.Duration, f func()) stopper

	mu    sync.Mutex
	codes map[string]*codeLog
}

// codeLog is the state of one error code's lines.
type codeLog struct {
	logged  time.Time // when its last line was written
	held    int       // errors counted since, not yet logged
	level   slog.Level
	msg     string
	last    []any // the attributes of the last held error
	pending stopper
}

// stopper is a timer that can be stopped (*time.Timer).
type stopper interface{ Stop() bool }

func newErrorLog(logger *slog.Logger) *errorLog {
	return &errorLog{logger: logger, every: time.Second, now: time.Now, codes: map[string]*codeLog{},
		after: func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }}
}

// log writes msg with attrs now, or counts it for the code's next line.
func (l *errorLog) log(ctx context.Context, level slog.Level, code, msg string, attrs ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.codes[code]
	if !ok {
		c = &codeLog{}
		l.codes[code] = c
	}
	now := l.now()
	if c.held == 0 && now.Sub(c.logged) >= l.every {
		c.logged = now
		l.logger.Log(ctx, level, msg, slices.Concat(attrs, []any{"code", code})...)
		return
	}
	c.held++
	c.level, c.msg, c.last = level, msg, attrs
	if c.pending == nil {
		c.pending = l.after(c.logged.Add(l.every).Sub(now), func() { l.flushCode(code) })
	}
}

// flushCode writes the line of the errors held for code, if any.
func (l *errorLog) flushCode(code string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writeHeld(code, l.codes[code])
}

// writeHeld writes code's held errors as one line; the caller holds l.mu.
func (l *errorLog) writeHeld(code string, c *codeLog) {
	if c.pending != nil {
		c.pending.Stop()
		c.pending = nil
	}
	if c.held == 0 {
		return
	}
	attrs := slices.Concat(c.last, []any{"code", code, "repeated", c.held, "since", c.logged.UTC().Format(time.RFC3339Nano)})
	l.logger.Log(context.Background(), c.level, c.msg+" (repeated; the last one's details)", attrs...)
	c.held, c.logged = 0, l.now()
}

// Flush writes every line still held, and stops the timers (shutdown).
func (l *errorLog) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for code, c := range l.codes {
		l.writeHeld(code, c)
	}
}
