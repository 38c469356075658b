package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
)

// BenchmarkAdmit measures one admission tick that lets a batch of 10 in,
// first come first served and drawn at random: tick.lua's read, the plan,
// admit.lua's apply; and, as redis-µs/tick, what Redis spent running the
// two scripts (INFO commandstats: the machine's other work moves it less
// than the time a call takes). Each tick is made due by writing the tick
// state's next time, outside the timer. It uses only what the store exports, so
// the same file measures an older commit too (docs/benchmarks.md, "The
// scripts as Redis runs them"):
//
//	WAITROOM_TEST_RACE=0 scripts/test.sh -run '^$' -bench Admit -benchtime 2000x ./internal/queue/redisstore/
func BenchmarkAdmit(b *testing.B) {
	for _, method := range []queue.QueueingMethod{queue.MethodFIFO, queue.MethodRandom} {
		b.Run(string(method), func(b *testing.B) {
			rdb, prefix := mustOpenRedis(b)
			st := redisstore.New(rdb, prefix)
			ctx := context.Background()
			c := queue.DefaultConfig()
			c.RatePerSecond, c.BatchSize, c.Interval, c.Method = 1000, 10, time.Hour, method
			c.Capacity = 100_000_000
			if err := st.PutConfig(ctx, "bench", c); err != nil {
				b.Fatal(err)
			}
			for i := range b.N*c.BatchSize + c.BatchSize {
				if _, err := st.Enter(ctx, "bench", fmt.Sprintf("u%d", i)); err != nil {
					b.Fatal(err)
				}
			}
			cfg := redisstore.KeysOf(prefix, "bench").Cfg
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if err := rdb.HSet(ctx, cfg, "next", time.Now().UnixMilli()-1).Err(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				a, err := st.Admit(ctx, "bench", queue.NewTokens(c.BatchSize))
				if err != nil || !a.Ticked || len(a.Admitted) != c.BatchSize {
					b.Fatalf("a tick made due: %+v, %v; want %d admitted", a, err, c.BatchSize)
				}
			}
			b.StopTimer()
			ev := commandStats(b, rdb)["fcall"]
			b.ReportMetric(ev.usecPerCall*float64(ev.calls)/float64(b.N), "redis-µs/tick")
		})
	}
}
