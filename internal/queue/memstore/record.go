package memstore

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/suspect"
)

// The journal keeps the steps that changed the store, not the state they
// left: each record names a Store method, its arguments and the clock it
// ran at, and a replay calls the same method on the same clock, so every
// rule of the line (PlanTick included) is written once and the journal
// needs no change when one changes. A config travels as its settings'
// store fields (queue.StoreFields), so a new setting needs none either.

// opKind names the method a record replays.
type opKind byte

const (
	opPutConfig opKind = iota + 1
	opEnter
	opLeave
	opAdmit
	opAdmitNow
	opSweep
	opBeginUse
	opEndUse
	opSeen
	opFoldRate
	opSetRate
	opOpenDue
	opPlace
	opFirstUse
	// opResume: the store started again after being down for dur
	// (Store.resume).
	opResume
	// opClock changes nothing: it says the store was running at its time
	// (written every second and at Close), so a restart knows how long it
	// was down.
	opClock
	// opDeleteQueue: the queue was removed (Store.DeleteQueue).
	opDeleteQueue
	// opExtend: a sliding session's use (Extend), numbered after the
	// kinds journals already hold.
	opExtend
	// opSetStock: what the queue has left to sell (SetStock): n the
	// units, flag whether they are known, owner "lower" for onlyLower.
	opSetStock
	// opRoll: a write to a queue's row of the minute (Roll), blob its
	// rollup.Write (JSON), numbered with FirstUse's steps.
	opRoll
	// opEnterShadow: a suspect's place (EnterShadow), its mark's address
	// as token and signals as list; opClearSuspect: n the shadow ticket
	// cleared (ClearSuspect).
	opEnterShadow
	opClearSuspect
	// opCommitDraw: a commitment to the queue's opening (CommitDraw),
	// blob as draw.Committed.MarshalStored keeps it, seed included;
	// opSaveDraw: a draw's record kept (SaveDraw), token its commitment,
	// blob the record's JSON.
	opCommitDraw
	opSaveDraw
	// opJoin: a place taken in a lane or with an access code (Join), owner
	// the lane asked for, token the code's hash; opAddCodes: codes kept
	// (AddCodes), blob as encodeCodes writes them.
	opJoin
	opAddCodes
	// opPutHandoff: a handoff link made (PutHandoff), token the code's
	// hash, dur its lifetime; opClaimHandoff: one claimed (ClaimHandoff),
	// user the session claiming, token the code's hash (issue 55).
	opPutHandoff
	opClaimHandoff
	// The staff's records (issue 56; package staff), numbered with
	// FirstUse's steps, as they belong to no queue: opPutToken and
	// opDeleteToken keep and revoke a named token, opTouchToken its last
	// use; opPutSession and opDeleteSession the admin page's sessions;
	// opAudit an entry of the audit log. Each blob is its record's JSON.
	opPutToken
	opDeleteToken
	opTouchToken
	opPutSession
	opDeleteSession
	opAudit
)

// opLast is the last kind a journal may hold.
const opLast = opAudit

// op is one journaled step: the method's arguments, its queue's step
// number and the clock it ran at.
type op struct {
	kind  opKind
	queue string
	// seq numbers the queue's steps (FirstUse's have their own count).
	seq                int64
	at                 time.Time
	user, token, owner string // FirstUse's key travels as token
	// list: Admit's tokens given out (the first names the call), Seen's
	// and Place's users, PutConfig's store fields.
	list []string
	// n: Admit's count of fresh tokens, PutConfig's epoch, Place's first
	// ticket (0 in a journal from before it was passed: see Store.place).
	n    int64
	dur  time.Duration // a lease, lock, window or ttl
	flag bool          // EndUse's consumed, Seen's hidden (false in a journal from before it)
	blob []byte        // FoldRate's sample, SetRate's decision, Roll's write (JSON), Admit's draw (encodeDraws), CommitDraw's commitment, SaveDraw's record
}

