package redisstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// PipelineWhenBusy is a client for New that sends a call alone, on a
// connection of alone's pool, when no other call through it is in flight,
// and through shared (an auto-pipeline) when some are.
//
// The auto-pipeline lets concurrent calls share round trips, which is what
// lets one instance answer tens of thousands of requests a second
// (docs/benchmarks.md §2). A call with nothing to share a round trip with
// gains nothing from it and still pays its hops through the pipeline's
// goroutines: on an instance answering a few dozen requests a second,
// about a third more CPU a call (§6, where a few dozen a second is what
// reaches the instances of a line read through a cache). Under load nearly
// every call finds another in flight and is pipelined as before.
func PipelineWhenBusy(alone, shared rediser) rediser {
	return &pipelineWhenBusy{alone: alone, shared: shared}
}

type pipelineWhenBusy struct {
	alone, shared rediser
	inFlight      atomic.Int64
}

// call makes one call on the client its moment picks, counted in flight
// until it is answered (both faces answer before they return).
func call[T any](p *pipelineWhenBusy, do func(rediser) T) T {
	defer p.inFlight.Add(-1)
	if p.inFlight.Add(1) == 1 {
		return do(p.alone)
	}
	return do(p.shared)
}

func (p *pipelineWhenBusy) FCall(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd {
	return call(p, func(c rediser) *redis.Cmd { return c.FCall(ctx, function, keys, args...) })
}

func (p *pipelineWhenBusy) FunctionLoadReplace(ctx context.Context, code string) *redis.StringCmd {
	return call(p, func(c rediser) *redis.StringCmd { return c.FunctionLoadReplace(ctx, code) })
}

func (p *pipelineWhenBusy) HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd {
	return call(p, func(c rediser) *redis.SliceCmd { return c.HMGet(ctx, key, fields...) })
}

func (p *pipelineWhenBusy) Get(ctx context.Context, key string) *redis.StringCmd {
	return call(p, func(c rediser) *redis.StringCmd { return c.Get(ctx, key) })
}

func (p *pipelineWhenBusy) Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd {
	return call(p, func(c rediser) *redis.StatusCmd { return c.Set(ctx, key, value, expiration) })
}

func (p *pipelineWhenBusy) LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd {
	return call(p, func(c rediser) *redis.StringSliceCmd { return c.LRange(ctx, key, start, stop) })
}

func (p *pipelineWhenBusy) SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd {
	return call(p, func(c rediser) *redis.IntCmd { return c.SAdd(ctx, key, members...) })
}

func (p *pipelineWhenBusy) SMembers(ctx context.Context, key string) *redis.StringSliceCmd {
	return call(p, func(c rediser) *redis.StringSliceCmd { return c.SMembers(ctx, key) })
}

func (p *pipelineWhenBusy) SRem(ctx context.Context, key string, members ...any) *redis.IntCmd {
	return call(p, func(c rediser) *redis.IntCmd { return c.SRem(ctx, key, members...) })
}

func (p *pipelineWhenBusy) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return call(p, func(c rediser) *redis.IntCmd { return c.Del(ctx, keys...) })
}

func (p *pipelineWhenBusy) Ping(ctx context.Context) *redis.StatusCmd {
	return call(p, func(c rediser) *redis.StatusCmd { return c.Ping(ctx) })
}
