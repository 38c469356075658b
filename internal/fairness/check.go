package fairness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/waitroom/waitroom/internal/queue/lane"
)

// Verdict is the check of one history.
type Verdict struct {
	// Result is Porcupine's: Ok, Illegal, or Unknown (the check ran out
	// of time).
	Result porcupine.CheckResult
	// Operations counts the calls checked (statuses whose outcome is
	// unknown are left out: a read that may not have happened changes
	// nothing).
	Operations int
	// Violations are broken promises found outside the model (one token,
	// one person; one token, one purchase) and answers outside the
	// contract.
	Violations []string
	// PlacesLost counts, over the history's Redis restarts, users whose
	// last answer before the kill said they were waiting or admitted and
	// whom the restarted Redis held neither in line nor with a token.
	PlacesLost int
	// NoShows counts the users told NOT_IN_QUEUE while their last answer
	// had them waiting, with no leave between: no-shows let go (only a
	// queue with abandonAfterSeconds may, which the model checks).
	NoShows int
	// LaneAdmissions counts the admissions the lanes' shares were checked
	// on: certainly made while every lane of their queue had people
	// waiting (sharesHeld).
	LaneAdmissions int
	// Visualization is the HTML file drawn for a history that failed.
	Visualization string
}

// OK reports whether the history kept every promise.
func (v Verdict) OK() bool { return v.Result == porcupine.Ok && len(v.Violations) == 0 }

// Recheck checks again a segment that Check saved when it ran out of time
// (its -unknown.jsonl file), allowing it timeout: a history checked at
// leisure, on a quieter machine, is counted as the run's table says.
func Recheck(path string, timeout time.Duration, dir string) (Verdict, error) {
	ops, err := load(path)
	if err != nil {
		return Verdict{}, err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".jsonl") + "-recheck"
	var o Options
	o.defaults() // the snapshot age the run allowed
	return Check(&History{Ops: ops}, o.SnapshotAge, timeout, dir, name), nil
}

// Check checks a history: every segment between Redis restarts against the
// model with Porcupine, the promises that hold across the whole history,
// and the places a restart lost. A failing history's visualisation is
// written under dir.
func Check(h *History, snapshotAge, timeout time.Duration, dir, name string) Verdict {
	markRepeats(h)
	v := Verdict{Result: porcupine.Ok, Violations: slices.Clone(h.Problems)}
	v.Violations = append(v.Violations, promises(h)...)
	v.Violations = append(v.Violations, stockAddsUp(h)...)
	var unshared []string
	v.LaneAdmissions, unshared = sharesHeld(h, snapshotAge)
	v.Violations = append(v.Violations, unshared...)
	m := model()
	raw := segments(h, 0) // as sent, for the history file
	for i, seg := range segments(h, snapshotAge) {
		v.Operations += len(seg)
		seg = enterEffects(seg)
		res, info := porcupine.CheckOperationsVerbose(m, seg, timeout)
		if res == porcupine.Ok {
			continue
		}
		if v.Result == porcupine.Ok || res == porcupine.Illegal {
			v.Result = res
		}
		if res == porcupine.Unknown { // out of time: keep the calls, to check again at leisure
			path := filepath.Join(dir, fmt.Sprintf("%s-segment%d-unknown.jsonl", name, i))
			if save(path, raw[i]) == nil {
				v.Violations = append(v.Violations, "not checked within the time allowed; its calls: "+path)
			}
		}
		if res == porcupine.Illegal {
			v.Violations = append(v.Violations, explain(m, info, seg)...)
		}
		if res == porcupine.Illegal && v.Visualization == "" {
			path := filepath.Join(dir, fmt.Sprintf("%s-segment%d.html", name, i))
			if err := porcupine.VisualizePath(m, info, path); err == nil {
				v.Visualization = path
				save(strings.TrimSuffix(path, ".html")+".jsonl", raw[i])
			} else {
				v.Violations = append(v.Violations, fmt.Sprintf("drawing the history: %v", err))
			}
		}
	}
	if v.Result != porcupine.Ok && v.Visualization == "" && len(v.Violations) > 0 {
		// Nothing drawn (a timeout): the history is still worth a look.
		path := filepath.Join(dir, name+".html")
		if _, info := porcupine.CheckOperationsVerbose(m, h.Ops, time.Second); porcupine.VisualizePath(m, info, path) == nil {
			v.Visualization = path
		}
	}
	v.PlacesLost = placesLost(h)
	v.NoShows = noShows(h)
	return v
}

