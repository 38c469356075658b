//go:build historybugs

package redisstore

import (
	"context"

	"github.com/waitroom/waitroom/internal/queue"
)

// AdmitWithoutGuard is Admit with its guard against the same call sent
// again taken out (the call goes unnamed): a deliberate bug for the
// fairness check to catch, only in a build with -tags historybugs
// (internal/app/historybugs.go).
func (s *Store) AdmitWithoutGuard(ctx context.Context, name string, tokens []string) (queue.Admission, error) {
	return s.admit(ctx, name, tokens, false)
}
