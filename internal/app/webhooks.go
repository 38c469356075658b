package app

import (
	"cmp"
	"fmt"
	"os"

	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queuefile"
	"github.com/waitroom/waitroom/internal/webhook"
)

// The shop's events (docs/operations.md, "Webhooks"): every instance finds
// them in the store (events.Detector), the one that claims an event first
// sends it (webhook.Sender) to the receivers: --webhook's get every
// queue's, a queue's webhooks in the queues file get that queue's. With no
// receiver nothing is sent; every queue is read all the same, once a
// second, for the sale's rows and its moments (package rollup), which the
// detector writes as it goes.

// readWebhookSecret reads --webhook-secret-file, and names it as missing
// when f gives a queue webhooks without it.
func (m *Main) readWebhookSecret(f *queuefile.File) error {
	c := m.Config
	if c.WebhookSecretFile == "" {
		if q := firstWithWebhooks(f); q != "" {
			return fmt.Errorf("--webhook-secret-file: %v; --queues %s gives queue %q webhooks", errNoWebhookSecret, f.Name, q)
		}
		return nil
	}
	secret, err := c.WebhookSecret()
	if err != nil {
		return fmt.Errorf("--webhook-secret-file: %w", err)
	}
	m.settings.webhookSecret = secret
	return nil
}

// firstWithWebhooks names the first queue f gives webhooks ("" for none).
func firstWithWebhooks(f *queuefile.File) string {
	if f == nil {
		return ""
	}
	for _, q := range f.Queues {
		if len(q.Webhooks) > 0 {
			return q.Name
		}
	}
	return ""
}

// tellTheShop sets up the shop's events and returns them: this instance's name in its own
// (its breakers'), the sender to the receivers, and what finds the events.
func (m *Main) tellTheShop() (sh shop) {
	host, _ := os.Hostname()
	sh.instance = cmp.Or(host, "waitroom") + "-" + randomHex(3)
	sh.webhooks = webhook.New(webhook.Options{Secret: m.settings.webhookSecret, RetryFor: m.Config.WebhookRetryFor,
		Registry: m.Registry, Logger: m.Logger, Now: m.Clock}, m.webhookReceivers())
	sh.direct = events.NewDirect(sh.webhooks)
	m.tellAudit(sh.direct)
	m.tellWhoIsLetIn(sh)
	sh.detector = events.NewDetector(events.Options{Store: lineReader{m.Queue, m.line.operate}, Publisher: sh.webhooks, Queues: m.line.operate.KnownQueues,
		Now: m.Clock, Logger: m.Logger, Pending: &m.sale.pending, Keep: m.Config.RollupRetention})
	return sh
}

// admitted measures a tick's admitted (issue 38): their time in line and
// the estimate's accuracy, on /metrics and in the sale's rows.
func (s *sale) admitted(q string, _ []string, waited []rollup.Wait) {
	s.telemetry.Admitted(q, waited)
	for _, w := range waited {
		s.pending.Admitted(q, w)
	}
}

// webhookReceivers are --webhook's receivers and the queues file's.
func (m *Main) webhookReceivers() []webhook.Receiver {
	var rs []webhook.Receiver
	for _, u := range m.Config.Webhooks {
		rs = append(rs, webhook.Receiver{URL: u})
	}
	if f := m.settings.queuesFile.Load(); f != nil {
		for _, q := range f.Queues {
			for _, u := range q.Webhooks {
				rs = append(rs, webhook.Receiver{URL: u, Queues: []string{q.Name}})
			}
		}
	}
	return rs
}

// breakerChanged tells the shop of this instance's breaker on a queue's
// store opening or closing: its own event, published unclaimed (the store
// may well be away).
func (m *Main) breakerChanged(queue string, open bool) {
	if m.sale != nil {
		m.sale.shop.direct.Breaker(queue, open, m.sale.shop.instance, m.Clock())
	}
}
