package redisstore

import (
	"context"
	"sync/atomic"

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

// pick is the client for a call about to be made; done must follow
// when it has been answered (both faces answer before they return).
func (p *pipelineWhenBusy) pick() rediser {
	if p.inFlight.Add(1) == 1 {
		return p.alone
	}
	return p.shared
}

func (p *pipelineWhenBusy) done() { p.inFlight.Add(-1) }

func (p *pipelineWhenBusy) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	defer p.done()
	return p.pick().Eval(ctx, script, keys, args...)
}

func (p *pipelineWhenBusy) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	defer p.done()
	return p.pick().EvalSha(ctx, sha1, keys, args...)
}

func (p *pipelineWhenBusy) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	defer p.done()
	return p.pick().EvalRO(ctx, script, keys, args...)
}

func (p *pipelineWhenBusy) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	defer p.done()
	return p.pick().EvalShaRO(ctx, sha1, keys, args...)
}

func (p *pipelineWhenBusy) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	defer p.done()
	return p.pick().ScriptExists(ctx, hashes...)
}

func (p *pipelineWhenBusy) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	defer p.done()
	return p.pick().ScriptLoad(ctx, script)
}

func (p *pipelineWhenBusy) HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd {
	defer p.done()
	return p.pick().HMGet(ctx, key, fields...)
}

func (p *pipelineWhenBusy) LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd {
	defer p.done()
	return p.pick().LRange(ctx, key, start, stop)
}

func (p *pipelineWhenBusy) SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd {
	defer p.done()
	return p.pick().SAdd(ctx, key, members...)
}

func (p *pipelineWhenBusy) SMembers(ctx context.Context, key string) *redis.StringSliceCmd {
	defer p.done()
	return p.pick().SMembers(ctx, key)
}

func (p *pipelineWhenBusy) SRem(ctx context.Context, key string, members ...any) *redis.IntCmd {
	defer p.done()
	return p.pick().SRem(ctx, key, members...)
}

func (p *pipelineWhenBusy) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	defer p.done()
	return p.pick().Del(ctx, keys...)
}

func (p *pipelineWhenBusy) Ping(ctx context.Context) *redis.StatusCmd {
	defer p.done()
	return p.pick().Ping(ctx)
}
