package apptest

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
)

// Clock is an instance's wall clock (app.Main.Clock) that a test drives
// forward: it runs as time.Now does, plus what the test added. A test of
// something that takes a minute of the line's time (a no-show's timeout)
// runs it forward in a few seconds instead of waiting it out. It never
// goes back, and it never stops (the line's ticks come due by it).
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
	// A run forward under way: from offset at `from` (real time) to
	// offset+by at from+over, linearly.
	from     time.Time
	by, over time.Duration
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	return now.Add(c.offsetAt(now))
}

func (c *Clock) offsetAt(now time.Time) time.Duration {
	if c.over <= 0 {
		return c.offset
	}
	done := now.Sub(c.from)
	if done >= c.over {
		c.offset += c.by
		c.by, c.over = 0, 0
		return c.offset
	}
	return c.offset + time.Duration(float64(c.by)*float64(done)/float64(c.over))
}

// RunForward runs the clock d further ahead of real time over the next
// `over` of real time, smoothly, so that the line ticks in between, each
// at its own instant, as it would through d; what a run under way had
// still to go is added. It answers the clock's time when it will have got
// there.
func (c *Clock) RunForward(d, over time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	cur := c.offsetAt(now)
	left := c.offset + c.by - cur // a run under way: what it has still to go
	c.offset, c.from, c.by, c.over = cur, now, d+left, max(over, time.Millisecond)
	return now.Add(c.over + cur + c.by)
}

// BootWithClock is Boot with the instance's wall clock read from clock:
// sessions, challenges, the per-address limits and, on the embedded line,
// admission ticks, seen marks and token expiry (app.Main.Clock). On Redis
// the line reads Redis TIME, which no test drives: use the embedded
// backend.
func BootWithClock(t testing.TB, clock *Clock, edit func(*app.Config)) *Instance {
	t.Helper()
	cfg, err := app.Parse(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return start(t, cfg, Backend{Name: "embedded"}, "wrapp", edit, clock.Now)
}
