// Package queuefile reads the queues an operator keeps as a file
// (`waitroom serve --queues FILE`): a YAML document naming queues and their
// settings. It owns the file's format and its errors, which name the file,
// the line and the setting; what a setting is, its range and its default,
// come from queue.Settings, the table the admin API validates by, so the
// file and the API can never disagree about a setting. Applying the file is
// the caller's: through the same queue service calls as the admin API.
package queuefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/webhook"
)

// File is a queues file, read and validated as a whole.
type File struct {
	// Name is the file's path, as given.
	Name string
	// Prune: queues in the store that the file does not name are removed
	// when it is applied (never the default queue).
	Prune bool
	// Queues are the file's queues, in the file's order.
	Queues []Queue
}

// Queue is one queue of the file and the config it asks for.
type Queue struct {
	Name string
	// Line is where the queue is named in the file.
	Line int
	// Config is the whole config the queue should have: the base config
	// (the command line's, for new queues) with the file's settings on it,
	// validated.
	Config queue.Config
	// Set names the settings the file gives, in the file's order.
	Set []string
	// UnitsLeft is the stock the queue starts the sale with (nil: the
	// file gives none). Not a setting: the sale counts it down, so it is
	// applied only while the queue's stock is not known, and a restart or
	// a reload mid-sale never puts back what was sold.
	UnitsLeft *int64
	// Webhooks are the URLs that receive this queue's events (package
	// webhook), beside --webhook's, which receive every queue's. Not a
	// setting: each instance reads them from its own file.
	Webhooks []string
}

// maxUnitsLeft bounds unitsLeft, as the admin API's restock bounds it.
const maxUnitsLeft = 1_000_000_000

// Queue returns the file's queue with the given name.
func (f *File) Queue(name string) (Queue, bool) {
	i := slices.IndexFunc(f.Queues, func(q Queue) bool { return q.Name == name })
	if i < 0 {
		return Queue{}, false
	}
	return f.Queues[i], true
}

