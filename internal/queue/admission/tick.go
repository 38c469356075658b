// Package admission lets people in from the line: it plans each tick once
// for every store (PlanTick), runs the loop that asks the store for ticks
// (Admitter), places a fair opening (OpenLine), and decides the adaptive
// rate (NextRate, RateController). It imports queue for the line's types
// and Store; queue knows nothing of it.
package admission

import (
	"crypto/rand"
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/suspect"
)

// Admission, written once. A store reads what a tick needs (TickInput,
// and the line's front on demand), PlanTick decides the tick — whether
// one is due, the quota, the live-token cap, who is admitted and who is
// skipped as a no-show, the measured rate and the line's pace — and the
// store applies the plan in one atomic step that first checks the tick is
// still the one it read (on Redis: the due time unchanged; in memory: the
// lock held throughout). So every rule of admission lives here, and a new
// one is written once for every store.

// TickState is what admission keeps between ticks. Only admission writes
// it, but for Inline and WinCount, which AdmitNow adds to, and Moved,
// which entering an empty line and an opening set too.
type TickState struct {
	// Next is when the next tick is due (zero: at once).
	Next time.Time
	// LastCall names the call that claimed the last tick (its first fresh
	// token): the same call again, re-sent, admits nobody.
	LastCall string
	// Carry is the fraction of a user the last tick's quota left over.
	Carry float64
	// Inline counts the users AdmitNow let in since the last tick: they
	// come out of the next tick's quota, so the global rate holds.
	Inline int64
	// The measured rate: WinCount admitted since WinStart (a window of
	// about 5 s), and Measured, the last window's users per second.
	WinStart time.Time
	WinCount int64
	Measured float64
	// The line's pace (PaceState), whose clock runs from PaceAt while
	// people wait and admission runs (zero: stopped), and when the front
	// last moved.
	PaceRate, PaceBusy float64
	PaceAt, Moved      time.Time
	// Reach is how far from the front seen marks matter (Pace.Reach), and
	// Checkpoints, oldest first, the ticket at its edge every half of
	// AbandonAfter: no-shows are judged only among users who have been
	// within it for AbandonAfter.
	Reach       int64
	Checkpoints []Checkpoint
	// CapRoom is the room the tick left under the live-token cap
	// (LiveCap): the cap less the tokens alive and those it let in, at
	// least 0; Capped is false when nothing capped them (CapRoom 0). An
	// answer's pace reads it (queue.Pace.NextTickAdmits) from the state it
	// reads anyway, so a status costs no count of the live tokens.
	CapRoom int64
	Capped  bool
	// LaneCredit is each lane's credit carried to the next tick
	// (lane.Split.Carry), and LaneShares the share of the rate each lane
	// in force would get now (LaneShares): an answer's estimate divides
	// by the rate × its lane's (queue.Pace.LaneShare). Both nil for a
	// queue without lanes.
	LaneCredit, LaneShares map[string]float64
	// The estimate's model fitted to the line (issue 54; fitEstimate):
	// PaceClaimed and PaceDeparted are exponentially weighted rates, over
	// estimate.ClaimWindow, of users admitted at the front and of all who
	// left it (admitted or skipped), whose ratio is the share who take
	// their turn; RateMean and RateVar
	// the weighted mean and variance of the rate in force over the last
	// minute, RateRecent its mean over the last few seconds; Phase the
	// phase in force at the last tick; Changes the rate changes its
	// phases schedule ahead; Surprise the last tick at which something
	// no estimate could foresee held admission back (paused, stalled, or
	// the rate cut deeply and lastingly: an operator, the adaptive rate on a
	// backend slowing down; fitEstimate), which the sale's report scores
	// apart.
	PaceClaimed, PaceDeparted, RateMean, RateVar, RateRecent float64
	Phase                                                    string
	Changes                                                  []estimate.Change
	Surprise                                                 time.Time
}

// Checkpoint is the ticket at the edge of the reach at one time.
type Checkpoint struct {
	At     time.Time
	Ticket int64
}

