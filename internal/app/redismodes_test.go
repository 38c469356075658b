package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestOnRedisCluster: two instances on a real three-node Redis Cluster
// (--redis-mode cluster) serve the line end to end: queues in different
// slots, positions agreed by both instances, admission, an order, metrics.
func TestOnRedisCluster(t *testing.T) {
	t.Parallel()
	url, _ := testenv.StartRedisCluster(t, 3)
	onCluster := func(c *app.Config) { c.RedisMode, c.RedisURL, c.KeyPrefix = app.RedisCluster, url, "wr:" }
	a := boot(t, backend{name: "cluster"}, onCluster)
	b := boot(t, backend{name: "cluster"}, func(c *app.Config) {
		onCluster(c)
		c.AuthSecret, c.AdminToken = a.secret, a.admin
	})
	queues := []string{"north", "south", "east", "west"} // spread over the slots
	for _, q := range queues {
		if r := a.do("PUT", "/admin/v1/queues/"+q, a.adminAuth(), `{"paused":true}`); r.status != 200 {
			t.Fatalf("queue %s: %d %s", q, r.status, r.raw)
		}
		for i := range 5 {
			in := []*instance{a, b}[i%2]
			r := in.do("POST", "/api/v1/queues/"+q+"/entries", in.as(fmt.Sprintf("%s-%d", q, i)), nil)
			if r.status != 200 || r.num("position") != float64(i+1) {
				t.Fatalf("%s: enter %d: %d %s", q, i, r.status, r.raw)
			}
		}
		if r := b.do("GET", "/api/v1/queues/"+q+"/entries/me", b.as(q+"-2"), nil); r.num("position") != 3 || r.num("queueLength") != 5 {
			t.Fatalf("%s: status on the other instance: %s", q, r.raw)
		}
	}
	if r := b.do("GET", "/admin/v1/queues", b.adminAuth(), nil); r.status != 200 {
		t.Fatalf("listing queues: %d %s", r.status, r.raw)
	}
	a.do("PATCH", "/admin/v1/queues/north", a.adminAuth(), `{"paused":false}`)
	tok := b.waitReady("north", "north-0")
	if r := a.do("PUT", "/admin/v1/products/cluster-tee", a.adminAuth(), map[string]any{"name": "tee", "stock": 1, "queue": "north"}); r.status != 200 && r.status != 201 {
		t.Fatalf("product: %d %s", r.status, r.raw)
	}
	if r := a.do("POST", "/api/v1/orders", a.as("north-0"), map[string]any{"productId": "cluster-tee", "quantity": 1}, "X-Entry-Token", tok); r.status != 201 {
		t.Fatalf("order: %d %s", r.status, r.raw)
	}
	m := scrape(t, a)
	if m[`waitroom_store_up`] != 1 || m[`waitroom_queue_length{queue="south"}`] != 5 {
		t.Errorf("metrics on the cluster: store_up %v, south length %v", m[`waitroom_store_up`], m[`waitroom_queue_length{queue="south"}`])
	}
}

// TestSentinelFailover: on a primary with a replica watched by Sentinel
// (--redis-mode sentinel), killing the primary costs a few seconds of 503
// with Retry-After; then the same instance, with no restart, serves the line
// from the promoted replica, and the people who were waiting keep their
// places.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	s := testenv.StartRedisSentinel(t)
	in := boot(t, backend{name: "sentinel"}, func(c *app.Config) {
		c.RedisMode, c.RedisURL, c.KeyPrefix = app.RedisSentinel, s.URL, "wr:"
	})
	if r := in.do("PUT", "/admin/v1/queues/fo", in.adminAuth(), `{"paused":true}`); r.status != 200 {
		t.Fatalf("queue: %d %s", r.status, r.raw)
	}
	for i := range 10 {
		if r := in.do("POST", "/api/v1/queues/fo/entries", in.as(fmt.Sprintf("fo-%d", i)), nil); r.status != 200 {
			t.Fatalf("enter: %d %s", r.status, r.raw)
		}
	}
	// Replication is asynchronous: wait until the replica has it all, as
	// a failover without loss needs.
	s.WaitReplicated(t)

	s.Primary.Stop()
	began := time.Now()
	var saw503 bool
	for {
		r := in.do("GET", "/api/v1/queues/fo/entries/me", in.as("fo-4"), nil)
		if r.status == 200 {
			if r.num("position") != 5 || r.num("queueLength") != 10 {
				t.Fatalf("after the failover fo-4 stands at %s, want 5 of 10", r.raw)
			}
			break
		}
		if r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Fatalf("during the failover: %d %s (Retry-After %q), want 503 with Retry-After", r.status, r.raw, r.header.Get("Retry-After"))
		}
		saw503 = true
		if time.Since(began) > 30*time.Second {
			t.Fatal("no answer from the promoted replica after 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("served again %v after the primary died (503 meanwhile: %v)", time.Since(began).Round(10*time.Millisecond), saw503)
	if r := in.do("POST", "/api/v1/queues/fo/entries", in.as("fo-new"), nil); r.status != 200 || r.num("position") != 11 {
		t.Fatalf("entering after the failover: %d %s", r.status, r.raw)
	}
	in.do("PATCH", "/admin/v1/queues/fo", in.adminAuth(), `{"paused":false}`)
	in.waitReady("fo", "fo-0")
}
