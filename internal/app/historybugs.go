//go:build historybugs

package app

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
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
//	lane-shares-reversed
//	              a queue's lanes are kept with their shares in reverse
//	              order: each lane is let in by another's share
//	lanes-ignored a join in a lane takes a place in the public line
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
	case "lane-shares-reversed":
		return reversedShares{s}
	case "lanes-ignored":
		return lanesIgnored{s}
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

// reversedShares keeps a queue's lanes with the shares of its lanes in
// reverse order: every answer is right within its lane, and admission
// lets the lanes in by the wrong shares.
type reversedShares struct{ queue.Store }

func (b reversedShares) PutConfig(ctx context.Context, q string, c queue.Config) error {
	lanes := slices.Clone(c.Lanes)
	for i := range lanes {
		lanes[i].Share = c.Lanes[len(lanes)-1-i].Share
	}
	c.Lanes = lanes
	return b.Store.PutConfig(ctx, q, c)
}

// lanesIgnored places everyone in the public line, whatever their lane.
type lanesIgnored struct{ queue.Store }

func (b lanesIgnored) Join(ctx context.Context, q, user string, _ lane.Join) (queue.Standing, error) {
	return b.Store.Enter(ctx, q, user)
}