// maxCheckpoints is how many checkpoints a queue keeps: with one every half
// of AbandonAfter, enough that one is always at least AbandonAfter old.
const maxCheckpoints = 3

// TickInput is what a store reads for one tick, in one step, by its clock.
type TickInput struct {
	// Config is the queue's config in force at Now (queue.Config.InForce).
	Config queue.InForce
	State  TickState
	// Now is the store's clock in whole milliseconds.
	Now time.Time
	// Call names the call (its first fresh token; "" when it brings none),
	// and Tokens is how many fresh tokens it brings: the most it may admit.
	Call   string
	Tokens int
	// EffectiveRate is the adaptive rate stored (0: none).
	EffectiveRate float64
	// Placing: an opening's pre-queue is being placed; it goes in first.
	// Pending: an opening is still ahead (its pre-queue not yet closed):
	// the people in it are not in the line yet, but the shadow line waits
	// for them too.
	Placing, Pending bool
	// Length counts the users waiting; Live the tokens alive at Now (read
	// only when a cap needs them: LiveCapped).
	Length, Live int64
	// Stock is what the queue has left to sell: sold out, nobody is
	// admitted; known, Config.AdmitPerUnit caps the live tokens by it.
	Stock queue.Stock
	// Shadow counts the places in the shadow line (suspects', issue 51)
	// and ShadowFront reads them in its order, as Front reads the line:
	// under ShadowLast a tick that finds nobody in the line lets them in
	// (TickPlan.Shadow). A store may leave both zero when the queue's
	// ShadowAdmits is never.
	Shadow      int64
	ShadowFront Front
	// Lanes are the queue's lanes other than lane.Public (issue 53), each
	// a line of its own: those in force (Config.Lanes) and any other with
	// people waiting in it (a lane a phase or an operator took away, let
	// in with share 0). Length and the front above are the public lane's.
	// Empty for a queue without lanes.
	Lanes []LaneInput
}

// LaneInput is one lane other than lane.Public as a tick reads it: its
// length and its front, which reads it in its order as Front does.
type LaneInput struct {
	Name   string
	Length int64
	Front  Front
}

// waiting is how many wait in every lane together.
func (in TickInput) waiting() int64 {
	n := in.Length
	for _, l := range in.Lanes {
		n += l.Length
	}
	return n
}

// LiveCapped says whether a tick of config c with stock st needs the live
// tokens counted (TickInput.Live): a cap holds them.
func LiveCapped(c queue.InForce, st queue.Stock) bool {
	return c.MaxActiveTokens > 0 || c.AdmitPerUnit > 0 && st.Known
}

// LiveCap is the most tokens that may be alive at once, and false when
// nothing caps them: MaxActiveTokens, and what is left to sell ×
// AdmitPerUnit (rounded down: a fraction of a unit buys nothing).
func LiveCap(c queue.InForce, st queue.Stock) (int64, bool) {
	limit, capped := c.MaxActiveTokens, c.MaxActiveTokens > 0
	if c.AdmitPerUnit > 0 && st.Known {
		byStock := int64(math.Floor(float64(st.Units) * c.AdmitPerUnit))
		if !capped || byStock < limit {
			limit, capped = byStock, true
		}
	}
	return limit, capped
}

// Waiter is a user at the front of the line as admission reads it: their
// ticket, and when they were last seen (zero: never; AbandonAfter), and
// whether their page last said it was hidden (AbandonAfterHidden).
type Waiter struct {
	User   string
	Ticket int64
	Seen   time.Time
	Hidden bool
	// Lane is the lane the waiter is in ("": lane.Public); PlanTick sets
	// it on those it plans.
	Lane string
}

// Front reads up to n waiters in line order from the 0-based rank from;
// fewer at the end of the line.
type Front func(from, n int64) ([]Waiter, error)

