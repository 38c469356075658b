package testenv

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// AOFRedis is a redis-server a long run owns outside any test (the chaos
// run, the fairness check): with an AOF fsynced every second
// (appendfsync everysec, as docs/operations.md recommends), so that a
// kill -9 loses at most about the last second of writes, and started again
// from it on the same port.
type AOFRedis struct {
	Port int
	dir  string
	cmd  *exec.Cmd
}

// StartAOFRedis starts one on a free loopback port, its files in dir.
func StartAOFRedis(ctx context.Context, dir string) (*AOFRedis, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &AOFRedis{Port: port, dir: dir}
	return r, r.Start(ctx)
}

// Addr is host:port.
func (r *AOFRedis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// Start starts the server (again, after Kill) and waits until it answers,
// its AOF replayed.
func (r *AOFRedis) Start(ctx context.Context) error {
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--dir", r.dir, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
		"--logfile", filepath.Join(r.dir, "redis.log"))
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("redis-server: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c.Ping(ctx).Err() == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("redis on %s did not answer within 30 s", r.Addr())
		}
	}
}

// Kill is kill -9; killing a stopped server is fine.
func (r *AOFRedis) Kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}
