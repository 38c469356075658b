package memstore

import "github.com/waitroom/waitroom/internal/queue/admission"

// line is the waiting line in memory: users in ticket order with O(log n)
// rank, the in-process twin of a Redis sorted set scored by an INCR ticket.
//
// Tickets only grow, so a new user is always appended. Slot i holds ticket
// base+i; a Fenwick tree over the slots counts who is still there, which
// makes rank a prefix sum. Slots emptied at the front (admission pops from
// there) are dropped once they are the larger part, so memory follows the
// number waiting, not the number ever seen.
type line struct {
	base    int64    // ticket of slot 0
	users   []string // "" where the user left or was admitted
	fenwick []int32  // 1-based Fenwick tree over users' occupancy
	head    int      // no one waits before this slot
	tickets map[string]int64
}

func newLine() *line { return &line{tickets: map[string]int64{}} }

func (l *line) len() int64 { return int64(len(l.tickets)) }

// rank returns the user's 0-based place, or false if they are not in line.
func (l *line) rank(user string) (int64, bool) {
	t, ok := l.tickets[user]
	if !ok {
		return 0, false
	}
	return int64(l.prefix(int(t-l.base)+1)) - 1, true
}

// ticket returns the user's ticket, or false if they are not in line.
func (l *line) ticket(user string) (int64, bool) {
	t, ok := l.tickets[user]
	return t, ok
}

// headTicket is the lowest ticket in line, 0 when no one waits.
func (l *line) headTicket() int64 {
	if len(l.tickets) == 0 {
		return 0
	}
	return l.base + int64(l.head)
}

// ticketAt returns the ticket of the user at the 0-based rank, found by
// descending the Fenwick tree.
func (l *line) ticketAt(rank int64) (int64, bool) {
	if rank < 0 || rank >= l.len() {
		return 0, false
	}
	pos, want := 0, int32(rank+1)
	step := 1
	for step*2 <= len(l.fenwick) {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if next := pos + step; next <= len(l.fenwick) && l.fenwick[next-1] < want {
			pos, want = next, want-l.fenwick[next-1]
		}
	}
	return l.base + int64(pos), true
}

// push appends a user with the given ticket, which must exceed every ticket
// in line.
func (l *line) push(user string, ticket int64) {
	if len(l.users) == 0 {
		l.base, l.head = ticket, 0
	}
	// Tickets are consecutive except after a rebuild; pad any gap with empty
	// slots so slot index stays ticket-base.
	for l.base+int64(len(l.users)) < ticket {
		l.appendSlot("")
	}
	l.appendSlot(user)
	l.tickets[user] = ticket
}

// appendSlot grows the Fenwick tree by one slot: node i covers
// (i-lowbit(i), i], whose sum is the prefix up to i-1 minus the prefix up to
// i-lowbit(i), plus the new slot.
func (l *line) appendSlot(user string) {
	l.users = append(l.users, user)
	i := len(l.users)
	v := int32(0)
	if user != "" {
		v = 1
	}
	v += l.prefix(i-1) - l.prefix(i-(i&-i))
	l.fenwick = append(l.fenwick, v)
}

// place puts a user at a ticket that may lie below tickets already in
// line (an opening's reserved tickets, placed in ascending order behind
// the users who were in line before it and ahead of those who came after):
// an empty slot is filled, and a ticket below the first slot rebuilds the
// slots from it (once per opening, as its tickets are placed in order).
func (l *line) place(user string, ticket int64) {
	if len(l.users) == 0 || ticket >= l.base+int64(len(l.users)) {
		l.push(user, ticket)
		return
	}
	if ticket < l.base {
		old, oldBase, oldHead := l.users, l.base, l.head
		*l = line{base: ticket, tickets: l.tickets, users: make([]string, 0, len(old)), fenwick: make([]int32, 0, len(old))}
		for t := ticket; t < oldBase; t++ {
			l.appendSlot("")
		}
		for _, u := range old {
			l.appendSlot(u)
		}
		l.head = oldHead + int(oldBase-ticket)
	}
	slot := int(ticket - l.base)
	l.users[slot] = user
	l.tickets[user] = ticket
	for i := slot + 1; i <= len(l.fenwick); i += i & -i {
		l.fenwick[i-1]++
	}
	l.head = min(l.head, slot)
}

func (l *line) remove(user string) bool {
	t, ok := l.tickets[user]
	if !ok {
		return false
	}
	delete(l.tickets, user)
	slot := int(t - l.base)
	l.users[slot] = ""
	for i := slot + 1; i <= len(l.fenwick); i += i & -i {
		l.fenwick[i-1]--
	}
	l.compact()
	return true
}

// front reads up to n users in line order from the 0-based rank from, with
// their tickets.
func (l *line) front(from, n int64) []admission.Waiter {
	t, ok := l.ticketAt(from)
	if !ok {
		return nil
	}
	out := make([]admission.Waiter, 0, min(n, l.len()-from))
	for slot := int(t - l.base); slot < len(l.users) && int64(len(out)) < n; slot++ {
		if u := l.users[slot]; u != "" {
			out = append(out, admission.Waiter{User: u, Ticket: l.base + int64(slot)})
		}
	}
	return out
}

func (l *line) prefix(i int) int32 {
	var s int32
	for ; i > 0; i -= i & -i {
		s += l.fenwick[i-1]
	}
	return s
}

// compact rebuilds the slots without the emptied front once that front is
// more than half of them, keeping the work amortised O(1) per removal.
func (l *line) compact() {
	for l.head < len(l.users) && l.users[l.head] == "" {
		l.head++
	}
	if l.head < 1024 || l.head*2 < len(l.users) {
		if len(l.tickets) == 0 {
			*l = line{tickets: l.tickets}
		}
		return
	}
	rest := l.users[l.head:]
	base := l.base + int64(l.head)
	*l = line{base: base, tickets: l.tickets, users: make([]string, 0, len(rest)), fenwick: make([]int32, 0, len(rest))}
	for _, u := range rest {
		l.appendSlot(u)
	}
}

// countUpTo counts the users in line with a ticket no higher than t.
func (l *line) countUpTo(t int64) int64 {
	if len(l.users) == 0 || t < l.base {
		return 0
	}
	return int64(l.prefix(int(min(t-l.base+1, int64(len(l.users))))))
}
