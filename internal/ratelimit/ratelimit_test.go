package ratelimit

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }

func TestBurstThenRate(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Unix(1000, 0)}
	b := New(Limit{Rate: 2, Burst: 5}, clk.now)
	for i := range 5 {
		if ok, _ := b.Take("a"); !ok {
			t.Fatalf("take %d of a burst of 5 refused", i+1)
		}
	}
	ok, wait := b.Take("a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("6th take: %v, retry after %v; want refused, 500ms (2/s)", ok, wait)
	}
	if ok, _ := b.Take("b"); !ok {
		t.Fatal("another key shares a's bucket")
	}
	clk.add(499 * time.Millisecond)
	if ok, _ := b.Take("a"); ok {
		t.Fatal("a token before its time")
	}
	clk.add(time.Millisecond)
	if ok, _ := b.Take("a"); !ok {
		t.Fatal("no token after 500ms at 2/s")
	}
	// A long quiet spell refills up to the burst, no more.
	clk.add(time.Hour)
	n := 0
	for {
		if ok, _ := b.Take("a"); !ok {
			break
		}
		n++
	}
	if n != 5 {
		t.Fatalf("after an hour: %d takes, want the burst of 5", n)
	}
}

func TestOff(t *testing.T) {
	t.Parallel()
	b := New(Limit{}, nil)
	for range 1000 {
		if ok, _ := b.Take("a"); !ok {
			t.Fatal("a zero limit refused")
		}
	}
	if b.Len() != 0 {
		t.Fatalf("a zero limit keeps %d buckets", b.Len())
	}
}

// TestBoundedMemory: beyond MaxKeys, refilled buckets make room; when all
// are busy, new keys pass untracked instead of being refused.
func TestBoundedMemory(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Unix(1000, 0)}
	b := New(Limit{Rate: 1, Burst: 1}, clk.now)
	b.maxKeys = 1000
	for i := range b.maxKeys {
		b.Take(fmt.Sprint(i)) // each bucket now empty: busy
	}
	if ok, _ := b.Take("new"); !ok || b.Untracked() != 1 || b.Len() != b.maxKeys {
		t.Fatalf("a new key with every bucket busy: ok=%v untracked=%d len=%d", ok, b.Untracked(), b.Len())
	}
	if ok, _ := b.Take("0"); ok {
		t.Fatal("a busy tracked key was let through")
	}
	clk.add(2 * time.Second) // every bucket refilled: a sweep frees them
	if ok, _ := b.Take("newer"); !ok || b.Len() != 1 {
		t.Fatalf("after refilling: ok=%v len=%d, want the sweep to leave only the new key", ok, b.Len())
	}
}

func TestConcurrentTakesNeverExceedTheBurst(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Unix(1000, 0)} // frozen: no refill
	b := New(Limit{Rate: 1, Burst: 50}, clk.now)
	var mu sync.Mutex
	taken := 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if ok, _ := b.Take("a"); ok {
					mu.Lock()
					taken++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if taken != 50 {
		t.Fatalf("200 concurrent takes got %d, want the burst of 50", taken)
	}
}
