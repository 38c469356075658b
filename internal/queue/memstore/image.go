package memstore

import (
	"maps"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/staff"
)

// queueImage is one queue's whole state as a snapshot keeps it (gob: a
// field added later reads as its zero value from an older snapshot).
type queueImage struct {
	Name string
	Ops  int64
	// Removed: a deleted queue's tombstone, which keeps only Ops and
	// Draws.
	Removed bool
	// Config is the settings' store fields (queue.StoreFields): a setting
	// added later reads as its default.
	Config []string
	Epoch  int64
	Seq    int64
	// Line is everyone in line from LineBase on, by ticket: "" where
	// someone left or was admitted.
	LineBase int64
	Line     []string
	Tokens   []tokenImage
	Issued   []tokenImage // in the order written (Sweep's order)
	Inflight []lockImage
	// LeftTickets, ascending: see state.leftTickets.
	LeftTickets []int64
	Tick        admission.TickState
	Seen        map[string]time.Time
	// Hidden: state.hidden (nil in a snapshot from before issue 55: its
	// marks read as visible, as they were).
	Hidden map[string]bool
	Joined map[string]joined
	// Ranged says Joined's takings carry the range shown (issue 54);
	// false in a snapshot from before, whose takings read as none shown.
	Ranged bool

	Admitted, Consumed, Left, Expired, Returned, Abandoned, InlineTotal int64

	EffRate        float64
	EffLast        queue.RateDecision
	SampleWin      int64
	SampleFrom     int64
	Sample         queue.RateSample
	SampleAdmitted int64
	RateLog        []queue.RateChange

	PreArrival        int64
	Pre               map[string]int64
	OpenState         string
	OpenNext, OpenEnd int64
	OpenOwner         string
	OpenLease         time.Time
	// OpenAt and OpenFirst: the instant and the first ticket of the
	// opening being placed (zero in a snapshot from before they were
	// kept: see restore).
	OpenAt    time.Time
	OpenFirst int64
	// Closed is the pre-queue's users when it closed, in arrival order
	// (nil in a snapshot from before it was kept: see restore).
	Closed []string
	// Draws is the name's ledger of draws (a tombstone's too).
	Draws   ledgerImage
	Stock   queue.Stock
	Changed queue.Changes
	// Shadow is the shadow line and the places cleared from it.
	Shadow shadow
	// Lanes are the lanes other than the public one with people waiting
	// (issue 53), LanePre the lane of each in the pre-queue who asked for
	// one, Codes the access codes and LaneCounts each lane's totals (all
	// empty in a snapshot from before lanes).
	Lanes      []laneImage
	LanePre    map[string]string
	Codes      codesImage
	LaneCounts map[string]laneCounts
	// Handoffs are the handoff links and moved marks (issue 55; empty in
	// a snapshot from before).
	Handoffs handoffs
}

// laneImage is one lane's people in ticket order.
type laneImage struct {
	Name    string
	Users   []string
	Tickets []int64
}

// codesImage is the access codes, column by column: Keys as codeKey keeps
// them, Expires in Unix ms (0: never).
type codesImage struct {
	Keys, Lanes   []string
	Uses, Expires []int64
}

type tokenImage struct {
	User, Value string
	Expires     time.Time
	Until       time.Time // a sliding session's end (zero: none yet)
}

type lockImage struct {
	User, Owner string
	Until       time.Time
}

// usedImage is the FirstUse markers.
type usedImage struct {
	Ops   int64
	Queue []string
	Key   []string
	Until []time.Time
	// Rows are the queues' per-minute rows (Roll).
	Rows []rowImage
	// Sessions are the admin page's live sessions (issue 56; none in a
	// snapshot from before).
	Sessions []staff.Session
	// Tokens are the named tokens (staff_roles.go).
	Tokens []staff.Token
	// Audit is the audit log (issue 56; empty in a snapshot from before).
	Audit []auditRecord
}

