package memstore

import "github.com/waitroom/waitroom/internal/queue/admission"

// laneLine is one lane other than lane.Public (issue 53): its people in
// ticket order, with O(log n) rank. Its tickets come from the counter
// every lane shares, so they are scattered over the whole line's range:
// line's slot per ticket would make a lane of a hundred in a line of a
// million cost a million slots. A treap ordered by ticket, each node
// counting its subtree, costs one node per person instead, and new
// tickets (the highest) and an opening's reserved ones (below some
// already there) go in alike. A node's priority is a hash of its ticket,
// not a random draw, so a replay builds the same tree.
type laneLine struct {
	root    *laneNode
	tickets map[string]int64
}

type laneNode struct {
	ticket      int64
	user        string
	prio        uint64
	size        int64
	left, right *laneNode
}

func newLaneLine() *laneLine { return &laneLine{tickets: map[string]int64{}} }

func (l *laneLine) len() int64 { return int64(len(l.tickets)) }

func (n *laneNode) count() int64 {
	if n == nil {
		return 0
	}
	return n.size
}

func (n *laneNode) resize() *laneNode {
	n.size = 1 + n.left.count() + n.right.count()
	return n
}

// splitBelow splits the tree at n into the tickets below t and the rest.
func splitBelow(n *laneNode, t int64) (below, rest *laneNode) {
	if n == nil {
		return nil, nil
	}
	if n.ticket < t {
		n.right, rest = splitBelow(n.right, t)
		return n.resize(), rest
	}
	below, n.left = splitBelow(n.left, t)
	return below, n.resize()
}

// merge joins two trees, every ticket of a below every ticket of b.
func merge(a, b *laneNode) *laneNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio >= b.prio:
		a.right = merge(a.right, b)
		return a.resize()
	}
	b.left = merge(a, b.left)
	return b.resize()
}

// ticketPriority is splitmix64 of the ticket: spread well enough that the
// tree stays balanced whatever order tickets come in.
func ticketPriority(t int64) uint64 {
	z := uint64(t) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// insert places user at ticket t, which no one in the lane holds.
func (l *laneLine) insert(user string, t int64) {
	below, rest := splitBelow(l.root, t)
	n := &laneNode{ticket: t, user: user, prio: ticketPriority(t), size: 1}
	l.root = merge(merge(below, n), rest)
	l.tickets[user] = t
}

// remove takes the user out of the lane, if they are in it.
func (l *laneLine) remove(user string) bool {
	t, ok := l.tickets[user]
	if !ok {
		return false
	}
	delete(l.tickets, user)
	below, rest := splitBelow(l.root, t)
	_, after := splitBelow(rest, t+1)
	l.root = merge(below, after)
	return true
}

// rank is the user's 0-based place in the lane, or false if not in it.
func (l *laneLine) rank(user string) (int64, bool) {
	t, ok := l.tickets[user]
	if !ok {
		return 0, false
	}
	r := int64(0)
	for n := l.root; n != nil; {
		if n.ticket < t {
			r += n.left.count() + 1
			n = n.right
		} else {
			n = n.left
		}
	}
	return r, true
}

// front reads up to n people in ticket order from the 0-based rank from:
// down to the node at that rank, keeping the nodes that follow it on the
// way (those it went left at), then on in order.
func (l *laneLine) front(from, n int64) []admission.Waiter {
	if from < 0 || from >= l.len() || n <= 0 {
		return nil
	}
	var stack []*laneNode
	for nd, k := l.root, from; nd != nil; {
		left := nd.left.count()
		switch {
		case k < left:
			stack = append(stack, nd)
			nd = nd.left
		case k == left:
			stack = append(stack, nd)
			nd = nil
		default:
			k -= left + 1
			nd = nd.right
		}
	}
	out := make([]admission.Waiter, 0, min(n, l.len()-from))
	for len(stack) > 0 && int64(len(out)) < n {
		nd := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, admission.Waiter{User: nd.user, Ticket: nd.ticket})
		for c := nd.right; c != nil; c = c.left {
			stack = append(stack, c)
		}
	}
	return out
}
