package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queuefile"
)

// The queues an operator keeps as a file (--queues): read and validated
// whole before any queue is touched, then applied through the same queue
// service calls the admin API makes. At start a file that cannot work
// stops the start; on SIGHUP (ReloadQueues) it is logged and changes
// nothing, and the file applied last stays the one drift is judged by.
//
// Drift is judged when it happens: the admin API tells (QueueConfigChanged)
// of every config it stores, and one that differs from the file's for a
// queue the file names is logged as a warning naming the queue and the
// settings. Each instance judges the changes made through it, so every
// instance should run with the same file; the next SIGHUP or start puts
// the file's settings back, and logs each one it puts back.

// readQueuesFile reads and validates --queues against the config new
// queues get.
func (m *Main) readQueuesFile() (*queuefile.File, error) {
	path := m.Config.QueuesFile
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--queues: %w", err)
	}
	return queuefile.Parse(path, raw, m.settings.newQueues)
}

// applyQueuesFile applies the file read at start, if there is one; a store
// that refuses stops the start.
func (m *Main) applyQueuesFile(ctx context.Context) error {
	f := m.settings.queuesFile.Load()
	if f == nil {
		return nil
	}
	ctx = queuesFileActor(ctx, "load")
	if err := m.applyQueues(ctx, f); err != nil {
		return fmt.Errorf("--queues %s: %w", f.Name, err)
	}
	return nil
}

// ReloadQueues reads --queues again and applies it, without a restart
// (SIGHUP). A file that cannot work is logged and changes nothing; a
// store that fails half-way is logged, and the next reload applies the
// whole file again.
func (m *Main) ReloadQueues(ctx context.Context) error {
	if m.Config.QueuesFile == "" {
		return errors.New("no --queues file to apply")
	}
	m.settings.reloadMu.Lock()
	defer m.settings.reloadMu.Unlock()
	f, err := m.readQueuesFile()
	if err == nil && m.settings.webhookSecret == nil && firstWithWebhooks(f) != "" {
		err = fmt.Errorf("--webhook-secret-file: %v; the file gives queue %q webhooks", errNoWebhookSecret, firstWithWebhooks(f))
	}
	if err != nil {
		m.Logger.Error("the queues file was not applied: nothing changed", "file", m.Config.QueuesFile, "err", err)
		return err
	}
	m.settings.queuesFile.Store(f)
	m.sale.shop.webhooks.SetReceivers(m.webhookReceivers())
	if err := m.applyQueues(queuesFileActor(ctx, "reload"), f); err != nil {
		m.Logger.Error("the queues file was applied in part: send SIGHUP again once the store answers", "file", f.Name, "err", err)
		return err
	}
	m.Logger.Info("the queues file was applied", "file", f.Name, "queues", len(f.Queues), "prune", f.Prune)
	return nil
}

// applyQueues makes every queue f names match it, and with prune removes
// the queues it does not name (the default queue excepted: the admission
// loop would make it again at once).
func (m *Main) applyQueues(ctx context.Context, f *queuefile.File) error {
	for _, q := range f.Queues {
		if err := m.applyQueue(ctx, f.Name, q); err != nil {
			return fmt.Errorf("queue %q: %w", q.Name, err)
		}
	}
	if !f.Prune {
		return nil
	}
	names, err := m.line.operate.Queues(ctx)
	if err != nil {
		return fmt.Errorf("listing the queues to prune: %w", err)
	}
	for _, name := range names {
		if _, named := f.Queue(name); named || name == queue.DefaultQueue {
			continue
		}
		if err := m.line.operate.DeleteQueue(ctx, name); err != nil {
			return fmt.Errorf("pruning queue %q: %w", name, err)
		}
		m.Logger.Warn("queue removed: the queues file does not name it and says prune: true", "file", f.Name, "queue", name)
	}
	return nil
}

