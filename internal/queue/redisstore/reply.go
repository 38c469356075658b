package redisstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// Reply kinds: a reply's first value, as scripts/prelude.lua names them
// (UNKNOWN_QUEUE is kindUnknownQueue): TestReplyKindsAgree reads the Lua
// and holds the two equal.
const (
	// Where a user stands (standing; kindShadow: in the shadow line),
	// enter.lua's full line, an unknown queue.
	kindUnknownQueue = -1
	kindLineFull     = -2
	kindSoldOut      = -3
	kindNotInLine    = 0
	kindWaiting      = 1
	kindReady        = 2
	kindPreQueue     = 3
	kindShadow       = 4
)

// Reply kinds of lanes (issue 53): a place in a lane other than the
// public (the prelude's laneStanding), and join.lua's refusals of a code.
const (
	kindLane         = 5
	kindLanePreQueue = 6
	kindInvalidCode  = -4
	kindCodeUsed     = -5
)

// Reply kinds of handoffs (issue 55): status.lua's MOVED, and
// put_handoff.lua's and claim_handoff.lua's (PutHandoff, ClaimHandoff).
const (
	kindMoved         = 7
	kindHandoffGone   = -6
	kindInLineAlready = -7
	kindHandoffKept   = 8
)

// The reply kind of set_stock.lua (SetStock).
const kindStock = 1

// Reply kinds of open_due.lua (OpenDue).
const (
	kindNoOpening       = 0
	kindNotDue          = 1
	kindDue             = 2
	kindPlacedElsewhere = 3
)

// Reply kinds of fold_rate.lua (FoldRate).
const (
	kindNotAdaptive = 0
	kindFolded      = 1
	kindClaimed     = 2
)

// Reply kinds of leave.lua (Leave).
const (
	kindNothingLeft  = 0
	kindLeftLine     = 1
	kindGaveBack     = 2
	kindLeftPreQueue = 3
)

// Reply kinds of begin_use.lua (BeginUse).
const (
	kindLocked       = 1
	kindTokenInvalid = 0
	kindInUse        = -1
)

// Reply kinds of place.lua (Place).
const (
	kindNotOwner    = -1
	kindMoreToPlace = 0
	kindOpened      = 1
)

// Reply kinds of commit_draw.lua and save_draw.lua (CommitDraw, SaveDraw).
const (
	kindNoCommitment = 0
	kindCommitted    = 1
	kindDrawn        = 2
)

// Reply kinds of admit.lua (Admit).
const (
	kindTickGone = 0
	kindApplied  = 1
)

// reply reads a script's array reply, remembering the first malformed field
// instead of panicking on an unexpected type.
type reply struct {
	r   []any
	err error
}

func (p *reply) int(i int) int64 {
	if i < len(p.r) {
		if v, ok := p.r[i].(int64); ok {
			return v
		}
	}
	p.fail(i)
	return 0
}

func (p *reply) str(i int) string {
	if i < len(p.r) {
		if v, ok := p.r[i].(string); ok {
			return v
		}
	}
	p.fail(i)
	return ""
}

// tickets reads a list of tickets sent as one string, each followed by a
// comma (snapshot.lua's leavers): one allocation, where a list of thousands
// of numbers costs one an item, and held requests read it every tick.
func (p *reply) tickets(i int) []int64 {
	text := p.str(i)
	if text == "" {
		return nil
	}
	out := make([]int64, 0, strings.Count(text, ","))
	for text != "" {
		item, rest, _ := strings.Cut(text, ",")
		n, err := strconv.ParseInt(item, 10, 64)
		if err != nil {
			p.fail(i)
			return nil
		}
		out, text = append(out, n), rest
	}
	return out
}

