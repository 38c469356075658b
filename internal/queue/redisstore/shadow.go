package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/suspect"
)

// The shadow line (issue 51): enter_shadow.lua, suspects.lua and
// clear_suspect.lua; status, leave, admission, the snapshot and the stats
// read it in their own scripts (the prelude's standing, unmark, lineHead).
var (
	enterShadowScript  = mustScript("enter_shadow")
	suspectsScript     = mustScript("suspects")
	clearSuspectScript = mustScript("clear_suspect")
)

// EnterShadow implements queue.Store.
func (s *Store) EnterShadow(ctx context.Context, name, user string, mark suspect.Mark) (queue.Standing, error) {
	args := make([]any, 0, 2+len(mark.Signals))
	args = append(args, user, mark.Address)
	for _, sig := range mark.Signals {
		args = append(args, sig)
	}
	r, err := s.run(ctx, enterShadowScript, name, args).Slice()
	if err != nil {
		return queue.Standing{}, unavailable(err)
	}
	switch kind, _ := r[0].(int64); kind {
	case kindLineFull:
		return queue.Standing{}, queue.ErrQueueFull
	case kindSoldOut:
		return queue.Standing{}, queue.ErrSoldOut
	}
	return parseEntry(r, enterShadowScript)
}

// Suspects implements queue.Store.
func (s *Store) Suspects(ctx context.Context, name string, limit int) ([]suspect.Place, error) {
	r, err := s.run(ctx, suspectsScript, name, []any{limit}).Slice()
	if err != nil {
		return nil, unavailable(err)
	}
	p := reply{r: r}
	if len(r) == 1 && p.int(0) == kindUnknownQueue {
		return nil, queue.ErrQueueNotFound
	}
	out := make([]suspect.Place, 0, len(r)/4)
	for i := 0; i+3 < len(r); i += 4 {
		sus := suspect.Place{Ticket: int64(p.float(i + 1)), Joined: waited(r, i+3, time.Time{}).Entered}
		behind, rest, _ := strings.Cut(p.str(i+2), "|")
		sus.Behind, _ = strconv.ParseInt(behind, 10, 64)
		sus.Address, rest, _ = strings.Cut(rest, "|")
		if rest != "" {
			sus.Signals = strings.Split(rest, ",")
		}
		out = append(out, sus)
	}
	return out, p.err
}

// ClearSuspect implements queue.Store.
func (s *Store) ClearSuspect(ctx context.Context, name string, ticket int64) (bool, error) {
	r, err := s.run(ctx, clearSuspectScript, name, []any{ticket}).Result()
	if err != nil {
		return false, unavailable(err)
	}
	if l, ok := r.([]any); ok && len(l) == 1 && l[0] == int64(kindUnknownQueue) {
		return false, queue.ErrQueueNotFound
	}
	n, _ := r.(int64)
	return n == 1, nil
}
