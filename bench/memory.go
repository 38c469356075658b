package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
)

// MemoryPoint is Redis's memory with a number of users waiting.
type MemoryPoint struct {
	Waiting      int64
	UsedBytes    int64 // used_memory delta since the empty queue
	BytesPerUser float64
}

// EnterLatency is store-level Enter timings at a line length.
type EnterLatency struct {
	Waiting  int64
	Calls    int
	P50, P99 time.Duration
}

// MemoryReport is the memory section.
type MemoryReport struct {
	UserIDLen    int
	FillRate     float64 // users/s while filling
	Points       []MemoryPoint
	Latency      []EnterLatency // small line, big line
	LatencyRatio float64        // p50 at the big line / p50 at the small
	P99Ratio     float64
}

func runMemory(ctx context.Context, o Options) (*MemoryReport, error) {
	small, mid, big := 1_000, 100_000, 1_000_000
	calls := 2000
	if o.Short {
		small, mid, big, calls = 1_000, 5_000, 10_000, 300
	}
	rep := &MemoryReport{}
	sc, err := newScratch(o)
	if err != nil {
		return rep, err
	}
	defer sc.close(ctx)
	rdb, prefix, store := sc.rdb, sc.prefix, sc.store
	cfg := queue.DefaultConfig()
	cfg.Capacity = 100_000_000
	cfg.Paused = true // nobody admits: the line only grows
	if err := store.PutConfig(ctx, "mem", cfg); err != nil {
		return rep, err
	}
	// One enter creates the per-queue keys, so the baseline holds them.
	if _, err := store.Enter(ctx, "mem", "mem-first"); err != nil {
		return rep, err
	}
	base, err := usedMemory(ctx, rdb)
	if err != nil {
		return rep, err
	}
	id := func(i int) string { return fmt.Sprintf("user-%07d", i) } // 12-byte ids
	rep.UserIDLen = len(id(0))
	next := 0
	growTo := func(n int) error {
		length, err := rdb.ZCard(ctx, prefix+"{mem}:line").Result()
		if err != nil {
			return err
		}
		add := n - int(length)
		if add <= 0 {
			return nil
		}
		t := time.Now()
		err = fill(ctx, rdb, prefix, "mem", "user-", next, add)
		next += add
		if add >= 1_000 {
			rep.FillRate = float64(add) / time.Since(t).Seconds()
		}
		return err
	}
	point := func() error {
		used, err := usedMemory(ctx, rdb)
		if err != nil {
			return err
		}
		n, err := rdb.ZCard(ctx, prefix+"{mem}:line").Result()
		if err != nil {
			return err
		}
		p := MemoryPoint{Waiting: n, UsedBytes: used - base, BytesPerUser: float64(used-base) / float64(n)}
		o.logf("memory: %d waiting: %d bytes, %.1f B/user", p.Waiting, p.UsedBytes, p.BytesPerUser)
		rep.Points = append(rep.Points, p)
		return nil
	}
	latency := func() error {
		n, err := rdb.ZCard(ctx, prefix+"{mem}:line").Result()
		if err != nil {
			return err
		}
		// Unmeasured calls first: a warm connection and script cache, so the
		// first measurement is not also the cold one.
		for i := range 200 {
			if _, err := store.Enter(ctx, "mem", fmt.Sprintf("warm-%d-%07d", n, i)); err != nil {
				return err
			}
		}
		lats := make([]time.Duration, 0, calls)
		for i := range calls {
			t := time.Now()
			if _, err := store.Enter(ctx, "mem", fmt.Sprintf("lat-%d-%07d", n, i)); err != nil {
				return err
			}
			lats = append(lats, time.Since(t))
		}
		slices.Sort(lats)
		l := EnterLatency{Waiting: n, Calls: calls, P50: percentile(lats, 50), P99: percentile(lats, 99)}
		o.logf("memory: enter at %d waiting: p50 %v p99 %v", n, l.P50, l.P99)
		rep.Latency = append(rep.Latency, l)
		return nil
	}
	o.logf("memory: filling to %d, %d, %d", small, mid, big)
	if err := growTo(small); err != nil {
		return rep, err
	}
	if err := latency(); err != nil {
		return rep, err
	}
	for _, n := range []int{mid, big} {
		if err := growTo(n); err != nil {
			return rep, err
		}
		if err := point(); err != nil {
			return rep, err
		}
	}
	if err := latency(); err != nil {
		return rep, err
	}
	a, b := rep.Latency[0], rep.Latency[1]
	rep.LatencyRatio = float64(b.P50) / float64(a.P50)
	rep.P99Ratio = float64(b.P99) / float64(a.P99)
	return rep, nil
}

// fill puts count users (idPrefix + number, from first) in line through the
// store's own Enter script, on an auto-pipelined client with many callers at
// once, so round trips carry hundreds of FCALLs each.
func fill(ctx context.Context, rdb *redis.Client, prefix, q, idPrefix string, first, count int) error {
	return pipelined(ctx, rdb, prefix, count, func(store *redisstore.Store, i int) error {
		_, err := store.Enter(ctx, q, fmt.Sprintf("%s%07d", idPrefix, first+i))
		return err
	})
}

// pipelined calls call(store, i) for i in [0, count) from 256 callers at
// once on an auto-pipelined client, so round trips carry hundreds of script
// calls each; the first error stops it.
func pipelined(ctx context.Context, rdb *redis.Client, prefix string, count int, call func(*redisstore.Store, int) error) error {
	ap, err := rdb.AutoPipeline()
	if err != nil {
		return err
	}
	defer ap.Close()
	store := redisstore.New(ap, prefix)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= count || firstErr.Load() != nil {
					return
				}
				if err := call(store, i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	return nil
}

func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := redisInfo(ctx, rdb, "memory")
	if err != nil {
		return 0, err
	}
	v, ok := info["used_memory"]
	if !ok {
		return 0, fmt.Errorf("no used_memory in INFO memory")
	}
	return strconv.ParseInt(v, 10, 64)
}

// redisInfo is INFO's fields for the sections asked, by name.
func redisInfo(ctx context.Context, rdb *redis.Client, sections ...string) (map[string]string, error) {
	info, err := rdb.Info(ctx, sections...).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, l := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}
