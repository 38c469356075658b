// Package fairness checks the line's promises the way databases are
// checked: it records every call a crowd of clients makes to the real
// server through its HTTP API, under faults, with the time each call was
// sent and answered (or that its outcome is unknown), and asks Porcupine
// whether some order of those calls, each taking effect at one instant
// between its sending and its answer, is allowed by a sequential model of
// one queue. The model is the contract users see, not the internals: first
// come first served, positions that never go up, a token for one person
// only, spent at most once, kept when the order fails.
//
// A queue with lanes (issue 53) is a line per lane: each user's lane is
// fixed by their token's claim (Spec.Members), an answer names it, and
// first come first served and positions that never go up hold within each
// lane (a position and a length are the lane's; a READY answer's lane is
// not checked: Output.Lane). Across lanes the model
// lets admission take any order; the lanes' shares are checked beside it,
// over the whole history (sharesHeld, lanes.go): while every lane
// certainly had someone waiting, no lane was let in more than its share of
// every admission that may have happened meanwhile, plus two (the credit
// lane.Allot carries is within one person either way at each end).
//
// Where the contract is deliberately weaker than that, the model says
// exactly how (docs/operations.md, "Fairness you can check"):
//   - a status answer far from the front may come from a snapshot of the
//     line up to --status-snapshot-age old (the call is taken to start that
//     much earlier; statusSnapshotReach);
//   - with abandonAfterSeconds, a waiting user not seen for that long may
//     be dropped from the head of the line without a token;
//   - with opensAt, the users who entered before it are placed in line in
//     any order at the opening, ahead of everyone who entered after it;
//   - an enter the Redis client may have sent twice (it lasted the read
//     timeout, or a connection was cut during it) may be answered with the
//     line as it stood later than its effect (enterEffects);
//   - after a Redis kill -9, the line starts again from what Redis kept;
//     the acknowledged places it lost are counted, not hidden (placesLost);
//   - with lanes, a READY answer's lane is not checked, nor a WAITING
//     answer's absent lane for a place in the public lane (Output.Lane);
//     the shares hold within two people of what the calls make certain
//     (sharesHeld).
//
// Token expiry is not modelled: a history is far shorter than the token
// TTL, and its clock steps are bounded below it.
package fairness

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/waitroom/waitroom/internal/queue/lane"
)

// Kind is the call a client made.
type Kind uint8

const (
	Enter Kind = iota
	Status
	Leave
	Order
)

var kindNames = [...]string{"enter", "status", "leave", "order"}

func (k Kind) String() string { return kindNames[k] }

// Spec is what the model needs to know of one queue's settings.
type Spec struct {
	Queue    string
	Capacity int
	// AbandonAfter > 0: no-shows may be dropped (see SinceSeen).
	AbandonAfter time.Duration
	// Opening: the queue had an opensAt ahead when the history began.
	Opening bool
	// Lanes are the queue's lanes (none: one line, and answers name no
	// lane); Members maps each user of a lane other than lane.Public to
	// it (their token's claim), for the history's whole length.
	Lanes   lane.List
	Members map[string]string
	// start is the line as the history found it (nil: new and empty); a
	// history after a Redis restart starts from what Redis kept.
	start *line
}

// laneOf is the lane user's places are in.
func (s *Spec) laneOf(user string) string {
	if ln, ok := s.Members[user]; ok {
		return ln
	}
	return lane.Public
}

// answerLane is the lane an answer to user names: none without lanes.
func (s *Spec) answerLane(user string) string {
	if len(s.Lanes) == 0 {
		return ""
	}
	return s.laneOf(user)
}

// Input is one call.
type Input struct {
	Spec  *Spec
	Kind  Kind
	User  string
	Token string // Order: the token presented
	// SinceSeen is, for a status or enter answered NOT_IN_QUEUE, the time
	// from the user's previous enter or status call (answered or not: it
	// may have marked them present) to this answer; a no-show can only
	// have been dropped if it is at least Spec.AbandonAfter.
	SinceSeen time.Duration
	// Instance is which waitroom answered (for the visualisation).
	Instance int
	// MayRepeat: an enter the store's client may have sent twice, whose
	// answer may be read after its effect (enterEffects).
	MayRepeat bool
}

