//go:build historybugs

package app

import (
	"context"
	"os"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
)

// HistoryBugEnv names the deliberate bug a -tags historybugs build puts in
// the line, for the fairness check to catch (internal/fairness): read when
// an instance starts.
//
//	admit-resend  admit.lua without its guards (the tick read unchanged,
//	              the users read still in line): sent again, or applied
//	              after another instance's plan, it admits again
//	split-enter   enter reads the line's length, then joins, in two steps
//	early-spend   a token is spent before the protected call has answered
const HistoryBugEnv = "WAITROOM_HISTORY_BUG"

func withHistoryBug(s queue.Store) queue.Store {
	switch os.Getenv(HistoryBugEnv) {
	case "admit-resend":
		if rs, ok := s.(*redisstore.Store); ok {
			return unguardedAdmit{rs}
		}
	case "split-enter":
		return splitEnter{s}
	case "early-spend":
		return earlySpend{s}
	}
	return s
}

// unguardedAdmit applies admission's plans with admit.lua's guards taken
// out; go-redis sends admit.lua again by itself when a reply is later than
// its read timeout (the network faults' stalls).
type unguardedAdmit struct{ *redisstore.Store }

func (b unguardedAdmit) Admit(ctx context.Context, q string, tokens []string) (queue.Admission, error) {
	return b.AdmitWithoutGuard(ctx, q, tokens)
}

// splitEnter tells a newcomer the position read before joining: two
// requests entering at once are both told the same place.
type splitEnter struct{ queue.Store }

func (b splitEnter) Enter(ctx context.Context, q, user string) (queue.Standing, error) {
	before, err := b.Store.Status(ctx, q, user)
	if err != nil {
		return queue.Standing{}, err
	}
	sn, err := b.Snapshot(ctx, q)
	if err != nil {
		return queue.Standing{}, err
	}
	e, err := b.Store.Enter(ctx, q, user)
	if err == nil && before.State == queue.NotInQueue && e.State == queue.Waiting && !e.PreQueue {
		e.Position, e.Length = sn.Length+1, sn.Length+1
	}
	return e, err
}

// earlySpend consumes the token as soon as its use begins, before the
// protected call has answered: a failed order loses it.
type earlySpend struct{ queue.Store }

func (b earlySpend) BeginUse(ctx context.Context, q, user, token, owner string, lock time.Duration) error {
	if err := b.Store.BeginUse(ctx, q, user, token, owner, lock); err != nil {
		return err
	}
	return b.Store.EndUse(ctx, q, user, token, owner, true)
}
