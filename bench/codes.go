package bench

// The access codes' upload (issue 53): 100,000 codes in one POST
// /admin/v1/queues/{q}/codes, on Redis and on the embedded store, each in
// an instance process of its own (so its Go heap is the store's, not the
// harness's): the request's time, and what the codes take — on Redis the
// MEMORY USAGE of the keys the upload made and INFO used_memory around
// it, on both the instance's Go heap after a full collection.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/accesscode"
)

// CodesReport is the codes section.
type CodesReport struct {
	// Codes are posted in one request, Rounds times a store in each
	// format (JSON, CSV), each round into a queue of its own.
	Codes, Rounds int
	Stores        []CodesStore
}

// CodesStore is one store's rounds.
type CodesStore struct {
	Store  string // "redis" or "embedded"
	Rounds []CodesRound
	// Median is the median of the JSON rounds' request times, MedianCSV
	// of the CSV rounds'.
	Median, MedianCSV time.Duration
}

// CodesRound is one upload of Codes codes into a fresh queue.
type CodesRound struct {
	// Format is the upload's: "json" or "csv" (a CRM's export: a header
	// line, then code,lane,uses a line).
	Format string
	// Time is the request's, as the client saw it: the body's 2 MB sent,
	// the codes checked, hashed and stored, the answer read.
	Time time.Duration
	// The answer's counts.
	Added, Duplicates, Rejected int64
	// Redis: the keys the upload made (prefix and queue left out) and the
	// sum of their MEMORY USAGE (SAMPLES 0: every element), and INFO
	// used_memory before and after.
	Keys                  []string
	KeyBytes              int64
	UsedBefore, UsedAfter int64
	// The instance's Go heap after a full collection, before and after.
	HeapBefore, HeapAfter uint64
	// Load is the machine's 1-minute load average as the round began.
	Load float64
}

// The upload's size: the 100,000 in one request, three rounds of
// each format for a median.
const (
	codesCount  = 100_000
	codesRounds = 3
	codesLane   = "members"
)

func runCodes(ctx context.Context, o Options) (*CodesReport, error) {
	rep := &CodesReport{Codes: codesCount, Rounds: codesRounds}
	if o.Short {
		rep.Codes = 2000
	}
	for _, store := range []string{"redis", "embedded"} {
		s, err := codesStore(ctx, o, store, rep)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", store, err)
		}
		r := s.Rounds[0]
		o.logf("codes: %s: %d codes in %v as JSON, %v as CSV (medians of %d), %d added; keys %d bytes, used_memory +%d, heap +%d",
			store, rep.Codes, s.Median.Round(time.Millisecond), s.MedianCSV.Round(time.Millisecond), rep.Rounds, r.Added, r.KeyBytes,
			r.UsedAfter-r.UsedBefore, int64(r.HeapAfter)-int64(r.HeapBefore))
		rep.Stores = append(rep.Stores, s)
	}
	return rep, nil
}