// explain says, for each queue whose calls no order explains, where the
// longest order found leaves the line and which answer cannot follow it.
func explain(m porcupine.Model, info porcupine.LinearizationInfo, seg []porcupine.Operation) []string {
	var out []string
	parts := partitionByQueue(seg)
	for p, partials := range info.PartialLinearizationsOperations() {
		if p >= len(parts) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range partials {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(parts[p]) {
			continue
		}
		type id struct {
			call, ret int64
			user      string
			unknown   bool // an enter's effect, beside its answer
		}
		opID := func(op porcupine.Operation) id {
			return id{op.Call, op.Return, op.Input.(Input).User, op.Output.(Output).Unknown}
		}
		placed := map[id]bool{}
		state := m.Init()
		for _, op := range longest {
			placed[opID(op)] = true
			_, state = m.Step(state, op.Input, op.Output)
		}
		var next *porcupine.Operation
		for i, op := range parts[p] {
			if !placed[opID(op)] && (next == nil || op.Return < next.Return) {
				next = &parts[p][i]
			}
		}
		in := next.Input.(Input)
		out = append(out, fmt.Sprintf("queue %s: after %d of its %d calls the line is %s, and no order explains %s (instance %d, %.3f-%.3f s)",
			in.Spec.Queue, len(longest), len(parts[p]), m.DescribeState(state), m.DescribeOperation(next.Input, next.Output),
			in.Instance, float64(next.Call)/1e9, float64(next.Return)/1e9))
	}
	return out
}

// promises checks what holds across the whole history whatever order the
// calls took effect in: a token shown READY to one user only, and bought
// with at most once.
func promises(h *History) []string {
	var out []string
	owner := map[string]string{}
	bought := map[string]int{}
	for _, op := range h.Ops {
		in, res := op.Input.(Input), op.Output.(Output)
		if res.Unknown {
			continue
		}
		if (in.Kind == Enter || in.Kind == Status) && res.State == Ready {
			if prev, ok := owner[res.Token]; ok && prev != in.User {
				out = append(out, fmt.Sprintf("token %s shown READY to %s and to %s", short(res.Token), prev, in.User))
			}
			owner[res.Token] = in.User
		}
		if in.Kind == Order && res.Order == Bought {
			if bought[in.Token]++; bought[in.Token] == 2 {
				out = append(out, fmt.Sprintf("token %s bought twice", short(in.Token)))
			}
		}
	}
	return out
}

// stockAddsUp is the end state the chaos run checks too, read from the
// order backend: each queue's product has lost one unit of its stock for
// every order answered 201 (none lost, none sold twice) and at most one
// more for each order whose outcome is unknown, and never went below zero.
func stockAddsUp(h *History) []string {
	if h.StockLeft == nil {
		return nil
	}
	bought, unknown := map[string]int64{}, map[string]int64{}
	for _, op := range h.Ops {
		in, out := op.Input.(Input), op.Output.(Output)
		switch {
		case in.Kind != Order:
		case out.Unknown:
			unknown[in.Spec.Queue]++
		case out.Order == Bought:
			bought[in.Spec.Queue]++
		}
	}
	var out []string
	for _, s := range h.Specs {
		q := s.Queue
		left, most := h.StockLeft[q], stock-bought[q]
		if left < 0 || left > most || left < most-unknown[q] {
			out = append(out, fmt.Sprintf("queue %s: its product's stock is %d at the end, from %d, with %d orders answered 201 and %d of unknown outcome",
				q, left, stock, bought[q], unknown[q]))
		}
	}
	return out
}

// segments cuts the history at its Redis restarts: the calls between two
// restarts are checked from what the first restart kept. A call in flight
// at a kill may have taken effect before it (and been lost, or kept) or,
// sent again, after the restart: it is unknown on both sides. A status
// whose time overlaps a restart is left out (a read changes nothing), and
// a status answer that may come from a snapshot (fromSnapshot) may show the
// line up to snapshotAge before the call: its call is taken to start that
// much earlier.
func segments(h *History, snapshotAge time.Duration) [][]porcupine.Operation {
	segs := make([][]porcupine.Operation, len(h.Restarts)+1)
	for j := range segs {
		begin, end := int64(-1<<62), int64(infinity)
		var kept map[string]*line
		if j > 0 {
			begin, kept = h.Restarts[j-1].Reopened, h.Restarts[j-1].kept
		}
		if j < len(h.Restarts) {
			end = h.Restarts[j].Killed
		}
		specs := map[*Spec]*Spec{}
		for _, op := range h.Ops {
			in, out := op.Input.(Input), op.Output.(Output)
			if op.Return < begin || op.Call > end {
				continue // not in this segment
			}
			if kept != nil {
				s, ok := specs[in.Spec]
				if !ok { // the line starts where Redis kept it
					c := *in.Spec
					if c.start = kept[c.Queue]; c.start == nil {
						c.start = newLine(open) // lost whole, made again
					}
					s, specs[in.Spec] = &c, &c
				}
				in.Spec = s
			}
			op.Input = in
			switch {
			case in.Kind == Status:
				if op.Call < begin || op.Return > end {
					continue
				}
				if fromSnapshot(out) {
					op.Call = max(op.Call-int64(snapshotAge), begin)
				}
			case op.Call < begin || op.Return > end: // in flight at a kill or a restart
				op.Output, op.Return = Output{Unknown: true}, infinity
				op.Call = max(op.Call, begin)
			}
			segs[j] = append(segs[j], op)
		}
	}
	return segs
}

// enterEffects adds, for every enter the store's client may have sent
// twice (MayRepeat) and that was answered with a place, its effect as a
// call of its own over the same time, whose answer is not read. go-redis
// sends a command again when its reply is late (the read timeout) or its
// connection breaks, and the second run of enter.lua answers with the line
// as it stands then: the user joined at the first run, and may have been
// admitted since. So such an enter takes effect at one instant of its call
// and its answer is read at that instant or a later one, before it
// returned. (The answer half still joins if the effect has not: the
// model's enter is idempotent.)
func enterEffects(seg []porcupine.Operation) []porcupine.Operation {
	out := slices.Clone(seg)
	for _, op := range seg {
		in, res := op.Input.(Input), op.Output.(Output)
		if in.Kind != Enter || !in.MayRepeat || res.Unknown || res.State == Full {
			continue
		}
		op.Output = Output{Unknown: true}
		out = append(out, op)
	}
	return out
}

// markRepeats marks the enters of h the store's client may have sent
// twice: on Redis (h.ReadTimeout set), those that lasted at least the read
// timeout, or during which a connection to Redis was cut.
func markRepeats(h *History) {
	if h.ReadTimeout == 0 {
		return
	}
	for i, op := range h.Ops {
		in := op.Input.(Input)
		if in.Kind != Enter || op.Output.(Output).Unknown {
			continue
		}
		repeat := time.Duration(op.Return-op.Call) >= h.ReadTimeout
		for _, at := range h.Cuts {
			repeat = repeat || op.Call <= at && at <= op.Return
		}
		if repeat {
			in.MayRepeat = true
			h.Ops[i].Input = in
		}
	}
}

// fromSnapshot reports whether a status answer may have come from an
// instance's snapshot of the line rather than from the store: a place
// beyond two batches from the front (the histories' batch is 10), or
// waiting for the opening (package queue, snapshots.go).
func fromSnapshot(out Output) bool {
	return out.State == PreQueued || out.State == Waiting && out.Position > 2*10
}

func noShows(h *History) int {
	ops := slices.Clone(h.Ops)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Return < ops[j].Return })
	waiting := map[string]bool{} // by queue and user
	n := 0
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		if out.Unknown {
			continue
		}
		key := in.Spec.Queue + "\x00" + in.User
		if in.Kind == Status && out.State == NotInQueue && waiting[key] {
			n++
		}
		waiting[key] = (in.Kind == Enter || in.Kind == Status) && out.State == Waiting
	}
	return n
}

