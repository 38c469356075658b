package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisServer is a private redis-server one test owns, so it can take it
// away and bring it back (outages, failovers) without touching anyone
// else's. It needs redis-server and redis-cli on PATH: missing, the test
// skips, or fails under CI (scripts/test.sh installs them).
type RedisServer struct {
	Port int
	t    testing.TB
	dir  string
	args []string
	cmd  *exec.Cmd
	// exited is closed once cmd has exited (launch waits for it).
	exited chan struct{}
}

// StartRedis starts a redis-server on a free loopback port, with extra
// arguments (config directives as --name value), stopped when the test ends.
// A port another process took between FreePort and the server's bind
// (tests run in parallel) is given up for another, up to three times.
func StartRedis(t testing.TB, extra ...string) *RedisServer {
	t.Helper()
	for try := 1; ; try++ {
		s := newRedis(t, FreePort(t), extra)
		if out, exited := s.launch(); exited && try < 3 {
			t.Logf("redis-server on port %d exited at once (%s); another port", s.Port, out)
			continue
		} else if exited {
			t.Fatalf("redis-server on port %d exited at once: %s", s.Port, out)
		}
		t.Cleanup(s.Stop)
		return s
	}
}

func newRedis(t testing.TB, port int, extra []string) *RedisServer {
	t.Helper()
	requireRedisBinaries(t)
	s := &RedisServer{Port: port, t: t, dir: t.TempDir()}
	s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir}, extra...)
	return s
}

func (s *RedisServer) start() {
	s.t.Helper()
	if out, exited := s.launch(); exited {
		s.t.Fatalf("redis-server on port %d exited at once: %s", s.Port, out)
	}
}

// launch starts the server and waits until it answers PING; should it
// exit first (a port taken, a bad argument), it says so with what the
// server wrote, rather than waiting for an answer that cannot come.
func (s *RedisServer) launch() (output string, exited bool) {
	s.t.Helper()
	log := filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", s.Port))
	f, err := os.Create(log)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	s.cmd = exec.Command("redis-server", s.args...)
	s.cmd.Stdout, s.cmd.Stderr = f, f
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	cmd, done := s.cmd, make(chan struct{})
	s.exited = done
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck // the exit is what is waited for
	// A bound for a hang, not a pace: a loaded machine (CI runs every
	// package at once) has taken over 10 s to start one.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-done:
			s.cmd = nil
			b, _ := os.ReadFile(log)
			return strings.TrimSpace(string(b)), true
		default:
		}
		if pong, _ := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "ping").Output(); strings.TrimSpace(string(pong)) == "PONG" {
			return "", false
		}
	}
	s.t.Fatalf("redis on port %d did not answer within 30 s", s.Port)
	return "", false
}

// Restart starts a stopped server again on its port, empty (nothing is
// persisted): as after a failover to a replica that lost everything. A
// cluster node keeps its identity and its AOF (StartRedisCluster).
func (s *RedisServer) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Addr is host:port.
func (s *RedisServer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }

// URL is a single-server redis:// URL.
func (s *RedisServer) URL() string { return "redis://" + s.Addr() + "/0" }

// Running reports whether the server has been started and not stopped.
func (s *RedisServer) Running() bool { return s.cmd != nil }

// Stop kills the server (as a crash would); stopping twice is fine.
func (s *RedisServer) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.exited
		s.cmd = nil
	}
}

// Cli runs redis-cli against the server and returns its output.
func (s *RedisServer) Cli(args ...string) string {
	s.t.Helper()
	return cli(s.t, append([]string{"-p", strconv.Itoa(s.Port)}, args...)...)
}

func cli(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("redis-cli", append([]string{"-h", "127.0.0.1"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func requireRedisBinaries(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			Missing(t, "%s on PATH (scripts/test.sh installs it)", bin)
		}
	}
}

// FreePort returns a loopback port nobody listens on now. For a cluster
// node the port ten thousand above (its bus) must be free too, so it only
// returns ports below 55000 whose bus port is free as well.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port >= 55000 {
			continue
		}
		if bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
			bus.Close()
			return port
		}
	}
	t.Fatal("no free loopback port")
	return 0
}

