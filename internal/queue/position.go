package queue

import "slices"

// Position is where the holder of ticket stands in a line, from the
// tickets alone: head is the lowest ticket waiting (0: nobody waits), last
// the last one issued, left holds, ascending, the tickets above head that
// are not waiting (those who left), cleared holds, ascending, the ticket
// each place cleared from the shadow line stands just behind
// (Snapshot.Cleared), and unlisted counts more leavers above the last
// listed (a list cut short, as the front document's may be). Tickets are
// consecutive, admission takes the lowest, and only leaving opens a gap,
// so the place is the ticket's distance from head less the gaps below it,
// plus the cleared places ahead of it (one at c ranks before ticket T iff
// c < T). position is that place, 1 the next in; lowest is the lowest
// place the holder may really have: position less unlisted for a ticket
// above every listed leaver (the unlisted may lie below it), position
// otherwise. ok is false when the tickets place no one: nobody waiting, a
// ticket below head (admitted, or skipped as a no-show), above last, or in
// left.
//
// This is the rule, once: the service's snapshot of the line (exact:
// unlisted 0) and front.Document.Place both ask here, and waiting.js's
// placeFromFront is its twin in the page; the cases of storetest's
// testdata/places.json hold them, and the stores' own ranks, equal.
//
// Issue 51 fitted as arguments, not new rules. A suspect's place is
// numbered in a line of its own (the shadow line), so people's tickets
// stay consecutive and this rule exact for them; a shadow place is shown
// where the ticket a person arriving with it would hold (Standing.Behind
// + 1) stands, which is the ticket its page is given (queue.View.Shadow),
// so this rule places it too while that ticket waits, and whoever answers
// it works the same place out from Behind. A place an operator clears joins
// the real line between two tickets (score c + 0.5, c the ticket a person
// arriving with it would stand behind), holding no ticket of its own: it
// is not a gap, it is one more ahead of every ticket above c, which is
// cleared's count. Lanes (issue 53) fit the same way: a lane is a line of
// its own, where tickets of a counter shared with other lanes count as
// gaps like those who left.
func Position(ticket, head, last int64, left, cleared []int64, unlisted int64) (position, lowest int64, ok bool) {
	if head == 0 || ticket < head || ticket > last {
		return 0, 0, false
	}
	below, gone := slices.BinarySearch(left, ticket)
	if gone {
		return 0, 0, false
	}
	// BinarySearch's index is the count of entries below ticket; a cleared
	// place at ticket itself stands behind it.
	ahead, _ := slices.BinarySearch(cleared, ticket)
	position = ticket - head + 1 - int64(below) + int64(ahead)
	lowest = position
	if unlisted > 0 && below == len(left) {
		lowest = max(1, position-unlisted)
	}
	return position, lowest, true
}
