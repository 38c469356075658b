package webhook

import "github.com/prometheus/client_golang/prometheus"

// metrics are the Sender's, per instance (docs/operations.md, "Webhooks").
type metrics struct {
	published      *prometheus.CounterVec // by event type
	deliveries     *prometheus.CounterVec // by receiver and result
	attemptsFailed *prometheus.CounterVec // by receiver
}

// newMetrics registers the metrics on reg (kept unregistered when nil);
// pending counts the events waiting.
func newMetrics(reg prometheus.Registerer, pending func() int) metrics {
	m := metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_events_published_total",
			Help: "Events this instance claimed, or told directly as its own (a breaker's, entry.ready), and published to its webhook receivers, by type (sum across instances: each event is published by one).",
		}, []string{"type"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_webhook_deliveries_total",
			Help: "Events a webhook receiver was done with, by receiver (its URL without query) and result: delivered (a 2xx), expired (retried for --webhook-retry-for without a 2xx), dropped (its buffer of 100,000 was full, or it was removed from the queues file).",
		}, []string{"receiver", "result"}),
		attemptsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_webhook_attempts_failed_total",
			Help: "Attempts to deliver an event that failed (no answer within 10 s, or not a 2xx), by receiver; each is tried again with backoff.",
		}, []string{"receiver"}),
	}
	if reg != nil {
		reg.MustRegister(m.published, m.deliveries, m.attemptsFailed, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "waitroom_webhook_pending",
			Help: "Events waiting to be delivered on this instance, every receiver's.",
		}, func() float64 { return float64(pending()) }))
	}
	return m
}
