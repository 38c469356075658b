package bench

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testenv"
)

// FailoverLongEnv asks TestClusterFailover for the long run (bench/run.sh
// --chaos) instead of the test command's short one; FailoverReportEnv
// names a file for its report, as Markdown.
const (
	FailoverLongEnv   = "WAITROOM_FAILOVER_LONG"
	FailoverReportEnv = "WAITROOM_FAILOVER_REPORT"
)

// TestClusterFailover runs the failover run on a Redis Cluster of three
// primaries, each with a replica (six redis-servers the test starts): a
// primary killed is replaced by its replica within seconds, losing at most
// the places acknowledged in the last moments before the kill; the
// promoted primary killed in turn (no replica left) takes its queues down
// until it is back, with every place; the other primaries' queues answer
// 200 throughout and /readyz stays 200.
func TestClusterFailover(t *testing.T) {
	c := testenv.StartRedisCluster(t, 3, 1)
	long := os.Getenv(FailoverLongEnv) != ""
	o := FailoverOptions{Cluster: testCluster{c}, Dir: t.TempDir(), Short: !long}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := RunFailover(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	command := "scripts/test.sh -run TestClusterFailover ./bench/"
	if long {
		command = "bench/run.sh --chaos"
	}
	md := rep.Markdown(command)
	t.Log("\n" + md)
	if path := os.Getenv(FailoverReportEnv); path != "" {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if len(rep.Faults) != 2 {
		t.Fatalf("%d faults, want 2", len(rep.Faults))
	}
	promoted, alone := rep.Faults[0], rep.Faults[1]
	// The replica took over, the node staying dead: RunFailover waited for
	// Redis to promote it and for the queues to answer 200 again (a
	// deadline of its own, and an error past it). How soon is a figure,
	// in the report.
	if !promoted.Replica {
		t.Errorf("the first fault's queues were served again by the node itself, not its replica: %+v", promoted)
	}
	// No replica: its queues waited for the node, answering 503 meanwhile.
	if alone.ServedAgain < alone.Down || alone.Answers.ByStatus[http.StatusServiceUnavailable] == 0 {
		t.Errorf("the primary with no replica: served again after %v, down %v, answers %v", alone.ServedAgain, alone.Down, alone.Answers.ByStatus)
	}
	if alone.Lost > 0 && alone.LostWithin > failoverWindow {
		t.Errorf("the AOF lost a place acknowledged %v before the kill", alone.LostWithin)
	}
	if rep.Others.ByStatus[http.StatusOK] == 0 {
		t.Error("the other primaries' queues were never asked")
	}
}

// testCluster is a testenv.RedisCluster as the failover run sees it.
type testCluster struct{ c *testenv.RedisCluster }

func (tc testCluster) URL() string { return tc.c.URL }

func (tc testCluster) PrimaryOf(key string) string {
	if s := tc.c.PrimaryOf(key); s != nil {
		return s.Addr()
	}
	return ""
}

func (tc testCluster) Kill(node string)  { tc.node(node).Stop() }
func (tc testCluster) Start(node string) { tc.node(node).Restart() }

func (tc testCluster) node(addr string) *testenv.RedisServer {
	for _, s := range tc.c.Nodes {
		if s.Addr() == addr {
			return s
		}
	}
	panic("no node " + addr)
}
