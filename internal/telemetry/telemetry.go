// Package telemetry owns waitroom's Prometheus metrics. The registry is
// passed in, never global. Two kinds of series:
//
//   - per queue, read from the store (waitroom_queue_*, waitroom_tokens_*,
//     waitroom_admitted_total, …): they describe the shared line, so every
//     instance reports the same value — aggregate them with max by (queue),
//     not sum. One reading serves every scrape for StatsMaxAge, so any
//     number of scrapers cost the store one read of each queue a second,
//     and the read changes nothing;
//   - per instance (HTTP, orders, rejections): sum them across instances.
//
// No series is ever labelled with a user id.
package telemetry

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/perqueue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/watch"
	"github.com/waitroom/waitroom/internal/spend"
)

// QueueReader is what the scrape needs from the line.
type QueueReader interface {
	// KnownQueues lists the queues (the last list the store gave, when it
	// cannot give one now).
	KnownQueues(ctx context.Context) []string
	Stats(ctx context.Context, queue string) (queue.Stats, error)
	// SnapshotAnswers counts this instance's status polls answered from a
	// snapshot of the line and by the store.
	SnapshotAnswers() (hits, misses uint64)
}

// Metrics holds the per-instance collectors. A nil *Metrics is valid and
// records nothing, so tests and tools can run without a registry.
type Metrics struct {
	httpDuration  *prometheus.HistogramVec
	rejected      *prometheus.CounterVec
	orders        *prometheus.CounterVec
	orderDuration prometheus.Histogram
	protected     *prometheus.HistogramVec
	bypassed      *prometheus.CounterVec
	degraded      *prometheus.CounterVec
	timeInLine    *prometheus.HistogramVec
	estimate      *prometheus.HistogramVec
	covered       *prometheus.CounterVec
	placed        *prometheus.CounterVec
	suspects      *prometheus.CounterVec
}

// New registers waitroom's metrics on reg.
func New(reg prometheus.Registerer, queues QueueReader) *Metrics {
	m := &Metrics{
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "waitroom_http_request_duration_seconds",
			Help:    "HTTP requests by route pattern and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "code"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_rejected_total",
			Help: "Requests answered with an error, by error code (queue_full, unauthenticated, …).",
		}, []string{"reason"}),
		orders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_orders_total",
			Help: "Order attempts by result (created, replayed, out_of_stock, entry_token_invalid, …).",
		}, []string{"result"}),
		orderDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "waitroom_order_duration_seconds",
			Help:    "Time to answer an order attempt, token check and transaction included.",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .3, .5, 1, 2, 5, 10},
		}),
		protected: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "waitroom_protected_call_duration_seconds",
			Help:    "Calls made with an entry token (an order, or a protected route through the gateway), from the token check to the backend's answer, by queue and outcome (succeeded, spent, refused, failed, timed_out).",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .3, .5, 1, 2, 5, 10, 30},
		}, []string{"queue", "outcome"}),
		bypassed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_bypassed_total",
			Help: "Requests a --bypass rule let past the line (a protected route through the gateway, an enter or status answered READY, an order), by the rule, named without its secret.",
		}, []string{"rule"}),
		degraded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_degraded_admissions_total",
			Help: "Admissions made without the line's store under --on-store-error admit, by how: gateway (a protected request forwarded with X-Waitroom-Degraded), entry (enter or status answered with a degraded READY), order (an order attempt let past the line on a degraded token; the orders table still takes each token once).",
		}, []string{"via"}),
	}
	m.suspects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitroom_suspects_total",
		Help: "Places taken by clients a signal marked as likely bots (issue 51), by queue, signal (edge_score, address_range, human_check, poll_rate) and the queue's action (shadow, challenge, refuse, allow); a client marked by two signals counts once under each.",
	}, []string{"queue", "signal", "action"})
	for _, via := range []string{"gateway", "entry", "order"} {
		m.degraded.WithLabelValues(via)
	}
	m.saleMetrics()
	reg.MustRegister(m.httpDuration, m.rejected, m.orders, m.orderDuration, m.protected, m.bypassed, m.degraded,
		m.timeInLine, m.estimate, m.covered, m.placed, m.suspects, &queueCollector{queues: queues, maxAge: StatsMaxAge})
	return m
}

