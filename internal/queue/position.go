package queue

import "slices"

// Position is where the holder of ticket stands in a line, from the
// tickets alone: head is the lowest ticket waiting (0: nobody waits), last
// the last one issued, left holds, ascending, the tickets above head that
// are not waiting (those who left), and unlisted counts more of them above
// the last listed (a list cut short, as the front document's may be).
// Tickets are consecutive, admission takes the lowest, and only leaving
// opens a gap, so the place is the ticket's distance from head less the
// gaps below it. position is that place, 1 the next in; lowest is the
// lowest place the holder may really have: position less unlisted for a
// ticket above every listed one (the unlisted may lie below it), position
// otherwise. ok is false when the tickets place no one: nobody waiting, a
// ticket below head (admitted, or skipped as a no-show), above last, or in
// left.
//
// This is the rule, once: the service's snapshot of the line (exact:
// unlisted 0) and front.Document.Place both ask here, and waiting.js's
// placeFromFront is its twin in the page; the cases of storetest's testdata/places.json hold
// them, and the stores' own ranks, equal.
//
// What comes next fits as arguments, not new rules. A lane (issue 53) is
// a line of its own: its tickets are placed by its own head, last and
// gaps, where tickets of a counter shared with other lanes count as gaps
// like those who left (listed, or counted in unlisted where only a count
// is kept). A ticket that is not in the line (a suspect's, issue 51) is
// numbered in a line of its own (the shadow line) and placed by that
// line's head, last and leavers, never by the real line's: the caller
// picks the line by what the ticket names, as it picks the epoch.
func Position(ticket, head, last int64, left []int64, unlisted int64) (position, lowest int64, ok bool) {
	if head == 0 || ticket < head || ticket > last {
		return 0, 0, false
	}
	below, gone := slices.BinarySearch(left, ticket)
	if gone {
		return 0, 0, false
	}
	position = ticket - head + 1 - int64(below)
	lowest = position
	if unlisted > 0 && below == len(left) {
		lowest = max(1, position-unlisted)
	}
	return position, lowest, true
}