func (o *op) encode() []byte {
	b := make([]byte, 0, 64+len(o.queue)+len(o.user)+len(o.token)+len(o.owner)+len(o.blob))
	b = append(b, byte(o.kind))
	b = binary.AppendVarint(b, o.seq)
	b = binary.AppendVarint(b, o.at.UnixNano())
	for _, s := range [...]string{o.queue, o.user, o.token, o.owner} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(o.list)))
	for _, s := range o.list {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, o.n)
	b = binary.AppendVarint(b, int64(o.dur))
	if o.flag {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return appendString(b, string(o.blob))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errBadRecord = errors.New("malformed journal record")

func decodeOp(b []byte) (op, error) {
	d := decoder{b: b}
	var o op
	o.kind = opKind(d.byte())
	o.seq = d.varint()
	o.at = time.Unix(0, d.varint()).UTC()
	o.queue, o.user, o.token, o.owner = d.string(), d.string(), d.string(), d.string()
	if n := d.uvarint(); n > 0 && n <= uint64(len(d.b)) {
		o.list = make([]string, n)
		for i := range o.list {
			o.list[i] = d.string()
		}
	} else if n > 0 {
		d.bad = true
	}
	o.n = d.varint()
	o.dur = time.Duration(d.varint())
	o.flag = d.byte() == 1
	if blob := d.string(); blob != "" {
		o.blob = []byte(blob)
	}
	if d.bad || len(d.b) != 0 || o.kind < opPutConfig || o.kind > opLast {
		return op{}, errBadRecord
	}
	return o, nil
}

// decoder reads what encode wrote; bad is set at the first thing that
// does not fit.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("memstore: " + err.Error()) // plain data: cannot fail
	}
	return b
}

// record journals step o, number seq of its queue, that ran at now; it
// returns the record's number for await (0: the store keeps no journal, or
// is replaying one).
func (s *Store) record(o *op, seq int64, now time.Time) uint64 {
	if s.disk == nil {
		return 0
	}
	o.seq, o.at = seq, now
	return s.disk.log.Append(o.encode())
}

// await returns once record n is as safe as the fsync policy promises
// (under always, on disk).
func (s *Store) await(n uint64) error {
	if n == 0 {
		return nil
	}
	if err := s.disk.log.Wait(n); err != nil {
		return fmt.Errorf("%w: %w", queue.ErrUnavailable, err)
	}
	return nil
}

// writable refuses a change the journal could not keep: once a write or a
// sync failed, the store answers reads but no changes (503) until it is
// restarted from what the disk holds.
func (s *Store) writable() error {
	if s.disk == nil {
		return nil
	}
	if err := s.disk.log.Err(); err != nil {
		return fmt.Errorf("%w: %w", queue.ErrUnavailable, err)
	}
	return nil
}

// replay runs one journaled step again, on its clock. The step's own
// error (a full line, a token in use) is its answer then, not a fault.
func (s *Store) replay(o op) error {
	ctx := context.Background()
	var err error
	switch o.kind {
	case opPutConfig:
		var c queue.Config
		if c, err = configFrom(o.list); err == nil {
			err = s.putConfig(o.queue, c, o.n)
		}
		return err
	case opEnter:
		_, err = s.Enter(ctx, o.queue, o.user)
	case opLeave:
		_, err = s.Leave(ctx, o.queue, o.user)
	case opAdmit:
		if o.n < int64(len(o.list)) {
			return errBadRecord
		}
		tokens := make([]string, o.n) // the ones never given out only count
		copy(tokens, o.list)
		var values []uint64
		if values, err = decodeDraws(o.blob); err != nil {
			return err
		}
		_, err = s.admit(o.queue, tokens, values)
	case opAdmitNow:
		_, err = s.AdmitNow(ctx, o.queue, o.user, o.token)
	case opSweep:
		_, err = s.Sweep(ctx, o.queue)
	case opBeginUse:
		err = s.BeginUse(ctx, o.queue, o.user, o.token, o.owner, o.dur)
	case opEndUse:
		err = s.EndUse(ctx, o.queue, o.user, o.token, o.owner, o.flag)
	case opSeen:
		err = s.Seen(ctx, o.queue, o.list, o.flag)
	case opFoldRate:
		var sample queue.RateSample
		if err := json.Unmarshal(o.blob, &sample); err != nil {
			return err
		}
		_, err = s.FoldRate(ctx, o.queue, sample, o.dur)
	case opSetRate:
		var d queue.RateDecision
		if err := json.Unmarshal(o.blob, &d); err != nil {
			return err
		}
		_, _, err = s.SetRate(ctx, o.queue, d)
	case opOpenDue:
		_, err = s.OpenDue(ctx, o.queue, o.owner, o.dur)
	case opPlace:
		_, err = s.place(o.queue, o.owner, o.n, o.list, o.dur)
	case opCommitDraw, opSaveDraw:
		err = s.replayDraw(o)
	case opFirstUse:
		_, err = s.FirstUse(ctx, o.queue, o.token, o.dur)
	case opRoll:
		var w rollup.Write
		if err := json.Unmarshal(o.blob, &w); err != nil {
			return err
		}
		err = s.Roll(ctx, o.queue, w)
	case opDeleteQueue:
		err = s.DeleteQueue(ctx, o.queue)
	case opExtend:
		_, err = s.Extend(ctx, o.queue, o.user, o.token)
	case opEnterShadow:
		_, err = s.EnterShadow(ctx, o.queue, o.user, suspect.Mark{Signals: o.list, Address: o.token})
	case opClearSuspect:
		_, err = s.ClearSuspect(ctx, o.queue, o.n)
	case opJoin, opAddCodes, opPutHandoff, opClaimHandoff:
		err = s.replayLanes(o)
	case opSetStock:
		_, err = s.SetStock(ctx, o.queue, queue.Stock{Known: o.flag, Units: o.n}, o.owner == "lower")
	}
	if errors.Is(err, queue.ErrQueueNotFound) || errors.Is(err, queue.ErrUnavailable) || errors.Is(err, errBadRecord) {
		return err
	}
	return nil
}

