// Package redisstore keeps the waiting line in Redis. Every step that must
// be atomic is one Lua script (scripts/*.lua), each naming its KEYS, ARGV and
// reply in its header, run with EVALSHA and falling back to EVAL when Redis
// has lost its script cache (NOSCRIPT after a restart or failover).
package redisstore

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

// mustScript loads scripts/<name>.lua, after the shared fragments named
// by with (pace.lua: the line's pace, read by the scripts that answer with it).
func mustScript(name string, with ...string) *redis.Script {
	var src []byte
	for _, f := range append(with, name) {
		b, err := scriptFiles.ReadFile("scripts/" + f + ".lua")
		if err != nil {
			panic(err) // embedded at build time; missing means a broken build
		}
		src = append(append(src, b...), '\n')
	}
	return redis.NewScript(string(src))
}

var (
	enterScript     = mustScript("enter", "pace")
	statusScript    = mustScript("status", "pace")
	snapshotScript  = mustScript("snapshot", "pace")
	leaveScript     = mustScript("leave")
	admitScript     = mustScript("admit")
	beginUseScript  = mustScript("begin_use")
	endUseScript    = mustScript("end_use")
	statsScript     = mustScript("stats")
	putConfigScript = mustScript("put_config")
	seenScript      = mustScript("seen")
	foldRateScript  = mustScript("fold_rate")
	setRateScript   = mustScript("set_rate")
	openDueScript   = mustScript("open_due")
	placeScript     = mustScript("place")
	admitNowScript  = mustScript("admit_now", "pace")
	firstUseScript  = mustScript("first_use")
)

// DefaultPrefix starts every key waitroom writes.
const DefaultPrefix = "wr:"

// rediser is the part of a go-redis client the store needs; Client,
// ClusterClient, failover clients and AutoPipeliner all fit.
type rediser interface {
	redis.Scripter
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
	SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
	Ping(ctx context.Context) *redis.StatusCmd
}

// Store is the Redis implementation of queue.Store.
type Store struct {
	rdb    rediser
	prefix string
}

var _ queue.Store = (*Store)(nil)

// New returns a Store on rdb whose keys start with prefix (DefaultPrefix
// when empty; tests use a unique prefix each instead of flushing).
func New(rdb rediser, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Store{rdb: rdb, prefix: prefix}
}

// unavailable marks an error of Redis itself, so callers answer 503. A
// script that refused to act on data it cannot read (DAMAGED: a config
// missing a field) is no outage and no reason to retry: that error stays
// unexpected (500, logged), and the script wrote nothing.
func unavailable(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "DAMAGED ") {
		return fmt.Errorf("redis data damaged: %w", err)
	}
	return fmt.Errorf("%w: %w", queue.ErrUnavailable, err)
}

// PutConfig implements queue.Store.
func (s *Store) PutConfig(ctx context.Context, name string, c queue.Config) error {
	k := keysFor(s.prefix, name)
	fields := queue.StoreFields(c)
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	if err := putConfigScript.Run(ctx, s.rdb, []string{k.cfg, k.adm, k.pre, k.rates}, args...).Err(); err != nil {
		return unavailable(err)
	}
	return unavailable(s.rdb.SAdd(ctx, registryKey(s.prefix), name).Err())
}

// Config implements queue.Store.
func (s *Store) Config(ctx context.Context, name string) (queue.Config, error) {
	m, err := s.rdb.HGetAll(ctx, keysFor(s.prefix, name).cfg).Result()
	if err != nil {
		return queue.Config{}, unavailable(err)
	}
	if len(m) == 0 {
		return queue.Config{}, queue.ErrQueueNotFound
	}
	return queue.ConfigFromStore(m)
}

// Queues implements queue.Store.
func (s *Store) Queues(ctx context.Context) ([]string, error) {
	names, err := s.rdb.SMembers(ctx, registryKey(s.prefix)).Result()
	return names, unavailable(err)
}

