package suspect

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"sync/atomic"
)

// Ranges is the set of suspect address ranges read from the
// --suspect-ranges files (data-centre and cloud lists). Contains is read on
// every place taken, so it takes no lock: the whole set is an immutable
// value behind an atomic pointer, and Reload builds a new one beside it and
// swaps it in at once. A lookup is a binary search over sorted, merged
// intervals, O(log n) at 100,000 ranges.
type Ranges struct {
	paths []string
	set   atomic.Pointer[rangeSet]
}

// rangeSet is one load of every file: IPv4 and IPv6 intervals kept apart,
// each sorted by start, merged so that none overlaps or touches the next.
type rangeSet struct {
	v4 []span[uint32]
	v6 []span[u128]
}

// span is a closed interval [lo, hi] of addresses.
type span[T any] struct{ lo, hi T }

// u128 is an IPv6 address as a number, so intervals compare and merge the
// way IPv4's do.
type u128 struct{ hi, lo uint64 }

func (a u128) cmp(b u128) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

// next is a+1, and whether it did not overflow.
func (a u128) next() (u128, bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return a, false
}

// NewRanges reads the files (each plain CIDRs, AWS ip-ranges.json, Google
// cloud.json or Azure service tags: the file's shape decides) and returns
// the set; an error names the file and the line or JSON path at fault.
// No paths gives an empty set.
func NewRanges(paths []string) (*Ranges, error) {
	r := &Ranges{paths: slices.Clone(paths)}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload reads every file again and swaps the whole set in at once (on
// SIGHUP). A file that cannot be read or parsed leaves the set in force
// untouched, so a bad download never empties the list, and the error names
// the file and the line or JSON path.
func (r *Ranges) Reload() error {
	var b setBuilder
	for _, path := range r.paths {
		if err := readRangesFile(path, &b); err != nil {
			return err
		}
	}
	r.set.Store(b.build())
	return nil
}

// Contains reports whether addr is in a suspect range. An IPv4-mapped IPv6
// address (::ffff:a.b.c.d, as a dual-stack listener reports IPv4 peers)
// is looked up as the IPv4 address it is. A nil Ranges contains nothing.
func (r *Ranges) Contains(addr netip.Addr) bool {
	if r == nil || !addr.IsValid() {
		return false
	}
	s := r.set.Load()
	addr = addr.Unmap()
	if addr.Is4() {
		return s.has4(v4num(addr))
	}
	return s.has6(v6num(addr))
}

// Len is the number of intervals the set holds once overlapping and
// adjacent ranges are merged (what a lookup searches), for the start-up
// log and the reload's.
func (r *Ranges) Len() int {
	if r == nil {
		return 0
	}
	s := r.set.Load()
	return len(s.v4) + len(s.v6)
}

func (s *rangeSet) has4(x uint32) bool {
	// The last interval starting at or below x is the only one that can
	// hold it, since the intervals are disjoint and sorted.
	i, found := slices.BinarySearchFunc(s.v4, x, func(sp span[uint32], x uint32) int { return cmp.Compare(sp.lo, x) })
	if found {
		return true
	}
	return i > 0 && x <= s.v4[i-1].hi
}

func (s *rangeSet) has6(x u128) bool {
	i, found := slices.BinarySearchFunc(s.v6, x, func(sp span[u128], x u128) int { return sp.lo.cmp(x) })
	if found {
		return true
	}
	return i > 0 && x.cmp(s.v6[i-1].hi) <= 0
}

func v4num(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func v6num(a netip.Addr) u128 {
	b := a.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// mapped is ::ffff:0.0.0.0/96, where IPv4-mapped IPv6 addresses live.
var mapped = netip.MustParsePrefix("::ffff:0.0.0.0/96")

// setBuilder collects the prefixes of one load before they are merged.
type setBuilder struct {
	v4 []span[uint32]
	v6 []span[u128]
}

// add takes one prefix as written in a file. Host bits are ignored (AWS
// documents prefixes such as 198.51.100.2/24). A prefix inside
// ::ffff:0:0/96 is kept as the IPv4 range it maps, since Contains looks
// mapped addresses up as IPv4; a wider IPv6 prefix that covers all of it
// covers all of IPv4 as well.
func (b *setBuilder) add(p netip.Prefix) {
	p = p.Masked()
	a := p.Addr()
	if a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		a = p.Addr()
	} else if a.Is6() && p.Bits() <= 96 && p.Contains(mapped.Addr()) {
		b.v4 = append(b.v4, span[uint32]{0, ^uint32(0)})
	}
	if a.Is4() {
		lo := v4num(a)
		host := uint32(0)
		if p.Bits() < 32 {
			host = ^uint32(0) >> p.Bits()
		}
		b.v4 = append(b.v4, span[uint32]{lo, lo | host})
		return
	}
	lo := v6num(a)
	host := u128{^uint64(0), ^uint64(0)}
	switch bits := p.Bits(); {
	case bits >= 128:
		host = u128{}
	case bits >= 64:
		host = u128{0, ^uint64(0) >> (bits - 64)}
	default:
		host.hi = ^uint64(0) >> bits
	}
	b.v6 = append(b.v6, span[u128]{lo, u128{lo.hi | host.hi, lo.lo | host.lo}})
}

func (b *setBuilder) build() *rangeSet {
	return &rangeSet{
		v4: merge(b.v4, cmp.Compare[uint32], func(x uint32) (uint32, bool) { return x + 1, x != ^uint32(0) }),
		v6: merge(b.v6, u128.cmp, u128.next),
	}
}

// merge sorts the intervals and joins those that overlap or touch, so that
// a lookup finds at most one candidate.
func merge[T any](spans []span[T], compare func(a, b T) int, next func(T) (T, bool)) []span[T] {
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, func(a, b span[T]) int { return compare(a.lo, b.lo) })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		after, ok := next(last.hi)
		if !ok || compare(sp.lo, after) <= 0 {
			// Overlapping or adjacent (or last already reaches the top of
			// the address space): extend.
			if compare(sp.hi, last.hi) > 0 {
				last.hi = sp.hi
			}
			continue
		}
		out = append(out, sp)
	}
	return slices.Clip(out)
}
