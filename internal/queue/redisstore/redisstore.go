// Package redisstore keeps the waiting line in Redis. Every step that must
// be atomic is one Lua script (scripts/*.lua), each naming its KEYS, ARGV and
// reply in its header, run with EVALSHA and falling back to EVAL when Redis
// has lost its script cache (NOSCRIPT after a restart or failover).
package redisstore

import (
	"context"
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

func mustScript(name string) *redis.Script {
	src, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err) // embedded at build time; missing means a broken build
	}
	return redis.NewScript(string(src))
}

var (
	enterScript     = mustScript("enter")
	statusScript    = mustScript("status")
	leaveScript     = mustScript("leave")
	admitScript     = mustScript("admit")
	beginUseScript  = mustScript("begin_use")
	endUseScript    = mustScript("end_use")
	statsScript     = mustScript("stats")
	putConfigScript = mustScript("put_config")
	snapshotScript  = mustScript("snapshot")
	admitNowScript  = mustScript("admit_now")
)

// DefaultPrefix starts every key waitroom writes.
const DefaultPrefix = "wr:"

// rediser is the part of a go-redis client the store needs; Client,
// ClusterClient, failover clients and AutoPipeliner all fit.
type rediser interface {
	redis.Scripter
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
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
	paused := "0"
	if c.Paused {
		paused = "1"
	}
	err := putConfigScript.Run(ctx, s.rdb, []string{k.cfg, k.adm},
		"rate", strconv.FormatFloat(c.RatePerSecond, 'f', -1, 64),
		"batch", c.BatchSize,
		"interval_ms", c.Interval.Milliseconds(),
		"capacity", c.Capacity,
		"ttl_ms", c.TokenTTL.Milliseconds(),
		"max_active", c.MaxActiveTokens,
		"paused", paused,
		"derivation", c.RateDerivation,
	).Err()
	if err != nil {
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
	return parseConfig(m)
}

func parseConfig(m map[string]string) (queue.Config, error) {
	var c queue.Config
	var err error
	num := func(field string) int64 {
		v, e := strconv.ParseInt(m[field], 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("queue config field %s: %w", field, e)
		}
		return v
	}
	c.RatePerSecond, err = strconv.ParseFloat(m["rate"], 64)
	c.BatchSize = int(num("batch"))
	c.Interval = time.Duration(num("interval_ms")) * time.Millisecond
	c.Capacity = num("capacity")
	c.TokenTTL = time.Duration(num("ttl_ms")) * time.Millisecond
	c.Paused = m["paused"] == "1"
	c.RateDerivation = m["derivation"]
	if m["max_active"] != "" { // absent in configs written before the cap existed
		c.MaxActiveTokens = num("max_active")
	}
	return c, err
}

// Queues implements queue.Store.
func (s *Store) Queues(ctx context.Context) ([]string, error) {
	names, err := s.rdb.SMembers(ctx, registryKey(s.prefix)).Result()
	return names, unavailable(err)
}

// Enter implements queue.Store.
func (s *Store) Enter(ctx context.Context, name, user string) (queue.Entry, error) {
	k := keysFor(s.prefix, name)
	r, err := enterScript.Run(ctx, s.rdb, []string{k.line, k.seq, k.cfg, k.tokens, k.texp, k.adm}, user).Slice()
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
	r, err := statusScript.Run(ctx, s.rdb, []string{k.line, k.cfg, k.tokens, k.texp}, user).Slice()
	if err != nil {
		return queue.Entry{}, unavailable(err)
	}
	return parseEntry(r)
}

// AdmitNow implements queue.Store.
func (s *Store) AdmitNow(ctx context.Context, name, user, token string) (queue.Entry, error) {
	k := keysFor(s.prefix, name)
	r, err := admitNowScript.Run(ctx, s.rdb, []string{k.line, k.seq, k.cfg, k.adm, k.tokens, k.texp}, user, token).Slice()
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
	var cfgAt int
	switch p.int(0) {
	case -1:
		return e, queue.ErrQueueNotFound
	case 0:
		e.State, cfgAt = queue.NotInQueue, 1
	case 1:
		e.State, e.Position, e.Length, e.Ticket, cfgAt = queue.Waiting, p.int(1), p.int(2), p.int(7), 3
	case 2:
		e.State, e.Token, e.ExpiresAt, cfgAt = queue.Ready, p.str(1), time.UnixMilli(p.int(2)).UTC(), 3
	default:
		return e, fmt.Errorf("unexpected script reply %v", r)
	}
	e.Config, e.Epoch = p.config(cfgAt), p.int(cfgAt+3)
	return e, p.err
}

// Snapshot implements queue.Store.
func (s *Store) Snapshot(ctx context.Context, name string) (queue.Snapshot, error) {
	k := keysFor(s.prefix, name)
	r, err := snapshotScript.Run(ctx, s.rdb, []string{k.line, k.seq, k.cfg, k.left}, queue.SnapshotMaxLeft).Slice()
	if err != nil {
		return queue.Snapshot{}, unavailable(err)
	}
	p := reply{r: r}
	if p.int(0) == -1 {
		return queue.Snapshot{}, queue.ErrQueueNotFound
	}
	sn := queue.Snapshot{Head: p.int(1), Last: p.int(2), Length: p.int(3), Config: p.config(4), Epoch: p.int(7)}
	for i := 8; i < len(r); i++ {
		sn.Left = append(sn.Left, p.int(i))
	}
	sn.Complete = len(sn.Left) <= queue.SnapshotMaxLeft
	sn.Left = sn.Left[:min(len(sn.Left), queue.SnapshotMaxLeft)]
	return sn, p.err
}

// Leave implements queue.Store.
func (s *Store) Leave(ctx context.Context, name, user string) (bool, error) {
	k := keysFor(s.prefix, name)
	n, err := leaveScript.Run(ctx, s.rdb, []string{k.line, k.tokens, k.texp, k.adm, k.left}, user).Int64()
	return n > 0, unavailable(err)
}

// Admit implements queue.Store.
func (s *Store) Admit(ctx context.Context, name string, tokens []string) (queue.Admission, error) {
	k := keysFor(s.prefix, name)
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	r, err := admitScript.Run(ctx, s.rdb, []string{k.line, k.cfg, k.adm, k.tokens, k.texp, k.left}, args...).Slice()
	if err != nil {
		return queue.Admission{}, unavailable(err)
	}
	p := reply{r: r}
	ticked := p.int(0)
	if ticked < 0 {
		return queue.Admission{}, queue.ErrQueueNotFound
	}
	a := queue.Admission{Ticked: ticked == 1, NextIn: time.Duration(p.int(1)) * time.Millisecond}
	for i := 2; i < len(r); i++ {
		a.Admitted = append(a.Admitted, p.str(i))
	}
	return a, p.err
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
	r, err := statsScript.Run(ctx, s.rdb, []string{k.line, k.cfg, k.adm, k.texp, k.seq}).Slice()
	if err != nil {
		return queue.Stats{}, unavailable(err)
	}
	p := reply{r: r}
	if p.int(0) < 0 {
		return queue.Stats{}, queue.ErrQueueNotFound
	}
	st := queue.Stats{
		Length:        p.int(0),
		AdmittedTotal: p.int(1),
		ConsumedTotal: p.int(2),
		ActiveTokens:  p.int(3),
		EnteredTotal:  p.int(6),
		LeftTotal:     p.int(7),
		ExpiredTotal:  p.int(8),
		ReturnedTotal: p.int(9),
		InlineTotal:   p.int(10),
	}
	// A window that has not closed for two of its lengths means admission
	// stopped (no instance running): the last figure would be stale.
	if since := p.int(5); since >= 0 && since < 10_000 {
		st.MeasuredRate, _ = strconv.ParseFloat(p.str(4), 64)
	}
	if p.err != nil {
		return queue.Stats{}, p.err
	}
	st.Config, err = s.Config(ctx, name)
	return st, err
}

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

// config reads the rate, batch and paused fields that status, enter and
// snapshot replies carry from index i on (the line's epoch follows them).
func (p *reply) config(i int) queue.Config {
	var c queue.Config
	rate, err := strconv.ParseFloat(p.str(i), 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("queue config rate: %w", err)
	}
	batch, err := strconv.Atoi(p.str(i + 1))
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("queue config batch: %w", err)
	}
	c.RatePerSecond, c.BatchSize, c.Paused = rate, batch, p.str(i+2) == "1"
	return c
}

func (p *reply) fail(i int) {
	if p.err == nil {
		p.err = fmt.Errorf("unexpected script reply at %d: %v", i, p.r)
	}
}
