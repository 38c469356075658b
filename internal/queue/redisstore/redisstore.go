package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
)

var (
	enterScript      = mustScript("enter")
	statusScript     = mustScript("status")
	snapshotScript   = mustScript("snapshot")
	leaveScript      = mustScript("leave")
	tickScript       = mustScript("tick")
	admitScript      = mustScript("admit")
	sweepScript      = mustScript("sweep")
	beginUseScript   = mustScript("begin_use")
	endUseScript     = mustScript("end_use")
	statsScript      = mustScript("stats")
	putConfigScript  = mustScript("put_config")
	seenScript       = mustScript("seen")
	foldRateScript   = mustScript("fold_rate")
	setRateScript    = mustScript("set_rate")
	openDueScript    = mustScript("open_due")
	placeScript      = mustScript("place")
	commitDrawScript = mustScript("commit_draw")
	saveDrawScript   = mustScript("save_draw")
	admitNowScript   = mustScript("admit_now")
	firstUseScript   = mustScript("first_use")
	extendScript     = mustScript("extend")
	setStockScript   = mustScript("set_stock")
	foldAdmScript    = mustScript("fold_admission")
	joinScript       = mustScript("join")
	addCodesScript   = mustScript("add_codes")
)

// DefaultPrefix starts every key waitroom writes.
const DefaultPrefix = "wr:"

// rediser is the part of a go-redis client the store needs; Client,
// ClusterClient, failover clients and AutoPipeliner all fit.
type rediser interface {
	FCall(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd
	FunctionLoadReplace(ctx context.Context, code string) *redis.StringCmd
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
	Get(ctx context.Context, key string) *redis.StringCmd
	Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
	SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
	SRem(ctx context.Context, key string, members ...any) *redis.IntCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	Ping(ctx context.Context) *redis.StatusCmd
}

// Store is the Redis implementation of queue.Store.
type Store struct {
	rdb    rediser
	prefix string
	enters enterBatches
}

var _ queue.Store = (*Store)(nil)

// New returns a Store on rdb whose keys start with prefix (DefaultPrefix
// when empty; tests use a unique prefix each instead of flushing). On a
// Cluster, rdb is the *redis.ClusterClient or PipelineWhenBusy over it,
// which load the scripts' library on every primary (an auto-pipeline
// alone would load it on one node).
func New(rdb rediser, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Store{rdb: rdb, prefix: prefix}
}

// run runs a script on the queue's keys it touches (and extra ones after
// them). An error names the script, and the generated library a Redis
// error's line number points into (scripts/README.md).
func (s *Store) run(ctx context.Context, sc *script, name string, args []any, extra ...string) *redis.Cmd {
	keys := make([]string, len(sc.keys), len(sc.keys)+len(extra))
	for j, i := range sc.keys {
		keys[j] = queueKeyName(s.prefix, name, i)
	}
	cmd := sc.call(ctx, s.rdb, append(keys, extra...), args)
	if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
		cmd.SetErr(fmt.Errorf("scripts/generated/waitroom.lua (%s.lua): %w", sc.name, err))
	}
	return cmd
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
	fields := queue.StoreFields(c)
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	if err := s.run(ctx, putConfigScript, name, args).Err(); err != nil {
		return unavailable(err)
	}
	return unavailable(s.rdb.SAdd(ctx, registryKey(s.prefix), name).Err())
}

// DeleteQueue implements queue.Store: the name leaves the registry (no
// loop visits the queue again), then every key of the queue goes in one
// DEL, which the hash tag keeps in one slot, but the draw's ledger (kDraws,
// kDrawn), which outlives the queue. The one-time marks (usedKey) lapse
// by themselves.
func (s *Store) DeleteQueue(ctx context.Context, name string) error {
	if err := s.rdb.SRem(ctx, registryKey(s.prefix), name).Err(); err != nil {
		return unavailable(err)
	}
	k := keysFor(s.prefix, name)
	return unavailable(s.rdb.Del(ctx, k[:kDraws]...).Err()) // the draw's ledger stays (keys.go)
}

// settingFields are the config hash's fields, in queue.Settings order.
var settingFields = func() []string {
	out := make([]string, len(queue.Settings))
	for i, st := range queue.Settings {
		out[i] = st.Field
	}
	return out
}()

// settingArgs are settingFields as a script's arguments (stats.lua), made
// once.
var settingArgs = func() []any {
	args := make([]any, len(settingFields))
	for i, f := range settingFields {
		args[i] = f
	}
	return args
}()