// placesLost counts, at each Redis restart, the users whose last answer
// before the kill had them waiting or admitted (with nothing of theirs in
// flight that could have changed it) and whom the restarted Redis kept
// neither in line, in the pre-queue, nor with a token.
func placesLost(h *History) int {
	lost := 0
	for _, rs := range h.Restarts {
		type last struct {
			out     Output
			at      int64
			pending bool // a call that could change it was in flight at the kill
		}
		latest := map[string]*last{}
		ops := slices.Clone(h.Ops)
		sort.Slice(ops, func(i, j int) bool { return ops[i].Return < ops[j].Return })
		for _, op := range ops {
			in, out := op.Input.(Input), op.Output.(Output)
			key := in.Spec.Queue + "\x00" + in.User
			if op.Call >= rs.Killed {
				continue
			}
			if op.Return >= rs.Killed {
				if in.Kind != Status {
					if l := latest[key]; l != nil {
						l.pending = true
					}
				}
				continue
			}
			if out.Unknown {
				latest[key] = &last{pending: true}
				continue
			}
			latest[key] = &last{out: out, at: op.Return}
			if in.Kind == Leave || in.Kind == Order && out.Order == Bought {
				latest[key].out.State = NotInQueue
			}
		}
		for key, l := range latest {
			if l.pending || l.out.State != Waiting && l.out.State != PreQueued && l.out.State != Ready {
				continue
			}
			var queue, user string
			for i := range key {
				if key[i] == 0 {
					queue, user = key[:i], key[i+1:]
				}
			}
			k := rs.kept[queue]
			if k == nil {
				lost++ // the whole queue is gone
				continue
			}
			if _, held := k.held[user]; !held && !k.has(user) && !k.inPre(user) {
				lost++
			}
		}
	}
	return lost
}

