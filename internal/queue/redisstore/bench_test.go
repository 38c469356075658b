package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
)

// BenchmarkStores measures enter and status, the hot paths, on the
// embedded store beside the Redis store (plain and auto-pipelined), in one
// run, so the figures to compare are the ratios: the embedded store must
// never be the slower one.
//
//	WAITROOM_TEST_RACE=0 scripts/test.sh -run '^$' -bench Stores -benchtime 3s ./internal/queue/redisstore/
func BenchmarkStores(b *testing.B) {
	rdb, prefix := mustOpenRedis(b)
	ap, err := rdb.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	stores := []struct {
		name string
		s    queue.Store
	}{
		{"embedded", memstore.New(nil)},
		{"redis", redisstore.New(rdb, prefix)},
		{"redis-autopipeline", redisstore.New(ap, prefix+"ap:")},
	}
	for _, st := range stores {
		ctx := context.Background()
		c := queue.DefaultConfig()
		c.Paused, c.Capacity = true, 100_000_000 // the line only grows
		if err := st.s.PutConfig(ctx, "bench", c); err != nil {
			b.Fatal(err)
		}
		var users atomic.Int64
		run := func(b *testing.B, call func(user string) error) {
			b.SetParallelism(16) // 16 × GOMAXPROCS callers, as the HTTP benchmarks' connections
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(fmt.Sprintf("u%d", users.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		}
		b.Run(st.name+"/enter", func(b *testing.B) {
			run(b, func(u string) error { _, err := st.s.Enter(ctx, "bench", u); return err })
		})
		users.Store(0) // status asks about users who entered
		b.Run(st.name+"/status", func(b *testing.B) {
			run(b, func(u string) error { _, err := st.s.Status(ctx, "bench", u); return err })
		})
	}
}