// Config implements queue.Store: one HMGET of the table's fields.
func (s *Store) Config(ctx context.Context, name string) (queue.Config, error) {
	vals, err := s.rdb.HMGet(ctx, keysFor(s.prefix, name)[kCfg], settingFields...).Result()
	if err != nil {
		return queue.Config{}, unavailable(err)
	}
	p := reply{r: vals}
	for i := range vals {
		if vals[i] != nil {
			return p.config(0, settingFields)
		}
	}
	return queue.Config{}, queue.ErrQueueNotFound
}

// Upgrade brings what an earlier version of waitroom left in Redis to
// today's keys, queue by queue, and says how many queues it changed: the
// admission hash each queue had of its own until issue 24 ({queue}:adm)
// is folded into the queue's hash (keys.go). Run at start; a no-op once
// done. Instances of the earlier version must not run beside this one
// (docs/operations.md, "Upgrading").
func (s *Store) Upgrade(ctx context.Context) (int, error) {
	names, err := s.Queues(ctx)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, name := range names {
		old := s.prefix + "{" + name + "}:adm"
		n, err := s.run(ctx, foldAdmScript, name, nil, old).Int()
		if err != nil {
			return changed, unavailable(err)
		}
		if n > 0 {
			changed++
		}
	}
	return changed, nil
}

// Queues implements queue.Store.
func (s *Store) Queues(ctx context.Context) ([]string, error) {
	names, err := s.rdb.SMembers(ctx, registryKey(s.prefix)).Result()
	return names, unavailable(err)
}

// Status implements queue.Store.
func (s *Store) Status(ctx context.Context, name, user string) (queue.Standing, error) {
	r, err := s.run(ctx, statusScript, name, []any{user}, movedKey(s.prefix, name, user)).Slice()
	if err != nil {
		return queue.Standing{}, unavailable(err)
	}
	return parseEntry(r, statusScript)
}

// AdmitNow implements queue.Store.
func (s *Store) AdmitNow(ctx context.Context, name, user, token string) (queue.Standing, error) {
	r, err := s.run(ctx, admitNowScript, name, []any{user, token}).Slice()
	if err != nil {
		return queue.Standing{}, unavailable(err)
	}
	return parseEntry(r, admitNowScript)
}

// parseEntry reads the reply shared by status.lua and admit_now.lua (sc):
// the prelude's standing, then its pace block.
func parseEntry(r []any, sc *script) (queue.Standing, error) {
	p := reply{r: r}
	e, paceAt, err := p.standing()
	if err != nil {
		return e, err
	}
	st, epoch := p.paceState(paceAt, sc)
	if e.Lane != "" {
		st.LaneShare = p.laneShare(paceAt, e.Lane)
	}
	e.Pace, e.Epoch = queue.LinePace(st), epoch
	return e, p.err
}

// standing reads the prelude's standing at the start of a reply: the entry
// without its pace, and where the rest of the reply starts.
func (p *reply) standing() (queue.Standing, int, error) {
	var e queue.Standing
	switch p.int(0) {
	case kindUnknownQueue:
		return e, 0, queue.ErrQueueNotFound
	case kindNotInLine:
		e.State = queue.NotInQueue
		return e, 1, p.err
	case kindMoved:
		e.State = queue.Moved
		return e, 1, p.err
	case kindWaiting:
		e.State, e.Position, e.Length, e.Ticket = queue.Waiting, p.int(1), p.int(2), p.int(3)
		return e, 4, p.err
	case kindReady:
		e.State, e.Token, e.ExpiresAt = queue.Ready, p.str(1), time.UnixMilli(p.int(2)).UTC()
		return e, 3, p.err
	case kindPreQueue:
		e.State, e.PreQueue = queue.Waiting, true
		return e, 1, p.err
	case kindLanePreQueue:
		e.State, e.PreQueue, e.Lane = queue.Waiting, true, p.str(1)
		return e, 2, p.err
	case kindLane:
		e.State, e.Position, e.Length, e.Ticket, e.Lane = queue.Waiting, p.int(1), p.int(2), p.int(3), p.str(4)
		return e, 5, p.err
	case kindShadow:
		e.State, e.Shadow, e.Position, e.Length, e.Ticket, e.Behind = queue.Waiting, true, p.int(1), p.int(2), p.int(3), p.int(4)
		e.PreQueue = p.int(5) == 1
		return e, 6, p.err
	}
	return e, 0, fmt.Errorf("unexpected script reply %v", p.r)
}

