package redisstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
)

var (
	rollScript = mustScript("roll")
	rowsScript = mustScript("rows")
)

// rollWrite is a rollup.Write as roll.lua reads it: every map present,
// so the script needs no guard for a missing one.
type rollWrite struct {
	Add map[string]int64  `json:"add"`
	Max map[string]int64  `json:"max"`
	Min map[string]int64  `json:"min"`
	Set map[string]string `json:"set"`
}

// orEmpty is m, or an empty map for nil (JSON {} rather than null).
func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// Roll implements queue.Store: the minute is this instance's clock's,
// which every instance keeps close to the others' (NTP); a write near a
// minute's edge may land in the next, which only moves it by a second.
func (s *Store) Roll(ctx context.Context, name string, w rollup.Write) error {
	arg, err := json.Marshal(rollWrite{Add: orEmpty(w.Add), Max: orEmpty(w.Max), Min: orEmpty(w.Min), Set: orEmpty(w.Set)})
	if err != nil {
		return err
	}
	minute := time.Now().Truncate(time.Minute).UnixMilli()
	err = s.run(ctx, rollScript, name, []any{max(w.Keep.Milliseconds(), 1), string(arg)}, minuteKey(s.prefix, name, minute)).Err()
	return unavailable(err)
}

// rowsPerCall bounds the rows one call of rows.lua reads: a day's minutes
// take three calls, each a short stop of Redis.
const rowsPerCall = 500

// Rollups implements queue.Store.
func (s *Store) Rollups(ctx context.Context, name string, since, until time.Time) ([]rollup.Row, error) {
	var out []rollup.Row
	var keys []string
	var minutes []time.Time
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		r, err := s.run(ctx, rowsScript, name, nil, keys...).Slice()
		if err != nil {
			return unavailable(err)
		}
		for i, raw := range r {
			kv, _ := raw.([]any)
			if len(kv) == 0 {
				continue
			}
			row := rollup.Row{Minute: minutes[i].UTC(), Fields: make(map[string]string, len(kv)/2)}
			for j := 0; j+1 < len(kv); j += 2 {
				k, _ := kv[j].(string)
				v, _ := kv[j+1].(string)
				row.Fields[k] = v
			}
			out = append(out, row)
		}
		keys, minutes = keys[:0], minutes[:0]
		return nil
	}
	for m := since.Truncate(time.Minute); !m.After(until); m = m.Add(time.Minute) {
		keys, minutes = append(keys, minuteKey(s.prefix, name, m.UnixMilli())), append(minutes, m)
		if len(keys) == rowsPerCall {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	return out, flush()
}
