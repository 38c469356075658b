package queue

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/language"
)

// TestParseMessage: a message is one text or texts by language, within
// its limits; an empty text or language is none.
func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want any // the admin value, or nil when the input is refused
	}{
		{"one text", "Restocked: sizes S and M", "Restocked: sizes S and M"},
		{"none", "", ""},
		{"by language, tags canonical", map[string]string{"EN": "Back at nine", "ja": "9時に再開"}, map[string]string{"en": "Back at nine", "ja": "9時に再開"}},
		{"an empty language is none", map[string]string{"en": "Hi", "ko": ""}, map[string]string{"en": "Hi"}},
		{"no language left: none", map[string]string{"en": ""}, ""},
		{"markup kept as text", "<script>alert(1)</script>", "<script>alert(1)</script>"},
		{"line breaks and tabs", "one\n\ttwo", "one\n\ttwo"},
		{"500 characters", strings.Repeat("あ", maxMessageChars), strings.Repeat("あ", maxMessageChars)},
		{"501 characters", strings.Repeat("a", maxMessageChars+1), nil},
		{"a control character", "bell\a", nil},
		{"not UTF-8", "\xff", nil},
		{"not a tag", map[string]string{"english!": "Hi"}, nil},
		{"an empty tag", map[string]string{"": "Hi"}, nil},
		{"a tag twice", map[string]string{"en": "a", "EN": "b"}, nil},
		{"not a string", 42.0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseMessage(tc.in)
			if tc.want == nil {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("ParseMessage(%q) = %v, want ErrInvalidConfig", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, m.adminValue()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMessageFor: a reader gets their language's text when x/text's
// matcher is highly confident of it, else English, else the first.
func TestMessageFor(t *testing.T) {
	m, err := parseMessage(map[string]string{"en": "en", "es": "es", "zh-Hans": "zh-Hans", "ar": "ar"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ prefs, want string }{
		{"es-MX", "es"},
		{"ar-EG", "ar"},
		{"zh-CN", "zh-Hans"},
		{"zh-TW", "en"}, // never Simplified for a Traditional reader
		{"ko", "en"},
		{"de,es;q=0.5", "es"},
		{"", "en"},
	} {
		tags, _, _ := language.ParseAcceptLanguage(tc.prefs)
		if got := m.For(tags...); got != tc.want {
			t.Errorf("For(%q) = %q, want %q", tc.prefs, got, tc.want)
		}
	}
	noEnglish, _ := parseMessage(map[string]string{"ja": "ja", "fr": "fr"})
	if got := noEnglish.For(language.Korean); got != "fr" {
		t.Errorf("no English: For(ko) = %q, want the first by tag (fr)", got)
	}
	one, _ := parseMessage("for everyone")
	if got := one.For(language.Arabic); got != "for everyone" {
		t.Errorf("one text: For(ar) = %q", got)
	}
}

// TestMessageAsASetting: the message goes through the table like every
// setting — the admin JSON, the command line's text and the store's hash.
func TestMessageAsASetting(t *testing.T) {
	s, ok := SettingNamed("message")
	if !ok {
		t.Fatal("no message in queue.Settings")
	}
	for _, in := range []any{"Doors open at nine", map[string]string{"en": "Doors", "ja": "扉"}} {
		var c Config
		if err := s.Set(&c, in); err != nil {
			t.Fatal(err)
		}
		var parsed Config
		if err := s.Parse(&parsed, s.Format(c)); err != nil {
			t.Fatalf("Parse(Format) %q: %v", s.Format(c), err)
		}
		if diff := cmp.Diff(s.Value(c), s.Value(parsed)); diff != "" {
			t.Errorf("through the command line's text (-set +parsed):\n%s", diff)
		}
		c = DefaultConfig()
		s.Set(&c, in)
		fields := StoreFields(c)
		hash := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			hash[fields[i]] = fields[i+1]
		}
		back, err := ConfigFromFields(func(f string) (string, bool) { v, ok := hash[f]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.Value(c), s.Value(back)); diff != "" {
			t.Errorf("through the store's hash (-set +read):\n%s", diff)
		}
	}
	var c Config
	if err := s.Set(&c, strings.Repeat("x", 501)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a 501-character message: %v", err)
	}
}

// BenchmarkMessageFor: the text for a reader, as every status answer asks
// while a queue has a message by language.
func BenchmarkMessageFor(b *testing.B) {
	m, _ := parseMessage(map[string]string{"en": "Back at nine", "ja": "9時に再開", "es": "a las nueve", "ar": "التاسعة", "zh-Hans": "九点"})
	tags, _, _ := language.ParseAcceptLanguage("es-MX,es;q=0.9,en;q=0.8")
	b.ReportAllocs()
	for b.Loop() {
		if m.For(tags...) != "a las nueve" {
			b.Fatal("not the Spanish text")
		}
	}
}
