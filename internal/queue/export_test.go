package queue

// Changed is, for the tests outside the package, what the instance's
// admitter tells the service through the line's signals after a tick
// that moved the line (signals.Line.Moved).
func (s *Service) Changed(queue string) { s.changed(queue) }