// replayLanes runs a step of a queue's lanes, or of its handoffs, again
// (replay): the steps that move people between lines.
func (s *Store) replayLanes(o op) error {
	ctx := context.Background()
	switch o.kind {
	case opPutHandoff:
		_, err := s.PutHandoff(ctx, o.queue, o.user, o.token, o.dur)
		return err
	case opClaimHandoff:
		_, _, err := s.ClaimHandoff(ctx, o.queue, o.token, o.user)
		return err
	}
	if o.kind == opJoin {
		_, err := s.Join(ctx, o.queue, o.user, lane.Join{Lane: o.owner, Code: o.token})
		return err
	}
	codes, err := decodeCodes(o.blob)
	if err != nil {
		return err
	}
	_, err = s.AddCodes(ctx, o.queue, codes)
	return err
}

// replayDraw runs a step on the ledger of draws again (replay).
func (s *Store) replayDraw(o op) error {
	if o.kind == opSaveDraw {
		_, err := s.saveDraw(o.queue, o.owner, o.token, o.blob)
		return err
	}
	c, err := draw.UnmarshalStored(o.blob)
	if err != nil {
		return err
	}
	_, _, err = s.commitDraw(o.queue, c, o.blob)
	return err
}

// encodeDraws is a draw's random values as a journal keeps them (Admit
// under queue.MethodRandom, replayed with the same values).
func encodeDraws(values []uint64) []byte {
	b := make([]byte, 0, 8*len(values))
	for _, v := range values {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// decodeDraws reads what encodeDraws wrote; nil for none.
func decodeDraws(b []byte) ([]uint64, error) {
	if len(b)%8 != 0 {
		return nil, errBadRecord
	}
	var out []uint64
	for i := 0; i < len(b); i += 8 {
		out = append(out, binary.LittleEndian.Uint64(b[i:]))
	}
	return out, nil
}

// encodeCodes is an upload of codes as a journal keeps it (AddCodes): per
// code its hash (as codeKey keeps it: 32 bytes, not 64), lane, uses and
// expiry (Unix ms, 0 for none): some 50 bytes a code.
func encodeCodes(codes []accesscode.Code) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 48*len(codes)+8), uint64(len(codes)))
	for _, c := range codes {
		b = appendString(b, codeKey(c.Hash))
		b = appendString(b, c.Lane)
		b = binary.AppendVarint(b, c.Uses)
		var exp int64
		if !c.ExpiresAt.IsZero() {
			exp = c.ExpiresAt.UnixMilli()
		}
		b = binary.AppendVarint(b, exp)
	}
	return b
}

// decodeCodes reads what encodeCodes wrote; a hash comes back as the hex
// it was given in, for AddCodes to key again.
func decodeCodes(b []byte) ([]accesscode.Code, error) {
	d := decoder{b: b}
	n := d.uvarint()
	if n > uint64(len(b)) {
		return nil, errBadRecord
	}
	codes := make([]accesscode.Code, 0, n)
	for range n {
		c := accesscode.Code{Hash: d.string(), Lane: d.string(), Uses: d.varint()}
		if len(c.Hash) == 32 {
			c.Hash = hex.EncodeToString([]byte(c.Hash))
		}
		if exp := d.varint(); exp != 0 {
			c.ExpiresAt = time.UnixMilli(exp).UTC()
		}
		codes = append(codes, c)
	}
	if d.bad || len(d.b) != 0 {
		return nil, errBadRecord
	}
	return codes, nil
}