// Enter implements queue.Store.
func (s *Store) Enter(ctx context.Context, name, user string) (queue.Entry, error) {
	k := keysFor(s.prefix, name)
	r, err := enterScript.Run(ctx, s.rdb, []string{k.line, k.seq, k.cfg, k.tokens, k.texp, k.adm, k.pre, k.seen}, user).Slice()
	if err != nil {
		return queue.Entry{}, unavailable(err)
	}
	if code, _ := r[0].(int64); code == -2 {
		return queue.Entry{}, queue.ErrQueueFull
	}
	return parseEntry(r)
}

// Status implements queue.Store.
func (s *Store) Status(ctx context.Context, name, user string) (queue.Entry, error) {
	k := keysFor(s.prefix, name)
	r, err := statusScript.Run(ctx, s.rdb, []string{k.line, k.cfg, k.tokens, k.texp, k.adm, k.pre}, user).Slice()
	if err != nil {
		return queue.Entry{}, unavailable(err)
	}
	return parseEntry(r)
}

// AdmitNow implements queue.Store.
func (s *Store) AdmitNow(ctx context.Context, name, user, token string) (queue.Entry, error) {
	k := keysFor(s.prefix, name)
	r, err := admitNowScript.Run(ctx, s.rdb, []string{k.line, k.seq, k.cfg, k.adm, k.tokens, k.texp, k.pre}, user, token).Slice()
	if err != nil {
		return queue.Entry{}, unavailable(err)
	}
	return parseEntry(r)
}

// parseEntry reads the reply shared by enter.lua, status.lua and
// admit_now.lua.
func parseEntry(r []any) (queue.Entry, error) {
	p := reply{r: r}
	var e queue.Entry
	var paceAt int
	switch p.int(0) {
	case -1:
		return e, queue.ErrQueueNotFound
	case 0:
		e.State, paceAt = queue.NotInQueue, 1
	case 1:
		e.State, e.Position, e.Length, e.Ticket, paceAt = queue.Waiting, p.int(1), p.int(2), p.int(3), 4
	case 2:
		e.State, e.Token, e.ExpiresAt, paceAt = queue.Ready, p.str(1), time.UnixMilli(p.int(2)).UTC(), 3
	case 3:
		e.State, e.PreQueue, paceAt = queue.Waiting, true, 1
	default:
		return e, fmt.Errorf("unexpected script reply %v", r)
	}
	e.Pace, e.Epoch = p.pace(paceAt), p.epoch(paceAt)
	return e, p.err
}

// Snapshot implements queue.Store.
func (s *Store) Snapshot(ctx context.Context, name string) (queue.Snapshot, error) {
	k := keysFor(s.prefix, name)
	r, err := snapshotScript.Run(ctx, s.rdb, []string{k.line, k.seq, k.cfg, k.left, k.adm}, queue.SnapshotMaxLeft).Slice()
	if err != nil {
		return queue.Snapshot{}, unavailable(err)
	}
	p := reply{r: r}
	if p.int(0) == -1 {
		return queue.Snapshot{}, queue.ErrQueueNotFound
	}
	sn := queue.Snapshot{Head: p.int(1), Last: p.int(2), Length: p.int(3), Pace: p.pace(4), Epoch: p.epoch(4)}
	for i := 4 + paceFields; i < len(r); i++ {
		sn.Left = append(sn.Left, p.int(i))
	}
	sn.Complete = len(sn.Left) <= queue.SnapshotMaxLeft
	sn.Left = sn.Left[:min(len(sn.Left), queue.SnapshotMaxLeft)]
	return sn, p.err
}

// Leave implements queue.Store.
func (s *Store) Leave(ctx context.Context, name, user string) (bool, error) {
	k := keysFor(s.prefix, name)
	n, err := leaveScript.Run(ctx, s.rdb, []string{k.line, k.tokens, k.texp, k.adm, k.left, k.pre, k.seen}, user).Int64()
	return n > 0, unavailable(err)
}

