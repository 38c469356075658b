package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/suspect"
)

// tickFields are admission.TickState in the admission hash, field by field.
// tick.lua reads them (tickReads); admit.lua writes what the plan changed.
var tickFields = []string{"next", "last_call", "carry", "inline", "win_start", "win_count", "measured",
	"pace_rate", "pace_busy", "pace_at", "moved", "reach", "checkpoints", "cap_room", "lane_credit", "lane_shares",
	"pace_claimed", "pace_departed", "rate_mean", "rate_var", "rate_recent", "phase", "changes", "surprise"}

// tickReads are the fields of the queue's hash tick.lua reads for Go, by
// name: the whole config, the epoch (a queue is known by it or its rate),
// the tick state, and the rest of admission.TickInput.
var tickReads = slices.Concat(settingFields, []string{"epoch"}, tickFields, []string{"eff_rate", "open_state", "units_left"}, phaseFieldNames)

// tickReadArgs is tickReads as tick.lua's arguments, made once: every
// instance reads every queue's tick ten times a second.
var tickReadArgs = func() []any {
	args := make([]any, len(tickReads))
	for i, f := range tickReads {
		args[i] = f
	}
	return args
}()

// phaseFieldNames are the fields through which the scripts see the
// settings of the phase in force (adm.phase_rate before cfg.rate, …):
// "phase_" and the field of each setting a phase may change
// (queue.Setting.Phased) that the library reads; a phased setting only Go
// reads (the entry policy, the message) has none, so no tick reads or
// writes a message it does not need. The queue's own stay where the admin
// put them, and each tick brings these to the phase in force by Redis's
// clock (phaseFields), so a phase starts, on every instance, within a
// tick.
var phaseFieldNames = func() []string {
	var names []string
	for _, s := range queue.Settings {
		if s.Phased && strings.Contains(lib.text, "'"+phasePrefix+s.Field+"'") {
			names = append(names, phasePrefix+s.Field)
		}
	}
	return names
}()

const phasePrefix = "phase_"

// phaseFields are the phase_ fields for the settings in force, each as the
// config hash holds its setting where the phase in force overrides it, ""
// (none) where the phase keeps the queue's own.
func phaseFields(in queue.InForce) map[string]string {
	want := map[string]string{}
	for _, f := range phaseFieldNames {
		want[f] = ""
	}
	i := slices.IndexFunc(in.Phases, func(p queue.Phase) bool { return p.Name == in.PhaseInForce })
	if in.PhaseInForce == "" || i < 0 {
		return want
	}
	fields := queue.StoreFields(in.Config) // a pair per row, in table order
	for j, s := range queue.Settings {
		if _, ok := in.Phases[i].Overrides[s.Name]; ok && s.Phased {
			want[phasePrefix+s.Field] = fields[2*j+1]
		}
	}
	return want
}

// added are the fields admit.lua adds to rather than sets: AdmitNow adds to
// them too, between a tick's read and its apply.
var added = []string{"inline", "win_count"}

// frontChunk bounds the users one tick.lua call reads from the front.
const frontChunk = 1000

// Admit implements queue.Store: tick.lua reads, with the front's first
// users (a tick passing over no-shows reads further), admission.PlanTick
// decides on the config in force at Redis's clock, and admit.lua applies
// the plan, and the phase in force (phaseFields), if the tick is still the
// one read.
func (s *Store) Admit(ctx context.Context, name string, tokens []string) (queue.Admission, error) {
	return s.admit(ctx, name, tokens, admitScript)
}

// admit is Admit applying its plan with apply: admit.lua, or (only in a
// -tags historybugs build) admit.lua without its guards.
func (s *Store) admit(ctx context.Context, name string, tokens []string, apply *script) (queue.Admission, error) {
	t, err := s.readTick(ctx, name, 0, min(len(tokens), frontChunk), "")
	if err != nil {
		return queue.Admission{}, err
	}
	s.shadowTurn(ctx, name, &t)
	s.laneInputs(ctx, name, &t)
	t.in.Tokens = len(tokens)
	if len(tokens) > 0 {
		t.in.Call = tokens[0]
	}
	front := func(from, n int64) ([]admission.Waiter, error) {
		read := int64(len(t.front))
		switch {
		case from >= t.in.Length:
			return nil, nil
		case from+n <= read || read == t.in.Length:
			return t.front[min(from, read):min(from+n, read)], nil
		}
		more, err := s.readTick(ctx, name, from, int(min(n, frontChunk)), "")
		return more.front, err
	}
	phase := phaseFields(t.in.Config)
	plan, err := admission.PlanTick(t.in, front)
	if err != nil {
		return plan.Admission(), err
	}
	maps.DeleteFunc(phase, func(f, v string) bool { return t.stored[f] == v })
	if !plan.Write && len(phase) == 0 {
		return plan.Admission(), nil
	}
	args, draws, err := applyArgs(t, plan, tokens, phase)
	if err != nil {
		return queue.Admission{}, err
	}
	r, err := s.run(ctx, apply, name, args).Slice()
	if err != nil {
		return queue.Admission{}, unavailable(err)
	}
	p := reply{r: r}
	a := queue.Admission{Ticked: plan.Due && p.int(0) == kindApplied, NextIn: plan.NextIn, Shadow: plan.Shadow, Expires: plan.Expires}
	if a.Ticked {
		a.Skipped = int(p.int(1))
		n := int(p.int(2))
		laneOf := admittedLanes(&p, 3+2*n, draws, plan.Admitted)
		for i := range n {
			a.Admitted = append(a.Admitted, p.str(3+i))
			w := waited(r, 3+n+i, t.in.Now)
			w.Lane = laneOf(i, a.Admitted[i])
			// Taken before something no estimate could foresee (the
			// tick's surprise, as this tick wrote it): scored apart.
			w.Apart = !w.Entered.IsZero() && w.Entered.Before(plan.State.Surprise)
			a.Waited = append(a.Waited, w)
		}
	}
	return a, p.err
}