// State is where the model's user stands, as answers say it.
type State uint8

const (
	Waiting State = iota
	PreQueued
	Ready
	NotInQueue
	Full
)

var stateNames = [...]string{"WAITING", "PRE_QUEUE", "READY", "NOT_IN_QUEUE", "FULL"}

func (s State) String() string { return stateNames[s] }

// OrderResult is how an order call ended, for its token.
type OrderResult uint8

const (
	Bought  OrderResult = iota // 201: the token is spent
	Kept                       // 402 payment_failed, 409 out_of_stock: the token stays
	InUse                      // 409 order_in_progress: the token is valid and locked
	Invalid                    // 403 entry_token_invalid
)

var orderNames = [...]string{"bought", "kept", "in use", "invalid"}

func (o OrderResult) String() string { return orderNames[o] }

// Output is one call's answer.
type Output struct {
	// Unknown: no answer, a timeout, a reset connection or a 5xx; the call
	// may or may not have taken effect (Jepsen's :info). Its operation
	// returns at infinity.
	Unknown          bool
	State            State
	Position, Length int64
	// Lane is the lane a WAITING or READY answer names ("" when it names
	// none, as without lanes). The model checks a WAITING answer's, but
	// for one in the public lane that names none (its instance could not
	// read the queue's config just then: it cannot tell a queue with
	// lanes from one without); not a READY answer's (the stores keep no
	// lane with a token).
	Lane  string
	Token string
	Order OrderResult
}

// phase is how far a queue's opening has gone.
type phase uint8

const (
	pending phase = iota // opensAt ahead: entries wait in the pre-queue
	closed               // the pre-queue is closed; newcomers join behind it; not yet placed
	open                 // everyone waits in line (always, without an opening)
)

// line is the model's state of one queue. It is never changed in place:
// every step returns new states.
type line struct {
	phase   phase
	pre     []string // the pre-queue, sorted (its order means nothing)
	waiting []string // in line (the public lane), first in first
	// lanes are the other lanes' lines, by name (nil without lanes).
	lanes map[string][]string
	// held maps an admitted user to their token, "" while no answer has
	// shown it yet (with no-shows: admitted, or dropped).
	held map[string]string
	key  string
}

func newLine(phase phase) *line {
	l := &line{phase: phase, held: map[string]string{}}
	l.key = l.encode()
	return l
}

func (l *line) clone() *line {
	n := &line{phase: l.phase, pre: slices.Clone(l.pre), waiting: slices.Clone(l.waiting), held: cloneMap(l.held)}
	for name, users := range l.lanes {
		n.setLine(name, slices.Clone(users))
	}
	return n
}

// lineOf is the line of the lane called name.
func (l *line) lineOf(name string) []string {
	if name == lane.Public {
		return l.waiting
	}
	return l.lanes[name]
}

// setLine makes users the line of the lane called name (on a clone).
func (l *line) setLine(name string, users []string) {
	switch {
	case name == lane.Public:
		l.waiting = users
	case len(users) == 0:
		delete(l.lanes, name)
	default:
		if l.lanes == nil {
			l.lanes = map[string][]string{}
		}
		l.lanes[name] = users
	}
}