// Admit implements queue.Store.
func (s *Store) Admit(ctx context.Context, name string, tokens []string) (queue.Admission, error) {
	k := keysFor(s.prefix, name)
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	r, err := admitScript.Run(ctx, s.rdb, []string{k.line, k.cfg, k.adm, k.tokens, k.texp, k.left, k.seen}, args...).Slice()
	if err != nil {
		return queue.Admission{}, unavailable(err)
	}
	p := reply{r: r}
	ticked := p.int(0)
	if ticked < 0 {
		return queue.Admission{}, queue.ErrQueueNotFound
	}
	a := queue.Admission{Ticked: ticked == 1, NextIn: time.Duration(p.int(1)) * time.Millisecond}
	if a.Ticked {
		a.Skipped = int(p.int(2))
		for i := 3; i < len(r); i++ {
			a.Admitted = append(a.Admitted, p.str(i))
		}
	}
	return a, p.err
}

// seenChunk bounds the users one seen.lua call marks.
const seenChunk = 1000

// Seen implements queue.Store.
func (s *Store) Seen(ctx context.Context, name string, users []string) error {
	k := keysFor(s.prefix, name)
	for len(users) > 0 {
		chunk := users[:min(len(users), seenChunk)]
		users = users[len(chunk):]
		args := make([]any, len(chunk))
		for i, u := range chunk {
			args[i] = u
		}
		if err := seenScript.Run(ctx, s.rdb, []string{k.line, k.seen}, args...).Err(); err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// FoldRate implements queue.Store.
func (s *Store) FoldRate(ctx context.Context, name string, sample queue.RateSample, window time.Duration) (queue.RateWindow, error) {
	k := keysFor(s.prefix, name)
	args := []any{window.Milliseconds(), queue.RateMinCalls, sample.Calls, sample.Overloaded, callID()}
	for b, n := range sample.Latency {
		args = append(args, b, n)
	}
	r, err := foldRateScript.Run(ctx, s.rdb, []string{k.cfg, k.adm, k.samples, k.line}, args...).Slice()
	if err != nil {
		return queue.RateWindow{}, unavailable(err)
	}
	p := reply{r: r}
	switch p.int(0) {
	case 0:
		return queue.RateWindow{}, p.err
	case 1:
		return queue.RateWindow{ID: p.int(1), Folded: p.int(1)}, p.err
	}
	w := queue.RateWindow{Claimed: true, ID: p.int(1), Rate: p.float(2), Waiting: p.int(3), Folded: p.int(4), Admitted: p.int(5),
		Last: queue.RateDecision{Window: p.int(6), Why: p.str(7), P90: time.Duration(p.int(8)), Knee: p.float(9),
			CallsPerUser: p.float(10)},
		Samples: queue.RateSample{Latency: map[int]int64{}}}
	w.Last.Rate = w.Rate
	for i := 11; i+1 < len(r); i += 2 {
		field := p.str(i)
		n, err := strconv.ParseInt(p.str(i+1), 10, 64)
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("samples field %s: %w", field, err)
		}
		switch {
		case field == "calls":
			w.Samples.Calls = n
		case field == "overloaded":
			w.Samples.Overloaded = n
		case strings.HasPrefix(field, "b"):
			if b, err := strconv.Atoi(field[1:]); err == nil {
				w.Samples.Latency[b] = n
			}
		}
	}
	return w, p.err
}

// SetRate implements queue.Store.
func (s *Store) SetRate(ctx context.Context, name string, d queue.RateDecision) (float64, bool, error) {
	k := keysFor(s.prefix, name)
	r, err := setRateScript.Run(ctx, s.rdb, []string{k.cfg, k.adm, k.rates},
		d.Window, d.Rate, d.Why, d.P90, d.Knee, d.CallsPerUser).Slice() // go-redis sends a Duration in ns
	if err != nil {
		return 0, false, unavailable(err)
	}
	p := reply{r: r}
	return p.float(1), p.int(0) == 1, p.err
}

// RateChanges implements queue.Store.
func (s *Store) RateChanges(ctx context.Context, name string) ([]queue.RateChange, error) {
	raw, err := s.rdb.LRange(ctx, keysFor(s.prefix, name).rates, 0, -1).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]queue.RateChange, 0, len(raw))
	for i := len(raw) - 1; i >= 0; i-- { // newest first in Redis
		f := strings.SplitN(raw[i], " ", 3)
		if len(f) != 3 {
			continue
		}
		ms, err1 := strconv.ParseInt(f[0], 10, 64)
		rate, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, queue.RateChange{At: time.UnixMilli(ms).UTC(), Rate: rate, Why: f[2]})
	}
	return out, nil
}

