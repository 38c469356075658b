package redisstore

import (
	"fmt"
	"slices"
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

// storedDefaults are the default config's fields as stored.
var storedDefaults = func() map[string]string {
	f := queue.StoreFields(queue.DefaultConfig())
	m := make(map[string]string, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		m[f[i]] = f[i+1]
	}
	return m
}()

// config reads, from index i on, the config fields named in fields (as a
// script's config reader lists them), by name. A setting not among fields was
// not read and takes its default: the reply of a script that reads part of
// the config (the pace block's) is read only for that part.
func (p *reply) config(i int, fields []string) (queue.Config, error) {
	c, err := queue.ConfigFromFields(func(field string) (string, bool) {
		j := slices.Index(fields, field)
		if j < 0 {
			return storedDefaults[field], true
		}
		return p.opt(i + j), i+j < len(p.r) && p.r[i+j] != nil
	})
	if err != nil {
		return c, fmt.Errorf("redis data damaged: %w", err)
	}
	return c, p.err
}

// paceSettings are the config fields queue.LinePace reads, which the pace
// block carries (TestPaceSettings checks that no other setting changes a
// Pace).
var paceSettings = []string{"rate", "batch", "interval_ms", "paused", "adaptive", "min_rate", "max_rate", "opens_at", "method"}

// paceFields are the admission hash's fields queue.LinePace reads, which
// the pace block carries.
var paceFields = []string{"eff_rate", "pace_rate", "pace_busy", "moved", "reach", "open_state"}

// paceLen is how many fields sc's pace block has: the config and
// admission fields its readers read, now and the line's length.
func (sc *script) paceLen() int { return len(sc.cfg) + len(sc.adm) + 2 }

// parsedConfig is a config as a reply carried its fields, and parsed.
type parsedConfig struct {
	fields []any
	c      queue.Config
}

// paceConfig reads the config fields of sc's pace block from index i on:
// as sc's last pace block if they are the same (a queue's config changes
// rarely, and parsing it was a quarter of an enter's time in Go: issue 24),
// else parsed, and remembered when sound.
func (p *reply) paceConfig(i int, sc *script) (queue.Config, error) {
	n := len(sc.cfg)
	if i+n > len(p.r) {
		return p.config(i, sc.cfg)
	}
	fields := p.r[i : i+n]
	if last := sc.paceConfig.Load(); last != nil && slices.Equal(last.fields, fields) {
		return last.c, nil
	}
	c, err := p.config(i, sc.cfg)
	if err == nil {
		sc.paceConfig.Store(&parsedConfig{fields: slices.Clone(fields), c: c})
	}
	return c, err
}

// pace reads sc's pace block from index i on: the line's Pace and its epoch
// (0: a config written before epochs).
func (p *reply) pace(i int, sc *script) (queue.Pace, int64) {
	st, epoch := p.paceState(i, sc)
	return queue.LinePace(st), epoch
}

// paceState reads sc's pace block from index i on: the line's state as
// queue.LinePace takes it, and its epoch.
func (p *reply) paceState(i int, sc *script) (queue.PaceState, int64) {
	c, err := p.paceConfig(i, sc)
	if err != nil && p.err == nil {
		p.err = err
	}
	at := i + slices.Index(sc.cfg, "epoch")
	epoch, err := strconv.ParseInt(p.opt(at), 10, 64)
	if err != nil && p.opt(at) != "" && p.err == nil {
		p.err = fmt.Errorf("the line's epoch: %w", err)
	}
	adm := func(field string) int { return i + len(sc.cfg) + slices.Index(sc.adm, field) }
	state, end := p.opt(adm("open_state")), i+len(sc.cfg)+len(sc.adm)
	return queue.PaceState{
		Config: c, EffectiveRate: p.float(adm("eff_rate")), PaceRate: p.float(adm("pace_rate")), PaceBusy: p.float(adm("pace_busy")),
		Moved: p.ms(adm("moved")), Reach: int64(p.float(adm("reach"))), Pending: !c.OpensAt.IsZero() && state == "",
		Placing: state == "placing", Now: p.ms(end), Length: p.int(end + 1),
	}, epoch
}

// luaList is a Lua table of strings named name, for the prelude.
func luaList(name string, items []string) string {
	return "local " + name + " = {'" + strings.Join(items, "', '") + "'}\n"
}
