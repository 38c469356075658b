package redisstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// Keys names one queue's keys, for tests that reach into Redis to do what
// only an outage or an operator would (a clock step, a corrupted config).
type Keys struct {
	Line, Seq, Cfg, Tokens, Texp, Inflight, Owners, Left, Samples string
}

// KeysOf returns the keys of queue under prefix. The admission state is
// in Cfg (keys.go).
func KeysOf(prefix, queue string) Keys {
	k := keysFor(prefix, queue)
	return Keys{k[kLine], k[kSeq], k[kCfg], k[kTokens], k[kTexp], k[kInflight], k[kOwners], k[kLeft], k[kSamples]}
}

// RollAt is Roll into the row of the minute starting at minute, whatever
// the clock says: for a test that fills a day's rows at once.
func (s *Store) RollAt(ctx context.Context, name string, minute time.Time, w rollup.Write) error {
	arg, _ := json.Marshal(rollWrite{Add: orEmpty(w.Add), Max: orEmpty(w.Max), Min: orEmpty(w.Min), Set: orEmpty(w.Set)})
	return s.run(ctx, rollScript, name, []any{max(w.Keep.Milliseconds(), 1), string(arg)}, minuteKey(s.prefix, name, minute.UnixMilli())).Err()
}

// MinuteKey is the key of queue's row of the minute starting at minute.
func MinuteKey(prefix, queue string, minute time.Time) string {
	return minuteKey(prefix, queue, minute.UnixMilli())
}
