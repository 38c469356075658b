package fairness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// Options say what a run records and where.
type Options struct {
	// Dir holds Redis's files and the instances' data (a temp dir).
	Dir string
	// DatabaseURL is the PostgreSQL the three instances on Redis share.
	DatabaseURL string
	// Out is where a failing history's visualisation is written (Dir
	// when empty).
	Out string
	// SnapshotAge is the instances' --status-snapshot-age (100ms when 0).
	SnapshotAge time.Duration
	// Duration is each history's length (4s when 0).
	Duration time.Duration
	// Histories is how many histories each kind records.
	Histories int
	// Kinds names the kinds to record (Kinds when empty).
	Kinds []string
	// Timeout bounds the check of one history (60s when 0).
	Timeout time.Duration
	// StopAtFirst ends a kind at its first history that fails the check.
	StopAtFirst bool
	Log         io.Writer
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

func (o Options) logWriter() io.Writer {
	if o.Log == nil {
		return io.Discard
	}
	return o.Log
}

func (o *Options) defaults() {
	if o.SnapshotAge == 0 {
		o.SnapshotAge = 100 * time.Millisecond
	}
	if o.Duration == 0 {
		o.Duration = 4 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	if o.Out == "" {
		o.Out = o.Dir
	}
	if len(o.Kinds) == 0 {
		o.Kinds = Kinds
	}
}

// Kinds are the faults a run injects, one kind per set of histories.
// "embedded" is the in-process line with one instance (its clock stepped);
// every other kind runs three instances on one Redis. "no-show" injects no
// fault: its queues skip no-shows (abandonAfterSeconds), and its users now
// and then stop polling for longer than that.
var Kinds = []string{"none", "embedded", "network", "instance-kill", "drain", "clock", "redis-kill", "mixed", "no-show"}

// The no-show histories: abandonAfterSeconds cannot go below 15 s, and
// admit.lua judges a user only once they have been near the front that
// long (its checkpoints, every half of it), so a no-show history lasts
// NoShowLength, at a rate slow enough for users to wait that long, and
// NoShowAtOnce of them are recorded at a time.
const (
	noShowAbandon = 15 * time.Second
	NoShowLength  = 40 * time.Second
	noShowRate    = 0.25
	NoShowAtOnce  = 5
)

// length is how long a history of kind runs.
func (o Options) length(kind string) time.Duration {
	if kind == "no-show" {
		return max(o.Duration, NoShowLength)
	}
	return o.Duration
}

// the line a history records: three queues, the first with an opening
// shortly after the start (four users, so the model's orders of it stay
// few), the others open from the start, the last with two lanes
// (historyLanes): laneMembers of its eight users are members by their
// token's claim, the others the public.
var queueUsers = []int{4, 6, 8}

// historyLanes give the members, the fewer, the larger share: the lanes
// of a correct line then both have people waiting much of the time, and a
// line that served them by the order of arrival, or by other shares, lets
// the public in well beyond its share (sharesHeld).
var historyLanes = lane.List{{Name: "members", Claim: "tier=member", Share: 0.8}, {Name: lane.Public, Share: 0.2}}

const laneMembers = 3

const (
	queueRate  = 8    // admitted users per second per queue
	stock      = 1000 // per queue's product: more than a history buys, as the model knows no sold-out line (the stores' suite and the API's tests hold it)
	paymentBad = 0.2  // share of payments the fake payment declines
)

// Report is what a run recorded and found, per kind of fault.
type Report struct {
	Kinds []KindReport
	Took  time.Duration
}

// KindReport sums up the histories of one kind.
type KindReport struct {
	Kind                   string
	Histories, Operations  int
	Faults                 int
	Linearizable, Unknowns int
	PlacesLost             int
	NoShows                int
	// LaneAdmissions: Verdict's, summed.
	LaneAdmissions int
	// Failures describe the histories that broke a promise, each with
	// the path of its visualisation.
	Failures []string
	// FirstFailure is the 1-based number of the first failing history (0:
	// none failed).
	FirstFailure int
	// Took is the kind's whole time; Checking, the part spent checking
	// its histories (Porcupine and the promises beside the model).
	Took, Checking time.Duration
}

// Line is the run's summary for one kind.
func (k KindReport) Line() string {
	undecided, noShows, lanes := "", "", ""
	if k.Unknowns > 0 {
		undecided = fmt.Sprintf(" (%d not decided in time)", k.Unknowns)
	}
	if k.NoShows > 0 {
		noShows = fmt.Sprintf(", no-shows let go %d", k.NoShows)
	}
	if k.LaneAdmissions > 0 {
		lanes = fmt.Sprintf(", admissions checked against the lanes' shares %d", k.LaneAdmissions)
	}
	return fmt.Sprintf("%s: histories %d, operations %d, faults injected %d, linearizable: %d/%d%s, places lost %d%s%s (%v, checking %v)",
		k.Kind, k.Histories, k.Operations, k.Faults, k.Linearizable, k.Histories, undecided, k.PlacesLost, noShows, lanes,
		k.Took.Round(time.Second), k.Checking.Round(time.Millisecond))
}

// Totals is the run's summary line over every kind.
func (r *Report) Totals() string {
	var t KindReport
	for _, k := range r.Kinds {
		t.Histories += k.Histories
		t.Operations += k.Operations
		t.Faults += k.Faults
		t.Linearizable += k.Linearizable
	}
	return fmt.Sprintf("histories %d, operations %d, faults injected %d, linearizable: %d/%d",
		t.Histories, t.Operations, t.Faults, t.Linearizable, t.Histories)
}

// Markdown is the report as the table in docs/operations.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("| fault | histories | operations | faults injected | linearizable | anomalies | places lost | check time |\n" +
		"|---|---|---|---|---|---|---|---|\n")
	for _, k := range r.Kinds {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d/%d | %d | %d | %v |\n", kindTitles[k.Kind], k.Histories, k.Operations, k.Faults,
			k.Linearizable, k.Histories, k.Histories-k.Linearizable, k.PlacesLost, k.Checking.Round(time.Millisecond))
	}
	return b.String()
}