// TickPlan is PlanTick's decision.
type TickPlan struct {
	// Due: this call claims a tick. Write: State is to be stored (a
	// claimed tick, or a due time pulled in after the clock went back).
	Due, Write bool
	State      TickState
	// Admitted, in line order, get the call's fresh tokens, the i-th the
	// i-th, expiring at Expires; Skipped are no-shows. Both leave the line.
	Admitted, Skipped []Waiter
	Expires           time.Time
	// Draw (MethodRandom) is how many users the store draws at random from
	// the line, in its atomic step, instead of Admitted: each with the
	// call's next fresh token, passing over the no-shows Absent names,
	// with at most Draws random values (Draw for each one admitted, and
	// one for each no-show it may pass over). See DrawIndex.
	Draw, Draws int
	// DrawLanes is how many the store draws, likewise, from each lane
	// other than lane.Public (Draw is the public lane's), each among its
	// lane's people only.
	DrawLanes map[string]int
	// Absent tells no-shows (AbandonAfter) from those present.
	Absent Absence
	// NextIn is how long until the next tick is due.
	NextIn time.Duration
	// Idle: the line was empty and the tick changed nothing (not stored);
	// the next one matters only once someone comes (queue.Admission.Idle).
	Idle bool
	// Shadow: Admitted are the shadow line's (ShadowFront), let in, in its
	// order, by a tick that found nobody waiting in the line.
	Shadow bool
}

// Admission is the plan as the caller of Store.Admit sees it.
func (p TickPlan) Admission() queue.Admission {
	a := queue.Admission{Ticked: p.Due, Skipped: len(p.Skipped), NextIn: p.NextIn, Idle: p.Idle, Shadow: p.Shadow, Expires: p.Expires}
	for _, w := range p.Admitted {
		a.Admitted = append(a.Admitted, w.User)
	}
	return a
}

// skipScan bounds how many no-shows one tick passes over.
const skipScan = 1000

// measureWindow is how long the measured rate counts before it is figured.
const measureWindow = 5 * time.Second

