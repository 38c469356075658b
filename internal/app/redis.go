package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis deployments waitroom runs on (--redis-mode).
const (
	RedisSingle   = "single"   // one server (or a managed endpoint in front of one)
	RedisCluster  = "cluster"  // Redis Cluster: every queue's keys share a hash slot
	RedisSentinel = "sentinel" // a primary with replicas, found and failed over by Sentinel
)

// openRedis connects to Redis as mode says. The URL is go-redis's for that
// mode: for cluster the seed nodes are the host plus any addr= parameters;
// for sentinel the host and addr= parameters are the sentinels and
// master_name= names the primary. It returns the client and a description
// of where it points, for messages.
func openRedis(ctx context.Context, mode, rawURL string, logger *slog.Logger) (redis.UniversalClient, string, error) {
	quietRedisLog.Do(func() { redis.SetLogger(redisLog{logger}) })
	var (
		rdb   redis.UniversalClient
		where string
	)
	switch mode {
	case RedisSingle:
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("--redis-url: %w", err)
		}
		failFast(knobs{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout,
			&opt.DialerRetries, &opt.DialerRetryTimeout, &opt.MaxRetries, &opt.MinRetryBackoff, &opt.MaxRetryBackoff,
			&opt.ContextTimeoutEnabled})
		rdb, where = redis.NewClient(opt), opt.Addr
	case RedisCluster:
		opt, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("--redis-url (cluster): %w", err)
		}
		failFast(knobs{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout,
			&opt.DialerRetries, &opt.DialerRetryTimeout, &opt.MaxRetries, &opt.MinRetryBackoff, &opt.MaxRetryBackoff,
			&opt.ContextTimeoutEnabled})
		rdb, where = redis.NewClusterClient(opt), "cluster "+strings.Join(opt.Addrs, ",")
	case RedisSentinel:
		opt, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("--redis-url (sentinel): %w", err)
		}
		if opt.MasterName == "" {
			return nil, "", fmt.Errorf("--redis-url (sentinel): master_name= is required")
		}
		failFast(knobs{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout,
			&opt.DialerRetries, &opt.DialerRetryTimeout, &opt.MaxRetries, &opt.MinRetryBackoff, &opt.MaxRetryBackoff,
			&opt.ContextTimeoutEnabled})
		rdb = redis.NewFailoverClient(opt)
		where = fmt.Sprintf("primary %q via sentinels %s", opt.MasterName, strings.Join(opt.SentinelAddrs, ","))
	default:
		return nil, "", fmt.Errorf("--redis-mode: %q is not %s, %s or %s", mode, RedisSingle, RedisCluster, RedisSentinel)
	}
	// A cluster with a node down still serves the queues on the others:
	// an instance (re)started meanwhile starts and serves them.
	if err := reachPatiently(ctx, reachAny(rdb)); err != nil {
		rdb.Close()
		return nil, "", fmt.Errorf("redis at %s: %w", where, err)
	}
	if err := needFunctions(ctx, rdb); err != nil {
		rdb.Close()
		return nil, "", fmt.Errorf("redis at %s: %w", where, err)
	}
	return rdb, where, nil
}

// needFunctions refuses a Redis without functions (before 7.0) at the
// start, in a sentence, rather than let every call fail on FCALL: the
// line's scripts are one library of functions (redisstore). Only Redis's
// own "unknown command" refuses; anything else (a node down) is the
// requests' to meet.
func needFunctions(ctx context.Context, rdb redis.UniversalClient) error {
	err := rdb.Do(ctx, "FUNCTION", "LIST", "LIBRARYNAME", "waitroom_").Err()
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		return fmt.Errorf("waitroom needs Redis 7.0 or later (its scripts are Redis functions): %w", err)
	}
	return nil
}

// startPatience bounds how long a start waits for a Redis that answers too
// slowly: the fail-fast timeouts are for requests, which answer 503 at
// once rather than wait; a start gains nothing by giving up on one slow
// PING (Redis busy forking a snapshot, a loaded host: a test instance met
// it beside a busy core at load 16).
const startPatience = 10 * time.Second

// reachPatiently asks reach again while it times out, for at most
// startPatience; any other failure (refused, a wrong password) is at once.
func reachPatiently(ctx context.Context, reach func(context.Context) error) error {
	deadline := time.Now().Add(startPatience)
	for {
		err := reach(ctx)
		var timeout interface{ Timeout() bool }
		if err == nil || !errors.As(err, &timeout) || !timeout.Timeout() || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
	}
}

// reachAny returns a check of whether any part of Redis answers: the
// server (or the primary Sentinel names), or on a cluster any primary.
// The store's health check asks it when no queue answered, to tell a
// store down from one whose queues all live on nodes that are down.
func reachAny(rdb redis.UniversalClient) func(context.Context) error {
	return func(ctx context.Context) error {
		c, ok := rdb.(*redis.ClusterClient)
		if !ok {
			return rdb.Ping(ctx).Err()
		}
		var answered atomic.Bool
		var mu sync.Mutex
		var failures []string
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			if err := n.Ping(ctx).Err(); err != nil {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%s: %v", n.Options().Addr, err))
				mu.Unlock()
				return nil
			}
			answered.Store(true)
			return nil
		})
		switch {
		case answered.Load():
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("no primary of the cluster answers PING (%s)", strings.Join(failures, "; "))
	}
}