// saleMetrics makes the per-instance series of how a sale went (issue
// 38): time in line and the estimate's accuracy (its ratio, and how often
// the range shown came true: issue 54), observed by the instance whose
// tick admitted the user, and orders placed by the instance that took
// them; sum them across instances.
func (m *Metrics) saleMetrics() {
	m.timeInLine = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "waitroom_time_in_line_seconds",
		Help:    "Time from taking a place in line to admission, of each user admitted (this instance's ticks); those let straight in never waited and are not counted.",
		Buckets: []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400},
	}, []string{"queue"})
	m.estimate = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "waitroom_estimate_ratio",
		Help:    "The wait realised over the wait shown at entry, of each user admitted (this instance's ticks): 1 is on time, 2 twice as long as promised; a shown 0 (any moment now) counts as 1 s; users placed by an opening, shown no wait, are not counted.",
		Buckets: []float64{0.1, 0.25, 0.5, 0.67, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 5, 10},
	}, []string{"queue"})
	m.covered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitroom_estimate_covered_total",
		Help: "Users admitted (this instance's ticks) by how the range shown at entry fared (issue 54): in or out (the wait fell within the range, or not), apart_in or apart_out (likewise, for those who took their place before something no estimate could foresee: a pause, the rate cut at once), unknown (shown no range: the wait was not known at entry, or placed by an opening). Coverage is in ÷ (in + out).",
	}, []string{"queue", "outcome"})
	m.placed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitroom_orders_placed_total",
		Help: "Orders created through the order API (replays not counted), by the queue that sells the product (this instance's).",
	}, []string{"queue"})
}

// Admitted observes the waits of users admitted to queue (a tick's
// queue.Admission.Waited).
func (m *Metrics) Admitted(queue string, waits []rollup.Wait) {
	if m == nil {
		return
	}
	for _, w := range waits {
		if d, ok := w.TimeInLine(); ok {
			m.timeInLine.WithLabelValues(queue).Observe(d.Seconds())
		}
		if r, ok := w.Ratio(); ok {
			m.estimate.WithLabelValues(queue).Observe(r)
		}
		if o, ok := w.Outcome(); ok {
			m.covered.WithLabelValues(queue, o).Inc()
		}
	}
}

// OrderPlaced counts an order created for queue.
func (m *Metrics) OrderPlaced(queue string) {
	if m == nil {
		return
	}
	m.placed.WithLabelValues(queue).Inc()
}

// StatsMaxAge is how long one reading of every queue's numbers serves
// scrapes: Prometheus, a second Prometheus and an operator's curl together
// cost the store one read a second, not one each.
const StatsMaxAge = time.Second

// RegisterHeld adds waitroom_status_held: the requests this instance holds
// open for news right now (?waitSeconds=), read from held at scrape time.
func RegisterHeld(reg prometheus.Registerer, held func() int) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "waitroom_status_held",
		Help: "Enter and status requests this instance holds open for news (?waitSeconds=) right now.",
	}, func() float64 { return float64(held()) }))
}

// AddressLimit is a per-address limit as the metrics read it (a
// *ratelimit.Buckets).
type AddressLimit interface {
	Len() int
	Untracked() uint64
}

// RegisterAddressLimits adds, per limit (label limit="entries" or
// "sessions"), waitroom_address_limit_addresses (client addresses tracked
// by this instance now) and waitroom_address_limit_untracked_total (takes
// let through untracked because every tracked address was busy: a flood
// from more addresses than an instance keeps).
func RegisterAddressLimits(reg prometheus.Registerer, limits map[string]AddressLimit) {
	for name, l := range limits {
		labels := prometheus.Labels{"limit": name}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "waitroom_address_limit_addresses",
				Help:        "Client addresses this instance tracks for a per-address limit (entries: anonymous places; sessions: new anonymous sessions).",
				ConstLabels: labels,
			}, func() float64 { return float64(l.Len()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "waitroom_address_limit_untracked_total",
				Help:        "Requests let through a per-address limit untracked because this instance's table of addresses was full of busy ones.",
				ConstLabels: labels,
			}, func() float64 { return float64(l.Untracked()) }),
		)
	}
}

