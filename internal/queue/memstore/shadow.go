package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/suspect"
)

// shadow is a queue's shadow line (issue 51), the in-process twin of the
// Redis shadow set: suspects' places with tickets of their own, and the
// places cleared from it into the line. Its exported fields are what a
// snapshot keeps (queueImage.Shadow); the indexes are rebuilt from them.
type shadow struct {
	Seq int64
	// Places are in ticket order (new ones are appended).
	Places []shadowPlace
	// Cleared are the places cleared into the line, each standing just
	// behind the ticket At (Redis's score At+0.5), ordered by At and then
	// by user, as Redis orders equal scores.
	Cleared []clearedPlace

	Admitted, Left, ClearedTotal int64
	// ClearedPre counts the places cleared into an opening's pre-queue:
	// their joins are counted by the tickets reserved at its close, not
	// as ClearedTotal's are (Stats.EnteredTotal).
	ClearedPre int64

	byUser    map[string]int64 // user → shadow ticket
	clearedAt map[string]int64 // user → At
}

type shadowPlace struct {
	User           string
	Ticket, Behind int64
	Joined         time.Time
	Mark           suspect.Mark
}

type clearedPlace struct {
	At   int64
	User string
}

func compareCleared(a, b clearedPlace) int {
	return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.User, b.User))
}

// index rebuilds the indexes (a new or restored line).
func (sh *shadow) index() {
	sh.byUser, sh.clearedAt = map[string]int64{}, map[string]int64{}
	for _, p := range sh.Places {
		sh.byUser[p.User] = p.Ticket
	}
	for _, c := range sh.Cleared {
		sh.clearedAt[c.User] = c.At
	}
}

// clone is a copy a snapshot may keep while the line changes.
func (sh *shadow) clone() shadow {
	c := *sh
	c.Places, c.Cleared = slices.Clone(sh.Places), slices.Clone(sh.Cleared)
	c.byUser, c.clearedAt = nil, nil
	return c
}

func (sh *shadow) find(ticket int64) (int, bool) {
	return slices.BinarySearchFunc(sh.Places, ticket, func(p shadowPlace, t int64) int { return cmp.Compare(p.Ticket, t) })
}

// take removes the user's shadow place and answers it.
func (sh *shadow) take(user string) (shadowPlace, bool) {
	t, ok := sh.byUser[user]
	if !ok {
		return shadowPlace{}, false
	}
	i, _ := sh.find(t)
	p := sh.Places[i]
	sh.Places = slices.Delete(sh.Places, i, i+1)
	delete(sh.byUser, user)
	return p, true
}

// clearedBelow counts the cleared places standing ahead of ticket t
// (At < t).
func (sh *shadow) clearedBelow(t int64) int64 {
	i, _ := slices.BinarySearchFunc(sh.Cleared, t, func(c clearedPlace, t int64) int { return cmp.Compare(c.At, t) })
	return int64(i)
}

// waiting counts everyone in the line: tickets and cleared places.
func (q *state) waiting() int64 { return q.line.len() + int64(len(q.sh.Cleared)) }

// rankOf is the user's 0-based place in the line, cleared places
// counted, or false if they are not in it; at is their ticket (a cleared
// place's At).
func (q *state) rankOf(user string) (rank, at int64, cleared, ok bool) {
	if t, ok := q.line.ticket(user); ok {
		r, _ := q.line.rank(user)
		return r + q.sh.clearedBelow(t), t, false, true
	}
	at, ok = q.sh.clearedAt[user]
	if !ok {
		return 0, 0, false, false
	}
	i, _ := slices.BinarySearchFunc(q.sh.Cleared, clearedPlace{at, user}, compareCleared)
	return q.line.countUpTo(at) + int64(i), at, true, true
}

