package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// reply reads a script's array reply, remembering the first malformed field
// instead of panicking on an unexpected type.
type reply struct {
	r   []any
	err error
}

func (p *reply) int(i int) int64 {
	if i < len(p.r) {
		if v, ok := p.r[i].(int64); ok {
			return v
		}
	}
	p.fail(i)
	return 0
}

func (p *reply) str(i int) string {
	if i < len(p.r) {
		if v, ok := p.r[i].(string); ok {
			return v
		}
	}
	p.fail(i)
	return ""
}

// opt reads a field that may be nil (a hash field not set) as "", and a
// number as its decimal text.
func (p *reply) opt(i int) string {
	if i >= len(p.r) {
		p.fail(i)
		return ""
	}
	switch v := p.r[i].(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	p.fail(i)
	return ""
}

func (p *reply) float(i int) float64 {
	v, err := strconv.ParseFloat(p.opt(i), 64)
	if err != nil && p.opt(i) != "" && p.err == nil {
		p.err = fmt.Errorf("unexpected script reply at %d: %v", i, p.r)
	}
	return v
}

// ms reads milliseconds since the epoch as a time (zero for none, or 0).
func (p *reply) ms(i int) time.Time {
	if v := int64(p.float(i)); v > 0 {
		return time.UnixMilli(v).UTC()
	}
	return time.Time{}
}

func (p *reply) fail(i int) {
	if p.err == nil {
		p.err = fmt.Errorf("unexpected script reply at %d: %v", i, p.r)
	}
}

// settingIndex is each config field's place in queue.Settings.
var settingIndex = func() map[string]int {
	m := map[string]int{}
	for i, s := range queue.Settings {
		m[s.Field] = i
	}
	return m
}()

// config reads the settings from index i on, in queue.Settings order (as
// the prelude's SETTINGS list them), by name.
func (p *reply) config(i int) (queue.Config, error) {
	c, err := queue.ConfigFromFields(func(field string) (string, bool) {
		j := i + settingIndex[field]
		return p.opt(j), j < len(p.r) && p.r[j] != nil
	})
	if err != nil {
		return c, fmt.Errorf("redis data damaged: %w", err)
	}
	return c, p.err
}

// paceFields are the admission hash's fields the pace block carries (the
// prelude's PACE).
var paceFields = []string{"eff_rate", "pace_rate", "pace_busy", "moved", "reach", "open_state"}

// paceLen is how many fields the prelude's pace block has: the epoch, the
// settings, PACE, now and the line's length.
var paceLen = 1 + len(queue.Settings) + len(paceFields) + 2

// pace reads the prelude's pace block from index i on: the line's Pace and
// its epoch (0: a config written before epochs).
func (p *reply) pace(i int) (queue.Pace, int64) {
	c, err := p.config(i + 1)
	if err != nil && p.err == nil {
		p.err = err
	}
	epoch, err := strconv.ParseInt(p.opt(i), 10, 64)
	if err != nil && p.opt(i) != "" && p.err == nil {
		p.err = fmt.Errorf("the line's epoch: %w", err)
	}
	a := i + 1 + len(queue.Settings)
	state := p.opt(a + 5)
	return queue.LinePace(queue.PaceState{
		Config: c, EffectiveRate: p.float(a), PaceRate: p.float(a + 1), PaceBusy: p.float(a + 2), Moved: p.ms(a + 3),
		Reach: int64(p.float(a + 4)), Pending: !c.OpensAt.IsZero() && state == "", Placing: state == "placing",
		Now: p.ms(a + 6), Length: p.int(a + 7),
	}), epoch
}

// luaList is a Lua table of strings named name, for the prelude.
func luaList(name string, items []string) string {
	return "local " + name + " = {'" + strings.Join(items, "', '") + "'}\n"
}
