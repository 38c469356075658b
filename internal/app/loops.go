package app

// What runs beside the requests until Close (startLoops).

import (
	"context"
)

// startLoops starts what runs beside the requests until Close: admission
// (which also creates the default queue again if Redis lost its data),
// the admin chart's history, the adaptive rate, the no-shows' seen marks,
// and the shop's events: finding them, and sending them.
func (m *Main) startLoops(ctx context.Context) {
	loops, stop := context.WithCancel(context.WithoutCancel(ctx))
	m.run.stopLoops = stop
	admitter := m.line.admitter
	admitter.Jitter = m.Config.AdmissionJitter // --admission-jitter (bench/ turns it off)
	for _, run := range []func(context.Context){m.line.health.Run, m.line.breaker.Run, admitter.Run, m.served.history.Run, m.sale.rates.Run,
		func(ctx context.Context) { m.Queue.RunPresence(ctx, m.Logger) }, m.sale.shop.detector.Run, m.sale.shop.webhooks.Run} {
		m.run.loopsDone.Go(func() { run(loops) })
	}
}