// laneNames are the lanes other than lane.Public with people in them, in
// a fixed order.
func (l *line) laneNames() []string {
	names := make([]string, 0, len(l.lanes))
	for name := range l.lanes {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// inLine is how many wait in line, every lane together.
func (l *line) inLine() int {
	n := len(l.waiting)
	for _, users := range l.lanes {
		n += len(users)
	}
	return n
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// done seals a state made by clone and changed.
func (l *line) done() *line { l.key = l.encode(); return l }

// encode is the state as one canonical string: equal states, equal keys.
func (l *line) encode() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|%s|%s|", l.phase, strings.Join(l.pre, ","), strings.Join(l.waiting, ","))
	for _, name := range l.laneNames() {
		fmt.Fprintf(&b, "%s:%s|", name, strings.Join(l.lanes[name], ","))
	}
	users := make([]string, 0, len(l.held))
	for u := range l.held {
		users = append(users, u)
	}
	slices.Sort(users)
	for _, u := range users {
		fmt.Fprintf(&b, "%s=%s;", u, l.held[u])
	}
	return b.String()
}

// rank is user's 1-based place in the line of their lane s.laneOf(user)
// (0: not in it).
func (l *line) rank(s *Spec, user string) int {
	return slices.Index(l.lineOf(s.laneOf(user)), user) + 1
}

func (l *line) inPre(user string) bool {
	_, ok := slices.BinarySearch(l.pre, user)
	return ok
}

// has reports whether user waits in the line of any lane.
func (l *line) has(user string) bool {
	if slices.Contains(l.waiting, user) {
		return true
	}
	for _, users := range l.lanes {
		if slices.Contains(users, user) {
			return true
		}
	}
	return false
}

// ahead is how many users wait ahead of a newcomer to lane ln joining now:
// before the placing, the lane's part of the pre-queue is reserved in front
// of everyone in it.
func (l *line) ahead(s *Spec, ln string) int {
	n := len(l.lineOf(ln))
	if l.phase == closed {
		for _, u := range l.pre {
			if s.laneOf(u) == ln {
				n++
			}
		}
	}
	return n
}

// admit takes the first k users out of lane ln's line as admitted (token
// not yet seen): admission is not a call, so the model lets it happen when
// an answer shows it did, from the head of the lane (across lanes in any
// order: the shares are checked beside the model). Admission stops while
// an opening is placed.
func (l *line) admit(ln string, k int) (*line, bool) {
	if k == 0 {
		return l, true
	}
	users := l.lineOf(ln)
	if k < 0 || k > len(users) || l.phase != open {
		return nil, false
	}
	n := l.clone()
	for _, u := range users[:k] {
		n.held[u] = ""
	}
	n.setLine(ln, slices.Clone(users[k:]))
	return n.done(), true
}

// model is the sequential specification of the line, one queue per
// partition. It is nondeterministic only at an opening, whose order is
// drawn at random.
func model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByQueue,
		Init:      func() []any { return []any{(*line)(nil)} },
		Step: func(state, input, output any) []any {
			in, out := input.(Input), output.(Output)
			l := state.(*line)
			if l == nil { // the partition's first step learns its queue
				l = in.Spec.start
				switch {
				case l != nil:
				case in.Spec.Opening:
					l = newLine(pending)
				default:
					l = newLine(open)
				}
			}
			var next []any
			for _, s := range openings(l, in.Spec) {
				if n := step(s, in, out); n != nil {
					next = append(next, n)
				}
			}
			return next
		},
		Equal: func(a, b any) bool {
			la, lb := a.(*line), b.(*line)
			if la == nil || lb == nil {
				return la == lb
			}
			return la.key == lb.key
		},
		Hash: func(s any) uint64 {
			if l := s.(*line); l != nil {
				return maphash.String(hashSeed, l.key)
			}
			return 0
		},
		DescribeOperation: describe,
		DescribeState: func(s any) string {
			if l := s.(*line); l != nil {
				return describeLine(l)
			}
			return "(empty)"
		},
	}
	return nm.ToModel()
}

var hashSeed = maphash.MakeSeed()

// openings are the states the opening may have reached before the next
// call takes effect: as it is, closed, or closed and placed in any order,
// each user ahead of everyone in their lane.
func openings(l *line, s *Spec) []*line {
	out := []*line{l}
	if l.phase == pending {
		c := l.clone()
		c.phase = closed
		c = c.done()
		out = append(out, c)
		l = c
	}
	if l.phase == closed {
		for _, order := range permutations(l.pre) {
			p := l.clone()
			p.phase = open
			for i := len(order) - 1; i >= 0; i-- {
				ln := s.laneOf(order[i])
				p.setLine(ln, append([]string{order[i]}, p.lineOf(ln)...))
			}
			p.pre = nil
			out = append(out, p.done())
		}
	}
	return out
}

func permutations(users []string) [][]string {
	if len(users) <= 1 {
		return [][]string{slices.Clone(users)}
	}
	var out [][]string
	for i, u := range users {
		rest := append(slices.Clone(users[:i]), users[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]string{u}, p...))
		}
	}
	return out
}

