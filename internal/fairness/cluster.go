package fairness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/testenv"
)

// clock is an instance's wall clock, which a fault steps.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *clock) step(d time.Duration) { c.offset.Add(int64(d)) }

// instance is one waitroom, booted in process on :0, reached by clients
// through front and reaching Redis through back.
type instance struct {
	n     int
	front *proxy
	back  *proxy // nil on the embedded line
	clock *clock

	mu   sync.Mutex
	main *app.Main
	// gone is closed once the last killed or drained waitroom has shut
	// down, so a restart never lets it reach Redis again.
	gone chan struct{}
	// down is when the instance became unreachable (killed: its front
	// refuses connections; drained: shut down), zero while it can be
	// reached. It is set once nothing sent can reach a waitroom any more
	// and cleared before anything can again, so a call that fails while
	// the instance was down from before it was sent reached none.
	down time.Time
}

func (in *instance) setDown(down bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.down = time.Time{}
	if down {
		in.down = time.Now()
	}
}

// downSince reports whether the instance has been down since t or earlier.
func (in *instance) downSince(t time.Time) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return !in.down.IsZero() && !in.down.After(t)
}

// cluster is the system under test: one Redis and three instances, or
// one instance on the embedded line.
type cluster struct {
	o      Options
	dir    string
	redis  *testenv.AOFRedis // nil: embedded
	rdb    *redis.Client     // straight to Redis, for reading what it kept
	secret string
	token  string // the admin token
	insts  []*instance
}

func bootCluster(ctx context.Context, o Options, embedded bool) (*cluster, error) {
	dir, err := os.MkdirTemp(o.Dir, "fairness-")
	if err != nil {
		return nil, err
	}
	c := &cluster{o: o, dir: dir, secret: fmt.Sprintf("fairness-%032x", rand.Uint64()),
		token: fmt.Sprintf("fairness-admin-%032x", rand.Uint64())}
	n := 1
	if !embedded {
		n = 3
		if c.redis, err = testenv.StartAOFRedis(ctx, dir); err != nil {
			return nil, err
		}
		c.rdb = redis.NewClient(&redis.Options{Addr: c.redis.Addr()})
	}
	for i := range n {
		in := &instance{n: i, clock: &clock{}}
		if !embedded {
			if in.back, err = newProxy(c.redis.Addr()); err != nil {
				c.close()
				return nil, err
			}
		}
		if in.front, err = newProxy("127.0.0.1:1"); err != nil {
			c.close()
			return nil, err
		}
		c.insts = append(c.insts, in)
		if err := c.startPatiently(ctx, in); err != nil {
			c.close()
			return nil, fmt.Errorf("instance %d: %w", i, err)
		}
	}
	return c, nil
}

// start boots the instance's waitroom and points its front at it.
func (c *cluster) start(ctx context.Context, in *instance) error {
	cfg, err := app.Parse(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		return err
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(c.dir, "data-"+strconv.Itoa(in.n))
	cfg.AuthSecret, cfg.AdminToken = c.secret, c.token
	cfg.DrainDelay = 0
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.StatusSnapshotAge = c.o.SnapshotAge
	cfg.LogLevel = "error"
	if in.back != nil {
		// A short read timeout, so that a stalled reply makes go-redis
		// send the command again within the history.
		cfg.RedisURL = "redis://" + in.back.addr() + "/0?read_timeout=" + redisReadTimeout.String()
		cfg.DatabaseURL = c.o.DatabaseURL
		cfg.DBPoolSize = 10
	}
	cfg.PaymentFailureRate = paymentBad
	m := &app.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(c.o.logWriter(), &slog.HandlerOptions{Level: slog.LevelError})),
		Stdout: io.Discard, Clock: in.clock.now}
	if err := m.Run(ctx); err != nil {
		return err
	}
	in.mu.Lock()
	in.main = m
	in.mu.Unlock()
	in.setDown(false)
	in.front.retarget(m.Addr())
	in.front.setDown(false)
	return nil
}

// redisReadTimeout is the instances' go-redis read timeout: a reply stalled
// longer than this is asked for again.
const redisReadTimeout = 300 * time.Millisecond

// kill makes the instance vanish at once, as kill -9 would for everyone
// else: its clients' connections are reset and its Redis connections cut,
// so nothing it does from then on reaches anyone; the process itself is
// shut down in the background.
func (c *cluster) kill(in *instance) {
	in.front.setDown(true)
	in.setDown(true)
	if in.back != nil {
		in.back.setDown(true)
	}
	c.stop(in, false)
}

// drain is SIGTERM: the instance stops admitting, fails readiness and
// finishes its requests in flight before closing (app.Main.Close).
func (c *cluster) drain(in *instance) {
	c.stop(in, true)
	<-in.gone
	in.setDown(true)
	in.front.setDown(true)
}

// stop closes the instance's waitroom, waiting for it when wait is set.
func (c *cluster) stop(in *instance, wait bool) {
	in.mu.Lock()
	m, prev := in.main, in.gone
	if m == nil { // stopped already
		in.mu.Unlock()
		if wait && prev != nil {
			<-prev
		}
		return
	}
	in.main = nil
	gone := make(chan struct{})
	in.gone = gone
	in.mu.Unlock()
	go func() {
		defer close(gone)
		m.Close()
	}()
	if wait {
		<-gone
	}
}

// restart boots a killed or drained instance again, once the last one has
// shut down.
func (c *cluster) restart(ctx context.Context, in *instance) error {
	in.mu.Lock()
	gone := in.gone
	in.mu.Unlock()
	if gone != nil {
		<-gone
	}
	if in.back != nil {
		in.back.setDown(false)
	}
	return c.startPatiently(ctx, in)
}

// startPatiently is start, tried again as a supervisor restarts a process
// whose start failed: the start's first PING gets the instances' short
// read timeout (300 ms), which a loaded machine's fresh connection can
// outlast (a full suite at load 21 met it on a restart, one at load 12 on
// the first start); Redis is up, so the next start reaches it.
func (c *cluster) startPatiently(ctx context.Context, in *instance) error {
	deadline := time.Now().Add(restartPatience)
	for {
		err := c.start(ctx, in)
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() || time.Now().After(deadline) {
			return err
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// restartPatience bounds how long startPatiently tries again a start that
// timed out reaching Redis.
const restartPatience = 10 * time.Second

func (c *cluster) close() {
	var wg sync.WaitGroup
	for _, in := range c.insts {
		in.front.setDown(true)
		wg.Go(func() { c.stop(in, true) })
	}
	wg.Wait()
	for _, in := range c.insts {
		in.front.close()
		if in.back != nil {
			in.back.close()
		}
	}
	if c.rdb != nil {
		c.rdb.Close()
	}
	if c.redis != nil {
		c.redis.Kill()
	}
	os.RemoveAll(c.dir)
}
