package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
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

	// What the phase changes; nil: the queue's own. A rate of its own is a
	// fixed rate: the adaptive rate rests while the phase lasts.
	RatePerSecond   *float64
	Method          *QueueingMethod
	MaxActiveTokens *int64
	SessionMax      *time.Duration
	Join            *JoinPolicy
	Message         *Message
}

// maxPhases bounds a queue's phases: a sale's steps, not a calendar.
const maxPhases = 8

// phaseName is what a phase may be called: it names a metric's label and
// a page template's directory.
var phaseName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// InForce is c as it stands at now: the queue's own settings with those of
// the phase in force then (Phases) put over them; PhaseInForce names it.
func (c Config) InForce(now time.Time) Config {
	p, ok := c.phaseAt(now)
	if !ok {
		return c
	}
	c.PhaseInForce, c.PageTemplate = p.Name, p.Template
	if p.RatePerSecond != nil {
		c.RatePerSecond, c.Adaptive = *p.RatePerSecond, false
		c.RateDerivation = fmt.Sprintf("phase %s: %v/s", p.Name, *p.RatePerSecond)
	}
	if p.Method != nil {
		c.Method = *p.Method
	}
	if p.MaxActiveTokens != nil {
		c.MaxActiveTokens = *p.MaxActiveTokens
	}
	if p.SessionMax != nil {
		c.SessionMax = *p.SessionMax
	}
	if p.Join != nil {
		c.Join = *p.Join
	}
	if p.Message != nil {
		c.Message = *p.Message
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
		seen[p.Name] = true
		in := c.InForce(p.StartsAt)
		in.Phases = nil
		if err := in.Validate(); err != nil {
			return bad("%v", err)
		}
	}
	return nil
}

// phaseJSON is a phase as the admin API and the queues file give it and
// the store keeps it: the overridden settings by their names.
type phaseJSON struct {
	Name              string          `json:"name"`
	StartsAt          string          `json:"startsAt"`
	EndsAt            string          `json:"endsAt,omitempty"`
	PreQueue          bool            `json:"preQueue,omitempty"`
	RatePerSecond     *float64        `json:"ratePerSecond,omitempty"`
	QueueingMethod    *string         `json:"queueingMethod,omitempty"`
	MaxActiveTokens   *int64          `json:"maxActiveTokens,omitempty"`
	SessionMaxSeconds *int64          `json:"sessionMaxSeconds,omitempty"`
	Entry             *string         `json:"entry,omitempty"`
	Message           json.RawMessage `json:"message,omitempty"`
	Template          string          `json:"template,omitempty"`
}

// parsePhases reads phases as JSON ("" or null: none), each overridden
// setting checked as the setting itself is (its range, its choices).
func parsePhases(raw []byte) ([]Phase, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var list []phaseJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("%w: phases must be a list of phases (name, startsAt, endsAt, preQueue, ratePerSecond, queueingMethod, maxActiveTokens, sessionMaxSeconds, entry, message, template): %v",
			ErrInvalidConfig, err)
	}
	out := make([]Phase, len(list))
	for i, j := range list {
		p, err := j.phase()
		if err != nil {
			return nil, fmt.Errorf("phases[%d] (%s): %w", i, j.Name, err)
		}
		out[i] = p
	}
	return out, nil
}

// phase is j as a Phase, each setting through its row (Setting.Set), so
// a phase takes what the queue's own setting takes.
func (j phaseJSON) phase() (Phase, error) {
	p := Phase{Name: j.Name, PreQueue: j.PreQueue, Template: j.Template}
	var err error
	if p.StartsAt, err = parsePhaseInstant("startsAt", j.StartsAt); err != nil {
		return p, err
	}
	if p.EndsAt, err = parsePhaseInstant("endsAt", j.EndsAt); err != nil {
		return p, err
	}
	var c Config
	for _, o := range []struct {
		setting string
		value   any // nil: not given
	}{
		{"ratePerSecond", given(j.RatePerSecond)}, {"queueingMethod", given(j.QueueingMethod)},
		{"maxActiveTokens", given(j.MaxActiveTokens)}, {"sessionMaxSeconds", given(j.SessionMaxSeconds)}, {"entry", given(j.Entry)},
	} {
		if o.value == nil {
			continue
		}
		s, _ := SettingNamed(o.setting)
		if err := s.Set(&c, o.value); err != nil {
			return p, err
		}
		switch o.setting {
		case "ratePerSecond":
			p.RatePerSecond = &c.RatePerSecond
		case "queueingMethod":
			p.Method = &c.Method
		case "maxActiveTokens":
			p.MaxActiveTokens = &c.MaxActiveTokens
		case "sessionMaxSeconds":
			p.SessionMax = &c.SessionMax
		case "entry":
			p.Join = &c.Join
		}
	}
	if len(j.Message) > 0 {
		m, err := messageFromStore(string(j.Message))
		if err != nil {
			return p, fmt.Errorf("%w: message must be a string or an object of strings by language: %v", ErrInvalidConfig, err)
		}
		p.Message = &m
	}
	return p, nil
}

// given is *v as Setting.Set takes it, or nil when v is.
func given[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}

func parsePhaseInstant(name, s string) (time.Time, error) {
	t, err := parseInstant(s)
	if err != nil {
		return t, fmt.Errorf("%w: %s must be an RFC 3339 time such as 2026-12-24T20:00:00+09:00, got %q", ErrInvalidConfig, name, s)
	}
	return t, nil
}

// phasesJSON is phases as parsePhases reads them ("" for none).
func phasesJSON(phases []Phase) string {
	if len(phases) == 0 {
		return ""
	}
	list := make([]phaseJSON, len(phases))
	for i, p := range phases {
		j := phaseJSON{Name: p.Name, StartsAt: formatInstant(p.StartsAt), EndsAt: formatInstant(p.EndsAt), PreQueue: p.PreQueue,
			RatePerSecond: p.RatePerSecond, MaxActiveTokens: p.MaxActiveTokens, Template: p.Template}
		if p.Method != nil {
			m := string(*p.Method)
			j.QueueingMethod = &m
		}
		if p.SessionMax != nil {
			s := int64(*p.SessionMax / time.Second)
			j.SessionMaxSeconds = &s
		}
		if p.Join != nil {
			e := string(*p.Join)
			j.Entry = &e
		}
		if p.Message != nil {
			j.Message = json.RawMessage(p.Message.stored)
			if p.Message.empty() {
				j.Message = json.RawMessage(`""`)
			}
		}
		list[i] = j
	}
	b, _ := json.Marshal(list)
	return string(b)
}

// formatInstant is t as the admin JSON gives an instant ("" for none).
func formatInstant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
