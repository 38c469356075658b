package app

// The line's store and what guards and watches it (openLine).

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/breaker"
	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/queue/watch"
)

// openLine opens the line's store — in this process, or on Redis behind an
// auto-pipeline when calls are concurrent (they share round trips: the HTTP
// layer's wait on Redis, not Redis, is the ceiling, docs/benchmarks.md;
// redisstore.PipelineWhenBusy) — checks
// Redis's eviction policy, and makes sure the default queue exists.
func (m *Main) openLine(ctx context.Context) (l *line, err error) {
	c := m.Config
	l = &line{}
	if c.Embedded() {
		if err := m.openEmbedded(l); err != nil {
			return l, err
		}
	} else {
		rdb, where, err := openRedis(ctx, c.RedisMode, c.RedisURL, m.Logger)
		if err != nil {
			return l, err
		}
		l.redis = rdb
		m.Logger.Info("redis connected", "mode", c.RedisMode, "at", where)
		ap, err := rdb.AutoPipeline()
		if err != nil {
			return l, fmt.Errorf("redis auto-pipeline: %w", err)
		}
		direct := redisstore.New(rdb, c.KeyPrefix)
		l.store, l.loopStore, l.readyStore = redisstore.New(redisstore.PipelineWhenBusy(rdb, ap), c.KeyPrefix), direct, direct
		l.eviction = &evictionCheck{rdb: rdb}
		if problem := l.eviction.Problem(ctx); problem != "" {
			if c.RedisStrictEviction {
				return l, fmt.Errorf("--redis-strict-eviction: %s", problem)
			}
			m.Logger.Error(problem + " (refused with --redis-strict-eviction)")
		}
		// Not a reason to stop: a Cluster node that does not answer now
		// leaves its queues' counters where they were, and a restart folds them.
		switch n, err := direct.Upgrade(ctx); {
		case err != nil:
			m.Logger.Error("bringing Redis's keys to this version's layout (docs/operations.md#upgrading)", "err", err)
		case n > 0:
			m.Logger.Info("redis layout upgraded", "queues", n, "see", "docs/operations.md#upgrading")
		}
	}
	l.store, l.loopStore = withHistoryBug(l.store), withHistoryBug(l.loopStore)
	m.guardStore(l)
	// The line's signals, one value both halves of the loop are made on:
	// the service tells who joined, which wakes the admitter; the admitter
	// tells what each tick moved or read, which the service's snapshots
	// and held requests hear, and so do the sale's metrics (guardCalls).
	l.signals = signals.New()
	m.Queue = queue.NewService(l.store, c.StatusSnapshotAge, l.signals)
	l.operate = operate.New(l.store, l.signals)
	m.keepAudit(l)
	l.admitter = admission.NewAdmitter(l.loopStore, m.Logger, l.signals, m.ensureDefaultQueue)
	l.admitter.Drawer = drawer(c)
	m.watchHealth(l)
	switch _, err := l.operate.EnsureQueue(ctx, queue.DefaultQueue, m.settings.newQueues); {
	case errors.Is(err, queue.ErrUnavailable):
		// Redis answered openRedis, so this is a Redis Cluster whose node
		// holding the default queue is down: serve the other queues; the
		// admission loop creates the default queue once it is back.
		m.Logger.Warn("the default queue's store does not answer; serving the other queues meanwhile", "err", err)
	case err != nil:
		return l, fmt.Errorf("creating the default queue: %w", err)
	}
	l.health.Check(ctx) // readiness has an answer from the first probe on
	return l, nil
}

// openEmbedded opens the line kept in the data dir (memstore.Open): what
// the last run left is loaded, and the log says what was found and what a
// crash could have cost.
func (m *Main) openEmbedded(l *line) error {
	c := m.Config
	policy, _ := journal.ParsePolicy(c.EmbeddedFsync) // validated already
	dir := filepath.Join(c.DataDir, LineDir)
	s, rec, err := memstore.Open(dir, memstore.Options{Fsync: policy, Now: m.Clock, Logger: m.Logger})
	if err != nil {
		return fmt.Errorf("--data-dir: the embedded line: %w", err)
	}
	l.embedded, l.store, l.loopStore, l.readyStore = s, s, s, s
	m.Logger.Info(rec.Summary(policy), "dir", dir, "fsync", policy, "queues", rec.Queues, "places", rec.Places,
		"tokens", rec.Tokens, "snapshot", rec.Snapshot, "records", rec.Records, "torn_bytes", rec.Torn,
		"down", rec.Down, "took", rec.Took)
	return nil
}

