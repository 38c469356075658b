package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Phase is one step of a queue's sale (the phases setting): from StartsAt
// until EndsAt (zero: until the next phase starts, or for good) some of the
// queue's settings are others — members first by a fair draw at 50/s,
// then the public first-come at 100/s, each with its own message. Between
// phases, and before the first, the queue's own settings are in force.
// People in line when a phase ends keep their places into the next.
type Phase struct {
	Name             string
	StartsAt, EndsAt time.Time
	// PreQueue (the first phase only): the queue opens at StartsAt, as with
	// opensAt: whoever comes before waits in a pre-queue and is placed in
	// the line in a uniformly random order at StartsAt.
	PreQueue bool
	// Template names the waiting page's template for the phase
	// (--page-dir's templates/{name}/waiting.html; "": the queue's).
	Template string
	// Overrides are what the phase changes, by the settings' names (only
	// rows with Phased), each a value as the row's Set takes it; the
	// queue's own for the rest.
	Overrides map[string]any
}

// maxPhases bounds a queue's phases: a sale's steps, not a calendar.
const maxPhases = 8

// phaseName is what a phase may be called: it names a metric's label and
// a page template's directory.
var phaseName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// InForce is a queue's settings as they stand at a moment (Config.InForce):
// the stored ones with the phase in force then put over them. The planners
// take it, not a Config, so settings read without their phase do not
// compile.
type InForce struct {
	Config
	// PhaseInForce names the phase whose settings these are ("": the
	// queue's own), and PageTemplate its page template.
	PhaseInForce, PageTemplate string
	// Own is the queue's own settings while a phase is in force (zero
	// otherwise: Config is then its own). What comes after the phase is
	// worked out from it: Config, with the phase put over it, would read
	// the phase's settings into the stretches after it ends.
	Own Config
}

// InForce is c as it stands at now: the queue's own settings with those of
// the phase in force then (Phases) put over them, row by phased row.
func (c Config) InForce(now time.Time) InForce {
	p, ok := c.phaseAt(now)
	if !ok {
		return InForce{Config: c} // on the hot path: allocates nothing
	}
	return InForce{Config: p.over(c), PhaseInForce: p.Name, PageTemplate: p.Template, Own: c}
}

// over is c with p's overrides put over it, each by its row's Set.
func (p Phase) over(c Config) Config {
	for _, s := range Settings {
		v, ok := p.Overrides[s.Name]
		if !ok || !s.Phased {
			continue
		}
		_ = s.Set(&c, v) // held to the row when the phase was read or validated
		if s.inPhase != nil {
			s.inPhase(&c, p.Name)
		}
	}
	return c
}

// phaseAt is the phase in force at now: the last to start by then, unless
// it has ended.
func (c Config) phaseAt(now time.Time) (Phase, bool) {
	for i := len(c.Phases) - 1; i >= 0; i-- {
		p := c.Phases[i]
		if !now.Before(p.StartsAt) {
			return p, p.EndsAt.IsZero() || now.Before(p.EndsAt)
		}
	}
	return Phase{}, false
}

// Schedule is which settings are in force when, from now on: a step per
// phase, and one (named "") for each stretch in which the queue's own
// settings are, the last step without an end. InForce(step.StartsAt) is
// what each step runs with.
func (c Config) Schedule(now time.Time) []Phase {
	var steps []Phase
	own := func(from, until time.Time) {
		if until.IsZero() || until.After(from) {
			steps = append(steps, Phase{StartsAt: from, EndsAt: until})
		}
	}
	from := now
	for i, p := range c.Phases {
		end := p.EndsAt
		if end.IsZero() && i+1 < len(c.Phases) {
			end = c.Phases[i+1].StartsAt
		}
		if !end.IsZero() && !end.After(now) {
			continue // over
		}
		if p.StartsAt.After(from) {
			own(from, p.StartsAt)
		}
		steps = append(steps, p)
		if end.IsZero() {
			return steps
		}
		from = end
	}
	own(from, time.Time{})
	return steps
}