var kindTitles = map[string]string{
	"none":          "none (3 instances, one Redis)",
	"embedded":      "embedded line, one instance, its clock stepped ±",
	"network":       "Redis traffic delayed, stalled past the read timeout (go-redis re-sends), cut",
	"instance-kill": "an instance killed and started again",
	"drain":         "an instance drained (SIGTERM) and started again",
	"clock":         "one instance's clock stepped +45 s, another's −90 s",
	"redis-kill":    "Redis kill -9, restarted from its AOF (everysec)",
	"mixed":         "three of the above at random",
	"no-show":       "no fault; no-shows skipped after 15 s (abandonAfterSeconds), users away 16–23 s now and then",
}

// Run records and checks o.Histories histories of each kind, one system
// booted per kind, and reports.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	began := time.Now()
	rep := &Report{}
	for _, kind := range o.Kinds {
		k, err := runKind(ctx, o, kind)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", kind, err)
		}
		rep.Kinds = append(rep.Kinds, k)
		o.logf("%s", k.Line())
	}
	rep.Took = time.Since(began)
	return rep, nil
}

func runKind(ctx context.Context, o Options, kind string) (KindReport, error) {
	k := KindReport{Kind: kind}
	began := time.Now()
	defer func() { k.Took = time.Since(began) }()
	c, err := bootCluster(ctx, o, kind == "embedded")
	if err != nil {
		return k, err
	}
	defer c.close()
	atOnce := 1
	if kind == "no-show" {
		atOnce = NoShowAtOnce
	}
	var recorded []*History
	for i := 1; i <= o.Histories; i++ {
		if len(recorded) == 0 { // record the next ones, atOnce at a time
			var err error
			if recorded, err = c.recordSome(ctx, kind, i, min(atOnce, o.Histories-i+1)); err != nil {
				return k, err
			}
		}
		h := recorded[0]
		recorded = recorded[1:]
		name := fmt.Sprintf("fairness-%s-%d-%x", kind, i, rand.Uint32())
		checking := time.Now()
		v := Check(h, o.SnapshotAge, o.Timeout, o.Out, name)
		k.Checking += time.Since(checking)
		k.Histories++
		k.Operations += v.Operations
		k.Faults += len(h.Faults)
		k.PlacesLost += v.PlacesLost
		k.NoShows += v.NoShows
		k.LaneAdmissions += v.LaneAdmissions
		switch {
		case v.OK():
			k.Linearizable++
		default:
			if v.Result == porcupine.Unknown {
				k.Unknowns++
			}
			if k.FirstFailure == 0 {
				k.FirstFailure = i
			}
			msg := fmt.Sprintf("history %d: %s", i, v.Result)
			if len(v.Violations) > 0 {
				msg += ": " + strings.Join(v.Violations, "; ")
			}
			if v.Visualization != "" {
				msg += "; visualisation: " + v.Visualization
			}
			k.Failures = append(k.Failures, msg)
			o.logf("%s %s", kind, msg)
		}
		k.Took = time.Since(began)
		if o.StopAtFirst && k.FirstFailure > 0 {
			break
		}
	}
	return k, nil
}