// image copies q's state (under its lock): what it shares with the live
// state is never written again in place.
func (q *state) image(name string) *queueImage {
	img := &queueImage{
		Name: name, Ops: q.ops, Removed: q.removed, Config: queue.StoreFields(q.cfg), Epoch: q.epoch, Seq: q.seq,
		LeftTickets: slices.Clone(q.leftTickets), Tick: q.tick, Seen: maps.Clone(q.seen), Hidden: maps.Clone(q.hidden), Joined: maps.Clone(q.joined), Ranged: true,
		Admitted: q.admitted, Consumed: q.consumed, Left: q.left, Expired: q.expired, Returned: q.ret,
		Abandoned: q.abandoned, InlineTotal: q.inlineTotal,
		EffRate: q.effRate, EffLast: q.effLast, SampleWin: q.sampleWin, SampleFrom: q.sampleFrom, Sample: q.sample, SampleAdmitted: q.sampleAdmitted,
		RateLog:    slices.Clone(q.rateLog),
		PreArrival: q.preArrival, Pre: maps.Clone(q.pre),
		OpenState: q.openState, OpenNext: q.openNext, OpenEnd: q.openEnd, OpenOwner: q.openOwner, OpenLease: q.openLease,
		OpenAt: q.openAt, OpenFirst: q.openFirst, Closed: q.closed, Draws: q.draws.image(),
		Stock: q.stock, Changed: q.changed, Shadow: q.sh.clone(), Handoffs: q.ho.clone(),
	}
	img.Tick.Checkpoints = slices.Clone(q.tick.Checkpoints)
	img.Sample.Latency = maps.Clone(q.sample.Latency)
	if q.line.len() > 0 {
		img.LineBase = q.line.base + int64(q.line.head)
		img.Line = slices.Clone(q.line.users[q.line.head:])
	}
	img.Tokens = make([]tokenImage, 0, len(q.tokens))
	for u, t := range q.tokens {
		img.Tokens = append(img.Tokens, tokenImage{User: u, Value: t.value, Expires: t.expires, Until: t.until})
	}
	img.Issued = make([]tokenImage, len(q.issued))
	for i, t := range q.issued {
		img.Issued[i] = tokenImage{User: t.user, Value: t.value, Expires: t.expires}
	}
	for u, l := range q.inflight {
		img.Inflight = append(img.Inflight, lockImage{User: u, Owner: l.owner, Until: l.until})
	}
	q.ln.image(img)
	return img
}

// image copies the lanes, codes and their totals into img.
func (ln *lanes) image(img *queueImage) {
	for name, l := range ln.lines {
		li := laneImage{Name: name, Users: make([]string, 0, l.len()), Tickets: make([]int64, 0, l.len())}
		for _, w := range l.front(0, l.len()) {
			li.Users, li.Tickets = append(li.Users, w.User), append(li.Tickets, w.Ticket)
		}
		img.Lanes = append(img.Lanes, li)
	}
	img.LanePre, img.LaneCounts = maps.Clone(ln.pre), maps.Clone(ln.counts)
	c := &img.Codes
	for k, v := range ln.codes {
		c.Keys, c.Lanes = append(c.Keys, k), append(c.Lanes, v.lane)
		c.Uses, c.Expires = append(c.Uses, v.uses), append(c.Expires, v.expires)
	}
}

// restoreLanes gives q the lanes, codes and totals img keeps.
func (img *queueImage) restoreLanes(q *state) {
	for _, li := range img.Lanes {
		l := q.laneLine(li.Name)
		for i, u := range li.Users {
			l.insert(u, li.Tickets[i])
		}
	}
	for u, name := range img.LanePre {
		q.setPreLane(u, name)
	}
	q.ln.counts = img.LaneCounts
	c := img.Codes
	if len(c.Keys) > 0 {
		q.ln.codes = make(map[string]code, len(c.Keys))
	}
	names := map[string]string{} // one string per lane name, as addCodes keeps them
	for i, k := range c.Keys {
		name, ok := names[c.Lanes[i]]
		if !ok {
			name = c.Lanes[i]
			names[name] = name
		}
		q.ln.codes[k] = code{lane: name, uses: c.Uses[i], expires: c.Expires[i]}
	}
}