// Snapshot implements queue.Store.
func (s *Store) Snapshot(ctx context.Context, name string) (queue.Snapshot, error) {
	r, err := s.run(ctx, snapshotScript, name, []any{queue.SnapshotMaxLeft}).Slice()
	if err != nil {
		return queue.Snapshot{}, unavailable(err)
	}
	p := reply{r: r}
	if p.int(0) == kindUnknownQueue {
		return queue.Snapshot{}, queue.ErrQueueNotFound
	}
	sn := queue.Snapshot{Head: p.int(1), Last: p.int(2), Length: p.int(3)}
	sn.Pace, sn.Epoch = p.pace(4, snapshotScript)
	sn.Left = p.tickets(4 + paceLen)
	sn.Cleared = p.tickets(5 + paceLen)
	sn.Complete = len(sn.Left) <= queue.SnapshotMaxLeft
	sn.Left = sn.Left[:min(len(sn.Left), queue.SnapshotMaxLeft)]
	return sn, p.err
}

// Leave implements queue.Store.
func (s *Store) Leave(ctx context.Context, name, user string) (bool, error) {
	n, err := s.run(ctx, leaveScript, name, []any{user}).Int64()
	return err == nil && n != kindNothingLeft, unavailable(err)
}

// Sweep implements queue.Store.
func (s *Store) Sweep(ctx context.Context, name string) (bool, error) {
	n, err := s.run(ctx, sweepScript, name, nil).Int64()
	return n == 1, unavailable(err)
}

// seenChunk bounds the users one seen.lua call marks.
const seenChunk = 1000

