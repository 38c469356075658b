package redisstore

import (
	"reflect"
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
				base.Config, st.Config = queue.InForce{Config: queue.DefaultConfig()}, queue.InForce{Config: c}
				if got, want := queue.LinePace(st), queue.LinePace(base); !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %q changes the pace (%+v, not %+v): add it to paceSettings", s.Field, raw, got, want)
				}
			}
		}
	}
}

// TestPaceConfigRemembered: a pace block whose config fields are those of
// the last one is read as the last one was, and one that differs in any
// field is parsed again (a rate changed through another instance shows in
// the next answer), a damaged one never remembered.
func TestPaceConfigRemembered(t *testing.T) {
	sc := &script{}
	block := func(rate string) []any {
		r := make([]any, paceLen)
		for i, f := range paceConfigFields {
			if v, ok := storedDefaults[f]; ok {
				r[i] = v
			}
		}
		r[slices.Index(paceConfigFields, "rate")] = rate
		r[len(r)-2], r[len(r)-1] = int64(1_800_000_000_000), int64(5)
		return r
	}
	for _, step := range []struct {
		rate string
		want float64 // 0: damaged
	}{{"100", 100}, {"100", 100}, {"7", 7}, {"x", 0}, {"7", 7}, {"100", 100}} {
		p := reply{r: block(step.rate)}
		c, err := p.paceConfig(0, sc)
		switch {
		case step.want == 0 && err == nil:
			t.Errorf("rate %q read as %v, want an error", step.rate, c.RatePerSecond)
		case step.want != 0 && (err != nil || c.RatePerSecond != step.want):
			t.Errorf("rate %q read as %v, %v; want %v", step.rate, c.RatePerSecond, err, step.want)
		}
	}
}

func BenchmarkPaceConfig(b *testing.B) {
	p := reply{r: make([]any, paceLen)}
	for i, f := range paceConfigFields {
		if v, ok := storedDefaults[f]; ok {
			p.r[i] = v
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.paceConfig(0, statusScript); err != nil {
			b.Fatal(err)
		}
	}
}