// PlanTick decides one admission tick. A tick is due when the store's clock
// reaches State.Next, and claiming it moves Next one interval on, so any
// number of instances together admit the configured rate with no leader;
// a tick claimed late is made up, but a backlog of more than one is
// dropped (Next re-anchors to now): a stalled instance releases at most two
// batches back to back, never a burst. The tick admits rate × interval
// users (the fraction carries over), at most a batch and no more than the
// call's tokens, less those AdmitNow let in since the last tick, and no
// more than the room under the live-token cap (MaxActiveTokens, and the
// stock left × AdmitPerUnit); nobody while paused, sold out or while an
// opening is being placed. With AbandonAfter, a user at the front not seen
// for that long, though judged (see the checkpoints), is a no-show: out of
// line without a token, and the tick fills its quota from those behind.
// Under MethodRandom the plan names nobody: the store draws the quota from
// the whole line in its atomic step (TickPlan.Draw), no-shows passed over
// by the same rule (Absence). Under ShadowLast, a tick that finds nobody
// in the line and no opening ahead or being placed lets the shadow line
// in instead, in its order (TickPlan.Shadow). Under a cap, the state records the room the
// tick left under it (TickState.CapRoom), which answers read for the
// estimate (queue.Pace.NextTickAdmits).
func PlanTick(in TickInput, front Front) (TickPlan, error) {
	c, now := in.Config, in.Now
	p := TickPlan{State: in.State}
	st := &p.State
	due := st.Next
	if due.IsZero() {
		due = now
	}
	// Due more than one interval ahead: the clock went back (an NTP step,
	// a restored VM) since it was written. Wait one interval from now, and
	// keep that, or the limit would move on with the clock forever.
	if limit := now.Add(c.Interval); due.After(limit) {
		due, st.Next, p.Write = limit, limit, true
	}
	// The same call again: the Redis client re-sent it after a read timed
	// out, though it had run. Its tokens went to the users it admitted;
	// admitting others with them would give two people one token.
	if in.Call != "" && in.Call == st.LastCall || now.Before(due) {
		p.NextIn = max(due.Sub(now), 0)
		return p, nil
	}
	p.Due, p.Write = true, true
	next := nextDue(in, due)
	rate := c.RateInForce(in.EffectiveRate)
	stopped := c.Paused || in.Placing || in.Stock.SoldOut()
	reach := int64(math.Ceil(4*c.AbandonAfter.Seconds()*max(rate, st.PaceRate))) + 2*int64(c.BatchSize)
	if c.Method == queue.MethodRandom {
		reach = drawReach // anyone in line may be drawn next
	}
	judged, mark, err := checkpoints(c, st, now, reach, in, front)
	if err != nil {
		return p, err
	}
	absence := Absence{Judged: judged, SeenBefore: now.Add(-c.AbandonAfter), HiddenBefore: now.Add(-max(c.AbandonAfterHidden, c.AbandonAfter))}
	carry := 0.0
	if !stopped {
		var n int
		n, carry = quota(c, rate, st.Carry, in.Tokens)
		n = max(n-int(st.Inline), 0)
		// The live-token cap: what it holds back is not carried (it would
		// come out as a burst when room appears).
		if limit, capped := LiveCap(c, in.Stock); capped && limit-in.Live < int64(n) {
			n, carry = int(max(limit-in.Live, 0)), 0
		}
		if err := p.admit(in, front, n, absence); err != nil {
			return p, err
		}
		if len(p.Admitted)+p.drawn() < n { // nobody waiting for the rest: it does not pile up
			carry = 0
		}
	}
	st.forAnswers(in, len(p.Admitted)+p.drawn())
	st.measure(now, len(p.Admitted)+p.drawn())
	st.fitEstimate(c, now, in.EffectiveRate, in.waiting(), len(p.Admitted)+p.drawn(), len(p.Admitted)+len(p.Skipped)+p.drawn(), stopped)
	st.advancePace(c, now, in.waiting(), len(p.Admitted)+len(p.Skipped)+p.drawn(), stopped)
	st.Reach, st.Checkpoints = 0, nil
	if c.AbandonAfter > 0 {
		st.Reach, st.Checkpoints = reach, in.State.Checkpoints
		if mark != nil {
			st.Checkpoints = append(slices.Clone(st.Checkpoints), *mark)
			st.Checkpoints = st.Checkpoints[max(0, len(st.Checkpoints)-maxCheckpoints):]
		}
	}
	// Rounded as a store keeps it, so every store admits on the same
	// ticks: unrounded, 0.1 ten times is 0.9999999999999999.
	st.Next, st.Carry, st.LastCall, st.Inline = next, round(carry, 1e6), in.Call, 0
	p.Expires, p.NextIn = now.Add(c.TokenTTL), next.Sub(now)
	if in.waiting() == 0 && !p.Shadow && unchanged(in.State, *st) {
		// An empty line's tick that changes nothing anyone reads is not
		// stored: an idle queue then costs each instance a read a tick, not
		// a read and a write (nor a journal frame in the embedded store).
		// Entering an empty line sets Moved itself, and the next tick due
		// after someone enters admits one tick's quota, as it would have.
		// It is still a tick taken (Due): it admitted the nobody there was.
		p.Write, p.State, p.Idle = false, in.State, true
	}
	return p, nil
}

// admit plans whom the tick lets in, n at most: the shadow line's, on its
// turn (shadowTurn), in its order (suspects are never drawn, and never
// judged no-shows: they are not marked seen); else the line's (choose),
// lane by lane when the queue has lanes (lanes).
func (p *TickPlan) admit(in TickInput, front Front, n int, absent Absence) (err error) {
	if shadowTurn(in) {
		p.Shadow = true
		p.Admitted, p.Skipped, err = pick(in.ShadowFront, n, Absence{Judged: -1})
		return err
	}
	if len(in.Lanes) == 0 && len(in.Config.Lanes) == 0 {
		return p.choose(in.Config, front, n, in.Length, absent)
	}
	return p.lanes(in, front, n, absent)
}

// drawn is how many the plan draws at random, every lane together.
func (p *TickPlan) drawn() int {
	n := p.Draw
	for _, d := range p.DrawLanes {
		n += d
	}
	return n
}

