package memstore

// replayUsed runs a step numbered with FirstUse's again: the staff's
// records (issue 56: staff_roles.go, staff_sso.go, staff_audit.go), the others by
// replay.
func (s *Store) replayUsed(o op) error {
	switch o.kind {
	case opPutToken, opDeleteToken, opTouchToken:
		return s.replayToken(o)
	case opPutSession, opDeleteSession:
		return s.replaySession(o)
	case opAudit:
		return s.replayAudit(o)
	}
	return s.replay(o)
}