// opt reads a field that may be nil (a hash field not set) as "", and a
// number as its decimal text.
func (p *reply) opt(i int) string {
	if i >= len(p.r) {
		p.fail(i)
		return ""
	}
	switch v := p.r[i].(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	p.fail(i)
	return ""
}

func (p *reply) float(i int) float64 {
	v, err := strconv.ParseFloat(p.opt(i), 64)
	if err != nil && p.opt(i) != "" && p.err == nil {
		p.err = fmt.Errorf("unexpected script reply at %d: %v", i, p.r)
	}
	return v
}

// stock reads a queue's units_left: none stored is a stock not known.
func (p *reply) stock(i int) queue.Stock {
	if p.opt(i) == "" {
		return queue.Stock{}
	}
	return queue.Stock{Known: true, Units: max(int64(p.float(i)), 0)}
}

// ms reads milliseconds since the epoch as a time (zero for none, or 0).
func (p *reply) ms(i int) time.Time { return msTime(p.float(i)) }

// msTime is ms milliseconds since the epoch as a time (zero for 0 or less).
func msTime(ms float64) time.Time {
	if v := int64(ms); v > 0 {
		return time.UnixMilli(v).UTC()
	}
	return time.Time{}
}

func (p *reply) fail(i int) {
	if p.err == nil {
		p.err = fmt.Errorf("unexpected script reply at %d: %v", i, p.r)
	}
}

// storedDefaults are the default config's fields as stored.
var storedDefaults = func() map[string]string {
	f := queue.StoreFields(queue.DefaultConfig())
	m := make(map[string]string, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		m[f[i]] = f[i+1]
	}
	return m
}()

// config reads, from index i on, the config fields named in fields (as a
// script's config reader lists them), by name. A setting not among fields was
// not read and takes its default: the reply of a script that reads part of
// the config (the pace block's) is read only for that part.
func (p *reply) config(i int, fields []string) (queue.Config, error) {
	c, err := queue.ConfigFromFields(func(field string) (string, bool) {
		j := slices.Index(fields, field)
		if j < 0 {
			return storedDefaults[field], true
		}
		return p.opt(i + j), i+j < len(p.r) && p.r[i+j] != nil
	})
	if err != nil {
		return c, fmt.Errorf("redis data damaged: %w", err)
	}
	return c, p.err
}

// paceSettings are the config fields queue.LinePace reads, which the pace
// block carries after the epoch (TestPaceSettings checks that no other
// setting changes a Pace).
var paceSettings = []string{"rate", "batch", "interval_ms", "paused", "adaptive", "min_rate", "max_rate", "opens_at", "method", "abandon_ms"}

// paceConfigFields are the pace block's config fields, in its order.
var paceConfigFields = append([]string{"epoch"}, paceSettings...)

// paceFields are the admission state's fields queue.LinePace reads, which
// the pace block carries after the config's. The prelude's pace writes the
// block in this order (TestPaceBlockAgrees), then now and the line's length.
// The estimate's fit (issue 54) comes last: pace_claimed, pace_departed,
// rate_mean, rate_var and changes as the tick state keeps them
// (encodeTick).
var paceFields = []string{"eff_rate", "pace_rate", "pace_busy", "moved", "reach", "open_state", "units_left", "cap_room", "lane_shares",
	"pace_claimed", "pace_departed", "rate_mean", "rate_var", "changes"}

// paceLen is how many values a pace block has.
var paceLen = len(paceConfigFields) + len(paceFields) + 2

// parsedConfig is a config as a reply carried its fields, and parsed.
type parsedConfig struct {
	fields []any
	c      queue.Config
}

// paceConfig reads the config fields of a pace block of sc from index i
// on: as sc's last pace block if they are the same (a queue's config
// changes rarely, and parsing it was a quarter of an enter's time in Go:
// issue 24), else parsed, and remembered when sound.
func (p *reply) paceConfig(i int, sc *script) (queue.Config, error) {
	n := len(paceConfigFields)
	if i+n > len(p.r) {
		return p.config(i, paceConfigFields)
	}
	fields := p.r[i : i+n]
	if last := sc.paceConfig.Load(); last != nil && slices.Equal(last.fields, fields) {
		return last.c, nil
	}
	c, err := p.config(i, paceConfigFields)
	if err == nil {
		sc.paceConfig.Store(&parsedConfig{fields: slices.Clone(fields), c: c})
	}
	return c, err
}

// pace reads sc's pace block from index i on: the line's Pace and its epoch
// (0: a config written before epochs).
func (p *reply) pace(i int, sc *script) (queue.Pace, int64) {
	st, epoch := p.paceState(i, sc)
	return queue.LinePace(st), epoch
}

// laneShare reads, from the pace block at index i, the share of the rate
// lane ("" the public) got at the last tick (admission.TickState.LaneShares,
// as the tick state keeps it: lane_shares); 0 without lanes.
func (p *reply) laneShare(i int, lane string) float64 {
	if lane == "" {
		lane = "public"
	}
	at := i + len(paceConfigFields) + slices.Index(paceFields, "lane_shares")
	return decodeShares(p.opt(at))[lane]
}

// paceState reads sc's pace block from index i on: the line's state as
// queue.LinePace takes it (the public lane's share), and its epoch.
func (p *reply) paceState(i int, sc *script) (queue.PaceState, int64) {
	c, err := p.paceConfig(i, sc)
	if err != nil && p.err == nil {
		p.err = err
	}
	epoch, err := strconv.ParseInt(p.opt(i), 10, 64)
	if err != nil && p.opt(i) != "" && p.err == nil {
		p.err = fmt.Errorf("the line's epoch: %w", err)
	}
	adm := func(field string) int { return i + len(paceConfigFields) + slices.Index(paceFields, field) }
	state, end := p.opt(adm("open_state")), i+len(paceConfigFields)+len(paceFields)
	changes, err := decodeChanges(p.opt(adm("changes")))
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("redis data damaged: %w", err)
	}
	return queue.PaceState{
		Config: queue.InForce{Config: c}, EffectiveRate: p.float(adm("eff_rate")), PaceRate: p.float(adm("pace_rate")), PaceBusy: p.float(adm("pace_busy")),
		Moved: p.ms(adm("moved")), Reach: int64(p.float(adm("reach"))), Pending: !c.OpensAt.IsZero() && state == "",
		Placing: state == "placing", Now: p.ms(end), Length: p.int(end + 1), Stock: p.stock(adm("units_left")),
		CapRoom: int64(p.float(adm("cap_room"))), Capped: p.opt(adm("cap_room")) != "", LaneShare: p.laneShare(i, ""),
		PaceClaimed: p.float(adm("pace_claimed")), PaceDeparted: p.float(adm("pace_departed")), RateMean: p.float(adm("rate_mean")), RateVar: p.float(adm("rate_var")), Changes: changes,
	}, epoch
}