// recordSome records histories first to first+count-1 on c at once.
func (c *cluster) recordSome(ctx context.Context, kind string, first, count int) ([]*History, error) {
	hs := make([]*History, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i := range count {
		wg.Go(func() { hs[i], errs[i] = c.record(ctx, kind, first+i) })
	}
	wg.Wait()
	return hs, errors.Join(errs...)
}

// record runs one history on c: a fresh set of queues and products, the
// crowd, and the kind's faults.
func (c *cluster) record(ctx context.Context, kind string, n int) (*History, error) {
	o := c.o
	length := o.length(kind)
	h := &History{Kind: kind}
	if c.redis != nil {
		h.ReadTimeout = redisReadTimeout
	}
	r := &recorder{c: c, h: h, ids: identity.New([]byte(c.secret)),
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	defer r.http.CloseIdleConnections()
	tag := fmt.Sprintf("%x", rand.Uint32())
	opensAt := time.Now().Add(length / 4)
	var users []*user
	for qi, count := range queueUsers {
		spec := &Spec{Queue: fmt.Sprintf("h%d-%s-q%d", n, tag, qi), Capacity: 1000, Opening: qi == 0}
		// fifo whatever the servers' --queueing-method: the model is a
		// first-come line (a random draw is outside it).
		cfg := map[string]any{"ratePerSecond": queueRate, "batchSize": 10, "intervalMs": 100,
			"capacity": spec.Capacity, "tokenTtlSeconds": 300, "entry": "any", "queueingMethod": "fifo"}
		if kind == "no-show" {
			spec.AbandonAfter = noShowAbandon
			cfg["abandonAfterSeconds"], cfg["ratePerSecond"] = noShowAbandon.Seconds(), noShowRate
		}
		if spec.Opening {
			cfg["opensAt"] = opensAt.UTC().Format(time.RFC3339Nano)
		}
		if qi == len(queueUsers)-1 {
			spec.Lanes, spec.Members, cfg["lanes"] = historyLanes, map[string]string{}, historyLanes
		}
		product := productOf(spec.Queue)
		if err := c.admin(ctx, "PUT", "/admin/v1/queues/"+spec.Queue, cfg, nil); err != nil {
			return nil, err
		}
		if err := c.admin(ctx, "PUT", "/admin/v1/products/"+product,
			map[string]any{"name": "tee", "stock": stock, "queue": spec.Queue}, nil); err != nil {
			return nil, err
		}
		h.Specs = append(h.Specs, spec)
		for i := range count {
			name := fmt.Sprintf("q%du%d-%s", qi, i, tag)
			auth := r.ids.SignJWT(name, time.Hour)
			if spec.Lanes != nil && i < laneMembers {
				spec.Members[name], auth = historyLanes[0].Name, memberJWT(c.secret, name)
			}
			users = append(users, &user{n: i, name: name, spec: spec, product: product,
				auth: "Bearer " + auth, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))})
		}
	}
	r.start = time.Now()
	crowd, stop := context.WithTimeout(ctx, length)
	defer stop()
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Go(func() { r.run(crowd, u) })
	}
	ferr := r.faults(crowd, kind)
	wg.Wait()
	for _, in := range c.insts { // whatever the faults left undone
		in.clock.offset.Store(0)
		for _, p := range []*proxy{in.front, in.back} {
			if p != nil {
				p.setDelay(0)
			}
		}
	}
	if ferr != nil {
		return h, ferr
	}
	h.StockLeft = map[string]int64{}
	for _, s := range h.Specs {
		var p struct{ Stock int64 }
		if err := c.admin(ctx, "GET", "/api/v1/products/"+productOf(s.Queue), nil, &p); err != nil {
			return h, fmt.Errorf("the stock left: %w", err)
		}
		h.StockLeft[s.Queue] = p.Stock
	}
	return h, nil
}

// memberJWT is a shop's login token for a member: SignJWT's, with the
// claim the members lane matches (historyLanes).
func memberJWT(secret, user string) string {
	claims := jwt.MapClaims{"sub": user, "exp": time.Now().Add(time.Hour).Unix(), "tier": "member"}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		panic(err) // HS256 with a byte key cannot fail
	}
	return s
}

// productOf names the product a history's queue protects.
func productOf(queue string) string { return queue + "-tee" }

// admin makes an admin call (a body unless GET) through the first instance
// that answers, for up to adminPatience, and reads its answer into reply
// (unless nil): the faults of the history before may leave every instance
// without Redis for a moment (a 503) before the next one starts.
func (c *cluster) admin(ctx context.Context, method, path string, body, reply any) error {
	var b []byte
	if method != "GET" {
		b, _ = json.Marshal(body)
	}
	var last error
	for deadline := time.Now().Add(adminPatience); time.Now().Before(deadline); {
		for _, in := range c.insts {
			req, _ := http.NewRequestWithContext(ctx, method, "http://"+in.front.addr()+path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+c.token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				last = err
				continue
			}
			raw, err := io.ReadAll(res.Body)
			res.Body.Close()
			switch {
			case err != nil:
				last = err
			case res.StatusCode/100 != 2:
				last = fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(raw))
			case reply == nil:
				return nil
			default:
				return json.Unmarshal(raw, reply)
			}
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("for %v: %w", adminPatience, last)
}

const adminPatience = 30 * time.Second