// shadowTurn says a tick lets the shadow line in: the queue says so
// (ShadowLast), someone is in it, and nobody waits in the line, nor in an
// opening's pre-queue (ahead, or being placed).
func shadowTurn(in TickInput) bool {
	return in.Config.ShadowAdmits == suspect.AdmitLast && in.Shadow > 0 && in.waiting() == 0 && !in.Placing && !in.Pending && in.ShadowFront != nil
}

// forAnswers records what answers read of a tick that let admitted in:
// the room it left under the live-token cap (CapRoom, Capped) and the
// share of the rate each lane gets (LaneShares).
func (st *TickState) forAnswers(in TickInput, admitted int) {
	st.LaneShares = laneShares(in.Config.Lanes, in)
	st.CapRoom, st.Capped = 0, false
	if limit, capped := LiveCap(in.Config, in.Stock); capped {
		st.CapRoom, st.Capped = max(limit-in.Live-int64(admitted), 0), true
	}
}

// nextDue is when the tick after one due at due is: one interval on. A
// tick claimed late is made up, once (due now), but only for people who
// were waiting: after the line stood empty or stopped (the last stored
// tick left the pace's clock stopped) an idle queue's ticks were not
// stored, and nobody is owed them.
func nextDue(in TickInput, due time.Time) time.Time {
	next, now := due.Add(in.Config.Interval), in.Now
	switch {
	case !next.Before(now):
		return next
	case in.State.PaceAt.IsZero():
		return now.Add(in.Config.Interval)
	default:
		return now
	}
}

// unchanged reports whether a tick of an empty line moved the state from
// was to is only in what an empty line's tick always moves: when the next
// tick is due, the call that claimed it, when the front last moved, the
// start of a measuring window that counted nobody and changed no figure,
// and the room under the live-token cap (tokens expiring move it while
// nobody waits, and an idle queue would be written on every tick; the
// first tick after someone enters records it). Every other field is
// compared, a field added later included.
func unchanged(was, is TickState) bool {
	if is.WinCount != 0 || was.WinCount != 0 {
		return false
	}
	is.Next, is.LastCall, is.Moved, is.WinStart = was.Next, was.LastCall, was.Moved, was.WinStart
	is.CapRoom, is.Capped = was.CapRoom, was.Capped
	wasMarks, isMarks := was.Checkpoints, is.Checkpoints
	was.Checkpoints, is.Checkpoints = nil, nil
	return reflect.DeepEqual(was, is) && slices.Equal(wasMarks, isMarks) // nil and empty alike
}

// quota is how many users one tick admits at rate, with the fraction
// carried from the last, at most a batch and the tokens at hand (what the
// tokens hold back is kept for the next tick, as the caller's config may be
// older), and the fraction it carries on.
func quota(c queue.InForce, rate, carried float64, tokens int) (int, float64) {
	q := rate*c.Interval.Seconds() + carried
	n := int(q)
	carry := q - float64(n)
	if n > c.BatchSize {
		n, carry = c.BatchSize, 0
	}
	if n > tokens {
		n, carry = tokens, carry+float64(n-tokens)
	}
	return n, carry
}

// MayAdmitNow says whether the next tick's quota has room for one more user
// let straight in (Store.AdmitNow), given the rate stored, the tick state,
// the stock and the live tokens (read when LiveCapped): not while sold out,
// nor over the live-token cap. Under passthrough the rate does not hold
// people back: only the cap does.
func MayAdmitNow(c queue.InForce, effectiveRate float64, st TickState, stock queue.Stock, live int64) bool {
	if limit, capped := LiveCap(c, stock); stock.SoldOut() || capped && live >= limit {
		return false
	}
	if c.Method == queue.MethodPassthrough {
		return true
	}
	n, _ := quota(c, c.RateInForce(effectiveRate), st.Carry, c.BatchSize)
	return st.Inline < int64(n)
}