// RedisCluster is a Redis Cluster of private redis-servers one test owns.
// Its nodes keep an AOF (appendfsync everysec), so a node killed and
// started again comes back with what it had; and a node down takes only
// its own slots down (cluster-require-full-coverage no).
type RedisCluster struct {
	// URL is the go-redis cluster URL: one node as the host, the others
	// as addr= parameters.
	URL string
	// Nodes are every node; Primaries hold the slots at the start, and
	// ReplicaOf names each primary's replica (none without replicas).
	Nodes, Primaries []*RedisServer
	ReplicaOf        map[*RedisServer]*RedisServer
	t                testing.TB
}

// ClusterNodeTimeout is how long the nodes of a cluster with replicas wait
// before they call an unreachable node failing (cluster-node-timeout): its
// replica is promoted a second or two after.
const ClusterNodeTimeout = time.Second

// noFailoverNodeTimeout is the cluster-node-timeout of a cluster without
// replicas (Redis's default), where calling a node failing promotes
// nobody: with a second, a node starved of the CPU for one on a busy
// machine took the others for failing, called itself in the minority, and
// answered CLUSTERDOWN (TestConformanceOnCluster, beside a busy loop).
const noFailoverNodeTimeout = 15 * time.Second

// StartRedisCluster starts a Redis Cluster of primaries primaries, each
// with replicas replicas, and waits until every node agrees it is ok and
// every replica has synced.
func StartRedisCluster(t testing.TB, primaries, replicas int) *RedisCluster {
	t.Helper()
	c := &RedisCluster{t: t, ReplicaOf: map[*RedisServer]*RedisServer{}}
	var addrs []string
	timeout := ClusterNodeTimeout
	if replicas == 0 {
		timeout = noFailoverNodeTimeout
	}
	for range primaries * (1 + replicas) {
		// Each node's nodes.conf and AOF land in its own --dir.
		s := StartRedis(t, "--cluster-enabled", "yes",
			"--cluster-node-timeout", strconv.Itoa(int(timeout/time.Millisecond)),
			"--cluster-require-full-coverage", "no", "--appendonly", "yes", "--appendfsync", "everysec",
			"--repl-diskless-sync-delay", "0")
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr())
	}
	cli(t, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")...)
	for _, s := range c.Nodes {
		for i := 0; !strings.Contains(s.Cli("cluster", "info"), "cluster_state:ok"); i++ {
			if i == 200 {
				t.Fatalf("cluster node %s never reached cluster_state:ok", s.Addr())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Which node redis-cli made a primary, and whose replica each other is.
	byID := map[string]*RedisServer{}
	masterOf := map[*RedisServer]string{}
	for _, s := range c.Nodes {
		me := s.myself()
		byID[me.id] = s
		if me.master == "-" {
			c.Primaries = append(c.Primaries, s)
		} else {
			masterOf[s] = me.master
		}
	}
	for replica, id := range masterOf {
		c.ReplicaOf[byID[id]] = replica
		for i := 0; !strings.Contains(replica.Cli("info", "replication"), "master_link_status:up"); i++ {
			if i == 400 {
				t.Fatalf("replica %s never synced with its primary", replica.Addr())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(c.Primaries) != primaries {
		t.Fatalf("the cluster has %d primaries, want %d", len(c.Primaries), primaries)
	}
	c.URL = "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		c.URL += sep + "addr=" + a
	}
	return c
}

// PrimaryOf is the node serving key's slot now, as that node itself says
// (after a failover, the promoted replica); nil when no running node
// claims it.
func (c *RedisCluster) PrimaryOf(key string) *RedisServer {
	c.t.Helper()
	slot, err := strconv.Atoi(c.live().Cli("cluster", "keyslot", key))
	if err != nil {
		c.t.Fatalf("cluster keyslot %s: %v", key, err)
	}
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		if me := s.myself(); me.master == "-" && me.serves(slot) {
			return s
		}
	}
	return nil
}

// live is a running node.
func (c *RedisCluster) live() *RedisServer {
	for _, s := range c.Nodes {
		if s.Running() {
			return s
		}
	}
	c.t.Fatal("no node of the cluster is running")
	return nil
}

// clusterNode is a node's own line of CLUSTER NODES.
type clusterNode struct {
	id, master string // master: "-" for a primary
	slots      [][2]int
}

func (n clusterNode) serves(slot int) bool {
	for _, r := range n.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// myself reads the node's own line of CLUSTER NODES: "<id> <addr> <flags>
// <master> <ping> <pong> <epoch> <link> <slot ranges…>".
func (s *RedisServer) myself() clusterNode {
	s.t.Helper()
	for line := range strings.SplitSeq(s.Cli("cluster", "nodes"), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "myself") {
			continue
		}
		n := clusterNode{id: f[0], master: f[3]}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, _ := strconv.Atoi(lo)
			b, _ := strconv.Atoi(hi)
			n.slots = append(n.slots, [2]int{a, b})
		}
		return n
	}
	s.t.Fatalf("%s: no myself line in CLUSTER NODES", s.Addr())
	return clusterNode{}
}

// SentinelSetup is a primary, one replica and one sentinel watching them
// under the name SentinelMaster, quick to call the primary down (1 s).
type SentinelSetup struct {
	Primary, Replica, Sentinel *RedisServer
	// URL is the go-redis failover URL: the sentinel and the master name.
	URL string
}

// SentinelMaster is the primary's name in StartRedisSentinel's setup.
const SentinelMaster = "wrprimary"

// WaitReplicated waits until the replica has received everything the
// primary has written so far. (WAIT would not do: it counts only the writes
// of the connection that calls it.)
func (s *SentinelSetup) WaitReplicated(t testing.TB) {
	t.Helper()
	want := replicationField(s.Primary.Cli("info", "replication"), "master_repl_offset")
	for i := 0; replicationField(s.Replica.Cli("info", "replication"), "slave_repl_offset") < want; i++ {
		if i == 400 {
			t.Fatalf("the replica did not reach the primary's offset %d", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func replicationField(info, field string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// StartRedisSentinel starts a SentinelSetup and waits until the sentinel
// knows the replica, so a failover can happen.
func StartRedisSentinel(t testing.TB) *SentinelSetup {
	t.Helper()
	// Redis waits 5 s by default before a replica's first sync, for more
	// replicas to join it; here there is one.
	primary := StartRedis(t, "--repl-diskless-sync-delay", "0")
	replica := StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	for i := 0; !strings.Contains(replica.Cli("info", "replication"), "master_link_status:up"); i++ {
		if i == 400 {
			t.Fatal("the replica never synced with the primary")
		}
		time.Sleep(50 * time.Millisecond)
	}
	port := FreePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	err := os.WriteFile(conf, []byte(fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
sentinel monitor %s 127.0.0.1 %d 1
sentinel down-after-milliseconds %s 1000
sentinel failover-timeout %s 5000
`, port, dir, SentinelMaster, primary.Port, SentinelMaster, SentinelMaster)), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	sentinel := &RedisServer{Port: port, t: t, dir: dir, args: []string{conf, "--sentinel"}}
	sentinel.start()
	t.Cleanup(sentinel.Stop)
	for i := 0; !strings.Contains(sentinel.Cli("sentinel", "replicas", SentinelMaster), strconv.Itoa(replica.Port)); i++ {
		if i == 400 {
			t.Fatal("the sentinel never saw the replica")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &SentinelSetup{Primary: primary, Replica: replica, Sentinel: sentinel,
		URL: fmt.Sprintf("redis://%s?master_name=%s", sentinel.Addr(), SentinelMaster)}
}
