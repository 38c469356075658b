package app

import "github.com/waitroom/waitroom/internal/staff"

// namedTokens is the checker of the named tokens (issue 56), kept by the
// line's store in its section for the staff: both stores keep them. It
// asks the store directly (on Redis, not through the auto-pipeline): a
// token is checked at most once a second per instance.
func (m *Main) namedTokens() *staff.Checker {
	tokens, ok := m.line.readyStore.(staff.TokenStore)
	if !ok {
		return nil // no named tokens: --admin-token and sign-in only
	}
	return staff.NewChecker(tokens, m.Clock)
}
