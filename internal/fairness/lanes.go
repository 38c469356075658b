package fairness

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"
)

// The lanes' shares, checked beside the model: admission is not a call, so
// when someone was let in is known only within a window (after the last
// answer that found them waiting, before the first that shows them let
// in), and the model, which places an admission where an answer shows it,
// cannot tell one lane's order of admissions from another's. So the shares
// are checked over the whole history, on what is certain whatever the
// order the calls took effect in:
//
//   - a lane certainly had someone waiting from the return of an enter
//     answered WAITING to the latest instant a later WAITING answer of the
//     same stay may have been read at (its call; a status from a snapshot,
//     its call less the snapshot age);
//   - a contention is a stretch of time during which every lane in force
//     certainly had someone waiting (cut around Redis restarts, which may
//     roll the tick state back);
//   - in a contention, a lane's admissions certainly in it (their windows
//     inside it) are at most its share of every admission that may have
//     happened in it (windows that meet it, a stay's that may have ended
//     in a token unseen counted too), plus two: lane.Allot keeps each
//     lane's carried credit within one person either way, at each end.
const shareSlack = 2

// stay is one user's time in line, from an enter to their admission, or
// to a leave or the end of the history.
type stay struct {
	lane string
	// lo, hi bound when the stay ended: admitted (an answer showed the
	// token), or maybe admitted (no answer shows it: hi is when it ended
	// for sure, infinity when never).
	lo, hi   int64
	admitted bool
	// waitFrom, waitTo: certainly waiting throughout (empty unless waitTo
	// > waitFrom).
	waitFrom, waitTo int64
}

// span is a stretch of time, in ns from the history's start.
type span struct{ from, to int64 }

// sharesHeld checks the shares of every queue with lanes in h: it returns
// the admissions it found certainly within contentions (what the check
// stood on) and the lanes let in beyond their share.
func sharesHeld(h *History, snapshotAge time.Duration) (checked int, out []string) {
	for _, s := range h.Specs {
		if len(s.Lanes) < 2 {
			continue
		}
		stays := staysOf(h, s, snapshotAge)
		for _, c := range contentions(h, s, stays) {
			n, certain := 0, map[string]int{}
			for _, st := range stays {
				if st.lo <= c.to && st.hi >= c.from {
					n++
				}
				if st.admitted && st.lo >= c.from && st.hi <= c.to {
					certain[st.lane]++
					checked++
				}
			}
			for _, ln := range s.Lanes {
				if share := ln.Share; float64(certain[ln.Name]) > share*float64(n)+shareSlack {
					out = append(out, fmt.Sprintf("queue %s: lane %s was let in %d of at most %d admitted from %.3f to %.3f s, while every lane had people waiting: more than its share %v of them and %d",
						s.Queue, ln.Name, certain[ln.Name], n, float64(c.from)/1e9, float64(c.to)/1e9, share, shareSlack))
				}
			}
		}
	}
	return checked, out
}

// staysOf reads every stay in line of the queue s's users, from each
// user's calls in the order they made them (one at a time).
func staysOf(h *History, s *Spec, snapshotAge time.Duration) []stay {
	byUser := map[string][]int{}
	for i, op := range h.Ops {
		if in := op.Input.(Input); in.Spec.Queue == s.Queue {
			byUser[in.User] = append(byUser[in.User], i)
		}
	}
	var out []stay
	for user, ops := range byUser {
		sort.SliceStable(ops, func(i, j int) bool { return h.Ops[ops[i]].Call < h.Ops[ops[j]].Call })
		t := tracker{lane: s.laneOf(user), snapshotAge: snapshotAge, firstEnter: -1}
		for _, i := range ops {
			t.see(h.Ops[i].Input.(Input), h.Ops[i].Output.(Output), h.Ops[i].Call, h.Ops[i].Return)
		}
		if t.cur != nil {
			t.end(false, infinity)
		}
		out = append(out, t.stays...)
	}
	return out
}

// tracker follows one user through their calls.
type tracker struct {
	lane        string
	snapshotAge time.Duration
	stays       []stay
	cur         *stay // in line now
	held        string
	holds       bool
	// firstEnter is the call of the first enter since the user was last
	// out (answered or not: it may have joined), -1 when none.
	firstEnter int64
}

func (t *tracker) see(in Input, out Output, call, ret int64) {
	switch {
	case in.Kind == Enter && out.Unknown:
		if t.cur == nil && !t.holds && t.firstEnter < 0 {
			t.firstEnter = call
		}
	case (in.Kind == Enter || in.Kind == Status) && out.State == Waiting:
		read := call
		if in.Kind == Status && fromSnapshot(out) {
			read -= int64(t.snapshotAge)
		}
		if t.cur == nil {
			from := read
			if in.Kind == Enter {
				from = ret // in line by its answer
			}
			t.cur, t.holds = &stay{lane: t.lane, lo: read, waitFrom: from, waitTo: from}, false
		}
		t.cur.lo, t.cur.waitTo = max(t.cur.lo, read), max(t.cur.waitTo, read)
	case (in.Kind == Enter || in.Kind == Status) && out.State == Ready,
		in.Kind == Order && !out.Unknown && out.Order != Invalid:
		t.admitted(call, ret)
		if out.State == Ready && in.Kind != Order {
			t.held = out.Token
		}
		t.holds = !(in.Kind == Order && out.Order == Bought)
	case in.Kind == Status && out.State == NotInQueue,
		in.Kind == Leave && !out.Unknown:
		if t.cur != nil {
			t.end(false, ret) // dropped, or left: maybe let in first
		}
		t.holds, t.firstEnter = false, -1
	case in.Kind == Order && out.Order == Invalid:
		if in.Token == t.held {
			t.holds = false
		}
	}
}

// admitted records an answer showing the user let in: the end of their
// stay, or of an enter let in at once (or of one not answered before it).
func (t *tracker) admitted(call, ret int64) {
	switch {
	case t.cur != nil:
		t.end(true, ret)
	case !t.holds:
		lo := call
		if t.firstEnter >= 0 {
			lo = t.firstEnter
		}
		t.stays = append(t.stays, stay{lane: t.lane, lo: lo, hi: ret, admitted: true})
	}
	t.firstEnter = -1
}

func (t *tracker) end(admitted bool, hi int64) {
	t.cur.hi, t.cur.admitted = hi, admitted
	t.stays = append(t.stays, *t.cur)
	t.cur = nil
}

// contentions are the stretches during which every lane of s certainly
// had someone waiting, less the time around each Redis restart.
func contentions(h *History, s *Spec, stays []stay) []span {
	var all []span
	for i, ln := range s.Lanes {
		var waiting []span
		for _, st := range stays {
			if st.lane == ln.Name && st.waitTo > st.waitFrom {
				waiting = append(waiting, span{st.waitFrom, st.waitTo})
			}
		}
		waiting = union(waiting)
		if i == 0 {
			all = waiting
		} else {
			all = intersect(all, waiting)
		}
	}
	for _, r := range h.Restarts {
		var cut []span
		for _, c := range all {
			if c.from < r.Killed {
				cut = append(cut, span{c.from, min(c.to, r.Killed)})
			}
			if c.to > r.Reopened {
				cut = append(cut, span{max(c.from, r.Reopened), c.to})
			}
		}
		all = cut
	}
	return all
}

// union merges spans into disjoint ones, in order.
func union(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// intersect is the time in both a and b, each disjoint and in order.
func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		from, to := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if from < to {
			out = append(out, span{from, to})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}
