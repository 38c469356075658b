// Package ratelimit keeps token buckets per key (a client address) in this
// process: Take spends one token of the key's bucket, which holds at most
// Burst and refills at Rate per second.
//
// In process on purpose: the limits are a floor against one address
// stuffing the line, not an exact quota, and a check costs no round trip.
// N instances behind a load balancer that spreads one address over all of
// them allow up to N times the limit (docs/security.md).
package ratelimit

import (
	"sync"
	"sync/atomic"
	"time"
)

// Limit is a bucket's shape. A Rate of 0 is no limit at all.
type Limit struct {
	// Rate is tokens added per second.
	Rate float64
	// Burst is the most tokens a bucket holds, and so the most takes in a
	// row after a quiet spell.
	Burst int
}

// Off reports whether the limit lets everything through.
func (l Limit) Off() bool { return l.Rate <= 0 }

// MaxKeys bounds the buckets kept. Beyond it, buckets that have refilled
// (as good as absent) are dropped; if every one is still in use, new keys
// are let through untracked rather than refused, so a flood from more
// addresses than that cannot lock out people arriving from new ones (the
// proof of work still costs each of them).
const MaxKeys = 200_000

// Buckets is a set of token buckets, one per key, with one Limit.
type Buckets struct {
	limit   Limit
	now     func() time.Time
	maxKeys int // MaxKeys (tests lower it)

	mu        sync.Mutex
	buckets   map[string]*bucket
	nextSweep time.Time // no sweep before this (the last one freed little)

	untracked atomic.Uint64
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// New returns empty Buckets with limit; now is their clock (time.Now when
// nil).
func New(limit Limit, now func() time.Time) *Buckets {
	if now == nil {
		now = time.Now
	}
	return &Buckets{limit: limit, now: now, maxKeys: MaxKeys, buckets: map[string]*bucket{}}
}

// Limit is the buckets' shape.
func (b *Buckets) Limit() Limit { return b.limit }

// Take spends one token of key's bucket. When the bucket is empty it
// spends nothing and says how long until a token is there.
func (b *Buckets) Take(key string) (ok bool, retryAfter time.Duration) {
	if b.limit.Off() {
		return true, 0
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	k, found := b.buckets[key]
	if !found {
		if len(b.buckets) >= b.maxKeys && !b.sweep(now) {
			b.untracked.Add(1)
			return true, 0
		}
		k = &bucket{tokens: float64(b.limit.Burst), at: now}
		b.buckets[key] = k
	}
	k.refill(now, b.limit)
	if k.tokens < 1 {
		wait := time.Duration((1 - k.tokens) / b.limit.Rate * float64(time.Second))
		return false, max(wait, time.Millisecond)
	}
	k.tokens--
	return true, 0
}

func (k *bucket) refill(now time.Time, l Limit) {
	if d := now.Sub(k.at); d > 0 {
		k.tokens = min(k.tokens+d.Seconds()*l.Rate, float64(l.Burst))
		k.at = now
	}
}

// sweep drops the buckets that have refilled, and reports whether there is
// room for a new one. A sweep that frees less than a tenth of the room is
// not tried again for a second, so a full set of busy buckets costs one
// scan a second, not one per request. The caller holds b.mu.
func (b *Buckets) sweep(now time.Time) bool {
	if now.Before(b.nextSweep) {
		return false
	}
	before := len(b.buckets)
	for key, k := range b.buckets {
		k.refill(now, b.limit)
		if k.tokens >= float64(b.limit.Burst) {
			delete(b.buckets, key)
		}
	}
	if before-len(b.buckets) < b.maxKeys/10 {
		b.nextSweep = now.Add(time.Second)
	}
	return len(b.buckets) < b.maxKeys
}

// Len is how many buckets are kept.
func (b *Buckets) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buckets)
}

// Untracked counts takes let through because MaxKeys buckets were all in
// use.
func (b *Buckets) Untracked() uint64 { return b.untracked.Load() }