// Parse reads a queues file named name from data. Every queue's config
// starts as base (the config PUT /admin/v1/queues/{queue} starts from) and
// takes the file's settings, each checked as the admin API checks it, then
// the whole config is validated. The first problem is the error, naming
// the file, the line and the setting; nothing is returned with it, so a
// caller applies a whole file or none of it.
//
//	prune: false          # optional
//	queues:
//	  spring-sale:
//	    ratePerSecond: 200
//	    message: {en: "…", ja: "…"}
//	    unitsLeft: 500    # optional: the stock the sale starts with
//	    webhooks: [https://shop.example/hooks/waitroom]   # optional
func Parse(name string, data []byte, base queue.Config) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f := &File{Name: name}
	bad := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d: "+format, append([]any{name, n.Line}, args...)...)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: want a mapping with queues", name)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, bad(root, "want a mapping with queues (and optionally prune), got %s", describe(root))
	}
	var queues *yaml.Node
	err := eachPair(root, bad, func(key, v *yaml.Node) error {
		switch key.Value {
		case "prune":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
				return bad(v, "prune must be true or false, got %s", describe(v))
			}
			return v.Decode(&f.Prune)
		case "queues":
			queues = v
			return nil
		default:
			return bad(key, "unknown key %q: want queues or prune", key.Value)
		}
	})
	if err != nil {
		return nil, err
	}
	if queues == nil {
		return nil, bad(root, "no queues: the file must name its queues under queues:")
	}
	if queues.Kind != yaml.MappingNode {
		return nil, bad(queues, "queues must be a mapping of queue names to settings, got %s", describe(queues))
	}
	err = eachPair(queues, bad, func(key, v *yaml.Node) error {
		if err := queue.ValidateQueueName(key.Value); err != nil {
			return bad(key, "queue %q: %v", key.Value, err)
		}
		q, err := parseQueue(key, v, base, bad)
		if err != nil {
			return err
		}
		f.Queues = append(f.Queues, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// badAt is an error at a node of the file.
type badAt func(n *yaml.Node, format string, args ...any) error

// eachPair calls fn on each key and value of a mapping whose keys are
// plain strings, each once.
func eachPair(m *yaml.Node, bad badAt, fn func(key, v *yaml.Node) error) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, v := m.Content[i], m.Content[i+1]
		if key.Kind != yaml.ScalarNode || key.ShortTag() != "!!str" && key.ShortTag() != "!!int" {
			return bad(key, "want a name, got %s", describe(key))
		}
		if seen[key.Value] {
			return bad(key, "%q is named twice", key.Value)
		}
		seen[key.Value] = true
		if err := fn(key, v); err != nil {
			return err
		}
	}
	return nil
}

// parseQueue reads one queue's settings onto base.
func parseQueue(key, body *yaml.Node, base queue.Config, bad badAt) (Queue, error) {
	q := Queue{Name: key.Value, Line: key.Line, Config: base}
	at := func(n *yaml.Node, format string, args ...any) error {
		return bad(n, "queue %q: "+format, append([]any{q.Name}, args...)...)
	}
	switch {
	case body.ShortTag() == "!!null": // `sale:` alone: the base config
	case body.Kind != yaml.MappingNode:
		return q, at(body, "want a mapping of settings, got %s", describe(body))
	default:
		changes := map[string]any{}
		err := eachPair(body, bad, func(k, v *yaml.Node) error {
			if k.Value == "webhooks" {
				urls, err := webhookURLs(v)
				if err != nil {
					return at(v, "webhooks %v", err)
				}
				q.Webhooks = urls
				return nil
			}
			if k.Value == "unitsLeft" {
				var n int64
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&n) != nil || n < 0 || n > maxUnitsLeft {
					return at(v, "unitsLeft must be a whole number from 0 to %d, got %s", maxUnitsLeft, describe(v))
				}
				q.UnitsLeft = &n
				return nil
			}
			s, ok := queue.SettingNamed(k.Value)
			if !ok || s.ReadOnly {
				return at(k, "unknown setting %q (the settings are the admin API's: %s)", k.Value, settingNames())
			}
			val, err := value(s, v)
			if err != nil {
				return at(v, "%s must be %s, got %s", s.Name, err, describe(v))
			}
			// Each setting alone, for the line of the one refused.
			if err := s.Set(&queue.Config{}, val); err != nil {
				return at(v, "%v", err)
			}
			changes[s.Name] = val
			q.Set = append(q.Set, s.Name)
			return nil
		})
		if err != nil {
			return q, err
		}
		if q.Config, err = queue.Apply(base, changes); err != nil {
			return q, at(body, "%v", err)
		}
		if _, ok := changes["ratePerSecond"]; ok {
			q.Config.RateDerivation = "set by the queues file"
		}
	}
	if err := q.Config.Validate(); err != nil {
		return q, at(key, "%v", err)
	}
	return q, nil
}