// kept reads what Redis holds of each queue's line, straight from its keys
// (the instances cannot reach it meanwhile).
func (c *cluster) kept(ctx context.Context, specs []*Spec) (map[string]*line, error) {
	out := map[string]*line{}
	for _, s := range specs {
		p := "wr:{" + s.Queue + "}:"
		if known, err := c.rdb.HExists(ctx, p+"cfg", "epoch").Result(); err != nil {
			return nil, err
		} else if !known {
			continue // lost whole
		}
		waiting, err := c.rdb.ZRange(ctx, p+"line", 0, -1).Result()
		if err != nil {
			return nil, err
		}
		pre, err := c.rdb.ZRange(ctx, p+"pre", 0, -1).Result()
		if err != nil {
			return nil, err
		}
		tokens, err := c.rdb.HGetAll(ctx, p+"tokens").Result()
		if err != nil {
			return nil, err
		}
		state, err := c.rdb.HGet(ctx, p+"cfg", "open_state").Result()
		if err != nil && err.Error() != "redis: nil" {
			return nil, err
		}
		l := &line{phase: open, waiting: waiting, held: tokens}
		if l.lanes, err = c.keptLanes(ctx, p); err != nil {
			return nil, err
		}
		switch {
		case state == "placing":
			l.phase = closed
		case state == "" && s.Opening:
			l.phase = pending
		}
		l.pre = slices.Sorted(slices.Values(pre))
		out[s.Queue] = l.done()
	}
	return out, nil
}

// keptLanes reads the lines of a queue's lanes other than the public from
// Redis's keys under prefix p: one sorted set, each lane a band of scores
// (laneId × 2^40 + ticket), its ids named in laneids (redisstore's
// keys.go).
func (c *cluster) keptLanes(ctx context.Context, p string) (map[string][]string, error) {
	places, err := c.rdb.ZRangeWithScores(ctx, p+"lanes", 0, -1).Result()
	if err != nil || len(places) == 0 {
		return nil, err
	}
	names, err := c.rdb.HGetAll(ctx, p+"laneids").Result()
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, z := range places {
		id := int64(z.Score) >> 40
		name := names["#"+strconv.FormatInt(id, 10)]
		out[name] = append(out[name], z.Member.(string))
	}
	return out, nil
}

// A history file keeps the calls of one checked segment, for a closer
// look or as a regression test (testdata/*.jsonl): a first line naming the
// queues (savedSpec), then one call a line (savedOp) in the order sent.

type savedSpec struct {
	Queue        string     `json:"queue"`
	Capacity     int        `json:"capacity"`
	AbandonAfter string     `json:"abandonAfter,omitempty"`
	Opening      bool       `json:"opening,omitempty"`
	Start        *savedLine `json:"start,omitempty"`
	// Lanes and Members: Spec's.
	Lanes   lane.List         `json:"lanes,omitempty"`
	Members map[string]string `json:"members,omitempty"`
}

type savedLine struct {
	Phase   string            `json:"phase"`
	Pre     []string          `json:"pre,omitempty"`
	Waiting []string          `json:"waiting,omitempty"`
	Held    map[string]string `json:"held,omitempty"`
	// Lanes are the lines of the lanes other than lane.Public.
	Lanes map[string][]string `json:"lanes,omitempty"`
}

var phaseNames = [...]string{"pending", "closed", "open"}

type savedOp struct {
	Queue    string `json:"queue"`
	Kind     string `json:"kind"`
	User     string `json:"user"`
	Token    string `json:"token,omitempty"`
	Instance int    `json:"instance"`
	// MayRepeat: an enter the store's client may have sent twice.
	MayRepeat bool `json:"mayRepeat,omitempty"`
	// SinceSeen: Input.SinceSeen (ns), for a no-show's NOT_IN_QUEUE.
	SinceSeen time.Duration `json:"sinceSeen,omitempty"`
	Call      int64         `json:"call"`
	Return    int64         `json:"return"`
	Out       savedOutput   `json:"out"`
}

