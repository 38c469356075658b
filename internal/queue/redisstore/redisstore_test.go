package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/queue/storetest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// mustOpenRedis returns a client to the test Redis and a key prefix no other
// test uses, so tests share one server without flushing it.
func mustOpenRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	return testenv.RedisClient(t), fmt.Sprintf("wrtest%d:", rand.Int64())
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) queue.Store {
		rdb, prefix := mustOpenRedis(t)
		return redisstore.New(rdb, prefix)
	})
}

// TestConformanceOnCluster runs the suite on a real three-node Redis
// Cluster through an auto-pipelined cluster client: every script's keys
// share the queue's hash slot, so each runs on the node that owns it.
func TestConformanceOnCluster(t *testing.T) {
	url, _ := testenv.StartRedisCluster(t, 3)
	opt, err := redis.ParseClusterURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClusterClient(opt)
	t.Cleanup(func() { rdb.Close() })
	ap, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	var opened atomic.Int64
	t.Run("suite", func(t *testing.T) { // returns when its parallel tests have
		storetest.Run(t, func(t *testing.T) queue.Store {
			opened.Add(1)
			return redisstore.New(ap, fmt.Sprintf("wrtest%d:", rand.Int64()))
		})
	})
	if opened.Load() < 10 {
		return // -run picked a few tests: too few queues to expect every node used
	}
	// The queues the suite made are spread over the nodes.
	var mu sync.Mutex
	keys := map[string]int{}
	rdb.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		n, err := c.DBSize(ctx).Result()
		mu.Lock()
		defer mu.Unlock()
		keys[c.Options().Addr] = int(n)
		return err
	})
	for addr, n := range keys {
		if n == 0 {
			t.Errorf("cluster node %s holds no keys: %v", addr, keys)
		}
	}
}

func TestConformanceAutoPipeline(t *testing.T) {
	storetest.Run(t, func(t *testing.T) queue.Store {
		rdb, prefix := mustOpenRedis(t)
		ap, err := rdb.AutoPipeline()
		if err != nil {
			t.Fatal(err)
		}
		return redisstore.New(ap, prefix)
	})
}

// TestConfigBeforeEntryPolicies: a queue written before entry policies
// existed (no entry or challenge_cost field) reads with the defaults, so
// an upgrade puts the default line behind the challenge.
func TestConfigBeforeEntryPolicies(t *testing.T) {
	rdb, prefix := mustOpenRedis(t)
	ctx := context.Background()
	s := redisstore.New(rdb, prefix)
	if err := s.PutConfig(ctx, "old", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, prefix+"{old}:cfg", "entry", "challenge_cost").Err(); err != nil {
		t.Fatal(err)
	}
	c, err := s.Config(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if want := queue.DefaultConfig(); c.Entry != want.Entry || c.ChallengeCost != want.ChallengeCost {
		t.Fatalf("entry %q cost %d, want the defaults %q %d", c.Entry, c.ChallengeCost, want.Entry, want.ChallengeCost)
	}
}

// TestScriptsSurviveScriptFlush: after a restart or failover Redis has lost
// its script cache; EVALSHA's NOSCRIPT must fall back to EVAL.
func TestScriptsSurviveScriptFlush(t *testing.T) {
	rdb, prefix := mustOpenRedis(t)
	ap, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    *redisstore.Store
	}{{"plain", redisstore.New(rdb, prefix)}, {"auto-pipeline", redisstore.New(ap, prefix+"ap:")}} {
		t.Run(c.name, func(t *testing.T) { scriptsSurviveFlush(t, rdb, c.s) })
	}
}

func scriptsSurviveFlush(t *testing.T, rdb *redis.Client, s *redisstore.Store) {
	ctx := context.Background()
	if err := s.PutConfig(ctx, "q", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enter(ctx, "q", "a"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	e, err := s.Enter(ctx, "q", "b")
	if err != nil || e.Position != 2 {
		t.Fatalf("after SCRIPT FLUSH: %+v, %v", e, err)
	}
}

// TestThreeAdmittersShareTheRate: three admitters (as three instances would
// run) for 10 s at 100/s admit 1000 users give or take one batch, each once.
//
// Not parallel: it measures a rate, so it runs alone in its package.
func TestThreeAdmittersShareTheRate(t *testing.T) {
	rdb, prefix := mustOpenRedis(t)
	s := redisstore.New(rdb, prefix)
	ctx := context.Background()
	cfg := queue.DefaultConfig()
	if err := s.PutConfig(ctx, "sale", cfg); err != nil {
		t.Fatal(err)
	}
	const waiting = 2000
	for i := range waiting {
		if _, err := s.Enter(ctx, "sale", fmt.Sprintf("u%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	seen := map[string]int{}
	runCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		a := queue.NewAdmitter(redisstore.New(rdb, prefix), discardLogger())
		a.OnAdmitUsers = func(_ string, users []string) {
			mu.Lock()
			defer mu.Unlock()
			for _, u := range users {
				seen[u]++
			}
		}
		wg.Add(1)
		go func() { defer wg.Done(); a.Run(runCtx) }()
	}
	wg.Wait()

	total := 0
	for u, n := range seen {
		if n != 1 {
			t.Errorf("%s admitted %d times", u, n)
		}
		total += n
	}
	if total < 1000-cfg.BatchSize || total > 1000+cfg.BatchSize {
		t.Fatalf("3 admitters for 10 s at 100/s admitted %d, want 1000 ± %d", total, cfg.BatchSize)
	}
	st, err := s.Stats(ctx, "sale")
	if err != nil {
		t.Fatal(err)
	}
	if st.Length != int64(waiting-total) || st.AdmittedTotal != int64(total) {
		t.Fatalf("stats: length %d admitted %d; want %d and %d", st.Length, st.AdmittedTotal, waiting-total, total)
	}
	t.Logf("admitted %d in 10 s by 3 admitters", total)
}