// checkpoints reads the no-show checkpoints: the highest ticket that was
// within the reach of seen marks at least AbandonAfter ago (judged; -1:
// none), and a new checkpoint when one is due, at the ticket at the edge
// of the reach (edgeTicket).
func checkpoints(c queue.InForce, st *TickState, now time.Time, reach int64, in TickInput, front Front) (int64, *Checkpoint, error) {
	judged := int64(-1)
	if c.AbandonAfter == 0 {
		return judged, nil, nil
	}
	for _, ck := range st.Checkpoints {
		if now.Sub(ck.At) >= c.AbandonAfter {
			judged = max(judged, ck.Ticket)
		}
	}
	if n := len(st.Checkpoints); n > 0 && now.Sub(st.Checkpoints[n-1].At) < c.AbandonAfter/2 {
		return judged, nil, nil
	}
	ticket, err := edgeTicket(reach, in, front)
	return judged, &Checkpoint{At: now, Ticket: ticket}, err
}

// edgeTicket is the ticket at the edge of the reach of seen marks (or the
// last in line, if nearer), 0 when nobody waits. With lanes, each lane's
// front is its own, and a ticket is comparable across lanes (one
// counter): the lowest lane's edge is within the reach in every lane, so
// nobody is judged a no-show who was not within it in their own.
func edgeTicket(reach int64, in TickInput, front Front) (int64, error) {
	lanes := append([]LaneInput{{Length: in.Length, Front: front}}, in.Lanes...)
	edge := int64(0)
	for _, l := range lanes {
		if l.Length == 0 {
			continue
		}
		w, err := l.Front(min(reach, l.Length)-1, 1)
		if err != nil {
			return 0, err
		}
		if len(w) > 0 && (edge == 0 || w[0].Ticket < edge) {
			edge = w[0].Ticket
		}
	}
	return edge, nil
}

// choose plans whom the tick lets in, n at most, of a line length long:
// under MethodRandom a draw the store makes in its atomic step, so among
// everyone in line as it is then (counted here as if nobody drawn is a
// no-show); else the first n present at the front (pick).
func (p *TickPlan) choose(c queue.InForce, front Front, n int, length int64, absent Absence) (err error) {
	if c.Method != queue.MethodRandom {
		p.Admitted, p.Skipped, err = pick(front, n, absent)
		return err
	}
	p.Draw, p.Absent = int(min(int64(n), length)), absent
	p.Draws = p.Draw
	if c.AbandonAfter > 0 {
		p.Draws += int(min(skipScan, length-int64(p.Draw)))
	}
	return nil
}

// drawReach is the reach of seen marks under MethodRandom: the whole line,
// as anyone in it may be drawn at the next tick.
const drawReach = math.MaxInt32

// Absence is the no-show rule (Config.AbandonAfter) as one tick applies
// it: a waiter is a no-show when their ticket is judged (no higher than
// Judged: they have been within the reach of seen marks for AbandonAfter;
// -1 when no-shows are not skipped) and they were not seen since
// SeenBefore (now less AbandonAfter; never seen counts as not seen), or,
// when their page last said it was hidden (Waiter.Hidden), since
// HiddenBefore: now less AbandonAfterHidden, or less AbandonAfter where
// that is longer (issue 55: a locked phone's page polls nothing until it
// wakes, and a background tab's timers are slowed, yet its person has not
// left).
type Absence struct {
	Judged                   int64
	SeenBefore, HiddenBefore time.Time
}

// HiddenHolds is how long a hidden mark holds against a visible one
// (queue's Store.Seen): each instance sends its marks once a second, in a
// call of up to two (perqueue.CallTimeout), so a page's poll made on one
// instance just before the page was hidden may reach the store after the
// beacon made on another, up to three seconds later. A visible mark that
// comes within this of a hidden one refreshes its time and leaves it
// hidden; a page shown again marks itself visible at its next poll after
// it, and a hidden page taken for visible would have the shorter timeout
// (a locked phone's next word is only when it wakes).
const HiddenHolds = 3 * time.Second

