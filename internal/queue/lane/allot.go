package lane

import (
	"math"
	"slices"
)

// Demand is one lane as a tick finds it: its share in force (0 for a lane
// no longer in force that still has people in it) and how many wait in it.
type Demand struct {
	Name    string
	Share   float64
	Waiting int64
}

// Split is how one tick's seats fall to the lanes, lane by lane in the
// order of the Demands it was made from.
type Split struct {
	// Seats is how many each lane is to let in; never more than wait in it.
	Seats []int
	// Shares is the share of admission each lane gets at this tick: its
	// own, plus its part of what the lanes with nobody waiting hand over
	// (0 for a lane with nobody waiting). An estimate divides a lane's
	// position by the rate × its share.
	Shares []float64
	names  []string
	owed   []float64 // credit after this tick's part, before its seats
}

// creditBound bounds a lane's carried credit to within one person either
// way: a lane that could not use its part (too few waiting, its people
// no-shows) does not save it up for a burst, and one given others' unused
// seats does not owe them for ever.
const creditBound = 1.0

// Allot splits n seats among lanes by their shares, with credit (by lane
// name, as Carry left it last tick; nil at first) carried over so that a
// small lane is served its share even when a tick lets in one or two
// people: a deficit round robin. Each waiting lane is owed its effective
// share of n on top of its credit, and seats go one at a time to the lane
// owed most that still has someone to let in (the earlier lane on a tie).
// A lane with nobody waiting gets nothing and its share goes to the others
// in proportion to theirs (equally, if theirs are all 0). Over any run of
// ticks while a lane has people waiting, it is let in its share of the
// seats to within one person either way (creditBound).
func Allot(n int, lanes []Demand, credit map[string]float64) Split {
	s := Split{Seats: make([]int, len(lanes)), Shares: make([]float64, len(lanes)), names: make([]string, len(lanes)), owed: make([]float64, len(lanes))}
	total, waiting := 0.0, 0
	for i, d := range lanes {
		s.names[i] = d.Name
		if d.Waiting > 0 {
			total += d.Share
			waiting++
		}
	}
	for i, d := range lanes {
		if d.Waiting == 0 {
			continue
		}
		if total > 0 {
			s.Shares[i] = d.Share / total
		} else {
			s.Shares[i] = 1 / float64(waiting)
		}
		s.owed[i] = credit[d.Name] + float64(n)*s.Shares[i]
	}
	for range n {
		best := -1
		for i, d := range lanes {
			if int64(s.Seats[i]) >= d.Waiting {
				continue
			}
			if best < 0 || s.owed[i]-float64(s.Seats[i]) > s.owed[best]-float64(s.Seats[best]) {
				best = i
			}
		}
		if best < 0 {
			break // everyone waiting has a seat
		}
		s.Seats[best]++
	}
	return s
}

// More gives one more seat, beyond Seats, to the lane owed most among
// those able (a lane that let in all its seats and has more waiting),
// for a seat another lane could not use; it returns the lane's index, or
// -1 when no lane is able.
func (s *Split) More(used []int, able func(i int) bool) int {
	best := -1
	for i := range s.Seats {
		if !able(i) {
			continue
		}
		if best < 0 || s.owed[i]-float64(used[i]) > s.owed[best]-float64(used[best]) {
			best = i
		}
	}
	return best
}

// Carry is the credit to keep for the next tick, by lane name, given the
// seats each lane used: what it was owed less what it used, within
// creditBound. Lanes with nobody waiting keep none.
func (s Split) Carry(used []int) map[string]float64 {
	var out map[string]float64
	for i, name := range s.names {
		if s.Shares[i] == 0 {
			continue
		}
		c := math.Round(max(-creditBound, min(creditBound, s.owed[i]-float64(used[i])))*1e6) / 1e6
		if c == 0 {
			continue
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[name] = c
	}
	return out
}

// ShareOf is the share lane name got at this tick (0: not waiting).
func (s Split) ShareOf(name string) float64 {
	if i := slices.Index(s.names, name); i >= 0 {
		return s.Shares[i]
	}
	return 0
}