// ObserveHTTP records one answered request.
func (m *Metrics) ObserveHTTP(route string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.httpDuration.WithLabelValues(route, statusText(code)).Observe(d.Seconds())
}

// BypassRules shows each --bypass rule's count from the start, at 0 until
// it lets someone past.
func (m *Metrics) BypassRules(labels []string) {
	if m == nil {
		return
	}
	for _, l := range labels {
		m.bypassed.WithLabelValues(l)
	}
}

// Bypassed counts a request the rule labelled so let past the line.
func (m *Metrics) Bypassed(rule string) {
	if m == nil {
		return
	}
	m.bypassed.WithLabelValues(rule).Inc()
}

// Degraded counts an admission made without the store under
// --on-store-error admit: via is gateway, entry or order.
func (m *Metrics) Degraded(via string) {
	if m == nil {
		return
	}
	m.degraded.WithLabelValues(via).Inc()
}

// Suspect counts a place taken by a likely bot in the queue, under one of
// the signals that marked it, and the action the queue took.
func (m *Metrics) Suspect(queue, signal, action string) {
	if m == nil {
		return
	}
	m.suspects.WithLabelValues(queue, signal, action).Inc()
}

// RegisterBreaker adds waitroom_store_breaker_open: how many queues'
// breakers are open now (package breaker), read at scrape time.
func RegisterBreaker(reg prometheus.Registerer, open func() []string) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "waitroom_store_breaker_open",
		Help: "Queues whose store breaker is open on this instance: their store failed and has not answered a probe since (once a second); their requests are answered at once without it, 503 under --on-store-error wait, degraded under admit. 0 when every breaker is closed.",
	}, func() float64 { return float64(len(open())) }))
}

// Rejected counts an error answer by its code.
func (m *Metrics) Rejected(reason string) {
	if m == nil {
		return
	}
	m.rejected.WithLabelValues(reason).Inc()
}

// Order records one order attempt's result and duration.
func (m *Metrics) Order(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.orders.WithLabelValues(result).Inc()
	m.orderDuration.Observe(d.Seconds())
}

// ProtectedCall records one call made with an entry token (an
// spend.Observer).
func (m *Metrics) ProtectedCall(queue string, took time.Duration, o spend.Outcome) {
	if m == nil {
		return
	}
	m.protected.WithLabelValues(queue, o.String()).Observe(took.Seconds())
}

func statusText(code int) string {
	const digits = "0123456789"
	if code < 100 || code > 999 {
		return "other"
	}
	return string([]byte{digits[code/100], digits[code/10%10], digits[code%10]})
}

