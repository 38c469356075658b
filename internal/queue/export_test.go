package queue

import "context"

// Changed is, for the tests outside the package, what the instance's
// admitter tells the service through the line's signals after a tick
// that moved the line (signals.Line.Moved).
func (s *Service) Changed(queue string) { s.changed(queue) }

// PutConfig is, for the tests outside the package, the operator's
// (operate.Operator.PutConfig), which package queue cannot import: the
// config validated and stored, and the service told as the line's signals
// tell it.
func (s *Service) PutConfig(ctx context.Context, queue string, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	err := s.store.PutConfig(ctx, queue, c)
	s.reconfigured(queue)
	return err
}
