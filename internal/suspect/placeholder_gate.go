package suspect

// PLACEHOLDER (branch i51-gate): the API the gate codes against, until
// branch i51-sig lands the real Ranges and PollRate. Delete this file at
// that merge. (Its tracker is PollRates here: PollRate is the signal.)

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
)

// Ranges is the set of suspect address ranges read from files.
type Ranges struct {
	paths []string
	mu    sync.RWMutex
	set   []netip.Prefix
}

// NewRanges reads the files.
func NewRanges(paths []string) (*Ranges, error) {
	r := &Ranges{paths: paths}
	return r, r.Reload()
}

// Reload reads the files again; on error the old set is kept.
func (r *Ranges) Reload() error {
	var set []netip.Prefix
	for _, p := range r.paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line, _, _ := strings.Cut(sc.Text(), "#")
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			pr, err := netip.ParsePrefix(line)
			if err != nil {
				f.Close()
				return fmt.Errorf("%s:%d: %w", p, n, err)
			}
			set = append(set, pr.Masked())
		}
		f.Close()
	}
	r.mu.Lock()
	r.set = set
	r.mu.Unlock()
	return nil
}

// Contains says whether a is in a range.
func (r *Ranges) Contains(a netip.Addr) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a = a.Unmap()
	for _, p := range r.set {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Len is the count of ranges.
func (r *Ranges) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.set)
}

// PollRates tells sessions that poll much faster than told.
type PollRates struct {
	window time.Duration
	factor float64
	mu     sync.Mutex
	polls  map[string]*polls
}

type polls struct {
	last       time.Time
	fast, seen int
	since      time.Time
}

// NewPollRate returns a tracker.
func NewPollRate(window time.Duration, factor float64) *PollRates {
	return &PollRates{window: window, factor: factor, polls: map[string]*polls{}}
}

// Polled records a poll at now by key, told to wait told before it.
func (p *PollRates) Polled(key string, told time.Duration, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.polls[key]
	if !ok || now.Sub(e.since) > p.window {
		e = &polls{since: now}
		p.polls[key] = e
	}
	if !e.last.IsZero() {
		e.seen++
		if float64(now.Sub(e.last))*p.factor < float64(told) {
			e.fast++
		}
	}
	e.last = now
}

// Suspect says whether key polled much faster than told within the window.
func (p *PollRates) Suspect(key string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.polls[key]
	return ok && now.Sub(e.since) <= p.window && e.seen >= 3 && e.fast*2 > e.seen
}