// step applies one call to l: the next state, or nil when the answer is
// not one the line could have given.
func step(l *line, in Input, out Output) *line {
	switch in.Kind {
	case Enter, Status:
		if out.Unknown { // only an enter changes anything (unknown statuses are left out)
			return enter(l, in.Spec, in.User)
		}
		return reply(l, in, out)
	case Leave:
		return leave(l, in.Spec, in.User) // 204, or unknown: either way, at most this
	case Order:
		return order(l, in, out)
	}
	return nil
}

// enter is an enter's effect: a user neither in line, pre-queued nor
// admitted joins their lane (the pre-queue while the opening is pending).
func enter(l *line, s *Spec, user string) *line {
	if _, ok := l.held[user]; ok || l.rank(s, user) > 0 || l.inPre(user) {
		return l
	}
	n := l.clone()
	if l.phase == pending {
		i, _ := slices.BinarySearch(n.pre, user)
		n.pre = slices.Insert(n.pre, i, user)
	} else {
		ln := s.laneOf(user)
		n.setLine(ln, append(slices.Clone(n.lineOf(ln)), user))
	}
	return n.done()
}

// reply checks an enter's or a status's answer and applies it.
func reply(l *line, in Input, out Output) *line {
	user, s := in.User, in.Spec
	_, admitted := l.held[user]
	if out.State == Waiting && out.Lane != s.answerLane(user) && !(out.Lane == "" && s.laneOf(user) == lane.Public) {
		return nil // a place in another lane than the user's (Output.Lane)
	}
	switch out.State {
	case Full: // capacity counts every lane
		if in.Kind != Enter || admitted || l.rank(s, user) > 0 || l.inPre(user) ||
			len(l.pre)+l.inLine() < s.Capacity {
			return nil
		}
		return l
	case PreQueued:
		if in.Kind == Enter && l.phase == pending {
			l = enter(l, s, user)
		}
		if !l.inPre(user) {
			return nil
		}
		return l
	case Ready:
		return ready(l, s, user, out.Token)
	case NotInQueue:
		return notInQueue(l, in)
	case Waiting:
		if admitted || l.inPre(user) {
			return nil
		}
		if in.Kind == Enter {
			l = enter(l, s, user)
		}
		r, ln := l.rank(s, user), s.laneOf(user)
		if r == 0 {
			return nil
		}
		if l.phase == closed {
			r += l.ahead(s, ln) - len(l.lineOf(ln)) // the lane's part of the pre-queue
		}
		// Positions never go up: the users ahead in the lane who are gone
		// were admitted (or dropped as no-shows), in the lane's order.
		n, ok := l.admit(ln, r-int(out.Position))
		if !ok || int64(n.ahead(s, ln)) != out.Length {
			return nil
		}
		return n
	}
	return nil
}

// ready checks a READY answer carrying token got and applies it: the user
// holds that token, or was in line and is let in now, everyone ahead in
// their lane first.
func ready(l *line, s *Spec, user, got string) *line {
	token, admitted := l.held[user]
	if !admitted {
		r := l.rank(s, user)
		if r == 0 {
			return nil
		}
		var ok bool
		if l, ok = l.admit(s.laneOf(user), r); !ok { // FIFO: everyone ahead goes first
			return nil
		}
		token = ""
	}
	if token == "" {
		n := l.clone()
		n.held[user] = got
		return n.done()
	}
	if token != got {
		return nil
	}
	return l
}

// notInQueue checks a NOT_IN_QUEUE answer to a status and applies it: the
// user is neither in line nor holding a token, or is a no-show the line
// dropped (everyone ahead of them gone first).
func notInQueue(l *line, in Input) *line {
	user := in.User
	token, admitted := l.held[user]
	if in.Kind == Enter || l.inPre(user) {
		return nil
	}
	noShow := in.Spec.AbandonAfter > 0 && in.SinceSeen >= in.Spec.AbandonAfter
	if r := l.rank(in.Spec, user); r > 0 {
		// Only a no-show leaves the line without a token: dropped at
		// the head, so everyone ahead went first.
		if !noShow {
			return nil
		}
		var ok bool
		if l, ok = l.admit(in.Spec.laneOf(user), r); !ok {
			return nil
		}
		token, admitted = "", true
	}
	if admitted {
		if token != "" || !noShow {
			return nil
		}
		n := l.clone()
		delete(n.held, user)
		return n.done()
	}
	return l
}