// applyQueue creates q or sets its config to the file's, logging what it
// changed; a queue that matches already is not written. Then the stock
// the file starts the sale with, if it gives one (applyUnitsLeft).
func (m *Main) applyQueue(ctx context.Context, file string, q queuefile.Queue) error {
	if err := m.applyConfig(ctx, file, q); err != nil {
		return err
	}
	return m.applyUnitsLeft(ctx, file, q)
}

// applyConfig creates q or sets its config to the file's, logging what it
// changed; a queue that matches already is not written.
func (m *Main) applyConfig(ctx context.Context, file string, q queuefile.Queue) error {
	have, err := m.line.operate.Config(ctx, q.Name)
	switch {
	case errors.Is(err, queue.ErrQueueNotFound):
		if err := m.line.operate.PutConfig(ctx, q.Name, q.Config); err != nil {
			return err
		}
		m.Logger.Info("queue created from the queues file", "file", file, "queue", q.Name)
		return nil
	case err != nil:
		return err
	}
	diff := queuefile.Diff(have, q.Config)
	if len(diff) == 0 {
		return nil
	}
	if err := m.line.operate.PutConfig(ctx, q.Name, q.Config); err != nil {
		return err
	}
	attrs := []any{"file", file, "queue", q.Name}
	for _, d := range diff {
		attrs = append(attrs, d.Setting, d.Have+" → "+d.Want)
	}
	m.Logger.Info("queue config set from the queues file", attrs...)
	return nil
}

// applyUnitsLeft tells q the stock the file starts its sale with, only
// while the queue's stock is not known: once a sale has counted it down
// (or the backend or an operator has told it), a restart or a SIGHUP must
// not put back units already sold.
func (m *Main) applyUnitsLeft(ctx context.Context, file string, q queuefile.Queue) error {
	if q.UnitsLeft == nil {
		return nil
	}
	st, err := m.line.operate.Stats(ctx, q.Name)
	if err != nil || st.Stock.Known {
		return err
	}
	if _, err := m.line.operate.SetStock(ctx, q.Name, queue.Stock{Known: true, Units: *q.UnitsLeft}, false); err != nil {
		return err
	}
	m.Logger.Info("queue stock set from the queues file", "file", file, "queue", q.Name, "unitsLeft", *q.UnitsLeft)
	return nil
}

// queueConfigChanged is the admin API's QueueConfigChanged: an opening set
// or moved is committed to before the call answers (the admitter's loop
// would within a tick; the operator is answered with the commitment
// published), and drift from the queues file is logged.
func (m *Main) queueConfigChanged(ctx context.Context, name string, c queue.Config) {
	if !c.OpensAt.IsZero() {
		if _, _, err := admission.Commit(ctx, m.line.store, name, c.OpensAt, m.line.admitter.Drawer); err != nil {
			m.Logger.WarnContext(ctx, "committing to the opening's draw failed; the admission loop tries again", "queue", name, "err", err)
		}
	}
	m.noteDrift(ctx, name, c)
}

// noteDrift logs a queue the file names whose new config differs from
// the file's, naming each setting as it is now and as the file has it.
func (m *Main) noteDrift(ctx context.Context, name string, c queue.Config) {
	f := m.settings.queuesFile.Load()
	if f == nil {
		return
	}
	want, ok := f.Queue(name)
	if !ok {
		return
	}
	diff := queuefile.Diff(c, want.Config)
	if len(diff) == 0 {
		return
	}
	settings := make([]string, len(diff))
	attrs := []any{"queue", name, "file", f.Name, "settings", settings}
	for i, d := range diff {
		settings[i] = d.Setting
		attrs = append(attrs, d.Setting, fmt.Sprintf("%s (file: %s)", d.Have, d.Want))
	}
	m.Logger.WarnContext(ctx, "queue config drifts from the queues file: changed through the admin API; "+
		"the next SIGHUP or start puts the file's settings back", attrs...)
}
