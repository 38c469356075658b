package redisstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// Lanes and access codes (issue 53) on Redis. The public lane is the line
// (K.line) as it always was; every other lane is a band of one sorted set,
// K.lanes (keys.go), and its tickets are gaps of the public line, so the
// snapshot and the front document stay the public lane's. join.lua takes
// a place in a lane, or redeems a code with it; enter.lua stays the
// public, code-less enter, batched.

// Join is Store.Join (queue.Store): the public lane without a code is
// Enter (batched); anything else is join.lua.
func (s *Store) Join(ctx context.Context, q, user string, j lane.Join) (queue.Standing, error) {
	if j.Code == "" && (j.Lane == "" || j.Lane == lane.Public) {
		return s.Enter(ctx, q, user)
	}
	r, err := s.run(ctx, joinScript, q, []any{user, j.Lane, codeKey(j.Code)}).Slice()
	if err != nil {
		return queue.Standing{}, unavailable(err)
	}
	if len(r) > 0 {
		switch kind, _ := r[0].(int64); kind {
		case kindInvalidCode:
			return queue.Standing{}, accesscode.ErrInvalid
		case kindCodeUsed:
			return queue.Standing{}, accesscode.ErrUsed
		case kindLineFull:
			return queue.Standing{}, queue.ErrQueueFull
		case kindSoldOut:
			return queue.Standing{}, queue.ErrSoldOut
		}
	}
	return parseEntry(r, joinScript)
}

// codeKey is how K.codes keeps a code's hash: a SHA-256 in hex
// (accesscode.Hash, what every caller passes) as its 32 bytes, about a
// third less memory for 100,000 codes (TestCodesMemory); anything else as
// it is ("" stays "": no code).
func codeKey(hash string) string {
	if len(hash) == 2*sha256.Size {
		if b, err := hex.DecodeString(hash); err == nil {
			return string(b)
		}
	}
	return hash
}

// codesChunk bounds the codes one add_codes.lua call keeps: 4,000
// arguments, well within what one call should hold Redis for.
const codesChunk = 1000

// AddCodes is Store.AddCodes (queue.Store): every code checked first
// (accesscode.Code.Check), then a chunk of codes per add_codes.lua call. The codes of one call are kept atomically; an error
// after some chunks leaves those kept (a retry finds them duplicates).
func (s *Store) AddCodes(ctx context.Context, q string, codes []accesscode.Code) (accesscode.Added, error) {
	var out accesscode.Added
	for _, c := range codes {
		if err := c.Check(); err != nil {
			return out, err // before any chunk: nothing kept
		}
	}
	for len(codes) > 0 {
		chunk := codes[:min(len(codes), codesChunk)]
		codes = codes[len(chunk):]
		args := make([]any, 0, 4*len(chunk))
		for _, c := range chunk {
			exp := int64(0)
			if !c.ExpiresAt.IsZero() {
				exp = max(c.ExpiresAt.UnixMilli(), 1)
			}
			args = append(args, codeKey(c.Hash), c.Lane, c.Uses, exp)
		}
		r, err := s.run(ctx, addCodesScript, q, args).Slice()
		if err != nil {
			return out, unavailable(err)
		}
		p := reply{r: r}
		if p.int(0) == kindUnknownQueue {
			return out, queue.ErrQueueNotFound
		}
		out.Added += int(p.int(0))
		out.Duplicates += int(p.int(1))
		if p.err != nil {
			return out, p.err
		}
	}
	return out, nil
}

// noShares is lane_shares once a queue has had lanes but has no shares to
// keep: set, so that standing goes on looking in K.lanes.
const noShares = "-"

// encodeShares is a map of lane → number as the tick state keeps it:
// "name=value ..." in the names' order, "" for none.
func encodeShares(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n + "=" + strconv.FormatFloat(m[n], 'f', -1, 64))
	}
	return b.String()
}

// decodeShares reads what encodeShares wrote (nil for none or noShares;
// an unreadable item is left out).
func decodeShares(s string) map[string]float64 {
	if s == "" || s == noShares {
		return nil
	}
	m := map[string]float64{}
	for _, item := range strings.Fields(s) {
		name, v, _ := strings.Cut(item, "=")
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			m[name] = x
		}
	}
	return m
}

// laneInputs gives the tick its lanes but the public
// (admission.TickInput.Lanes): those in force, in their order, then any
// other with people waiting, by name, each with its length and a front read from
// its band of K.lanes (tick.lua with the lane's id) only if the plan comes
// to it.
func (s *Store) laneInputs(ctx context.Context, name string, t *tickRead) {
	read := map[string]laneRead{}
	for _, l := range t.lanes {
		read[l.name] = l
	}
	var names []string
	for _, l := range t.in.Config.Lanes {
		if l.Name != lane.Public {
			names = append(names, l.Name)
		}
	}
	var others []string // by name, as memstore orders them
	for _, l := range t.lanes {
		if l.length > 0 && !slices.Contains(names, l.name) {
			others = append(others, l.name)
		}
	}
	slices.Sort(others)
	for _, n := range append(names, others...) {
		l := read[n]
		t.in.Lanes = append(t.in.Lanes, admission.LaneInput{Name: n, Length: l.length, Front: s.laneFront(ctx, name, l)})
	}
}