// guardStore puts the line's store behind a breaker per queue, so that
// while a queue's store does not answer its protected requests are decided
// at once (--on-store-error), not each after the store's timeout; the
// breaker asks the readiness client, never queued behind the requests'
// auto-pipeline.
func (m *Main) guardStore(l *line) {
	l.breaker = breaker.New(breaker.Options{Logger: m.Logger, OnChange: m.breakerChanged, Probe: func(ctx context.Context, q string) error {
		_, err := l.readyStore.Config(ctx, q)
		return err
	}})
	mode, _ := degraded.ParseMode(m.Config.OnStoreError) // validated already
	// Under wait the API's calls still ask the store each (what it answers
	// stays exactly today's); the gateway refuses protected routes at once
	// itself (degraded.Policy.RefuseNow).
	l.store = breaker.Guard(l.store, l.breaker, mode == degraded.Admit)
	l.loopStore = breaker.Guard(l.loopStore, l.breaker, mode == degraded.Admit)
	l.degraded = degraded.New(mode, l.breaker, []byte(m.Config.AuthSecret), m.settings.newQueues.TokenTTL, nil)
}

// drawer is what the openings are drawn with: the participants' key,
// derived from --auth-secret under its own label (every instance shows a
// person the same id, and the secret itself signs nothing here), and the
// --draw-beacon, if any.
func drawer(c Config) admission.Drawer {
	d := admission.Drawer{Participants: participants(c)}
	if c.DrawBeacon != "" {
		d.Beacon = draw.NewDrand(c.DrawBeacon, &http.Client{Timeout: beaconTimeout})
	}
	return d
}

// beaconTimeout bounds one request to the beacon: the admitter asks again
// at its next pass, and an opening waits for its round anyway.
const beaconTimeout = 5 * time.Second

// participants gives each person their id in the draws, the same on
// every instance: its key is HMAC-SHA256(--auth-secret, its own label),
// so the salts a person is shown say nothing of the secret.
func participants(c Config) draw.Participants {
	h := hmac.New(sha256.New, []byte(c.AuthSecret))
	h.Write([]byte("waitroom draw participants"))
	return draw.NewParticipants(h.Sum(nil))
}

// LineDir is the directory in --data-dir that keeps the embedded line.
const LineDir = "line"

// watchHealth sets up the check of the line's store, queue by queue, that
// readiness, the metrics and the 503s of a queue whose store is away read.
func (m *Main) watchHealth(l *line) {
	l.health = watch.NewHealthCheck(l.operate, l.readyStore, m.Logger)
	if l.redis != nil {
		l.health.Reach = reachAny(l.redis)
	}
	if cluster, ok := l.redis.(*redis.ClusterClient); ok {
		// go-redis learns a new map of the slots when a node answers MOVED,
		// or once a minute; a dead primary answers nothing. While queues
		// are down, ask again every check: a promoted replica serves them
		// within a second of its promotion, not up to a minute later.
		l.health.OnDown = func(ctx context.Context, _ []string) { cluster.ReloadState(ctx) }
	}
}

// ensureDefaultQueue creates the default queue again if it went: Redis
// that lost its data (a restart without AOF, FLUSHALL, a failover to an
// empty replica) lost the default queue too, and every request would
// answer 404 until someone created it again. The admitter runs it at
// every discovery.
func (m *Main) ensureDefaultQueue(ctx context.Context) {
	if created, err := m.line.operate.EnsureQueue(ctx, queue.DefaultQueue, m.settings.newQueues); created && err == nil {
		m.Logger.Error("the default queue was missing from the store (did Redis lose its data?): created again with the configured defaults; " +
			"everyone who was in line must enter again")
	}
}
