package suspect

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)

// poll runs a session's polls: each waits gap(i) after the one before and
// reports the told of the answer before it; it returns the time of the
// last poll.
func poll(p *PollRates, key string, start time.Time, n int, told time.Duration, gap func(i int) time.Duration) time.Time {
	now := start
	for i := range n {
		if i > 0 {
			now = now.Add(gap(i))
		}
		t := told
		if i == 0 {
			t = 0
		}
		p.Polled(key, t, now)
	}
	return now
}

func TestPollRateAPageIsNeverASuspect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, told := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 20 * time.Second} {
		t.Run(told.String(), func(t *testing.T) {
			p := NewPollRate(DefaultPollWindow, DefaultPollFactor)
			now := t0
			var checks int
			// Ten minutes of polls at the told pace, ±20% jitter, with a
			// burst of three quick retries (after an error) every 15
			// polls: judged after every poll.
			for i := 0; now.Before(t0.Add(10 * time.Minute)); i++ {
				gap := time.Duration(float64(told) * (0.8 + 0.4*rng.Float64()))
				if i%15 >= 12 {
					gap = 200 * time.Millisecond
				}
				now = now.Add(gap)
				p.Polled("q\x00person", told, now)
				checks++
				if p.Suspect("q\x00person", now) {
					t.Fatalf("poll %d at %v: a page polling at its pollAfter is a suspect", i, now.Sub(t0))
				}
			}
			if checks < 30 {
				t.Fatalf("only %d polls", checks)
			}
		})
	}
}

func TestPollRateFastSessionIsASuspectThenFades(t *testing.T) {
	p := NewPollRate(DefaultPollWindow, DefaultPollFactor)
	const told = 5 * time.Second
	key := "q\x00bot"
	// 5× faster than told: a poll a second.
	last := poll(p, key, t0, 20, told, func(int) time.Duration { return told / 5 })
	if !p.Suspect(key, last) {
		t.Fatal("a session polling 5× faster than told is not a suspect")
	}
	if !p.Suspect(key, last.Add(30*time.Second)) {
		t.Error("the mark faded within the window")
	}
	if p.Suspect(key, last.Add(DefaultPollWindow+time.Second)) {
		t.Error("the mark did not fade once the window passed")
	}
	// Another session (another user in the same queue, maybe behind the
	// same address) is judged on its own.
	if p.Suspect("q\x00neighbour", last) {
		t.Error("an unseen session is a suspect")
	}
	// Slowing down to the told pace clears the mark within a window or so.
	now := poll(p, key, last.Add(told), 30, told, func(int) time.Duration { return told })
	if p.Suspect(key, now) {
		t.Error("a session that went back to its pace is still a suspect")
	}
}

func TestPollRateNeedsAHandfulOfPolls(t *testing.T) {
	p := NewPollRate(DefaultPollWindow, DefaultPollFactor)
	// Five quick polls (four timed): too few to judge.
	last := poll(p, "q\x00u", t0, 5, 5*time.Second, func(int) time.Duration { return 100 * time.Millisecond })
	if p.Suspect("q\x00u", last) {
		t.Error("four timed polls make a suspect")
	}
	last = poll(p, "q\x00u", last.Add(100*time.Millisecond), 6, 5*time.Second, func(int) time.Duration { return 100 * time.Millisecond })
	if !p.Suspect("q\x00u", last) {
		t.Error("nine timed polls at 50× the pace are no suspect")
	}
}

func TestPollRateFactorBoundary(t *testing.T) {
	const told = 3 * time.Second
	tests := []struct {
		gap  time.Duration
		want bool
	}{
		{told / 2, false},                     // 2× faster
		{told/3 + 50*time.Millisecond, false}, // just under 3×
		{told/3 - 50*time.Millisecond, true},  // just over 3×
		{told / 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.gap.String(), func(t *testing.T) {
			p := NewPollRate(DefaultPollWindow, DefaultPollFactor)
			last := poll(p, "k", t0, 30, told, func(int) time.Duration { return tt.gap })
			if got := p.Suspect("k", last); got != tt.want {
				t.Errorf("Suspect = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPollRateForgetsTheOldestKeys(t *testing.T) {
	const maxKeys = 64 * pollShards
	p := newPollRate(DefaultPollWindow, DefaultPollFactor, maxKeys)
	fast := func(key string, start time.Time) time.Time {
		return poll(p, key, start, 10, 5*time.Second, func(int) time.Duration { return 100 * time.Millisecond })
	}
	now := fast("first", t0)
	keep := fast("kept", now)
	// Ten times the cap of other sessions, with "kept" polled all along:
	// "first" is forgotten, "kept" is not, and no shard holds more than
	// its share.
	for i := range 10 * maxKeys {
		p.Polled("other"+strconv.Itoa(i), 0, keep)
		if i%(maxKeys/8) == 0 {
			keep = fast("kept", keep)
		}
	}
	if p.Suspect("first", keep) {
		t.Error("the oldest session is remembered past the cap")
	}
	if !p.Suspect("kept", keep) {
		t.Error("a session polled all along was forgotten")
	}
	for i := range p.shards {
		if n := len(p.shards[i].young) + len(p.shards[i].old); n > 2*p.perGen {
			t.Fatalf("shard %d holds %d sessions, over its %d", i, n, 2*p.perGen)
		}
	}
}

func TestPollRateConcurrent(t *testing.T) {
	p := NewPollRate(DefaultPollWindow, DefaultPollFactor)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			key := fmt.Sprintf("q\x00bot%d", g)
			last := poll(p, key, t0, 50, 5*time.Second, func(int) time.Duration { return time.Second })
			if !p.Suspect(key, last) {
				t.Errorf("%s is not a suspect", key)
			}
		})
	}
	wg.Wait()
}

// BenchmarkPollRateFull fills a counter at its default cap (a million
// sessions, three million seen) and reports what it holds on the heap.
func BenchmarkPollRateFull(b *testing.B) {
	key := make([]byte, 0, 32)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p := NewPollRate(DefaultPollWindow, DefaultPollFactor)
		for i := range 3 * defaultPollKeys {
			key = strconv.AppendInt(append(key[:0], "queue\x00user-"...), int64(i), 10)
			p.Polled(string(key), 5*time.Second, t0.Add(time.Duration(i)*time.Microsecond))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(p)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MB/full")
	}
}

// BenchmarkPolled is the cost of noting one poll, in parallel as the
// instance's handlers do.
func BenchmarkPolled(b *testing.B) {
	p := NewPollRate(DefaultPollWindow, DefaultPollFactor)
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = "queue\x00user-" + strconv.Itoa(i)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(keys))
		now := t0
		for pb.Next() {
			now = now.Add(time.Millisecond)
			p.Polled(keys[i%len(keys)], 5*time.Second, now)
			i++
		}
	})
}