// waited reads admit.lua's "ms shown low high" at r[i] (nil: not kept; an
// earlier version's "ms shown": no range shown) as the wait of a user
// admitted at now.
func waited(r []any, i int, now time.Time) rollup.Wait {
	w := rollup.Wait{Admitted: now, Low: rollup.NoneShown, High: rollup.NoneShown}
	var s string
	if i < len(r) {
		s, _ = r[i].(string)
	}
	f := strings.Fields(s)
	n := make([]int64, len(f))
	for j := range f {
		var err error
		if n[j], err = strconv.ParseInt(f[j], 10, 64); err != nil {
			return w
		}
	}
	switch len(f) {
	case 4:
		w.Low, w.High = n[2], n[3]
		fallthrough
	case 2:
		w.Entered, w.Shown = time.UnixMilli(n[0]).UTC(), n[1]
	}
	return w
}

// tickRead is what tick.lua read: the input, the tick state's fields as
// stored, and a stretch of the front.
type tickRead struct {
	in     admission.TickInput
	stored map[string]string
	front  []admission.Waiter
	shadow int64 // the shadow line's length
	// lanes are the lanes but the public that have had people (K.laneids),
	// each with its id and length.
	lanes []laneRead
}

// laneRead is one lane but the public as tick.lua read it.
type laneRead struct {
	name       string
	id, length int64
}

// shadowTurn gives the tick the shadow line (admission.TickInput.Shadow)
// when the queue lets it in last: its front is read, a stretch at a time,
// only if the plan comes to it (the line empty).
func (s *Store) shadowTurn(ctx context.Context, name string, t *tickRead) {
	if t.in.Config.ShadowAdmits != suspect.AdmitLast || t.shadow == 0 {
		return
	}
	t.in.Shadow = t.shadow
	t.in.ShadowFront = func(from, n int64) ([]admission.Waiter, error) {
		more, err := s.readTick(ctx, name, from, int(min(n, frontChunk)), "shadow")
		return more.front, err
	}
}

// readTick runs tick.lua, reading the front of line: "" the line's,
// "shadow" the shadow line's, or a lane's id (laneFront).
func (s *Store) readTick(ctx context.Context, name string, from int64, n int, line string) (tickRead, error) {
	args := make([]any, 0, 3+len(tickReads))
	args = append(append(args, from, n, line), tickReadArgs...)
	r, err := s.run(ctx, tickScript, name, args).Slice()
	if err != nil {
		return tickRead{}, unavailable(err)
	}
	p := reply{r: r}
	const at = 4 // the fields read, after now, the line's length, the live tokens and the shadow line's length
	if len(r) < at+len(tickReads)+1 {
		return tickRead{}, fmt.Errorf("unexpected tick.lua reply %v", r)
	}
	if known := r[at+slices.Index(tickReads, "rate")] != nil || r[at+slices.Index(tickReads, "epoch")] != nil; !known {
		return tickRead{}, queue.ErrQueueNotFound
	}
	t := tickRead{stored: map[string]string{}}
	t.in.Now, t.in.Length, t.in.Live, t.shadow = p.ms(0), p.int(1), p.int(2), p.int(3)
	c, err := p.config(at, tickReads)
	if err != nil {
		return t, err
	}
	t.in.Config = c.InForce(t.in.Now)
	for i, f := range tickReads {
		t.stored[f] = p.opt(at + i)
	}
	t.in.EffectiveRate, _ = strconv.ParseFloat(t.stored["eff_rate"], 64)
	t.in.Placing = t.stored["open_state"] == "placing"
	t.in.Pending = !t.in.Config.OpensAt.IsZero() && t.stored["open_state"] == "" // as the prelude's opening
	t.in.Stock = p.stock(at + slices.Index(tickReads, "units_left"))
	if t.in.State, err = decodeTick(t.stored); err != nil {
		return t, fmt.Errorf("redis data damaged: admission state: %w", err)
	}
	lanes, _ := r[at+len(tickReads)].([]any)
	lp := reply{r: lanes}
	for i := 0; i+2 < len(lanes); i += 3 {
		t.lanes = append(t.lanes, laneRead{name: lp.str(i), id: int64(lp.float(i + 1)), length: lp.int(i + 2)})
	}
	if lp.err != nil {
		return t, lp.err
	}
	for i := at + len(tickReads) + 1; i+2 < len(r); i += 3 {
		seen := p.float(i + 2) // negative: the page said it was hidden (seen.lua)
		t.front = append(t.front, admission.Waiter{User: p.str(i), Ticket: int64(p.float(i + 1)), Seen: msTime(math.Abs(seen)), Hidden: seen < 0})
	}
	return t, p.err
}

