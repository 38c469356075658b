package queue

import (
	"context"
	"slices"
	"time"
)

// A shadow place (issue 51) polls as a person does, and must cost the
// instance no more: its answer comes from the same snapshot of the real
// line, by arithmetic, from what the store last said of it (its shadow
// ticket and Behind, the real line's last ticket when it arrived). The
// store is asked again every shadowRecheck, so a place cleared by an
// operator, let in under shadowAdmits last, or gone through another
// instance is seen within it.

// shadowRecheck is how long the store's word on a shadow place is taken
// before it is asked again.
const shadowRecheck = 5 * time.Second

// shadowPlace is what the store last said of a user's shadow place.
type shadowPlace struct {
	ticket, behind int64
	at             time.Time
}

// rememberShadow keeps the store's answer e on a shadow place; the caller
// holds v.mu and has checked e's epoch.
func (v *lineView) rememberShadow(k uint64, e Standing) {
	if _, ok := v.shadows[k]; !ok && len(v.shadows) >= snapshotMaxUsers {
		clear(v.shadows)
	}
	v.shadows[k] = shadowPlace{ticket: e.Ticket, behind: e.Behind, at: time.Now()}
}

// shadowStanding answers a shadow place from a snapshot of the real line
// no older than maxAge, while the store's word on it is recent, as a
// person's standing (Shadow set, Ticket the shadow line's): shown where a
// person who arrived with it would stand (ShownBehind). False sends the
// poll to the store: the word is old, the snapshot cannot count (an
// opening ahead or being placed, where a shadow place waits for the
// opening as people do; a draw; an incomplete list of leavers), or the
// line is another epoch's.
func (s *snapshots) shadowStanding(ctx context.Context, v *lineView, k uint64, sp shadowPlace, maxAge time.Duration) (Standing, bool) {
	if time.Since(sp.at) > shadowRecheck {
		s.misses.Add(1)
		return Standing{}, false
	}
	sn, ok := s.fresh(ctx, v, maxAge)
	if !ok || !sn.Complete || !sn.Pace.OpensAt.IsZero() || sn.Pace.Drawn {
		s.misses.Add(1)
		return Standing{}, false
	}
	v.mu.Lock()
	sp, known := v.shadows[k] // the fetch may have found another epoch
	sameLine := v.epoch == sn.Epoch
	v.mu.Unlock()
	if !known || !sameLine {
		s.misses.Add(1)
		return Standing{}, false
	}
	s.hits.Add(1)
	pos := shownBehind(sp.behind, sn)
	// Its length counts it, as the stores' answers do: one more than the
	// people waiting, and never short of its own position.
	return Standing{State: Waiting, Shadow: true, Ticket: sp.ticket, Behind: sp.behind, Position: pos,
		Length: max(sn.Length+1, pos), Pace: sn.Pace, Epoch: sn.Epoch}, true
}

// shownBehind is the position a shadow place that arrived behind ticket
// behind is shown in the line sn: one more than the people waiting with a
// ticket up to behind, cleared places standing at or below it counted
// (Snapshot.Cleared), so it falls at the real line's pace and stays 1 at
// the front. Position's arithmetic, for a ticket that need not be waiting.
func shownBehind(behind int64, sn Snapshot) int64 {
	behind = min(behind, sn.Last)
	cleared, _ := slices.BinarySearch(sn.Cleared, behind+1) // those at or below behind
	if sn.Head == 0 || behind < sn.Head {
		return 1 + int64(cleared)
	}
	gone, _ := slices.BinarySearch(sn.Left, behind+1)
	return 1 + behind - sn.Head + 1 - int64(gone) + int64(cleared)
}