var (
	descLength    = prometheus.NewDesc("waitroom_queue_length", "Users waiting in line, by lane (issue 53): one series per lane of the queue, lane=\"public\" the only one for a queue without lanes; sum by (queue) for the whole line.", []string{"queue", "lane"}, nil)
	descLaneIn    = prometheus.NewDesc("waitroom_lane_admitted_total", "Users a lane let in (a queue with lanes only).", []string{"queue", "lane"}, nil)
	descLaneCodes = prometheus.NewDesc("waitroom_lane_codes_redeemed_total", "Access codes redeemed for a place in a lane (a queue with lanes only).", []string{"queue", "lane"}, nil)
	descPaused    = desc("waitroom_queue_paused", "1 while admission is paused.")
	descActive    = desc("waitroom_tokens_active", "Entry tokens issued and not yet used, returned or expired.")
	descCap       = desc("waitroom_tokens_cap", "The cap on live entry tokens in force: maxActiveTokens, or the units left × admitPerUnit when lower; 0 means no cap.")
	descEntered   = desc("waitroom_entered_total", "Users who joined the line (re-entries keep their place and do not count).")
	descAdmitted  = desc("waitroom_admitted_total", "Users admitted (each got an entry token).")
	descLeft      = desc("waitroom_left_total", "Users who left the line before admission.")
	descConsumed  = desc("waitroom_tokens_consumed_total", "Entry tokens spent on a successful order.")
	descExpired   = desc("waitroom_tokens_expired_total", "Entry tokens that ran out unused.")
	descReturned  = desc("waitroom_tokens_returned_total", "Unused entry tokens given back.")
	descRateConf  = desc("waitroom_admission_rate_configured", "Configured admission rate, users per second.")
	descRateMeas  = desc("waitroom_admission_rate_measured", "Measured admission rate over the last window, users per second (all instances).")
	descRate      = desc("waitroom_admission_rate", "The admission rate in force, users per second: the adaptive rate while adaptive, else the configured one.")
	descAbandoned = desc("waitroom_abandoned_total", "Waiting users skipped at admission as no-shows (not seen for abandonAfterSeconds).")
	descPreQueue  = desc("waitroom_prequeue_length", "Users waiting for the queue's opening, not yet placed in line.")
	descShadow    = desc("waitroom_shadow_length", "Places in the shadow line: suspects kept apart from people (suspects: shadow), not counted in waitroom_queue_length.")
	descSoldOut   = desc("waitroom_queue_sold_out", "1 while the queue has nothing left to sell: admission stops, newcomers are refused 410, whoever waits is told SOLD_OUT.")
	descUnitsLeft = desc("waitroom_queue_units_left", "What the queue has left to sell, as last told (the order API after each sale, the admin API, the backend's X-Waitroom-Command); absent while not known.")
	descPhase     = prometheus.NewDesc("waitroom_queue_phase", "One series per phase of the queue's (the phases setting): 1 for the phase in force, 0 for the others; none while the queue has no phases.", []string{"queue", "phase"}, nil)
	descStatusBy  = prometheus.NewDesc("waitroom_status_answers_total", "Status polls this instance answered, by source: snapshot (arithmetic on a recent snapshot of the line, no Redis round trip) or store.", []string{"source"}, nil)
	queueDescs    = []*prometheus.Desc{descLength, descLaneIn, descLaneCodes, descPaused, descActive, descCap, descEntered, descAdmitted, descLeft, descConsumed, descExpired, descReturned, descRateConf, descRateMeas, descRate, descAbandoned, descPreQueue, descShadow, descSoldOut, descUnitsLeft}
	scrapeTimeout = 2 * time.Second
)

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"queue"}, nil)
}

// queueCollector reads every queue's numbers from the store at scrape
// time, at most once per maxAge; scrapes arriving meanwhile (or while a
// reading is under way) are answered from the last reading.
type queueCollector struct {
	queues QueueReader
	maxAge time.Duration

	mu    sync.Mutex
	at    time.Time // when stats were read; zero: never
	stats []queue.Stats
}