// admitPlan is admit.lua's ARGV[3]: a plan of admission.PlanTick, as the
// script applies it (its header names each field). Never a JSON null:
// the script iterates every field but draw.
type admitPlan struct {
	Set     map[string]string `json:"set"`     // the tick state's fields the plan changed ("" deletes one)
	Add     map[string]int64  `json:"add"`     // and those it adds to (added)
	Admit   [][]any           `json:"admit"`   // user, ticket, token
	NoShows [][]any           `json:"noShows"` // user, ticket, the seen mark read (ms, hidden or not; 0 never)
	Draws   []admitDraw       `json:"draws,omitempty"`
	Shadow  bool              `json:"shadow,omitempty"` // Admit are the shadow line's (admission.TickPlan.Shadow)
	// The lanes but the public (issue 53): their planned, as Admit and
	// NoShows with the lane fourth; Lanes: the queue has lanes (count each
	// admitted on their lane).
	LaneAdmit   [][]any `json:"laneAdmit,omitempty"`
	LaneNoShows [][]any `json:"laneNoShows,omitempty"`
	Lanes       bool    `json:"lanes,omitempty"`
}

// admitDraw is a random draw's part of admitPlan (admission.TickPlan.Draw).
type admitDraw struct {
	N          int      `json:"n"`          // how many to let in
	Tokens     []string `json:"tokens"`     // theirs, in the order they are drawn
	Values     []uint64 `json:"values"`     // random, for admission.DrawIndex
	Judged     int64    `json:"judged"`     // admission.Absence
	SeenBefore int64    `json:"seenBefore"` // in ms
	// HiddenBefore is admission.Absence's, for a hidden mark (in ms).
	HiddenBefore int64  `json:"hiddenBefore"`
	Lane         string `json:"lane,omitempty"` // a lane but the public (issue 53), drawn among its people only
	ID           int64  `json:"id,omitempty"`   // its id (K.laneids)
}

// applyArgs are admit.lua's arguments for plan: the due time read, the
// tokens' expiry, and the plan, with the phase_ fields that change; and
// the plan's draws, in the order admit.lua makes them.
func applyArgs(t tickRead, plan admission.TickPlan, tokens []string, phase map[string]string) ([]any, []admitDraw, error) {
	now := encodeTick(plan.State)
	if now["lane_shares"] == "" && t.stored["lane_shares"] != "" {
		now["lane_shares"] = noShares // once set, never deleted (standing's rule)
	}
	a := admitPlan{Set: phase, Add: map[string]int64{}, Admit: [][]any{}, NoShows: [][]any{}, Shadow: plan.Shadow,
		Lanes: !plan.Shadow && (len(t.in.Lanes) > 0 || len(t.in.Config.Lanes) > 0)}
	for _, f := range tickFields {
		switch {
		case slices.Contains(added, f):
			before, _ := strconv.ParseInt(t.stored[f], 10, 64)
			after, _ := strconv.ParseInt(now[f], 10, 64)
			if after != before {
				a.Add[f] = after - before
			}
		case now[f] != t.stored[f]:
			a.Set[f] = now[f]
		}
	}
	a.Draws = planDraws(t, plan, tokens)
	for i, w := range plan.Admitted {
		a.admit(w, tokens[i])
	}
	for _, w := range plan.Skipped { // with the seen mark read: one seen since is not skipped
		seen := int64(0)
		if !w.Seen.IsZero() {
			seen = w.Seen.UnixMilli()
		}
		a.noShow(w, seen)
	}
	js, err := json.Marshal(a)
	return []any{t.stored["next"], plan.Expires.UnixMilli(), js}, a.Draws, err
}

