package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/handoff"
	"github.com/waitroom/waitroom/internal/queue"
)

// Handoffs (issue 55): put_handoff.lua and claim_handoff.lua.
var (
	putHandoffScript   = mustScript("put_handoff")
	claimHandoffScript = mustScript("claim_handoff")
)

// handoffKey holds a handoff code's user, by the code's hash, for the
// code's lifetime; movedKey marks a user whose place moved away. Both are
// passed after the queue's keys, as usedKey is, and lapse by themselves.
func handoffKey(prefix, queue, codeHash string) string {
	return prefix + "{" + queue + "}:handoff:" + codeHash
}

func movedKey(prefix, queue, user string) string { return prefix + "{" + queue + "}:moved:" + user }

// PutHandoff implements queue.Store.
func (s *Store) PutHandoff(ctx context.Context, name, user, codeHash string, ttl time.Duration) (time.Time, error) {
	r, err := s.run(ctx, putHandoffScript, name, []any{user, max(ttl.Milliseconds(), 1)}, handoffKey(s.prefix, name, codeHash)).Slice()
	if err != nil {
		return time.Time{}, unavailable(err)
	}
	p := reply{r: r}
	switch p.int(0) {
	case kindUnknownQueue:
		return time.Time{}, queue.ErrQueueNotFound
	case kindNotInLine:
		return time.Time{}, handoff.ErrNoPlace
	}
	return p.ms(1), p.err
}

// ClaimHandoff implements queue.Store: it reads whose place the code
// carries, so that the script is given that user's keys, and the script
// checks the code still names them.
func (s *Store) ClaimHandoff(ctx context.Context, name, codeHash, user string) (string, queue.Standing, error) {
	code := handoffKey(s.prefix, name, codeHash)
	from, err := s.rdb.Get(ctx, code).Result()
	if errors.Is(err, redis.Nil) {
		return "", queue.Standing{}, handoff.ErrGone
	}
	if err != nil {
		return "", queue.Standing{}, unavailable(err)
	}
	args := []any{from, user, handoff.MovedFor.Milliseconds()}
	r, err := s.run(ctx, claimHandoffScript, name, args, code, sessionKey(s.prefix, name, from), sessionKey(s.prefix, name, user),
		movedKey(s.prefix, name, from), movedKey(s.prefix, name, user)).Slice()
	if err != nil {
		return "", queue.Standing{}, unavailable(err)
	}
	switch (&reply{r: r}).int(0) {
	case kindHandoffGone:
		return "", queue.Standing{}, handoff.ErrGone
	case kindInLineAlready:
		return "", queue.Standing{}, handoff.ErrAlreadyInLine
	case kindInUse:
		return "", queue.Standing{}, queue.ErrTokenInUse
	}
	e, err := parseEntry(r, claimHandoffScript)
	return from, e, err
}