// value reads a YAML value as queue.Setting.Set takes it (the admin JSON's
// types); the error says what the setting wants.
func value(s queue.Setting, v *yaml.Node) (any, error) {
	tag := v.ShortTag()
	want := map[queue.Kind]string{queue.Number: "a number", queue.Integer: "a whole number", queue.Bool: "true or false",
		queue.Instant: `an RFC 3339 time such as 2026-12-24T20:00:00+09:00, or "" for none`, queue.Choice: "a string",
		queue.Duration: "a whole number of " + unit(s), queue.TextByLanguage: "a string or a mapping of language tags to strings",
		queue.PhaseList: "a list of phases", queue.LaneList: "a list of lanes ({name, claim, codes, share}), or [] for none"}[s.Kind]
	wrong := errors.New(want)
	if v.Kind != yaml.ScalarNode && s.Kind != queue.TextByLanguage && s.Kind != queue.PhaseList && s.Kind != queue.LaneList {
		return nil, wrong
	}
	switch s.Kind {
	case queue.LaneList: // each lane as the admin JSON gives it, checked there (lane.Parse)
		var list []map[string]any
		if v.Kind != yaml.SequenceNode || v.Decode(&list) != nil {
			return nil, wrong
		}
		b, err := json.Marshal(list)
		return json.RawMessage(b), err
	case queue.PhaseList: // each phase as the admin JSON gives it, checked there
		var list []map[string]any
		if v.Kind != yaml.SequenceNode || v.Decode(&list) != nil {
			return nil, wrong
		}
		for _, p := range list {
			for k, x := range p {
				if t, ok := x.(time.Time); ok { // an unquoted instant: RFC 3339 again
					p[k] = t.Format(time.RFC3339Nano)
				}
			}
		}
		b, err := json.Marshal(list)
		return json.RawMessage(b), err
	case queue.Number:
		var f float64
		if tag != "!!int" && tag != "!!float" || v.Decode(&f) != nil {
			return nil, wrong
		}
		return f, nil
	case queue.Integer, queue.Duration:
		var n int64
		if tag != "!!int" || v.Decode(&n) != nil {
			return nil, wrong
		}
		return n, nil
	case queue.Bool:
		var b bool
		if tag != "!!bool" || v.Decode(&b) != nil {
			return nil, wrong
		}
		return b, nil
	case queue.Instant: // YAML reads an unquoted time as a timestamp: the text is what counts
		if tag != "!!str" && tag != "!!timestamp" {
			return nil, wrong
		}
		return v.Value, nil
	case queue.TextByLanguage:
		switch {
		case v.Kind == yaml.ScalarNode && tag == "!!str":
			return v.Value, nil
		case v.Kind == yaml.MappingNode:
			m := map[string]string{}
			for i := 0; i+1 < len(v.Content); i += 2 {
				k, t := v.Content[i], v.Content[i+1]
				if k.Kind != yaml.ScalarNode || t.Kind != yaml.ScalarNode || t.ShortTag() != "!!str" {
					return nil, wrong
				}
				m[k.Value] = t.Value
			}
			return m, nil
		}
		return nil, wrong
	default:
		if tag != "!!str" {
			return nil, wrong
		}
		return v.Value, nil
	}
}

// webhookURLs reads a queue's webhooks: a list of http:// or https:// URLs
// (a single URL alone is a list of one).
func webhookURLs(v *yaml.Node) ([]string, error) {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	var urls []string
	for _, n := range items {
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			return nil, fmt.Errorf("must be a list of URLs, got %s", describe(n))
		}
		if err := webhook.ValidURL(n.Value); err != nil {
			return nil, err
		}
		if !slices.Contains(urls, n.Value) {
			urls = append(urls, n.Value)
		}
	}
	return urls, nil
}

// unit names what one number of a Duration setting counts.
func unit(s queue.Setting) string {
	if s.Unit == time.Millisecond {
		return "milliseconds"
	}
	return "seconds"
}

// describe names a YAML value for an error: its text, or its kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return fmt.Sprintf("%q", n.Value)
		}
		return n.Value
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// settingNames lists the settings a file may give (and unitsLeft, which
// is none).
func settingNames() string {
	var names []string
	for _, s := range queue.Settings {
		if !s.ReadOnly {
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, ", ") + "; and unitsLeft, the stock the sale starts with, and webhooks, the URLs that receive the queue's events"
}

// Difference is one setting whose value differs between two configs.
type Difference struct {
	Setting string
	// Have and Want are the values as a command line writes them
	// (queue.Setting.Format).
	Have, Want string
}

// Diff lists the settings whose values differ between have and want, in
// table order; the read-only ones (where the rate came from) are not
// settings anyone sets, and are left out.
func Diff(have, want queue.Config) []Difference {
	h, w := queue.StoreFields(have), queue.StoreFields(want)
	var out []Difference
	for i, s := range queue.Settings {
		if s.ReadOnly || h[2*i+1] == w[2*i+1] {
			continue
		}
		out = append(out, Difference{Setting: s.Name, Have: s.Format(have), Want: s.Format(want)})
	}
	return out
}
