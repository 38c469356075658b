package app_test

import (
	"fmt"
	"slices"
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
	url := testenv.StartRedisCluster(t, 3, 0).URL
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
		if time.Since(began) > patience {
			t.Fatalf("no answer from the promoted replica after %v", patience)
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

// queuesByNode names queues (prefix0, prefix1, …) until each node of the
// cluster holds at least want of them, keyed "wr:" as the instances are.
func queuesByNode(t *testing.T, c *testenv.RedisCluster, prefix string, want int) map[*testenv.RedisServer][]string {
	t.Helper()
	held := map[*testenv.RedisServer][]string{}
	for i := 0; ; i++ {
		full := len(held) == len(c.Primaries)
		for _, qs := range held {
			full = full && len(qs) >= want
		}
		if full {
			return held
		}
		if i == 1000 {
			t.Fatalf("1000 names and still not %d queues on each of %d nodes", want, len(c.Primaries))
		}
		q := fmt.Sprintf("%s%d", prefix, i)
		node := c.PrimaryOf("wr:{" + q + "}:cfg")
		if len(held[node]) < want {
			held[node] = append(held[node], q)
		}
	}
}

// TestClusterNodeDown: on a three-node Redis Cluster without replicas, one
// node killed takes down only the queues whose slots it holds. Those answer
// 503 + Retry-After; the queues on the other two keep answering 200 and
// admitting; /readyz stays 200 and lists the degraded queues (and
// waitroom_store_queue_up says the same), while /readyz?strict=1 answers
// 503. The node killed is the one holding the list of queues, which the
// loops then remember. Started again from its AOF, it serves its queues
// again with everyone's place.
func TestClusterNodeDown(t *testing.T) {
	t.Parallel()
	c := testenv.StartRedisCluster(t, 3, 0)
	in := boot(t, backend{name: "cluster"}, func(cfg *app.Config) {
		cfg.RedisMode, cfg.RedisURL, cfg.KeyPrefix = app.RedisCluster, c.URL, "wr:"
	})
	victim := c.PrimaryOf("wr:queues") // the list of queues lives there
	byNode := queuesByNode(t, c, "nd", 2)
	var dead, live []string
	for node, qs := range byNode {
		if node == victim {
			dead = append(dead, qs...)
		} else {
			live = append(live, qs...)
		}
	}
	for _, q := range append(slices.Clone(dead), live...) {
		// Two a second: the line lasts the whole test.
		if r := in.do("PUT", "/admin/v1/queues/"+q, in.adminAuth(), `{"ratePerSecond":2,"batchSize":1,"intervalMs":500}`); r.status != 200 {
			t.Fatalf("queue %s: %d %s", q, r.status, r.raw)
		}
		for i := range 40 {
			if r := in.do("POST", "/api/v1/queues/"+q+"/entries", in.as(fmt.Sprintf("%s-%d", q, i)), nil); r.status != 200 {
				t.Fatalf("%s: enter %d: %d %s", q, i, r.status, r.raw)
			}
		}
	}
	// The instance knows every queue (it lists them every second) before
	// the list's node goes.
	for deadline := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
		m, known := scrape(t, in), true
		for _, q := range append(slices.Clone(dead), live...) {
			known = known && m[`waitroom_store_queue_up{queue="`+q+`"}`] == 1
		}
		if known {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the health check never checked every queue")
		}
	}
	degraded := slices.Clone(dead) // what readyz should list
	if c.PrimaryOf("wr:{default}:cfg") == victim {
		degraded = append(degraded, "default")
	}
	slices.Sort(degraded)

	victim.Stop()
	killed := time.Now()
	r := in.waitReadiness("/readyz", "the dead node's queues listed", func(r readiness) bool {
		return r.store == "degraded" && slices.Equal(r.degraded, degraded)
	})
	t.Logf("readyz %v after the kill: %s", time.Since(killed).Round(time.Millisecond), r.raw)

	admitted := map[string]float64{}
	for _, q := range live {
		began := time.Now()
		if r := in.do("POST", "/api/v1/queues/"+q+"/entries", in.as(q+"-late"), nil); r.status != 200 {
			t.Errorf("enter %s (a live node's) with a node down: %d %s", q, r.status, r.raw)
		}
		if r := in.do("GET", "/api/v1/queues/"+q+"/entries/me", in.as(q+"-39"), nil); r.status != 200 || r.str("status") != "WAITING" {
			t.Errorf("status in %s (a live node's): %d %s", q, r.status, r.raw)
		}
		t.Logf("%s (live node): enter and status answered in %v", q, time.Since(began).Round(time.Millisecond))
		admitted[q] = in.do("GET", "/admin/v1/queues/"+q, in.adminAuth(), nil).num("admittedTotal")
	}
	for _, q := range dead {
		began := time.Now()
		for _, call := range []struct{ method, path string }{{"POST", "/entries"}, {"GET", "/entries/me"}} {
			r := in.do(call.method, "/api/v1/queues/"+q+call.path, in.as(q+"-39"), nil)
			if r.status != 503 || r.header.Get("Retry-After") == "" {
				t.Errorf("%s %s on the dead node: %d (Retry-After %q) %s, want 503 with Retry-After", call.method, q+call.path, r.status, r.header.Get("Retry-After"), r.raw)
			}
		}
		t.Logf("%s (dead node): enter and status answered 503 in %v", q, time.Since(began).Round(time.Millisecond))
	}
	if r := in.readiness("/readyz?strict=1"); r.status != 503 || r.errorCode() != "not_ready" {
		t.Errorf("readyz?strict=1 with a node down: %d %s, want 503 not_ready", r.status, r.raw)
	}
	m := scrape(t, in)
	if m["waitroom_store_up"] != 1 {
		t.Errorf("waitroom_store_up with one node of three down: %v, want 1", m["waitroom_store_up"])
	}
	for _, q := range dead {
		if v := m[`waitroom_store_queue_up{queue="`+q+`"}`]; v != 0 {
			t.Errorf("waitroom_store_queue_up of %s (dead node): %v, want 0", q, v)
		}
	}
	for _, q := range live {
		if v := m[`waitroom_store_queue_up{queue="`+q+`"}`]; v != 1 {
			t.Errorf("waitroom_store_queue_up of %s (live node): %v, want 1", q, v)
		}
	}
	// Admission goes on where it can: every live queue lets someone in
	// (within a few of its half-second ticks on a quiet machine).
	deadline := time.Now().Add(patience)
	for _, q := range live {
		for in.do("GET", "/admin/v1/queues/"+q, in.adminAuth(), nil).num("admittedTotal") <= admitted[q] {
			if time.Now().After(deadline) {
				t.Fatalf("%s (live node) admitted nobody in %v with another node down", q, patience)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	victim.Restart()
	in.waitReadiness("/readyz", `store "up" again`, func(r readiness) bool { return r.store == "up" })
	for _, q := range dead {
		r := in.do("GET", "/api/v1/queues/"+q+"/entries/me", in.as(q+"-39"), nil)
		if r.status != 200 || (r.str("status") != "WAITING" && r.str("status") != "READY") {
			t.Errorf("%s-39 after its node came back: %d %s, want their place", q, r.status, r.raw)
		}
	}
	if r := in.readiness("/readyz?strict=1"); r.status != 200 {
		t.Errorf("readyz?strict=1 with the node back: %d %s", r.status, r.raw)
	}
}