// encodeTick is a tick state as the admission hash keeps it, field by field
// ("" for a field that is not set).
func encodeTick(st admission.TickState) map[string]string {
	ms := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatInt(t.UnixMilli(), 10)
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	var cks []string
	for _, c := range st.Checkpoints {
		cks = append(cks, ms(c.At)+":"+strconv.FormatInt(c.Ticket, 10))
	}
	reach := ""
	if st.Reach > 0 {
		reach = strconv.FormatInt(st.Reach, 10)
	}
	capRoom := "" // no cap
	if st.Capped {
		capRoom = strconv.FormatInt(st.CapRoom, 10)
	}
	return map[string]string{"next": ms(st.Next), "last_call": st.LastCall, "carry": num(st.Carry),
		"inline": strconv.FormatInt(st.Inline, 10), "win_start": ms(st.WinStart), "win_count": strconv.FormatInt(st.WinCount, 10),
		"measured": num(st.Measured), "pace_rate": num(st.PaceRate), "pace_busy": num(st.PaceBusy), "pace_at": ms(st.PaceAt),
		"moved": ms(st.Moved), "reach": reach, "checkpoints": strings.Join(cks, " "), "cap_room": capRoom,
		"lane_credit": encodeShares(st.LaneCredit), "lane_shares": encodeShares(st.LaneShares),
		"pace_claimed": num(st.PaceClaimed), "pace_departed": num(st.PaceDeparted), "rate_mean": num(st.RateMean), "rate_var": num(st.RateVar), "rate_recent": num(st.RateRecent),
		"phase": st.Phase, "changes": encodeChanges(st.Changes), "surprise": ms(st.Surprise)}
}

// encodeChanges are the rate changes ahead as the tick state keeps them
// (changes), "atMs:rate atMs:rate", soonest first: the prelude's shown
// reads them too, so a newcomer's range sees the phases ahead.
func encodeChanges(cs []estimate.Change) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = strconv.FormatInt(c.At.UnixMilli(), 10) + ":" + strconv.FormatFloat(c.Rate, 'f', -1, 64)
	}
	return strings.Join(parts, " ")
}

// decodeChanges reads what encodeChanges wrote.
func decodeChanges(s string) ([]estimate.Change, error) {
	var cs []estimate.Change
	for _, item := range strings.Fields(s) {
		at, rate, _ := strings.Cut(item, ":")
		a, e1 := strconv.ParseInt(at, 10, 64)
		r, e2 := strconv.ParseFloat(rate, 64)
		if e1 != nil || e2 != nil {
			return nil, fmt.Errorf("rate change %q", item)
		}
		cs = append(cs, estimate.Change{At: time.UnixMilli(a).UTC(), Rate: r})
	}
	return cs, nil
}

// decodeTick reads what encodeTick wrote; a field not set reads as zero.
func decodeTick(v map[string]string) (admission.TickState, error) {
	var err error
	num := func(f string) float64 {
		if v[f] == "" {
			return 0
		}
		x, e := strconv.ParseFloat(v[f], 64)
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", f, e)
		}
		return x
	}
	ms := func(f string) time.Time {
		if n := int64(num(f)); n > 0 {
			return time.UnixMilli(n).UTC()
		}
		return time.Time{}
	}
	st := admission.TickState{Next: ms("next"), LastCall: v["last_call"], Carry: num("carry"), Inline: int64(num("inline")),
		WinStart: ms("win_start"), WinCount: int64(num("win_count")), Measured: num("measured"),
		PaceRate: num("pace_rate"), PaceBusy: num("pace_busy"), PaceAt: ms("pace_at"), Moved: ms("moved"),
		Reach: int64(num("reach")), CapRoom: int64(num("cap_room")), Capped: v["cap_room"] != "",
		LaneCredit: decodeShares(v["lane_credit"]), LaneShares: decodeShares(v["lane_shares"]),
		PaceClaimed: num("pace_claimed"), PaceDeparted: num("pace_departed"), RateMean: num("rate_mean"), RateVar: num("rate_var"), RateRecent: num("rate_recent"),
		Phase: v["phase"], Surprise: ms("surprise")}
	changes, e := decodeChanges(v["changes"])
	if e != nil {
		return st, e
	}
	st.Changes = changes
	for _, c := range strings.Fields(v["checkpoints"]) {
		at, ticket, _ := strings.Cut(c, ":")
		a, e1 := strconv.ParseInt(at, 10, 64)
		t, e2 := strconv.ParseInt(ticket, 10, 64)
		if e1 != nil || e2 != nil {
			return st, fmt.Errorf("checkpoint %q", c)
		}
		st.Checkpoints = append(st.Checkpoints, admission.Checkpoint{At: time.UnixMilli(a).UTC(), Ticket: t})
	}
	return st, err
}