// validatePhases holds c's phases to their rules: at most maxPhases, named
// once each, in order and apart, a pre-queue only on the first (it is the
// queue's opening), and each one's settings, over c's, a config that works.
func (c Config) validatePhases() error {
	if len(c.Phases) > maxPhases {
		return fmt.Errorf("%w: phases: %d phases, at most %d", ErrInvalidConfig, len(c.Phases), maxPhases)
	}
	seen := map[string]bool{}
	for i, p := range c.Phases {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: phases[%d] (%s): %s", ErrInvalidConfig, i, p.Name, fmt.Sprintf(format, args...))
		}
		switch {
		case !phaseName.MatchString(p.Name):
			return bad("name must be 1 to 40 of a-z, 0-9, - and _, starting with a letter or digit")
		case seen[p.Name]:
			return bad("the name is taken by an earlier phase")
		case p.StartsAt.IsZero():
			return bad("startsAt is required")
		case !p.EndsAt.IsZero() && !p.EndsAt.After(p.StartsAt):
			return bad("endsAt is not after startsAt")
		case i > 0 && !p.StartsAt.After(c.Phases[i-1].StartsAt):
			return bad("starts no later than the phase before it: list phases in the order they start")
		case i > 0 && !c.Phases[i-1].EndsAt.IsZero() && c.Phases[i-1].EndsAt.After(p.StartsAt):
			return bad("starts before the phase before it ends")
		case i > 0 && p.PreQueue:
			return bad("preQueue is for the first phase, the queue's opening: later phases follow a line that is already open")
		case p.PreQueue && !c.OpensAt.Equal(p.StartsAt):
			return bad("preQueue opens the queue at startsAt, so opensAt must be empty or the same instant")
		case p.Template != "" && !phaseName.MatchString(p.Template):
			return bad("template must be 1 to 40 of a-z, 0-9, - and _, starting with a letter or digit")
		}
		if err := p.checkOverrides(); err != nil {
			return bad("%v", err)
		}
		seen[p.Name] = true
		in := c.InForce(p.StartsAt).Config
		in.Phases = nil
		if err := in.Validate(); err != nil {
			return bad("%v", err)
		}
	}
	return nil
}

// checkOverrides holds each of p's overrides to its row: a setting a
// phase may change (Phased), of a value its Set takes.
func (p Phase) checkOverrides() error {
	var c Config
	n := 0
	for _, s := range Settings {
		v, ok := p.Overrides[s.Name]
		if !ok {
			continue
		}
		n++
		if !s.Phased {
			return fmt.Errorf("%w: %s is not a setting a phase may change", ErrInvalidConfig, s.Name)
		}
		if err := s.Set(&c, v); err != nil {
			return err
		}
	}
	if n != len(p.Overrides) {
		return fmt.Errorf("%w: a phase overrides a setting that does not exist", ErrInvalidConfig)
	}
	return nil
}

// phaseFixed are a phase's own fields in JSON, beside the settings it
// overrides (the phased rows, by their names).
type phaseFixed struct {
	Name     string `json:"name"`
	StartsAt string `json:"startsAt"`
	EndsAt   string `json:"endsAt,omitempty"`
	PreQueue bool   `json:"preQueue,omitempty"`
	Template string `json:"template,omitempty"`
}

// phaseKeys are the names a phase's JSON object may hold, in the order
// phasesJSON writes them: its own fields and the phased settings.
func phaseKeys() []string {
	keys := []string{"name", "startsAt", "endsAt", "preQueue"}
	for _, s := range Settings {
		if s.Phased {
			keys = append(keys, s.Name)
		}
	}
	return append(keys, "template")
}