// OpenDue implements queue.Store.
func (s *Store) OpenDue(ctx context.Context, name, owner string, lease time.Duration) (queue.Opening, error) {
	k := keysFor(s.prefix, name)
	r, err := openDueScript.Run(ctx, s.rdb, []string{k.cfg, k.adm, k.pre, k.seq}, owner, lease.Milliseconds()).Slice()
	if err != nil {
		return queue.Opening{}, unavailable(err)
	}
	p := reply{r: r}
	var o queue.Opening
	switch p.int(0) {
	case -1:
		return o, queue.ErrQueueNotFound
	case 1:
		o.In = time.Duration(p.int(1)) * time.Millisecond
	case 2:
		o.Due = true
		o.Pending = make([]string, 0, len(r)-1)
		for i := 1; i < len(r); i++ {
			o.Pending = append(o.Pending, p.str(i))
		}
	case 3:
		o.Busy = true
	}
	return o, p.err
}

// placeChunk bounds the users one place.lua call puts in line.
const placeChunk = 1000

// Place implements queue.Store.
func (s *Store) Place(ctx context.Context, name, owner string, users []string, lease time.Duration) (bool, error) {
	k := keysFor(s.prefix, name)
	for {
		chunk := users[:min(len(users), placeChunk)]
		users = users[len(chunk):]
		args := []any{owner, lease.Milliseconds()}
		for _, u := range chunk {
			args = append(args, u)
		}
		n, err := placeScript.Run(ctx, s.rdb, []string{k.adm, k.pre, k.line, k.left}, args...).Int64()
		switch {
		case err != nil:
			return false, unavailable(err)
		case n < 0:
			return false, queue.ErrNotOwner
		case n == 1 || len(users) == 0:
			return n == 1, nil
		}
	}
}

// BeginUse implements queue.Store.
func (s *Store) BeginUse(ctx context.Context, name, user, token, owner string, lock time.Duration) error {
	k := keysFor(s.prefix, name)
	n, err := beginUseScript.Run(ctx, s.rdb, []string{k.tokens, k.texp, k.inflight, k.owners},
		user, token, max(lock.Milliseconds(), 1), owner).Int64()
	switch {
	case err != nil:
		return unavailable(err)
	case n == 0:
		return queue.ErrTokenInvalid
	case n < 0:
		return queue.ErrTokenInUse
	}
	return nil
}

// EndUse implements queue.Store.
func (s *Store) EndUse(ctx context.Context, name, user, token, owner string, consumed bool) error {
	k := keysFor(s.prefix, name)
	flag := "0"
	if consumed {
		flag = "1"
	}
	return unavailable(endUseScript.Run(ctx, s.rdb, []string{k.tokens, k.texp, k.inflight, k.owners, k.adm},
		user, token, flag, owner).Err())
}