// lineFront is admission.Front on the line with the cleared places
// merged in where they stand (their Ticket is their At).
func (q *state) lineFront(from, n int64) []admission.Waiter {
	cl := q.sh.Cleared
	if len(cl) == 0 {
		return q.line.front(from, n)
	}
	// c: the cleared places ahead of rank from, found by the rank each
	// would have (ticket places ahead of it, and the cleared ones).
	c := int64(len(cl))
	for i, p := range cl {
		if q.line.countUpTo(p.At)+int64(i) >= from {
			c = int64(i)
			break
		}
	}
	out := make([]admission.Waiter, 0, min(n, q.waiting()-from))
	people := q.line.front(max(from-c, 0), n)
	for int64(len(out)) < n && (len(people) > 0 || c < int64(len(cl))) {
		if c < int64(len(cl)) && (len(people) == 0 || cl[c].At < people[0].Ticket) {
			out = append(out, admission.Waiter{User: cl[c].User, Ticket: cl[c].At})
			c++
			continue
		}
		out, people = append(out, people[0]), people[1:]
	}
	return out
}

// removeFromLine takes the user out of the line, a ticket's place or a
// cleared one, or out of their other lane, and says whether it was a
// cleared place.
func (q *state) removeFromLine(user string) (cleared bool) {
	if at, ok := q.sh.clearedAt[user]; ok {
		i, _ := slices.BinarySearchFunc(q.sh.Cleared, clearedPlace{at, user}, compareCleared)
		q.sh.Cleared = slices.Delete(q.sh.Cleared, i, i+1)
		delete(q.sh.clearedAt, user)
		return true
	}
	if !q.line.remove(user) && len(q.ln.lines) > 0 {
		q.removeFromLane(user)
	}
	return false
}

// shadowStanding answers a shadow place as a person's: shown one behind
// the people waiting up to Behind (cleared places and, while an opening
// is placed, its unplaced reserved tickets among them), in the line's
// pre-queue while the opening is ahead.
func (q *state) shadowStanding(p shadowPlace, now time.Time) queue.Standing {
	e := queue.Standing{State: queue.Waiting, Shadow: true, Ticket: p.Ticket, Behind: p.Behind, Pace: q.pace(now), Epoch: q.epoch}
	if q.pending() {
		e.PreQueue = true
		return e
	}
	e.Position = 1 + q.line.countUpTo(p.Behind) + q.sh.clearedBelow(p.Behind+1)
	if n := q.unplaced(); n > 0 && p.Behind >= q.openEnd {
		e.Position += n
	}
	e.Length = max(q.waiting()+q.unplaced()+1, e.Position)
	return e
}

// enterShadow is EnterShadow under the lock.
func (q *state) enterShadow(user string, mark suspect.Mark, now time.Time) (queue.Standing, bool, error) {
	e, held, changed := q.arrive(user, now)
	if held {
		return e, changed, nil
	}
	expired := changed
	if int64(len(q.sh.Places)) >= q.cfg.ShadowCapacity {
		return queue.Standing{}, expired, queue.ErrQueueFull
	}
	if q.stock.SoldOut() {
		return queue.Standing{}, expired, queue.ErrSoldOut
	}
	behind := q.seq
	if q.pending() { // the pre-queue's tickets, once reserved, are ahead
		behind += int64(len(q.pre))
	}
	q.sh.Seq++
	p := shadowPlace{User: user, Ticket: q.sh.Seq, Behind: behind, Joined: now,
		Mark: suspect.Mark{Signals: slices.Clone(mark.Signals), Address: mark.Address}}
	q.sh.Places = append(q.sh.Places, p)
	q.sh.byUser[user] = p.Ticket
	return q.shadowStanding(p, now), true, nil
}

// EnterShadow implements queue.Store.
func (s *Store) EnterShadow(_ context.Context, name, user string, mark suspect.Mark) (queue.Standing, error) {
	o := &op{kind: opEnterShadow, queue: name, user: user, token: mark.Address, list: mark.Signals}
	return change(s, o, func(q *state, now time.Time) (queue.Standing, bool, error) {
		return q.enterShadow(user, mark, now)
	})
}

