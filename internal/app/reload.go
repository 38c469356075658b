package app

import (
	"context"
	"errors"
)

// Reloads reports whether SIGHUP has anything to read again (Reload): the
// queues file or the suspect ranges. Without either it keeps its usual
// meaning, and the process ends.
func (c Config) Reloads() bool { return c.QueuesFile != "" || len(c.SuspectRanges) > 0 }

// Reload is SIGHUP: it reads the suspect ranges again (ReloadSuspectRanges)
// and applies the queues file again (ReloadQueues), each that is given;
// what went wrong is logged, and is the error. Nobody's place is touched:
// a new range marks only the places taken from now on.
func (m *Main) Reload(ctx context.Context) error {
	var errs []error
	if len(m.Config.SuspectRanges) > 0 {
		errs = append(errs, m.ReloadSuspectRanges())
	}
	if m.Config.QueuesFile != "" {
		errs = append(errs, m.ReloadQueues(ctx))
	}
	return errors.Join(errs...)
}

// ReloadSuspectRanges reads --suspect-ranges again, logging how many
// ranges are in force; a file that cannot be read is logged, and the
// ranges read before stay in force.
func (m *Main) ReloadSuspectRanges() error {
	r := m.served.ranges
	if r == nil {
		return errors.New("no --suspect-ranges to read")
	}
	if err := r.Reload(); err != nil {
		m.Logger.Error("the suspect ranges were not read again: the old ones stay in force", "files", m.Config.SuspectRanges,
			"ranges", r.Len(), "err", err)
		return err
	}
	m.Logger.Info("the suspect ranges were read again", "files", m.Config.SuspectRanges, "ranges", r.Len())
	return nil
}