// configFrom reads a config kept as its store fields (queue.StoreFields:
// field, value, …).
func configFrom(fields []string) (queue.Config, error) {
	m := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		m[fields[i]] = fields[i+1]
	}
	return queue.ConfigFromFields(func(f string) (string, bool) { v, ok := m[f]; return v, ok })
}

// restore is the state an image holds.
func (img *queueImage) restore() (*state, error) {
	if img.Removed {
		q := newState(0)
		q.removed, q.ops, q.draws = true, img.Ops, img.Draws.restore()
		return q, nil
	}
	cfg, err := configFrom(img.Config)
	if err != nil {
		return nil, err
	}
	q := &state{
		ops: img.Ops, cfg: cfg, epoch: img.Epoch, line: newLine(), seq: img.Seq,
		tokens: make(map[string]token, len(img.Tokens)), inflight: map[string]lock{},
		leftTickets: img.LeftTickets, tick: img.Tick, seen: img.Seen, hidden: img.Hidden, joined: img.Joined,
		admitted: img.Admitted, consumed: img.Consumed, left: img.Left, expired: img.Expired, ret: img.Returned,
		abandoned: img.Abandoned, inlineTotal: img.InlineTotal,
		effRate: img.EffRate, effLast: img.EffLast, sampleWin: img.SampleWin, sampleFrom: img.SampleFrom, sample: img.Sample, sampleAdmitted: img.SampleAdmitted,
		rateLog:    img.RateLog,
		preArrival: img.PreArrival, pre: img.Pre,
		openState: img.OpenState, openNext: img.OpenNext, openEnd: img.OpenEnd, openOwner: img.OpenOwner, openLease: img.OpenLease,
		openAt: img.OpenAt, openFirst: img.OpenFirst, closed: img.Closed, draws: img.Draws.restore(),
		stock: img.Stock, changed: img.Changed, sh: img.Shadow, ho: img.Handoffs,
	}
	q.sh.index()
	if q.seen == nil {
		q.seen = map[string]time.Time{}
	}
	if q.hidden == nil {
		q.hidden = map[string]bool{}
	}
	if q.joined == nil { // a snapshot from before places kept their taking
		q.joined = map[string]joined{}
	}
	if !img.Ranged {
		for u, j := range q.joined {
			j.Low, j.High = rollup.NoneShown, rollup.NoneShown
			q.joined[u] = j
		}
	}
	if q.pre == nil {
		q.pre = map[string]int64{}
	}
	if q.openState == "placing" && q.openFirst == 0 {
		// Placed from a snapshot taken before the opening's instant and
		// first ticket were kept: its draw is of those still to place,
		// from the next ticket, at the configured instant.
		q.openFirst, q.openAt = q.openNext, cfg.OpensAt.Truncate(time.Millisecond).UTC()
	}
	if q.openState == "placing" && q.closed == nil {
		// Placed from a snapshot taken before the list closed was kept:
		// the pre-queue as it is, as OpenDue answered then.
		q.closed = q.preInArrival()
	}
	for i, u := range img.Line {
		if u != "" {
			q.line.push(u, img.LineBase+int64(i))
		}
	}
	for _, t := range img.Tokens {
		q.tokens[t.User] = token{value: t.Value, expires: t.Expires, until: t.Until}
	}
	q.issued = make([]issuedToken, len(img.Issued))
	for i, t := range img.Issued {
		q.issued[i] = issuedToken{user: t.User, value: t.Value, expires: t.Expires}
	}
	for _, l := range img.Inflight {
		q.inflight[l.User] = lock{until: l.Until, owner: l.Owner}
	}
	img.restoreLanes(q)
	return q, nil
}