// go-redis logs through one package-wide logger, a line per failed dial:
// hundreds a second while Redis is away. waitroom already answers 503 and
// logs the outage once at the edge, so those lines go to debug, on the
// logger of the first instance this process opens.
var quietRedisLog sync.Once

type redisLog struct{ l *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	if r.l.Enabled(ctx, slog.LevelDebug) {
		r.l.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
	}
}

// knobs points at the settings failFast tunes; the three go-redis option
// types have them under the same names but no common type.
type knobs struct {
	dialTimeout, readTimeout, writeTimeout, poolTimeout *time.Duration
	dialerRetries                                       *int
	dialerRetryTimeout                                  *time.Duration
	maxRetries                                          *int
	minRetryBackoff, maxRetryBackoff                    *time.Duration
	contextTimeoutEnabled                               *bool
}

// failFast tunes the Redis client for sale night: when Redis is away, a
// request should hear 503 within about a second, not queue up behind
// seconds of dials and retries. Values given in the URL's query win.
func failFast(k knobs) {
	for _, d := range []*time.Duration{k.dialTimeout, k.readTimeout, k.writeTimeout, k.poolTimeout} {
		if *d == 0 {
			*d = time.Second
		}
	}
	if *k.dialerRetries == 0 {
		*k.dialerRetries, *k.dialerRetryTimeout = 1, 10*time.Millisecond
	}
	if *k.maxRetries == 0 {
		*k.maxRetries = 1
	}
	if *k.maxRetryBackoff == 0 {
		*k.minRetryBackoff, *k.maxRetryBackoff = 10*time.Millisecond, 100*time.Millisecond
	}
	*k.contextTimeoutEnabled = true
}

// waitroom's keys never carry a TTL, so these maxmemory-policy values never
// evict them: noeviction refuses writes when memory is full (waitroom then
// answers 503), and volatile-* only evict keys with a TTL. allkeys-* may
// evict any key: a lost seq restarts the tickets and newcomers jump the
// line, a lost cfg loses the queue, a lost tokens hash loses admissions.
var evictionSafe = map[string]bool{
	"noeviction": true, "volatile-lru": true, "volatile-lfu": true, "volatile-random": true, "volatile-ttl": true,
}

// evictionCheck reads Redis's maxmemory-policy (on every primary of a
// cluster) and says what is wrong with it, remembering the answer for a
// few seconds so that readiness probes do not ask on every call.
type evictionCheck struct {
	rdb redis.UniversalClient

	mu      sync.Mutex
	at      time.Time
	problem string
}

// evictionRecheck is how long a reading of maxmemory-policy is trusted: an
// operator may change it at run time.
const evictionRecheck = 10 * time.Second

// Problem is "" when every primary's policy leaves waitroom's keys alone,
// else a sentence for operators: the policy that can evict them, or that
// it cannot be read (CONFIG GET is disabled on many managed services).
func (e *evictionCheck) Problem(ctx context.Context) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.at.IsZero() && time.Since(e.at) < evictionRecheck {
		return e.problem
	}
	e.problem, e.at = e.read(ctx), time.Now()
	return e.problem
}

func (e *evictionCheck) read(ctx context.Context) string {
	var mu sync.Mutex
	var bad, unreadable []string
	check := func(ctx context.Context, c *redis.Client) error {
		v, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		mu.Lock()
		defer mu.Unlock()
		var refused redis.Error
		switch policy := v["maxmemory-policy"]; {
		case err != nil && !errors.As(err, &refused):
			// A node that does not answer evicts nothing meanwhile; the
			// health check reports it. Read again when it is back.
		case err != nil || policy == "":
			unreadable = append(unreadable, fmt.Sprintf("%s (%v)", c.Options().Addr, err))
		case !evictionSafe[policy]:
			bad = append(bad, fmt.Sprintf("%s on %s", policy, c.Options().Addr))
		}
		return nil
	}
	var err error
	switch c := e.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, check)
	case *redis.Client:
		err = check(ctx, c)
	default:
		err = fmt.Errorf("unknown client %T", c)
	}
	switch {
	case len(bad) > 0:
		return fmt.Sprintf("Redis maxmemory-policy %s can evict waitroom's keys (they have no TTL): "+
			"a lost ticket counter lets newcomers jump the line, a lost config loses the queue; use noeviction or a volatile-* policy",
			strings.Join(bad, ", "))
	case len(unreadable) > 0 || err != nil:
		return fmt.Sprintf("Redis maxmemory-policy cannot be checked (CONFIG GET refused: %s); make sure it is noeviction or volatile-*, "+
			"or waitroom's keys may be evicted", strings.Join(append(unreadable, errText(err)...), "; "))
	}
	return ""
}

func errText(err error) []string {
	if err == nil {
		return nil
	}
	return []string{err.Error()}
}