// Stats implements queue.Store.
func (s *Store) Stats(ctx context.Context, name string) (queue.Stats, error) {
	k := keysFor(s.prefix, name)
	r, err := statsScript.Run(ctx, s.rdb, []string{k.line, k.cfg, k.adm, k.texp, k.seq, k.pre}).Slice()
	if err != nil {
		return queue.Stats{}, unavailable(err)
	}
	p := reply{r: r}
	if p.int(0) < 0 {
		return queue.Stats{}, queue.ErrQueueNotFound
	}
	st := queue.Stats{
		Length:         p.int(0),
		AdmittedTotal:  p.int(1),
		ConsumedTotal:  p.int(2),
		ActiveTokens:   p.int(3),
		EnteredTotal:   p.int(6),
		LeftTotal:      p.int(7),
		ExpiredTotal:   p.int(8),
		ReturnedTotal:  p.int(9),
		InlineTotal:    p.int(10),
		AbandonedTotal: p.int(11),
		PreQueued:      p.int(12),
	}
	// A window that has not closed for two of its lengths means admission
	// stopped (no instance running): the last figure would be stale.
	if since := p.int(5); since >= 0 && since < 10_000 {
		st.MeasuredRate, _ = strconv.ParseFloat(p.str(4), 64)
	}
	if p.err != nil {
		return queue.Stats{}, p.err
	}
	eff, why := p.str(13), p.str(14)
	if p.err != nil {
		return queue.Stats{}, p.err
	}
	if st.Config, err = s.Config(ctx, name); err != nil {
		return queue.Stats{}, err
	}
	st.EffectiveRate = st.Config.RatePerSecond
	if r, err := strconv.ParseFloat(eff, 64); err == nil && st.Config.Adaptive {
		st.EffectiveRate, st.EffectiveWhy = max(st.Config.MinRate, min(r, st.Config.MaxRate)), why
	}
	return st, nil
}

// FirstUse implements queue.Store.
func (s *Store) FirstUse(ctx context.Context, name, key string, ttl time.Duration) (bool, error) {
	n, err := firstUseScript.Run(ctx, s.rdb, []string{usedKey(s.prefix, name, key)}, max(ttl.Milliseconds(), 1), callID()).Int64()
	return n == 1, unavailable(err)
}

// callID names one call of a script that must not count twice when the
// Redis client re-sends it (its reply came after the read timeout, though
// Redis ran it): the repeat carries the same arguments, so the same id.
func callID() string { return rand.Text() }

// Ping implements queue.Store.
func (s *Store) Ping(ctx context.Context) error { return unavailable(s.rdb.Ping(ctx).Err()) }

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

// paceFields is how many fields pace.lua's block has.
const paceFields = 17

// epoch reads the line's epoch, the last field of pace.lua's block from
// index i on (0: a config written before epochs).
func (p *reply) epoch(i int) int64 {
	v := p.opt(i + paceFields - 1)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("the line's epoch: %w", err)
	}
	return n
}

// pace reads pace.lua's block from index i on into the line's Pace.
func (p *reply) pace(i int) queue.Pace {
	f := func(j int) string { return p.opt(i + j) }
	num := func(j int) float64 {
		v, err := strconv.ParseFloat(f(j), 64)
		if err != nil && f(j) != "" && p.err == nil {
			p.err = fmt.Errorf("pace field %d: %w", j, err)
		}
		return v
	}
	ms := func(j int) time.Time {
		if v := num(j); v > 0 {
			return time.UnixMilli(int64(v)).UTC()
		}
		return time.Time{}
	}
	c := queue.Config{RatePerSecond: num(0), BatchSize: int(num(1)), Paused: f(2) == "1",
		Interval: time.Duration(num(3)) * time.Millisecond, Adaptive: f(4) == "1", MinRate: num(5), MaxRate: num(6),
		OpensAt: ms(7)}
	state := f(13)
	return queue.LinePace(queue.PaceState{
		Config: c, EffectiveRate: num(8), PaceRate: num(9), PaceBusy: num(10), Moved: ms(11), Reach: int64(num(12)),
		Pending: !c.OpensAt.IsZero() && state == "", Placing: state == "placing",
		Now: ms(14), Length: int64(num(15)),
	})
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
	v, err := strconv.ParseFloat(p.str(i), 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("unexpected script reply at %d: %v", i, p.r)
	}
	return v
}

func (p *reply) fail(i int) {
	if p.err == nil {
		p.err = fmt.Errorf("unexpected script reply at %d: %v", i, p.r)
	}
}
