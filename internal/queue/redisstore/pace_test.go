package redisstore

import (
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// TestPaceSettings: the pace block carries only paceSettings of the config
// (the rest take their defaults when Go reads it), so no other setting may
// change a queue.LinePace. A new setting LinePace reads fails here until it
// is added to paceSettings.
func TestPaceSettings(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000).UTC()
	states := []queue.PaceState{
		{Now: now, Length: 10, Moved: now.Add(-5 * time.Second), PaceRate: 3, PaceBusy: 120, Reach: 40},
		{Now: now, Length: 10, Moved: now, EffectiveRate: 7, Pending: true},
		{Now: now, Placing: true},
	}
	for _, s := range queue.Settings {
		if slices.Contains(paceSettings, s.Field) {
			continue
		}
		for _, raw := range append([]string{"0", "1", "3", "60000", "1700000000000", "x"}, s.Choices...) {
			c, err := queue.ConfigFromFields(func(field string) (string, bool) {
				if field == s.Field {
					return raw, true
				}
				return storedDefaults[field], true
			})
			if err != nil {
				continue // not a value this setting takes
			}
			for _, st := range states {
				base := st
				base.Config, st.Config = queue.DefaultConfig(), c
				if got, want := queue.LinePace(st), queue.LinePace(base); got != want {
					t.Errorf("%s = %q changes the pace (%+v, not %+v): add it to paceSettings", s.Field, raw, got, want)
				}
			}
		}
	}
}