type savedOutput struct {
	Unknown  bool   `json:"unknown,omitempty"`
	State    string `json:"state,omitempty"`
	Position int64  `json:"position,omitempty"`
	Length   int64  `json:"length,omitempty"`
	Token    string `json:"token,omitempty"`
	Order    string `json:"order,omitempty"`
	Lane     string `json:"lane,omitempty"`
}

// save writes one segment's calls to path.
func save(path string, seg []porcupine.Operation) error {
	ops := slices.Clone(seg)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var b strings.Builder
	enc := json.NewEncoder(&b)
	var specs []savedSpec
	seen := map[*Spec]bool{}
	for _, op := range ops {
		sp := op.Input.(Input).Spec
		if seen[sp] {
			continue
		}
		seen[sp] = true
		s := savedSpec{Queue: sp.Queue, Capacity: sp.Capacity, Opening: sp.Opening, Lanes: sp.Lanes, Members: sp.Members}
		if sp.AbandonAfter > 0 {
			s.AbandonAfter = sp.AbandonAfter.String()
		}
		if l := sp.start; l != nil {
			s.Start = &savedLine{Phase: phaseNames[l.phase], Pre: l.pre, Waiting: l.waiting, Held: l.held, Lanes: l.lanes}
		}
		specs = append(specs, s)
	}
	if err := enc.Encode(map[string]any{"specs": specs}); err != nil {
		return err
	}
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		s := savedOp{Queue: in.Spec.Queue, Kind: in.Kind.String(), User: in.User, Token: in.Token, Instance: in.Instance, MayRepeat: in.MayRepeat,
			SinceSeen: in.SinceSeen,
			Call:      op.Call, Return: op.Return, Out: savedOutput{Unknown: out.Unknown, Position: out.Position, Length: out.Length, Token: out.Token, Lane: out.Lane}}
		if !out.Unknown {
			switch in.Kind {
			case Enter, Status:
				s.Out.State = out.State.String()
			case Order:
				s.Out.Order = out.Order.String()
			}
		}
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// load reads a segment save wrote.
func load(path string) ([]porcupine.Operation, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	var head struct{ Specs []savedSpec }
	if err := dec.Decode(&head); err != nil {
		return nil, fmt.Errorf("%s: the specs: %w", path, err)
	}
	specs := map[string]*Spec{}
	for _, s := range head.Specs {
		sp := &Spec{Queue: s.Queue, Capacity: s.Capacity, Opening: s.Opening, Lanes: s.Lanes, Members: s.Members}
		if s.AbandonAfter != "" {
			if sp.AbandonAfter, err = time.ParseDuration(s.AbandonAfter); err != nil {
				return nil, err
			}
		}
		if l := s.Start; l != nil {
			sp.start = &line{phase: phase(slices.Index(phaseNames[:], l.Phase)), pre: l.Pre, waiting: l.Waiting, held: l.Held, lanes: l.Lanes}
			if sp.start.held == nil {
				sp.start.held = map[string]string{}
			}
			sp.start = sp.start.done()
		}
		specs[s.Queue] = sp
	}
	var ops []porcupine.Operation
	for dec.More() {
		var s savedOp
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		in := Input{Spec: specs[s.Queue], Kind: Kind(slices.Index(kindNames[:], s.Kind)), User: s.User, Token: s.Token, Instance: s.Instance,
			MayRepeat: s.MayRepeat, SinceSeen: s.SinceSeen}
		out := Output{Unknown: s.Out.Unknown, Position: s.Out.Position, Length: s.Out.Length, Token: s.Out.Token, Lane: s.Out.Lane,
			State: State(slices.Index(stateNames[:], s.Out.State)), Order: OrderResult(slices.Index(orderNames[:], s.Out.Order))}
		if in.Spec == nil || in.Kind > Order || !out.Unknown && (s.Out.State != "" && out.State > Full || s.Out.Order != "" && out.Order > Invalid) {
			return nil, fmt.Errorf("%s: a call this package cannot read: %+v", path, s)
		}
		ops = append(ops, porcupine.Operation{ClientId: in.Instance, Input: in, Call: s.Call, Output: out, Return: s.Return})
	}
	return ops, nil
}
