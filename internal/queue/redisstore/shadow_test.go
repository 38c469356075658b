package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/suspect"
)

// TestShadowAdmitLosesItsTurn: a tick read with nobody in line plans to
// let the shadow line in (shadowAdmits last); if, before admit.lua
// applies the plan, another instance lets someone else wait, or takes the
// turn away, the plan admits nobody, and the next tick decides on the
// line as it is. Only Redis has the gap: memstore plans and applies under
// one lock.
func TestShadowAdmitLosesItsTurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		between func(t *testing.T, other *redisstore.Store, q string, c queue.Config)
		want    string // what the next tick lets in
	}{
		{"PersonEntered", func(t *testing.T, other *redisstore.Store, q string, _ queue.Config) {
			if _, err := other.Enter(context.Background(), q, "person"); err != nil {
				t.Error(err)
			}
		}, "[person]"},
		{"SuspectCleared", func(t *testing.T, other *redisstore.Store, q string, _ queue.Config) {
			if ok, err := other.ClearSuspect(context.Background(), q, 2); err != nil || !ok {
				t.Errorf("clearing y: %v, %v", ok, err)
			}
		}, "[y]"},
		{"OpeningSet", func(t *testing.T, other *redisstore.Store, q string, c queue.Config) {
			c.OpensAt = time.Now().Add(time.Hour)
			if err := other.PutConfig(context.Background(), q, c); err != nil {
				t.Error(err)
			}
		}, "[]"},
		{"ShadowAdmitsNever", func(t *testing.T, other *redisstore.Store, q string, c queue.Config) {
			c.ShadowAdmits = suspect.AdmitNever
			if err := other.PutConfig(context.Background(), q, c); err != nil {
				t.Error(err)
			}
		}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			shared, prefix := mustOpenRedis(t)
			rdb := redis.NewClient(shared.Options())
			t.Cleanup(func() { rdb.Close() })
			hook := &beforeScript{want: "bot"} // admit.lua's plan names it
			rdb.AddHook(hook)
			ticking, other := redisstore.New(rdb, prefix), redisstore.New(shared, prefix)
			ctx := context.Background()
			c := queue.DefaultConfig()
			c.RatePerSecond, c.BatchSize, c.Interval = 1000, 1, time.Millisecond
			c.ShadowAdmits = suspect.AdmitLast
			if err := other.PutConfig(ctx, "line", c); err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{"bot", "y"} {
				if _, err := other.EnterShadow(ctx, "line", u, suspect.Mark{Signals: []string{string(suspect.EdgeScore)}, Address: "h"}); err != nil {
					t.Fatal(err)
				}
			}
			hook.mu.Lock()
			hook.before = func() { tc.between(t, other, "line", c) }
			hook.mu.Unlock()
			var first []string
			for range 1000 {
				a, err := ticking.Admit(ctx, "line", queue.NewTokens(c.BatchSize))
				if err != nil {
					t.Fatal(err)
				}
				if a.Ticked {
					first = a.Admitted
					break
				}
				time.Sleep(a.NextIn)
			}
			hook.mu.Lock()
			ran := hook.before == nil
			hook.mu.Unlock()
			if !ran {
				t.Fatal("no tick planned to let the shadow line in")
			}
			if got := fmt.Sprint(first); got != tc.want {
				t.Fatalf("the first tick applied let in %s; want %s", got, tc.want)
			}
			if e, err := other.Status(ctx, "line", "bot"); err != nil || e.State != queue.Waiting || !e.Shadow {
				t.Fatalf("bot: %+v, %v; want still in the shadow line", e, err)
			}
		})
	}
}
