package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
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
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, "", fmt.Errorf("redis at %s: %w", where, err)
	}
	return rdb, where, nil
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
