package redisstore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// TestRollupMemoryPerDay writes a busy queue's day of rows, every minute
// of it written as a sale's (its totals, length, pre-queue and rate, 100
// users admitted over some 30 buckets of time in line and 15 of estimate
// ratio, their ranges scored (issue 54: within or not, one in ten apart),
// orders, a moment every hour), and logs what Redis says they hold
// (MEMORY USAGE of every row): the figure docs/operations.md states for
// --rollup-retention. Then it checks that the rows keep only their keep.
func TestRollupMemoryPerDay(t *testing.T) {
	rdb, prefix := mustOpenRedis(t)
	s := redisstore.New(rdb, prefix)
	ctx := context.Background()
	day := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(38, 1))
	var p rollup.Pending
	var r rollup.Reading
	for m := range 24 * 60 {
		at := day.Add(time.Duration(m) * time.Minute)
		for range 100 {
			wait := time.Duration(rnd.ExpFloat64() * float64(10*time.Minute))
			shown := int64(wait.Seconds() * (0.7 + 0.6*rnd.Float64()))
			p.Admitted("sale", rollup.Wait{Entered: at.Add(-wait), Shown: shown, Low: shown * 4 / 5, High: shown * 5 / 4,
				Apart: rnd.IntN(10) == 0, Admitted: at})
		}
		for range 80 {
			p.Ordered("sale")
		}
		r.Entered, r.Admitted, r.Used, r.Left, r.Skipped, r.Expired = r.Entered+120, r.Admitted+100, r.Used+80, r.Left+10, r.Skipped+5, r.Expired+20
		r.Length, r.PreQueue, r.Rate = 5000+int64(m), 0, 100
		w := r.Write(p.Take("sale"), time.Hour)
		if err := s.RollAt(ctx, "sale", at, w); err != nil {
			t.Fatal(err)
		}
		if m%60 == 0 {
			mo := rollup.MomentWrite(rollup.Moment{At: at, Type: "rate.changed", Data: map[string]any{"rate": 100.0, "previousRate": 50.0, "reason": "back off: p90 400ms"}}, time.Hour)
			if err := s.RollAt(ctx, "sale", at, mo); err != nil {
				t.Fatal(err)
			}
		}
	}
	var bytes, fields int64
	for m := range 24 * 60 {
		key := redisstore.MinuteKey(prefix, "sale", day.Add(time.Duration(m)*time.Minute))
		n, err := rdb.MemoryUsage(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		bytes += n
		fields += rdb.HLen(ctx, key).Val()
	}
	t.Logf("a day of one queue's rows: %d bytes (%.2f MB; %.0f bytes a minute, %.1f fields a minute); 14 days: %.1f MB",
		bytes, float64(bytes)/1e6, float64(bytes)/1440, float64(fields)/1440, 14*float64(bytes)/1e6)
	// Nothing is kept past the keep.
	const keep = 300 * time.Millisecond
	if err := s.RollAt(ctx, "brief", day, rollup.Write{Add: map[string]int64{"ordered": 1}, Keep: keep}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); rdb.Exists(ctx, redisstore.MinuteKey(prefix, "brief", day)).Val() == 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a row outlived its keep")
		}
	}
}