// Suspects implements queue.Store.
func (s *Store) Suspects(_ context.Context, name string, limit int) ([]suspect.Place, error) {
	return in(s, name, func(q *state, _ time.Time) ([]suspect.Place, error) {
		out := make([]suspect.Place, 0, min(max(limit, 0), len(q.sh.Places)))
		for _, p := range q.sh.Places[:cap(out)] {
			out = append(out, suspect.Place{Ticket: p.Ticket, Behind: p.Behind, Joined: p.Joined.UTC(),
				Mark: suspect.Mark{Signals: slices.Clone(p.Mark.Signals), Address: p.Mark.Address}})
		}
		return out, nil
	})
}

// ClearSuspect implements queue.Store.
func (s *Store) ClearSuspect(_ context.Context, name string, ticket int64) (bool, error) {
	o := &op{kind: opClearSuspect, queue: name, n: ticket}
	return change(s, o, func(q *state, now time.Time) (bool, bool, error) {
		i, ok := q.sh.find(ticket)
		if !ok {
			return false, false, nil
		}
		p, _ := q.sh.take(q.sh.Places[i].User)
		q.sh.ClearedTotal++
		q.placeCleared(p, now)
		return true, true, nil
	})
}

// placeCleared puts a place taken from the shadow line where a person arriving
// when it did would stand. While an opening is ahead that is its
// pre-queue, arriving now (the opening draws or orders it with the
// others, and its reserved ticket counts its join, ClearedPre). Else the
// line: just behind Behind, or first if that ticket is no longer waiting;
// with nobody waiting, behind the last ticket; while an opening is being
// placed, behind its last reserved ticket too (its unplaced are ahead).
// Under AbandonAfter it is seen now, as one entering is: its client,
// answered as a shadow place until now, has left no seen mark, and the
// next tick would skip it as a no-show.
func (q *state) placeCleared(p shadowPlace, now time.Time) {
	if q.pending() {
		q.preArrival++
		q.pre[p.User] = q.preArrival
		q.sh.ClearedPre++
		return
	}
	at := q.seq
	if head := q.line.headTicket(); head > 0 {
		at = max(p.Behind, head-1)
	}
	if q.openState == "placing" {
		at = max(at, q.openEnd)
	}
	if q.waitingAll() == 0 {
		q.tick.Moved = now // someone starts waiting (as enter)
	}
	c := clearedPlace{At: at, User: p.User}
	j, _ := slices.BinarySearchFunc(q.sh.Cleared, c, compareCleared)
	q.sh.Cleared = slices.Insert(q.sh.Cleared, j, c)
	q.sh.clearedAt[p.User] = at
	q.joined[p.User] = untold(p.Joined)
	if q.cfg.AbandonAfter > 0 {
		q.seen[p.User] = now
		delete(q.hidden, p.User)
	}
}

// shadowFront is admission.Front on the shadow line.
func (q *state) shadowFront(from, n int64) ([]admission.Waiter, error) {
	if from >= int64(len(q.sh.Places)) {
		return nil, nil
	}
	ps := q.sh.Places[from:min(from+n, int64(len(q.sh.Places)))]
	out := make([]admission.Waiter, len(ps))
	for i, p := range ps {
		out[i] = admission.Waiter{User: p.User, Ticket: p.Ticket}
	}
	return out, nil
}

// admitShadow lets in the shadow line's places a plan names
// (TickPlan.Shadow), each with its token; it answers their waits.
func (q *state) admitShadow(p admission.TickPlan, tokens []string, now time.Time) []rollup.Wait {
	waits := make([]rollup.Wait, 0, len(p.Admitted))
	for i, w := range p.Admitted {
		sp, _ := q.sh.take(w.User)
		q.issue(w.User, tokens[i], p.Expires)
		waits = append(waits, rollup.Wait{Entered: sp.Joined, Shown: rollup.NoneShown, Low: rollup.NoneShown, High: rollup.NoneShown, Admitted: now})
	}
	q.sh.Admitted += int64(len(p.Admitted))
	return waits
}
