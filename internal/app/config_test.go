package app_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
)

func TestParse(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	t.Run("defaults derive the seed's rate", func(t *testing.T) {
		c, err := app.Parse(nil, env(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		q, err := c.QueueConfig()
		if err != nil {
			t.Fatal(err)
		}
		if q.RatePerSecond != 100 || q.BatchSize != 10 || q.Interval != 100*time.Millisecond ||
			q.Capacity != 100_000 || q.TokenTTL != 5*time.Minute {
			t.Fatalf("defaults: %+v", q)
		}
		if q.RateDerivation != "40 conns × 0.5 × 1000/200 ms = 100/s" {
			t.Fatalf("derivation %q", q.RateDerivation)
		}
	})
	t.Run("env twin, flag wins", func(t *testing.T) {
		c, err := app.Parse([]string{"--capacity", "7"}, env("WAITROOM_CAPACITY", "5", "WAITROOM_REDIS_URL", "redis://x:1/0"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.Capacity != 7 || c.RedisURL != "redis://x:1/0" {
			t.Fatalf("capacity %d redis %q", c.Capacity, c.RedisURL)
		}
	})
	t.Run("derived rate follows the pool", func(t *testing.T) {
		c, err := app.Parse([]string{"--db-pool-size", "20", "--order-latency", "100ms"}, env(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if q, _ := c.QueueConfig(); q.RatePerSecond != 100 {
			t.Fatalf("rate %v, want 20 × 0.5 × 10 = 100", q.RatePerSecond)
		}
	})
	bad := []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--order-pool-share", "1.5"}, nil, "--order-pool-share"},
		{[]string{"--db-pool-size", "0"}, nil, "--db-pool-size"},
		{[]string{"--log-format", "xml"}, nil, "--log-format"},
		{[]string{"--rate", "500"}, nil, "batchSize"}, // 500/s × 100 ms = 50 per tick > batch 10
		{nil, []string{"WAITROOM_CAPACITY", "lots"}, "WAITROOM_CAPACITY"},
		{[]string{"--token-ttl", "0s"}, nil, "tokenTtlSeconds"},
		{[]string{"extra"}, nil, "unexpected arguments"},
		{[]string{"--redis-mode", "ring"}, nil, "--redis-mode"},
		{[]string{"--status-snapshot-age", "-1s"}, nil, "--status-snapshot-age"},
	}
	for _, tc := range bad {
		t.Run("refuses "+strings.Join(append(tc.args, tc.env...), " "), func(t *testing.T) {
			_, err := app.Parse(tc.args, env(tc.env...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}