// read returns the stats of every queue that answered, reading them again
// when the last reading is older than maxAge. Every queue is read at once
// under its own deadline: a queue on a Redis Cluster node that is down
// costs the others nothing, and only its own series go missing.
func (c *queueCollector) read() []queue.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < c.maxAge {
		return c.stats
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	names := c.queues.KnownQueues(ctx)
	// A new slice each time: earlier scrapes may still be reading the last.
	read := make([]*queue.Stats, len(names))
	index := make(map[string]int, len(names))
	for i, q := range names {
		index[q] = i
	}
	perqueue.Each(ctx, names, scrapeTimeout, func(ctx context.Context, q string) {
		if st, err := c.queues.Stats(ctx, q); err == nil {
			st.Queue = q
			read[index[q]] = &st
		}
	})
	var stats []queue.Stats
	for _, st := range read {
		if st != nil {
			stats = append(stats, *st)
		}
	}
	c.stats, c.at = stats, time.Now()
	return stats
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range queueDescs {
		ch <- d
	}
	ch <- descStatusBy
	ch <- descPhase
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	hits, misses := c.queues.SnapshotAnswers()
	ch <- prometheus.MustNewConstMetric(descStatusBy, prometheus.CounterValue, float64(hits), "snapshot")
	ch <- prometheus.MustNewConstMetric(descStatusBy, prometheus.CounterValue, float64(misses), "store")
	now := time.Now() // the phase in force, as ConfigInForce judges it
	for _, st := range c.read() {
		q := st.Queue
		in := st.Config.InForce(now) // a phase's rate and cap, while one is in force
		for _, p := range st.Config.Phases {
			ch <- prometheus.MustNewConstMetric(descPhase, prometheus.GaugeValue, bit(p.Name == in.PhaseInForce), q, p.Name)
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, q)
		}
		counter := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), q)
		}
		collectLanes(ch, st)
		gauge(descPaused, bit(st.Config.Paused))
		gauge(descSoldOut, bit(st.Stock.SoldOut()))
		if st.Stock.Known {
			gauge(descUnitsLeft, float64(st.Stock.Units))
		}
		gauge(descActive, float64(st.ActiveTokens))
		limit, capped := admission.LiveCap(in, st.Stock)
		if !capped {
			limit = 0
		}
		gauge(descCap, float64(limit))
		counter(descEntered, st.EnteredTotal)
		counter(descAdmitted, st.AdmittedTotal)
		counter(descLeft, st.LeftTotal)
		counter(descConsumed, st.ConsumedTotal)
		counter(descExpired, st.ExpiredTotal)
		counter(descReturned, st.ReturnedTotal)
		gauge(descRateConf, in.RatePerSecond)
		gauge(descRateMeas, st.MeasuredRate)
		gauge(descRate, st.EffectiveRate) // a phase's own, while one is in force (operate.Operator.Stats)
		counter(descAbandoned, st.AbandonedTotal)
		gauge(descPreQueue, float64(st.PreQueued))
		gauge(descShadow, float64(st.ShadowLength))
	}
}

// collectLanes writes the queue's length by lane and its lanes' counters:
// a queue without lanes is one lane, public, with the whole length (and no
// lane counters: its admitted are waitroom_admitted_total).
func collectLanes(ch chan<- prometheus.Metric, st queue.Stats) {
	if len(st.Lanes) == 0 {
		ch <- prometheus.MustNewConstMetric(descLength, prometheus.GaugeValue, float64(st.Length), st.Queue, lane.Public)
		return
	}
	for _, l := range st.Lanes {
		ch <- prometheus.MustNewConstMetric(descLength, prometheus.GaugeValue, float64(l.Length), st.Queue, l.Name)
		ch <- prometheus.MustNewConstMetric(descLaneIn, prometheus.CounterValue, float64(l.Admitted), st.Queue, l.Name)
		ch <- prometheus.MustNewConstMetric(descLaneCodes, prometheus.CounterValue, float64(l.Redeemed), st.Queue, l.Name)
	}
}

var (
	descStoreUp      = prometheus.NewDesc("waitroom_store_up", "1 while the line's store answers this instance, all of it or (Redis Cluster) part; 0 when no part answers: every queue answers 503.", nil, nil)
	descStoreQueueUp = desc("waitroom_store_queue_up", "1 while the store answers this instance for the queue's keys; 0 when not (on Redis Cluster, the node holding its slot is down): the queue answers 503 while others are served.")
)

// RegisterStoreHealth adds waitroom_store_up and waitroom_store_queue_up,
// read at scrape time from the last health check (health), which runs on
// its own every second: a scrape asks the store nothing for them.
func RegisterStoreHealth(reg prometheus.Registerer, health func() watch.Health) {
	reg.MustRegister(storeHealthCollector(health))
}

type storeHealthCollector func() watch.Health

func (storeHealthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descStoreUp
	ch <- descStoreQueueUp
}

func (c storeHealthCollector) Collect(ch chan<- prometheus.Metric) {
	h := c()
	ch <- prometheus.MustNewConstMetric(descStoreUp, prometheus.GaugeValue, bit(h.Reachable))
	down := map[string]bool{}
	for _, q := range h.Down {
		down[q] = true
	}
	for _, q := range h.Queues {
		ch <- prometheus.MustNewConstMetric(descStoreQueueUp, prometheus.GaugeValue, bit(h.Reachable && !down[q]), q)
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