// laneFront reads lane l's front, a stretch at a time.
func (s *Store) laneFront(ctx context.Context, name string, l laneRead) admission.Front {
	return func(from, n int64) ([]admission.Waiter, error) {
		if l.id == 0 || from >= l.length {
			return nil, nil
		}
		more, err := s.readTick(ctx, name, from, int(min(n, frontChunk)), strconv.FormatInt(l.id, 10))
		return more.front, err
	}
}

// planDraws are admit.lua's draws of plan: the public lane's (Draw), then
// each other lane's (DrawLanes) in the order of t's lanes, each with its
// tokens (the plan's, one after the other) and random values of its own.
func planDraws(t tickRead, plan admission.TickPlan, tokens []string) []admitDraw {
	var out []admitDraw
	used := 0
	add := func(n int, name string, id int64) {
		if n <= 0 {
			return
		}
		out = append(out, admitDraw{N: n, Tokens: tokens[used : used+n], Values: admission.DrawValues(plan.Draws),
			Judged: plan.Absent.Judged, SeenBefore: plan.Absent.SeenBefore.UnixMilli(), HiddenBefore: plan.Absent.HiddenBefore.UnixMilli(), Lane: name, ID: id})
		used += n
	}
	add(plan.Draw, "", 0)
	for _, l := range t.lanes {
		add(plan.DrawLanes[l.name], l.name, l.id)
	}
	return out
}

// admittedLanes says the lane each of admit.lua's admitted users waited
// in (rollup.Wait.Lane; "" the public), by their index in the reply's
// order and name: the drawn come first, draw by draw, and while the last
// draw is a lane's (one other than the public drew; the public's is
// first) the reply says from at how many each draw let in; the planned
// follow, in the lanes the plan put them in. A tick with no lane in it
// reads nothing more and makes no map.
func admittedLanes(p *reply, at int, draws []admitDraw, planned []admission.Waiter) func(i int, user string) string {
	var drawn []string // the lane of each drawn user, in order, when a lane drew
	if len(draws) > 0 && draws[len(draws)-1].Lane != "" {
		for j, d := range draws {
			for range p.int(at + j) {
				drawn = append(drawn, d.Lane)
			}
		}
	}
	var in map[string]string
	for _, w := range planned {
		if w.Lane != "" && w.Lane != lane.Public {
			if in == nil {
				in = map[string]string{}
			}
			in[w.User] = w.Lane
		}
	}
	return func(i int, user string) string {
		if i < len(drawn) {
			return drawn[i]
		}
		return in[user]
	}
}

// admit adds w, let in with token, to the plan: a lane's apart.
func (a *admitPlan) admit(w admission.Waiter, token string) {
	if w.Lane == "" || w.Lane == lane.Public {
		a.Admit = append(a.Admit, []any{w.User, w.Ticket, token})
		return
	}
	a.LaneAdmit = append(a.LaneAdmit, []any{w.User, w.Ticket, token, w.Lane})
}

// noShow adds w, passed over with the seen mark read (ms), to the plan.
func (a *admitPlan) noShow(w admission.Waiter, seen int64) {
	if w.Lane == "" || w.Lane == lane.Public {
		a.NoShows = append(a.NoShows, []any{w.User, w.Ticket, seen})
		return
	}
	a.LaneNoShows = append(a.LaneNoShows, []any{w.User, w.Ticket, seen, w.Lane})
}

// laneStats reads stats.lua's lanes (from index i: {lane, length, ...},
// then K.lanestats) into st.Lanes: the lanes in force (c), in their
// order, then any other with people waiting; none for a queue without
// lanes.
func laneStats(r []any, i int, c queue.InForce) ([]lane.Stats, error) {
	lengths, counters := map[string]int64{}, map[string]int64{}
	if i+1 >= len(r) {
		return nil, fmt.Errorf("unexpected stats.lua reply: no lanes")
	}
	ls, _ := r[i].([]any)
	lp := reply{r: ls}
	for j := 0; j+1 < len(ls); j += 2 {
		lengths[lp.str(j)] = lp.int(j + 1)
	}
	cs, _ := r[i+1].([]any)
	cp := reply{r: cs}
	for j := 0; j+1 < len(cs); j += 2 {
		n, _ := strconv.ParseInt(cp.str(j+1), 10, 64)
		counters[cp.str(j)] = n
	}
	if lp.err != nil || cp.err != nil {
		return nil, cmp.Or(lp.err, cp.err)
	}
	var names []string
	for _, l := range c.Lanes {
		names = append(names, l.Name)
	}
	for _, n := range slices.Sorted(maps.Keys(lengths)) {
		if lengths[n] > 0 && !slices.Contains(names, n) && (len(names) > 0 || n != lane.Public) {
			names = append(names, n)
		}
	}
	if len(names) > 0 && !slices.Contains(names, lane.Public) {
		names = append([]string{lane.Public}, names...)
	}
	var out []lane.Stats // nil without lanes
	for _, n := range names {
		out = append(out, lane.Stats{Name: n, Share: c.Lanes.Share(n), Length: lengths[n], Admitted: counters["admitted:"+n],
			Redeemed: counters["redeemed:"+n], CodesLeft: max(counters["added:"+n]-counters["redeemed:"+n], 0)})
	}
	return out, nil
}