// Seen implements queue.Store.
func (s *Store) Seen(ctx context.Context, name string, users []string, hidden bool) error {
	flag := "0"
	if hidden {
		flag = "1"
	}
	for len(users) > 0 {
		chunk := users[:min(len(users), seenChunk)]
		users = users[len(chunk):]
		args := make([]any, len(chunk)+2)
		args[0], args[1] = flag, admission.HiddenHolds.Milliseconds()
		for i, u := range chunk {
			args[i+2] = u
		}
		if err := s.run(ctx, seenScript, name, args).Err(); err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// FoldRate implements queue.Store.
func (s *Store) FoldRate(ctx context.Context, name string, sample queue.RateSample, window time.Duration) (queue.RateWindow, error) {
	instance, pool := "", int64(0)
	for id, n := range sample.Pools { // one instance's sample names its own pool
		instance, pool = id, n
	}
	queued := sample.Queued[instance]
	args := []any{window.Milliseconds(), admission.RateMinCalls, sample.Calls, sample.Overloaded, callID(),
		sample.LatencyMicros, sample.WaitedMicros, sample.HeldMicros, instance, pool, queued, admission.RateLateWindows}
	for b, n := range sample.Latency {
		args = append(args, b, n)
	}
	r, err := s.run(ctx, foldRateScript, name, args).Slice()
	if err != nil {
		return queue.RateWindow{}, unavailable(err)
	}
	p := reply{r: r}
	switch p.int(0) {
	case kindNotAdaptive:
		return queue.RateWindow{}, p.err
	case kindFolded:
		return queue.RateWindow{ID: p.int(1), Folded: p.int(1)}, p.err
	case kindClaimed:
	default:
		return queue.RateWindow{}, fmt.Errorf("unexpected fold_rate.lua reply %v", r)
	}
	w := queue.RateWindow{Claimed: true, ID: p.int(1), Rate: p.float(2), Waiting: p.int(3), Folded: p.int(4), Admitted: p.int(5),
		Samples: queue.RateSample{Latency: map[int]int64{}}, Span: window}
	if memory := p.str(8); memory != "" {
		if err := json.Unmarshal([]byte(memory), &w.Last); err != nil && p.err == nil {
			p.err = fmt.Errorf("the adaptive rate's last decision: %w", err)
		}
	}
	w.Last.Window, w.Last.Why, w.Last.Rate = p.int(6), p.str(7), w.Rate
	for i := 9; i+1 < len(r); i += 2 {
		if err := foldSampleField(&w, p.str(i), p.str(i+1), window); err != nil && p.err == nil {
			p.err = err
		}
	}
	return w, p.err
}

// foldSampleField reads one field of fold_rate.lua's samples hash into w.
func foldSampleField(w *queue.RateWindow, field, value string, window time.Duration) error {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return fmt.Errorf("samples field %s: %w", field, err)
	}
	switch {
	case field == "calls":
		w.Samples.Calls = n
	case field == "overloaded":
		w.Samples.Overloaded = n
	case field == "lat":
		w.Samples.LatencyMicros = n
	case field == "waited":
		w.Samples.WaitedMicros = n
	case field == "held":
		w.Samples.HeldMicros = n
	case field == "w0":
		w.Span = time.Duration(w.ID-n+1) * window
	case strings.HasPrefix(field, "p:"):
		if w.Samples.Pools == nil {
			w.Samples.Pools = map[string]int64{}
		}
		w.Samples.Pools[field[2:]] = n
	case strings.HasPrefix(field, "q:"):
		if w.Samples.Queued == nil {
			w.Samples.Queued = map[string]int64{}
		}
		w.Samples.Queued[field[2:]] = n
	case strings.HasPrefix(field, "b"):
		if b, err := strconv.Atoi(field[1:]); err == nil {
			w.Samples.Latency[b] = n
		}
	}
	return nil
}

// SetRate implements queue.Store.
func (s *Store) SetRate(ctx context.Context, name string, d queue.RateDecision) (float64, bool, error) {
	memory, err := json.Marshal(d)
	if err != nil {
		return 0, false, err
	}
	r, err := s.run(ctx, setRateScript, name, []any{d.Window, d.Rate, d.Why, memory}).Slice()
	if err != nil {
		return 0, false, unavailable(err)
	}
	p := reply{r: r}
	return p.float(1), p.int(0) == 1, p.err
}

// RateChanges implements queue.Store.
func (s *Store) RateChanges(ctx context.Context, name string) ([]queue.RateChange, error) {
	raw, err := s.rdb.LRange(ctx, keysFor(s.prefix, name)[kRates], 0, -1).Result()
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
	r, err := s.run(ctx, openDueScript, name, []any{owner, lease.Milliseconds()}).Slice()
	if err != nil {
		return queue.Opening{}, unavailable(err)
	}
	p := reply{r: r}
	var o queue.Opening
	switch p.int(0) {
	case kindUnknownQueue:
		return o, queue.ErrQueueNotFound
	case kindNoOpening:
	case kindNotDue:
		o.In = time.Duration(p.int(1)) * time.Millisecond
	case kindDue:
		o.Due = true
		o.OpensAt = time.UnixMilli(p.int(1)).UTC()
		epoch, err := strconv.ParseInt(p.opt(2), 10, 64)
		if err != nil {
			p.fail(2)
		}
		o.Epoch, o.First, o.Next = epoch, p.int(3), p.int(4)
		o.Pending = make([]string, 0, len(r)-5)
		for i := 5; i < len(r); i++ {
			o.Pending = append(o.Pending, p.str(i))
		}
	case kindPlacedElsewhere:
		o.Busy = true
	default:
		return o, fmt.Errorf("unexpected open_due.lua reply %v", r)
	}
	return o, p.err
}

// placeChunk bounds the users one place.lua call puts in line.
const placeChunk = 1000

// Place implements queue.Store: a chunk of users per place.lua call, each
// from the ticket the last one stopped at.
func (s *Store) Place(ctx context.Context, name, owner string, first int64, users []string, lease time.Duration) (bool, error) {
	for {
		chunk := users[:min(len(users), placeChunk)]
		users = users[len(chunk):]
		args := []any{owner, lease.Milliseconds(), first}
		for _, u := range chunk {
			args = append(args, u)
		}
		first += int64(len(chunk))
		n, err := s.run(ctx, placeScript, name, args).Int64()
		switch {
		case err != nil:
			return false, unavailable(err)
		case n == kindNotOwner:
			return false, queue.ErrNotOwner
		case n == kindOpened || len(users) == 0:
			return n == kindOpened, nil
		}
	}
}

// BeginUse implements queue.Store.
func (s *Store) BeginUse(ctx context.Context, name, user, token, owner string, lock time.Duration) error {
	n, err := s.run(ctx, beginUseScript, name, []any{user, token, max(lock.Milliseconds(), 1), owner}).Int64()
	switch {
	case err != nil:
		return unavailable(err)
	case n == kindTokenInvalid:
		return queue.ErrTokenInvalid
	case n == kindInUse:
		return queue.ErrTokenInUse
	case n != kindLocked:
		return fmt.Errorf("unexpected begin_use.lua reply %d", n)
	}
	return nil
}

// EndUse implements queue.Store.
func (s *Store) EndUse(ctx context.Context, name, user, token, owner string, consumed bool) error {
	flag := "0"
	if consumed {
		flag = "1"
	}
	return unavailable(s.run(ctx, endUseScript, name, []any{user, token, flag, owner}).Err())
}

// statsConfigAt is where stats.lua's reply carries the config's fields
// (settingFields), after its numbers.
const statsConfigAt = 25

// Stats implements queue.Store: one step (stats.lua), the config with it.
func (s *Store) Stats(ctx context.Context, name string) (queue.Stats, error) {
	r, err := s.run(ctx, statsScript, name, settingArgs).Slice()
	if err != nil {
		return queue.Stats{}, unavailable(err)
	}
	p := reply{r: r}
	if p.int(0) == kindUnknownQueue {
		return queue.Stats{}, queue.ErrQueueNotFound
	}
	st := queue.Stats{
		Stock:          p.stock(16),
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
		Changed:        queue.Changes{Paused: p.ms(17), Method: p.ms(18), SoldOut: p.ms(19)},

		ShadowLength:        p.int(20),
		ShadowEnteredTotal:  p.int(21),
		ShadowAdmittedTotal: p.int(22),
		ShadowLeftTotal:     p.int(23),
		ClearedTotal:        p.int(24),
	}
	tick := admission.TickState{Measured: p.float(4), WinStart: p.ms(5)}
	st.MeasuredRate = tick.MeasuredRate(p.ms(15))
	eff, why := p.str(13), p.str(14)
	if p.err != nil {
		return queue.Stats{}, p.err
	}
	// The config of the same step: its stamps (Changed) with the states
	// they stamp, its rate in force with the rate (stats.lua).
	if st.Config, err = p.config(statsConfigAt, settingFields); err != nil {
		return queue.Stats{}, err
	}
	at := statsConfigAt + len(settingFields)
	if st.Lanes, err = laneStats(r, at, st.Config.InForce(p.ms(15))); err != nil {
		return queue.Stats{}, err
	}
	effRate, _ := strconv.ParseFloat(eff, 64)
	st.EffectiveRate = st.Config.RateInForce(effRate)
	if st.Config.Adaptive && effRate > 0 {
		st.EffectiveWhy = why
	}
	return st, nil
}

// SetStock implements queue.Store.
func (s *Store) SetStock(ctx context.Context, name string, st queue.Stock, onlyLower bool) (queue.Stock, error) {
	units, lower := "", "0"
	if st.Known {
		units = strconv.FormatInt(max(st.Units, 0), 10)
	}
	if onlyLower {
		lower = "1"
	}
	r, err := s.run(ctx, setStockScript, name, []any{units, lower}).Slice()
	if err != nil {
		return queue.Stock{}, unavailable(err)
	}
	p := reply{r: r}
	if p.int(0) == kindUnknownQueue {
		return queue.Stock{}, queue.ErrQueueNotFound
	}
	now := p.stock(1)
	return now, p.err
}

// FirstUse implements queue.Store.
func (s *Store) FirstUse(ctx context.Context, name, key string, ttl time.Duration) (bool, error) {
	n, err := s.run(ctx, firstUseScript, name, []any{max(ttl.Milliseconds(), 1), callID()}, usedKey(s.prefix, name, key)).Int64()
	return n == 1, unavailable(err)
}

// Extend implements queue.Store.
func (s *Store) Extend(ctx context.Context, name, user, token string) (time.Time, error) {
	ms, err := s.run(ctx, extendScript, name, []any{user, token}, sessionKey(s.prefix, name, user)).Int64()
	switch {
	case err != nil:
		return time.Time{}, unavailable(err)
	case ms <= 0:
		return time.Time{}, queue.ErrTokenInvalid
	}
	return time.UnixMilli(ms).UTC(), nil
}

// callID names one call of a script that must not count twice when the
// Redis client re-sends it (its reply came after the read timeout, though
// Redis ran it): the repeat carries the same arguments, so the same id.
func callID() string { return rand.Text() }

// Ping implements queue.Store.
func (s *Store) Ping(ctx context.Context) error { return unavailable(s.rdb.Ping(ctx).Err()) }