// leave takes the user out of line or the pre-queue, or gives back their
// token.
func leave(l *line, s *Spec, user string) *line {
	_, admitted := l.held[user]
	if !admitted && l.rank(s, user) == 0 && !l.inPre(user) {
		return l
	}
	n := l.clone()
	delete(n.held, user)
	ln := s.laneOf(user)
	n.setLine(ln, slices.DeleteFunc(n.lineOf(ln), func(u string) bool { return u == user }))
	n.pre = slices.DeleteFunc(n.pre, func(u string) bool { return u == user })
	return n.done()
}

// order checks an order's answer against the user's token: spent on
// success, kept on failure.
func order(l *line, in Input, out Output) *line {
	token, admitted := l.held[in.User]
	valid := admitted && (token == in.Token || token == "")
	if out.Unknown {
		if !valid {
			return l
		}
		n := l.clone()
		delete(n.held, in.User)
		return n.done()
	}
	switch out.Order {
	case Invalid:
		if admitted && token == in.Token {
			return nil
		}
		return l
	case Bought, Kept, InUse:
		if r := l.rank(in.Spec, in.User); !admitted && r > 0 {
			// Admitted, though no answer said so yet (it was lost to a
			// fault): everyone ahead in the lane went first.
			var ok bool
			if l, ok = l.admit(in.Spec.laneOf(in.User), r); !ok {
				return nil
			}
			valid = true
		}
		if !valid {
			return nil
		}
		n := l.clone()
		if out.Order == Bought {
			delete(n.held, in.User)
		} else {
			n.held[in.User] = in.Token
		}
		return n.done()
	}
	return nil
}

func describe(input, output any) string {
	in, out := input.(Input), output.(Output)
	call := fmt.Sprintf("%s(%s)", in.Kind, in.User)
	if in.Kind == Order {
		call = fmt.Sprintf("order(%s, %s)", in.User, short(in.Token))
	}
	switch {
	case out.Unknown:
		return call + " → ?"
	case in.Kind == Leave:
		return call + " → 204"
	case in.Kind == Order:
		return call + " → " + out.Order.String()
	case out.State == Waiting && out.Lane != "":
		return fmt.Sprintf("%s → WAITING %d/%d in %s", call, out.Position, out.Length, out.Lane)
	case out.State == Waiting:
		return fmt.Sprintf("%s → WAITING %d/%d", call, out.Position, out.Length)
	case out.State == Ready:
		return fmt.Sprintf("%s → READY %s", call, short(out.Token))
	}
	return call + " → " + out.State.String()
}

func describeLine(l *line) string {
	var b strings.Builder
	if l.phase != open {
		fmt.Fprintf(&b, "pre-queue %v (%s) ", l.pre, [...]string{"pending", "closed"}[l.phase])
	}
	fmt.Fprintf(&b, "line %v", l.waiting)
	for _, name := range l.laneNames() {
		fmt.Fprintf(&b, " %s %v", name, l.lanes[name])
	}
	users := make([]string, 0, len(l.held))
	for u := range l.held {
		users = append(users, u)
	}
	slices.Sort(users)
	for _, u := range users {
		t := short(l.held[u])
		if t == "" {
			t = "?"
		}
		fmt.Fprintf(&b, " %s:%s", u, t)
	}
	return b.String()
}

func short(token string) string {
	if len(token) > 6 {
		return token[:6]
	}
	return token
}

func partitionByQueue(h []porcupine.Operation) [][]porcupine.Operation {
	byQueue := map[string][]porcupine.Operation{}
	var names []string
	for _, op := range h {
		q := op.Input.(Input).Spec.Queue
		if _, ok := byQueue[q]; !ok {
			names = append(names, q)
		}
		byQueue[q] = append(byQueue[q], op)
	}
	out := make([][]porcupine.Operation, 0, len(names))
	for _, q := range names {
		out = append(out, byQueue[q])
	}
	return out
}
