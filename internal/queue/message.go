package queue

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/language"
)

// Message is the operator's word to the people in line ("we have
// restocked", "sizes S and M are gone"): shown on the waiting page and
// carried in the enter and status answers. It is one text for every
// language, or one per language by BCP 47 tag ({"en": …, "ja": …}); the
// zero Message is none. Only ParseMessage makes one: it keeps the form the
// store holds (JSON) and, once, the texts and the matcher over their
// languages, so that picking a reader's text on every status answer is a
// lookup (a matcher built per answer cost ~180 µs and 284 allocations).
// Compare two with Equal.
type Message struct {
	stored string    // "" (none), a JSON string, or a JSON object by tag
	parsed *readable // nil for none; never changed once made
}

// readable is a message made ready for its readers.
type readable struct {
	texts   map[string]string // by tag; "" for the one for everyone
	keys    []string          // the tags, English first, then in order
	matcher language.Matcher  // over keys; nil with one text
}

// texts are the message's texts by tag ("" for the one for everyone).
func (m Message) texts() map[string]string {
	if m.parsed == nil {
		return nil
	}
	return m.parsed.texts
}

// newMessage is the message stored as stored, saying texts.
func newMessage(stored string, texts map[string]string) Message {
	r := &readable{texts: texts, keys: languages(texts)}
	if len(r.keys) > 1 {
		tags := make([]language.Tag, len(r.keys))
		for i, k := range r.keys {
			tags[i] = language.Make(k)
		}
		r.matcher = language.NewMatcher(tags)
	}
	return Message{stored: stored, parsed: r}
}

// Limits of a message: what a crowd reads at a glance, in a config every
// instance reads.
const (
	maxMessageChars     = 500
	maxMessageLanguages = 20
)

// empty reports whether there is no message (outside the package, For
// says "" for none: no text of a message is empty).
func (m Message) empty() bool { return m.stored == "" }

// Equal reports whether m and o say the same (for go-cmp).
func (m Message) Equal(o Message) bool { return m.stored == o.stored }

// ParseMessage reads a message as the admin API takes it: a string (one
// text for everyone; "" for none) or an object of texts by language (a
// language with "" has none; no language left, no message). Texts are at
// most maxMessageChars characters of printable text (line breaks and tabs
// allowed); tags are BCP 47, kept in their canonical form.
func parseMessage(v any) (Message, error) {
	switch v := v.(type) {
	case string:
		if v == "" {
			return Message{}, nil
		}
		if err := checkMessageText(v); err != nil {
			return Message{}, fmt.Errorf("%w: message %v", ErrInvalidConfig, err)
		}
		b, _ := json.Marshal(v)
		return newMessage(string(b), map[string]string{"": v}), nil
	case map[string]string:
		if len(v) > maxMessageLanguages {
			return Message{}, fmt.Errorf("%w: message has %d languages, at most %d", ErrInvalidConfig, len(v), maxMessageLanguages)
		}
		out := map[string]string{}
		for _, raw := range slices.Sorted(maps.Keys(v)) {
			text := v[raw]
			tag, err := language.Parse(raw)
			if err != nil || raw == "" {
				return Message{}, fmt.Errorf("%w: message: %q is not a language tag (BCP 47: en, ja, zh-Hant, es-MX)", ErrInvalidConfig, raw)
			}
			if text == "" {
				continue
			}
			if err := checkMessageText(text); err != nil {
				return Message{}, fmt.Errorf("%w: message.%s %v", ErrInvalidConfig, raw, err)
			}
			key := tag.String()
			if _, dup := out[key]; dup {
				return Message{}, fmt.Errorf("%w: message names %s twice", ErrInvalidConfig, key)
			}
			out[key] = text
		}
		if len(out) == 0 {
			return Message{}, nil
		}
		b, _ := json.Marshal(out) // keys in order: one message, one form
		return newMessage(string(b), out), nil
	}
	return Message{}, fmt.Errorf("%w: message must be a string or an object of strings by language, got %T", ErrInvalidConfig, v)
}

// checkMessageText holds one text to the limits.
func checkMessageText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > maxMessageChars {
		return fmt.Errorf("has %d characters, at most %d", n, maxMessageChars)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) >= 0 {
		return fmt.Errorf("holds a control character (only line breaks and tabs are allowed)")
	}
	return nil
}

// AdminValue is the message as the admin API shows it: "" for none, the
// text when it is one for everyone, else the texts by language.
func (m Message) adminValue() any {
	texts := m.texts()
	if t, ok := texts[""]; ok || len(texts) == 0 {
		return t
	}
	return texts
}

// languages are the tags of texts, English first when it has one (the
// text for a reader whose language it lacks), then in tag order.
func languages(texts map[string]string) []string {
	keys := slices.Sorted(maps.Keys(texts))
	if i := slices.Index(keys, "en"); i > 0 {
		keys = append([]string{"en"}, slices.Delete(keys, i, i+1)...)
	}
	return keys
}

// For is the text for a reader of prefs (most wanted first): the one text,
// or the language x/text's matcher is highly confident of (es-MX reads es;
// zh-TW never reads zh-Hans), else the English one, else the first by tag.
func (m Message) For(prefs ...language.Tag) string {
	r := m.parsed
	switch {
	case r == nil:
		return ""
	case r.matcher == nil || len(prefs) == 0:
		return r.texts[r.keys[0]]
	}
	if _, i, conf := r.matcher.Match(prefs...); conf >= language.High {
		return r.texts[r.keys[i]]
	}
	return r.texts[r.keys[0]]
}

// messageFromStore reads what the store keeps (Message.stored), checked
// again: a hand-edited config is not trusted further than the API's.
func messageFromStore(raw string) (Message, error) {
	if raw == "" {
		return Message{}, nil
	}
	if strings.HasPrefix(raw, "{") {
		var m map[string]string
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return Message{}, err
		}
		return parseMessage(m)
	}
	var t string
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		return Message{}, err
	}
	return parseMessage(t)
}

// parseMessageText reads a message as a command line gives it: a JSON
// object of texts by language when it starts with "{", else the one text
// for everyone.
func parseMessageText(text string) (Message, error) {
	if !strings.HasPrefix(text, "{") {
		return parseMessage(text)
	}
	var texts map[string]string
	if err := json.Unmarshal([]byte(text), &texts); err != nil {
		return Message{}, fmt.Errorf("%w: message: %v", ErrInvalidConfig, err)
	}
	return parseMessage(texts)
}

// text is the message as parseMessageText reads it.
func (m Message) text() string {
	if t, ok := m.texts()[""]; ok || m.parsed == nil {
		return t
	}
	return m.stored
}