// NoShow says whether w is a no-show. admit.lua asks the same of a user it
// drew, with Judged, SeenBefore and HiddenBefore (in ms; a mark of 0 for
// never seen) in its plan.
func (a Absence) NoShow(w Waiter) bool {
	bar := a.SeenBefore
	if w.Hidden {
		bar = a.HiddenBefore
	}
	return w.Ticket <= a.Judged && w.Seen.Before(bar)
}

// DrawIndex maps a random value r (uniform in [0, 2^53)) to a 0-based rank
// in a line of length users (≥ 1): each rank equally likely, to within
// length/2^53. In float64 arithmetic, which admit.lua's Lua numbers do
// alike, so the same value draws the same rank on every store: r/2^53 is
// exact, and the product rounds to at most length·(1-2^-53) < length.
func DrawIndex(r uint64, length int64) int64 {
	return int64(float64(r) / (1 << 53) * float64(length))
}

// DrawValues returns n random values for DrawIndex, from crypto/rand: the
// draw of MethodRandom must not be one a user can predict.
func DrawValues(n int) []uint64 {
	buf := make([]byte, 8*n)
	rand.Read(buf) // never fails (crypto/rand panics rather than return a weak value)
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(buf[8*i:]) >> 11
	}
	return out
}

// pick reads the front for the first n present users, passing over at
// most skipScan no-shows (Absence).
func pick(front Front, n int, absent Absence) (admitted, skipped []Waiter, err error) {
	var from int64
	for len(admitted) < n && len(skipped) < skipScan {
		chunk, err := front(from, int64(min(n-len(admitted), skipScan)))
		if err != nil || len(chunk) == 0 {
			return admitted, skipped, err
		}
		for _, w := range chunk {
			if len(skipped) == skipScan {
				break
			}
			from++
			if absent.NoShow(w) {
				skipped = append(skipped, w)
			} else {
				admitted = append(admitted, w)
			}
		}
	}
	return admitted, skipped, nil
}

// measure counts a tick's admitted users in the measured rate's window,
// and figures the rate once the window is long enough.
func (st *TickState) measure(now time.Time, admitted int) {
	if st.WinStart.IsZero() {
		st.WinStart = now
	}
	st.WinCount += int64(admitted)
	if el := now.Sub(st.WinStart); el >= measureWindow {
		st.Measured = round(float64(st.WinCount)/el.Seconds(), 1e3)
		st.WinStart, st.WinCount = now, 0
	}
}

// MeasuredRate is the admitted users per second over the last window, or 0
// when no window closed for two of its lengths: admission stopped (no
// instance running), and the last figure would be stale.
func (st TickState) MeasuredRate(now time.Time) float64 {
	if st.WinStart.IsZero() || now.Sub(st.WinStart) >= 2*measureWindow {
		return 0
	}
	return st.Measured
}

// advancePace moves the line's pace on by one tick in which left users left
// the front of a line length long (before the tick): an exponentially
// weighted rate, over the last minute, of users leaving the front, on a
// clock that runs only while people wait and admission runs (stopped:
// paused, or an opening being placed).
func (st *TickState) advancePace(c queue.InForce, now time.Time, length int64, left int, stopped bool) {
	if stopped || length == 0 {
		st.PaceAt = time.Time{}
	} else {
		dt := c.Interval.Seconds()
		if !st.PaceAt.IsZero() {
			dt = now.Sub(st.PaceAt).Seconds()
		}
		rate := st.PaceRate*math.Exp(-dt/estimate.PaceWindow.Seconds()) + float64(left)/estimate.PaceWindow.Seconds()
		st.PaceRate, st.PaceBusy = round(rate, 1e6), round(min(st.PaceBusy+dt, 3600), 1e3)
		st.PaceAt = time.Time{}
		if length > int64(left) {
			st.PaceAt = now
		}
	}
	if stopped || length == 0 || left > 0 {
		st.Moved = now
	}
}

func round(v, scale float64) float64 { return math.Round(v*scale) / scale }