// codesStore starts an instance on the store and uploads Codes codes into
// a fresh queue Rounds times.
func codesStore(ctx context.Context, o Options, store string, rep *CodesReport) (CodesStore, error) {
	s := CodesStore{Store: store}
	cfg := newInstanceConfig(o)
	var rdb *redis.Client
	if store == "redis" {
		var err error
		if rdb, err = newRedis(o.RedisURL); err != nil {
			return s, err
		}
		defer rdb.Close()
		defer dropPrefix(context.WithoutCancel(ctx), rdb, cfg.KeyPrefix)
	} else {
		dir, err := os.MkdirTemp("", "waitroom-bench-codes-")
		if err != nil {
			return s, err
		}
		defer os.RemoveAll(dir)
		cfg.RedisURL, cfg.DatabaseURL, cfg.Args = "", "", []string{"--data-dir", dir}
	}
	in, err := startInstance(ctx, cfg, &serverLog{tee: o.Log})
	if err != nil {
		return s, err
	}
	defer in.stop()
	hc := &http.Client{Timeout: 5 * time.Minute}
	c := &client{base: "http://" + in.Addr, admin: "Bearer " + cfg.AdminToken, poll: hc, order: hc}
	times := map[string][]time.Duration{}
	for _, format := range []string{"json", "csv"} {
		for range rep.Rounds {
			r, err := codesRound(ctx, c, in.heap, rdb, cfg.KeyPrefix, format, rep.Codes)
			if err != nil {
				return s, err
			}
			s.Rounds = append(s.Rounds, r)
			times[format] = append(times[format], r.Time)
		}
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	s.Median, s.MedianCSV = median(times["json"]), median(times["csv"])
	return s, nil
}

// codesRound makes a queue with a codes lane and posts n new codes into it
// in one request of the format ("json" or "csv"), measuring around the
// request only: the Go heap through heap (an instance's; nil: none), Redis
// through rdb (nil: none).
func codesRound(ctx context.Context, c *client, heap func(context.Context, bool) (HeapReport, error), rdb *redis.Client, prefix, format string, n int) (CodesRound, error) {
	r := CodesRound{Format: format}
	r.Load, _ = loadAverage()
	q := fmt.Sprintf("codes-%d", rand.IntN(1e9))
	st, body, _, err := c.do(ctx, c.poll, "PUT", "/admin/v1/queues/"+q, c.admin, map[string]any{
		"ratePerSecond": 10,
		"lanes": []map[string]any{
			{"name": codesLane, "codes": true, "share": 0.3},
			{"name": "public", "share": 0.7},
		},
	})
	if err != nil || st != http.StatusOK {
		return r, fmt.Errorf("creating queue: %d %v %v", st, body, err)
	}
	upload, contentType := codesUpload(format, n)
	var keysBefore map[string]bool
	if rdb != nil {
		if keysBefore, err = codesKeys(ctx, rdb, prefix); err != nil {
			return r, err
		}
		if r.UsedBefore, err = usedMemory(ctx, rdb); err != nil {
			return r, err
		}
	}
	if heap != nil {
		h, err := heap(ctx, true)
		if err != nil {
			return r, err
		}
		r.HeapBefore = h.HeapAlloc
	}
	st, body, r.Time, err = codesPost(ctx, c, q, contentType, upload)
	if err != nil || st != http.StatusOK {
		return r, fmt.Errorf("uploading %d codes: %d %v %v", n, st, codesBrief(body), err)
	}
	r.Added, r.Duplicates, r.Rejected = jsonInt(body["added"]), jsonInt(body["duplicates"]), jsonInt(body["rejected"])
	if r.Added != int64(n) {
		return r, fmt.Errorf("uploading %d new codes: %v", n, codesBrief(body))
	}
	if heap != nil {
		h, err := heap(ctx, true)
		if err != nil {
			return r, err
		}
		r.HeapAfter = h.HeapAlloc
	}
	if rdb != nil {
		if r.UsedAfter, err = usedMemory(ctx, rdb); err != nil {
			return r, err
		}
		if err := codesNewKeys(ctx, rdb, prefix, q, keysBefore, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// codesUpload is an upload of n new single-use codes in the format, and
// its Content-Type.
func codesUpload(format string, n int) ([]byte, string) {
	codes := make([]string, n)
	for i := range codes {
		codes[i] = accesscode.New()
	}
	if format == "csv" {
		var b bytes.Buffer
		b.WriteString("code,lane,uses\n")
		for _, code := range codes {
			fmt.Fprintf(&b, "%s,%s,1\n", code, codesLane)
		}
		return b.Bytes(), "text/csv"
	}
	b, _ := json.Marshal(map[string]any{"lane": codesLane, "uses": 1, "codes": codes}) // strings always marshal
	return b, "application/json"
}

// codesPost posts an upload already encoded (so the time is the request's
// alone: sent, answered, the answer read).
func codesPost(ctx context.Context, c *client, q, contentType string, upload []byte) (int, map[string]any, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+"/admin/v1/queues/"+q+"/codes", bytes.NewReader(upload))
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Authorization", c.admin)
	req.Header.Set("Content-Type", contentType)
	t0 := time.Now()
	res, err := c.poll.Do(req)
	if err != nil {
		return 0, nil, time.Since(t0), err
	}
	st, body, _ := readAnswer(res)
	return st, body, time.Since(t0), nil
}

// codesNewKeys sums the MEMORY USAGE of the queue's keys that the upload
// made, and names them without the prefix and with the queue as q. The
// queue's minute rollups are left out: written as a minute turns, not by
// the upload; other queues' keys too (an earlier round's rollups).
func codesNewKeys(ctx context.Context, rdb *redis.Client, prefix, q string, before map[string]bool, r *CodesRound) error {
	after, err := codesKeys(ctx, rdb, prefix)
	if err != nil {
		return err
	}
	var made []string
	for k := range after {
		if !before[k] && strings.Contains(k, "{"+q+"}") && !strings.Contains(k, ":minute:") {
			made = append(made, k)
		}
	}
	slices.Sort(made)
	pipe := rdb.Pipeline()
	usage := make([]*redis.IntCmd, len(made))
	for i, k := range made {
		usage[i] = pipe.MemoryUsage(ctx, k, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return fmt.Errorf("MEMORY USAGE: %w", err)
	}
	for i, k := range made {
		r.KeyBytes += usage[i].Val()
		if len(r.Keys) < 10 {
			r.Keys = append(r.Keys, strings.ReplaceAll(strings.TrimPrefix(k, prefix), q, "q"))
		}
	}
	if len(made) > 10 {
		r.Keys = append(r.Keys, fmt.Sprintf("… %d keys in all", len(made)))
	}
	return nil
}

// codesKeys is every key under prefix.
func codesKeys(ctx context.Context, rdb *redis.Client, prefix string) (map[string]bool, error) {
	keys := map[string]bool{}
	it := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for it.Next(ctx) {
		keys[it.Val()] = true
	}
	return keys, it.Err()
}

func jsonInt(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// codesBrief is an upload's answer without its long lists.
func codesBrief(body map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		if l, ok := v.([]any); ok && len(l) > 5 {
			v = fmt.Sprintf("[%d items]", len(l))
		}
		out[k] = v
	}
	return out
}
