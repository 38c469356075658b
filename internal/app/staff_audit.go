package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/staff"
)

// The audit log (issue 56): who changed what. Kept by the line's store
// for --rollup-retention; the operator's calls record each change made
// with an actor in its context (the admin API's, the queues file's, the
// backend's commands'), the admin API refusals and its own changes; each
// entry kept goes to the shop as admin.changed.

// auditStore is the line's store as the audit log's keeper.
func (m *Main) auditStore(l *line) staff.AuditStore {
	if l.embedded != nil {
		return l.embedded
	}
	return redisstore.New(l.redis, m.Config.KeyPrefix)
}

// keepAudit makes the auditor on l's store and has the operator's calls
// record through it (openLine, before the queues file's first load).
func (m *Main) keepAudit(l *line) {
	l.audit = staff.NewAuditor(staff.AuditorOptions{Store: m.auditStore(l), Keep: m.Config.RollupRetention, Clock: m.Clock, Logger: m.Logger})
	l.operate.Audit = l.audit
}

// tellAudit sends each audit entry kept from now on to the shop as
// admin.changed, and counts what the log could not keep (tellTheShop:
// the metrics' registry is made by then).
func (m *Main) tellAudit(direct *events.Direct) {
	a := m.line.audit
	a.Tell(direct.AdminChanged)
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "waitroom_audit_refusals_unlogged_total",
			Help: "Refused admin attempts this instance counted but did not write to the audit log (rate-limited: each logged refusal carries how many like it were not).",
		}, func() float64 { return float64(a.Suppressed()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "waitroom_audit_failures_total",
			Help: "Audit entries this instance could not keep (the store failed; the change itself was made, and the failure logged).",
		}, func() float64 { return float64(a.Failed()) }),
	)
}

// queuesFileActor is ctx naming the queues file as who changes what it
// applies, and op ("load" at start, "reload") as what.
func queuesFileActor(ctx context.Context, op string) context.Context {
	return staff.WithActor(staff.WithOp(ctx, op), staff.Actor{Kind: staff.KindQueuesFile})
}
