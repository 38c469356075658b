package memstore

import (
	"context"
	"encoding/hex"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// A queue's lanes (issue 53) in the embedded store. The public lane is the
// line as it always was (state.line and the cleared places); each other
// lane is a laneLine of its own, its tickets from the same counter
// (state.seq) and each one a gap in the public line (state.leftTickets),
// as a leaver's is, so the snapshot and the front document stay the public
// lane's. A queue without lanes has none of this: every map below is nil
// and each check of it one length test.

// lanes is a queue's state beyond its public lane.
type lanes struct {
	// lines are the lanes other than lane.Public with people waiting, by
	// name (a lane is dropped once empty).
	lines map[string]*laneLine
	// pre is the lane, other than Public, of each person in the opening's
	// pre-queue who asked for one, and preIn how many wait so in each.
	pre   map[string]string
	preIn map[string]int64
	// codes are the access codes by codeKey of their hash.
	codes map[string]code
	// counts are each lane's totals, Public's among them.
	counts map[string]laneCounts
}

// code is one access code as the store keeps it.
type code struct {
	lane    string
	uses    int64 // redemptions left
	expires int64 // Unix ms when it stops being redeemable; 0: never
}

func (c code) expired(now time.Time) bool { return c.expires != 0 && now.UnixMilli() >= c.expires }

// laneCounts are a lane's totals over the queue's life (exported: a
// snapshot keeps them).
type laneCounts struct {
	// Admitted were let in from the lane by ticks, Redeemed its codes'
	// redemptions, Uses the redemptions its codes were added with.
	Admitted, Redeemed, Uses int64
}

// codeKey is how a code's hash is kept: a SHA-256 in hex (accesscode.Hash,
// what every caller passes) as its 32 bytes, half the memory of 100,000
// codes; anything else as it is.
func codeKey(hash string) string {
	if len(hash) == 64 {
		if b, err := hex.DecodeString(hash); err == nil {
			return string(b)
		}
	}
	return hash
}

// laneOf is the lane other than Public the user waits in ("", nil: none).
func (q *state) laneOf(user string) (string, *laneLine) {
	for name, l := range q.ln.lines {
		if _, ok := l.tickets[user]; ok {
			return name, l
		}
	}
	return "", nil
}

// lanesWaiting counts the people waiting in the lanes other than Public.
func (q *state) lanesWaiting() int64 {
	n := int64(0)
	for _, l := range q.ln.lines {
		n += l.len()
	}
	return n
}

// waitingAll counts everyone waiting, every lane together: what capacity,
// the quiet line's walk-ins and the stats count.
func (q *state) waitingAll() int64 { return q.waiting() + q.lanesWaiting() }

// laneLine is the lane called name, made if it has nobody yet.
func (q *state) laneLine(name string) *laneLine {
	l := q.ln.lines[name]
	if l == nil {
		if q.ln.lines == nil {
			q.ln.lines = map[string]*laneLine{}
		}
		l = newLaneLine()
		q.ln.lines[name] = l
	}
	return l
}

// removeFromLane takes the user out of their lane other than Public.
func (q *state) removeFromLane(user string) bool {
	name, l := q.laneOf(user)
	if l == nil || !l.remove(user) {
		return false
	}
	if l.len() == 0 {
		delete(q.ln.lines, name)
	}
	return true
}

// count adds to the totals of lane name ("" is Public).
func (q *state) count(name string, add laneCounts) {
	if name == "" {
		name = lane.Public
	}
	if q.ln.counts == nil {
		q.ln.counts = map[string]laneCounts{}
	}
	c := q.ln.counts[name]
	c.Admitted, c.Redeemed, c.Uses = c.Admitted+add.Admitted, c.Redeemed+add.Redeemed, c.Uses+add.Uses
	q.ln.counts[name] = c
}

// unplacedIn is unplaced for the lane name: how many of an opening being
// placed are still to be placed in it.
func (q *state) unplacedIn(name string) int64 {
	if name == "" {
		return q.unplaced()
	}
	if q.openState != "placing" {
		return 0
	}
	return q.ln.preIn[name]
}

// lanePace is the pace an answer in lane name ("": Public) gives: the
// line's, with the lane's share of the rate (queue.Pace.LaneShare).
func (q *state) lanePace(now time.Time, name string) queue.Pace {
	p := q.pace(now)
	if name != "" {
		p.LaneShare = q.tick.LaneShares[name]
	}
	return p
}

// laneStanding is the user's place in their lane other than Public.
func (q *state) laneStanding(user string, now time.Time) (queue.Standing, bool) {
	name, l := q.laneOf(user)
	if l == nil {
		return queue.Standing{}, false
	}
	r, _ := l.rank(user)
	t := l.tickets[user]
	n := q.unplacedIn(name)
	if n > 0 && t > q.openEnd {
		r += n
	}
	return queue.Standing{State: queue.Waiting, Position: r + 1, Length: l.len() + n, Ticket: t,
		Pace: q.lanePace(now, name), Epoch: q.epoch, Lane: name}, true
}

// laneFront is admission.Front on lane name, with the seen marks.
func (q *state) laneFront(name string) admission.Front {
	return func(from, n int64) ([]admission.Waiter, error) {
		l := q.ln.lines[name]
		if l == nil {
			return nil, nil
		}
		ws := l.front(from, n)
		for i := range ws {
			q.marks(&ws[i])
		}
		return ws, nil
	}
}

// Join implements queue.Store. A join in the public lane without a code
// is Enter, and journaled as one.
func (s *Store) Join(ctx context.Context, name, user string, j lane.Join) (queue.Standing, error) {
	if j.Code == "" && (j.Lane == "" || j.Lane == lane.Public) {
		return s.Enter(ctx, name, user)
	}
	o := &op{kind: opJoin, queue: name, user: user, owner: j.Lane, token: j.Code}
	return change(s, o, func(q *state, now time.Time) (queue.Standing, bool, error) {
		if j.Code != "" {
			return q.redeem(user, j.Code, now)
		}
		name := j.Lane
		if _, ok := q.cfg.InForce(now).Lanes.Named(name); !ok {
			name = lane.Public // a lane no longer in force takes nobody new
		}
		return q.enterIn(user, name, now)
	})
}

// enterIn is enter in lane name.
func (q *state) enterIn(user, name string, now time.Time) (queue.Standing, bool, error) {
	if name == lane.Public || name == "" {
		return q.enter(user, now)
	}
	e, held, changed := q.arrive(user, now)
	if held {
		return e, changed, nil
	}
	if err := q.refuse(); err != nil {
		return queue.Standing{}, changed, err
	}
	return q.placeIn(user, name, now), true, nil
}

// placeIn gives the user, who holds no place, one at the back of lane
// name, or in the pre-queue with the lane remembered while the opening is
// ahead.
func (q *state) placeIn(user, name string, now time.Time) queue.Standing {
	if name == lane.Public {
		return q.placePublic(user, now)
	}
	if q.pending() {
		q.preArrival++
		q.pre[user] = q.preArrival
		q.setPreLane(user, name)
		return queue.Standing{State: queue.Waiting, PreQueue: true, Pace: q.lanePace(now, name), Epoch: q.epoch, Lane: name}
	}
	if q.waitingAll() == 0 {
		q.tick.Moved = now // someone starts waiting: the front has not stood still
	}
	q.seq++
	l := q.laneLine(name)
	l.insert(user, q.seq)
	q.addLeft(q.seq) // a gap in the public line
	n := l.len() + q.unplacedIn(name)
	q.markSeen(user, n, now)
	p := q.lanePace(now, name)
	q.joined[user] = told(now, p.Estimate(n, n))
	return queue.Standing{State: queue.Waiting, Position: n, Length: n, Ticket: q.seq, Pace: p, Epoch: q.epoch, Lane: name}
}

// setPreLane remembers the lane of a person in the pre-queue (Public: none).
func (q *state) setPreLane(user, name string) {
	q.dropPreLane(user)
	if name == lane.Public || name == "" {
		return
	}
	if q.ln.pre == nil {
		q.ln.pre, q.ln.preIn = map[string]string{}, map[string]int64{}
	}
	q.ln.pre[user] = name
	q.ln.preIn[name]++
}

// dropPreLane forgets the lane of a person leaving the pre-queue.
func (q *state) dropPreLane(user string) {
	if name, ok := q.ln.pre[user]; ok {
		delete(q.ln.pre, user)
		if q.ln.preIn[name]--; q.ln.preIn[name] <= 0 {
			delete(q.ln.preIn, name)
		}
	}
}

// redeem is Join with a code (its hash): the code's lane, and one of its
// redemptions used only when it gives a place: not to someone let in,
// in the shadow line, or waiting in the code's lane already.
func (q *state) redeem(user, hash string, now time.Time) (queue.Standing, bool, error) {
	e, held, changed := q.arrive(user, now)
	if held && (e.State != queue.Waiting || e.Shadow) {
		return e, changed, nil
	}
	key := codeKey(hash)
	c, ok := q.ln.codes[key]
	if _, inForce := q.cfg.InForce(now).Lanes.Named(c.lane); !ok || c.expired(now) || !inForce {
		return queue.Standing{}, changed, accesscode.ErrInvalid // fail closed: a lane taken away is served only from leftovers
	}
	if held && e.Lane == c.lane || held && c.lane == lane.Public && e.Lane == "" {
		return e, changed, nil
	}
	if held && e.PreQueue && q.openState == "placing" {
		return e, changed, nil // placing: a lane's count of the unplaced, in positions told, must not grow
	}
	if c.uses <= 0 {
		return queue.Standing{}, changed, accesscode.ErrUsed
	}
	if !held {
		if err := q.refuse(); err != nil {
			return queue.Standing{}, changed, err
		}
	}
	c.uses--
	q.ln.codes[key] = c
	q.count(c.lane, laneCounts{Redeemed: 1})
	switch {
	case !held:
	case e.PreQueue: // the pre-queue not yet closed: only the lane it will be in changes
		q.setPreLane(user, c.lane)
		e.Lane, e.Pace = c.lane, q.lanePace(now, c.lane)
		return e, true, nil
	default:
		q.unplace(user)
	}
	return q.placeIn(user, c.lane, now), true, nil
}

// unplace takes a waiting user out of their place, for one at the back of
// another lane: the place left counts as left and the new one as a join
// (its ticket counts as entered, so the totals balance; its taking is
// now, as on Redis), and a public ticket stays a gap.
func (q *state) unplace(user string) {
	if t, ok := q.line.ticket(user); ok {
		q.addLeft(t)
	}
	q.removeFromLine(user)
	q.left++
}

// AddCodes implements queue.Store.
func (s *Store) AddCodes(_ context.Context, name string, codes []accesscode.Code) (accesscode.Added, error) {
	for _, c := range codes {
		if err := c.Check(); err != nil {
			return accesscode.Added{}, err // nothing kept
		}
	}
	o := &op{kind: opAddCodes, queue: name, blob: encodeCodes(codes)}
	return change(s, o, func(q *state, _ time.Time) (accesscode.Added, bool, error) {
		return q.addCodes(codes), true, nil
	})
}

// addCodes keeps codes, a hash held already (or twice in codes) a
// duplicate left as it is.
func (q *state) addCodes(codes []accesscode.Code) accesscode.Added {
	var out accesscode.Added
	if q.ln.codes == nil {
		q.ln.codes = make(map[string]code, len(codes))
	}
	lanes := map[string]string{} // one string per lane name, not one per code
	for _, c := range codes {
		key := codeKey(c.Hash)
		if _, ok := q.ln.codes[key]; ok {
			out.Duplicates++
			continue
		}
		name, ok := lanes[c.Lane]
		if !ok {
			name = c.Lane
			lanes[c.Lane] = name
		}
		kept := code{lane: name, uses: c.Uses}
		if !c.ExpiresAt.IsZero() {
			kept.expires = c.ExpiresAt.UnixMilli()
		}
		q.ln.codes[key] = kept
		q.count(name, laneCounts{Uses: c.Uses})
		out.Added++
	}
	return out
}

// laneInputs are admission's TickInput.Lanes: the lanes in force other
// than Public, in their order, then any other with people waiting, by
// name (an order a replay finds again).
func (q *state) laneInputs(c queue.InForce) []admission.LaneInput {
	if len(c.Lanes) == 0 && len(q.ln.lines) == 0 {
		return nil
	}
	var out []admission.LaneInput
	add := func(name string) {
		var n int64
		if l := q.ln.lines[name]; l != nil {
			n = l.len()
		}
		out = append(out, admission.LaneInput{Name: name, Length: n, Front: q.laneFront(name)})
	}
	for _, l := range c.Lanes {
		if l.Name != lane.Public {
			add(l.Name)
		}
	}
	for _, name := range q.otherLanes(c.Lanes) {
		add(name)
	}
	return out
}

// otherLanes are the lanes with people waiting that are not in l, by name.
func (q *state) otherLanes(l lane.List) []string {
	var out []string
	for name := range q.ln.lines {
		if _, ok := l.Named(name); !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// drawSkips bounds the no-shows one lane's draw passes over: admission's
// skipScan, by which PlanTick counted each lane's random values, so no
// lane's draw takes values counted for another.
const drawSkips = 1000

// drawLanes draws each lane's part of the tick (TickPlan.DrawLanes) from
// its people only, in the order of the tick's lanes, from values after
// those used: as draw does in the public line.
func (q *state) drawLanes(p admission.TickPlan, lanes []admission.LaneInput, values []uint64, tokens []string, now time.Time, d *drawn) {
	for _, in := range lanes {
		k := p.DrawLanes[in.Name]
		admitted, skipped := 0, 0
		for d.used < len(values) && admitted < k && skipped < drawSkips {
			l := q.ln.lines[in.Name]
			if l == nil {
				break
			}
			w := l.front(admission.DrawIndex(values[d.used], l.len()), 1)[0]
			d.used++
			q.marks(&w)
			wait := q.pop(w.User, now)
			wait.Lane = in.Name
			if p.Absent.NoShow(w) {
				skipped++
				continue
			}
			q.issue(w.User, tokens[len(d.admitted)], p.Expires)
			d.admitted, d.waited = append(d.admitted, w.User), append(d.waited, wait)
			admitted++
		}
		d.skipped += skipped
		if admitted > 0 {
			q.count(in.Name, laneCounts{Admitted: int64(admitted)})
		}
	}
}

// drawn is what a tick's draw did so far: the values it used, whom it
// let in (with their waits) and how many no-shows it passed over.
type drawn struct {
	used     int
	admitted []string
	waited   []rollup.Wait
	skipped  int
}

// laneStats are Stats.Lanes: the lanes in force, in their order, then
// Public if not among them and any other with people waiting; none for a
// queue without lanes.
func (q *state) laneStats(c queue.InForce) []lane.Stats {
	others := q.otherLanes(c.Lanes)
	if len(c.Lanes) == 0 && len(others) == 0 {
		return nil
	}
	names := make([]string, 0, len(c.Lanes)+len(others)+1)
	for _, l := range c.Lanes {
		names = append(names, l.Name)
	}
	if len(c.Lanes) == 0 {
		names = append(names, lane.Public)
	}
	names = append(names, others...)
	out := make([]lane.Stats, 0, len(names))
	for _, name := range names {
		n := q.waiting()
		if l, ok := q.ln.lines[name]; ok {
			n = l.len()
		} else if name != lane.Public {
			n = 0
		}
		ct := q.ln.counts[name]
		out = append(out, lane.Stats{Name: name, Share: c.Lanes.Share(name), Length: n, Admitted: ct.Admitted,
			Redeemed: ct.Redeemed, CodesLeft: ct.Uses - ct.Redeemed})
	}
	return out
}

// inLane says whether the user waits in a lane other than Public.
func (q *state) inLane(user string) bool {
	_, l := q.laneOf(user)
	return l != nil
}

// countAdmitted adds the waiters a tick let in to their lanes' totals.
func (q *state) countAdmitted(ws []admission.Waiter) {
	for _, w := range ws {
		q.count(w.Lane, laneCounts{Admitted: 1})
	}
}