// parsePhases reads phases as JSON ("" or null: none), as the admin API and
// the queues file give them and the store keeps them: each an object of a
// phase's own fields and the settings it overrides by their names, each
// checked as the setting itself is (its row's Set: its range, its choices).
func parsePhases(raw []byte) ([]Phase, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var list []map[string]json.RawMessage
	err := json.Unmarshal(raw, &list)
	for i := 0; err == nil && i < len(list); i++ {
		for _, k := range slices.Sorted(maps.Keys(list[i])) {
			if !slices.Contains(phaseKeys(), k) {
				err = fmt.Errorf("json: unknown field %q", k)
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: phases must be a list of phases (%s): %v", ErrInvalidConfig, strings.Join(phaseKeys(), ", "), err)
	}
	out := make([]Phase, len(list))
	for i, j := range list {
		p, err := phaseFrom(j)
		if err != nil {
			return nil, fmt.Errorf("phases[%d] (%s): %w", i, p.Name, err)
		}
		out[i] = p
	}
	return out, nil
}

// phaseFrom is the phase one JSON object gives, each override through its
// row (Setting.Set), so a phase takes what the queue's own setting takes.
func phaseFrom(obj map[string]json.RawMessage) (Phase, error) {
	var f phaseFixed
	whole, _ := json.Marshal(obj)
	if err := json.Unmarshal(whole, &f); err != nil {
		return Phase{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	p := Phase{Name: f.Name, PreQueue: f.PreQueue, Template: f.Template}
	var err error
	if p.StartsAt, err = parsePhaseInstant("startsAt", f.StartsAt); err != nil {
		return p, err
	}
	if p.EndsAt, err = parsePhaseInstant("endsAt", f.EndsAt); err != nil {
		return p, err
	}
	var c Config
	for _, s := range Settings {
		raw, ok := obj[s.Name]
		if !ok || !s.Phased || string(raw) == "null" {
			continue
		}
		v, err := s.fromJSON(raw)
		if err == nil {
			err = s.Set(&c, v)
		}
		if err != nil {
			return p, err
		}
		if p.Overrides == nil {
			p.Overrides = map[string]any{}
		}
		p.Overrides[s.Name] = v
	}
	return p, nil
}

// fromJSON is a JSON value as the row's Set takes it (Set checks it).
func (s Setting) fromJSON(raw json.RawMessage) (any, error) {
	decode := func(v any) (any, error) {
		if err := json.Unmarshal(raw, v); err != nil {
			return nil, fmt.Errorf("%w: %s must be a %s: %v", ErrInvalidConfig, s.Name, s.Kind, err)
		}
		return reflect.ValueOf(v).Elem().Interface(), nil
	}
	switch s.Kind {
	case Number:
		return decode(new(float64))
	case Integer, Duration:
		return decode(new(int64))
	case Bool:
		return decode(new(bool))
	case TextByLanguage:
		if m, err := decode(new(map[string]string)); err == nil {
			return m, nil
		}
	}
	return decode(new(string))
}

func parsePhaseInstant(name, s string) (time.Time, error) {
	t, err := parseInstant(s)
	if err != nil {
		return t, fmt.Errorf("%w: %s must be an RFC 3339 time such as 2026-12-24T20:00:00+09:00, got %q", ErrInvalidConfig, name, s)
	}
	return t, nil
}

// phasesJSON is phases as parsePhases reads them ("" for none): each
// phase's fields in phaseKeys' order, a message as it is stored.
func phasesJSON(phases []Phase) string {
	if len(phases) == 0 {
		return ""
	}
	var b strings.Builder
	for i, p := range phases {
		b.WriteString(map[bool]string{true: "[", false: ","}[i == 0])
		f, _ := json.Marshal(phaseFixed{Name: p.Name, StartsAt: formatInstant(p.StartsAt), EndsAt: formatInstant(p.EndsAt), PreQueue: p.PreQueue})
		b.Write(f[:len(f)-1]) // open: the overrides follow
		var c Config
		for _, s := range Settings {
			v, ok := p.Overrides[s.Name]
			if !ok || s.Set(&c, v) != nil {
				continue
			}
			var out any = s.Value(c)
			if m, ok := s.value.get(&c).(Message); ok {
				out = json.RawMessage(m.stored)
				if m.empty() {
					out = ""
				}
			}
			k, _ := json.Marshal(s.Name)
			val, _ := json.Marshal(out)
			b.WriteString("," + string(k) + ":" + string(val))
		}
		if p.Template != "" {
			t, _ := json.Marshal(p.Template)
			b.WriteString(`,"template":` + string(t))
		}
		b.WriteString("}")
	}
	b.WriteString("]")
	return b.String()
}

// formatInstant is t as the admin JSON gives an instant ("" for none).
func formatInstant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
