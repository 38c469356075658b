package repolint_test

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/waitroom/waitroom/internal/queue"
)

// TestOpenAPIQueueSettings holds openapi.yaml's queue config schemas against
// the one declaration of the settings (queue.Settings): QueueConfig (the PUT
// and PATCH body) has exactly the settings an admin may change, each nullable
// (null = left out), of its kind and range; QueueStats (GET) shows every
// setting, each required, of its kind.
func TestOpenAPIQueueSettings(t *testing.T) {
	t.Parallel()
	c := loadOpenAPI(t)
	schema := func(name string) *openapi3.Schema {
		ref := c.doc.Components.Schemas[name]
		if ref == nil || ref.Value == nil {
			t.Fatalf("openapi.yaml has no schema %s", name)
		}
		return ref.Value
	}
	body, stats := schema("QueueConfig"), schema("QueueStats")

	var writable []string
	for _, s := range queue.Settings {
		if !s.ReadOnly {
			writable = append(writable, s.Name)
		}
	}
	var documented []string
	for name := range body.Properties {
		documented = append(documented, name)
	}
	slices.Sort(writable)
	slices.Sort(documented)
	if !slices.Equal(writable, documented) {
		t.Errorf("QueueConfig's properties %v; the settings an admin may change are %v", documented, writable)
	}

	for _, s := range queue.Settings {
		t.Run(s.Name, func(t *testing.T) {
			wantType, wantFormat := string(s.Kind), ""
			switch s.Kind {
			case queue.Integer, queue.Duration:
				wantType, wantFormat = "integer", "int64"
			case queue.Instant, queue.Choice:
				wantType = "string"
			case queue.TextByLanguage:
				checkMessageSchema(t, c, stats.Properties[s.Name], body.Properties[s.Name])
				return
			case queue.PhaseList, queue.LaneList:
				item := map[queue.Kind]string{queue.PhaseList: "Phase", queue.LaneList: "Lane"}[s.Kind]
				for _, in := range []*openapi3.SchemaRef{stats.Properties[s.Name], body.Properties[s.Name]} {
					if in == nil || !in.Value.Type.Is("array") || in.Value.Items == nil || in.Value.Items.Ref != "#/components/schemas/"+item ||
						in.Value.MaxItems == nil || *in.Value.MaxItems != 8 {
						t.Errorf("%s is not an array of at most 8 %s in both QueueStats and QueueConfig", s.Name, item)
					}
				}
				return
			}
			if s.Name == "batchSize" {
				wantFormat = "" // an int in Go; the document has always left it unformatted
			}
			out := stats.Properties[s.Name]
			if out == nil || !slices.Contains(stats.Required, s.Name) {
				t.Fatalf("QueueStats does not require %s", s.Name)
			}
			if !out.Value.Type.Is(wantType) {
				t.Errorf("QueueStats.%s is %v, the setting is a %s", s.Name, out.Value.Type, wantType)
			}
			if s.Kind == queue.Instant && (out.Value.Format != "date-time" || !out.Value.Nullable) {
				t.Errorf("QueueStats.%s: format %q nullable %v, want a nullable date-time", s.Name, out.Value.Format, out.Value.Nullable)
			}
			if s.Kind == queue.Choice && !slices.Equal(enum(out.Value), s.Choices) {
				t.Errorf("QueueStats.%s takes %v, the setting's choices are %v", s.Name, enum(out.Value), s.Choices)
			}
			if s.ReadOnly {
				return
			}
			in := body.Properties[s.Name].Value
			if !in.Type.Is(wantType) || in.Format != wantFormat {
				t.Errorf("QueueConfig.%s is %v %q, the setting is %s %q", s.Name, in.Type, in.Format, wantType, wantFormat)
			}
			if !in.Nullable {
				t.Errorf("QueueConfig.%s is not nullable (null means left out)", s.Name)
			}
			switch s.Kind {
			case queue.Number, queue.Integer, queue.Duration:
				low := s.Min
				if s.ZeroMeansOff {
					low = 0
				}
				if in.Min == nil || *in.Min != low || in.ExclusiveMin.IsTrue() != s.MinExclusive {
					t.Errorf("QueueConfig.%s minimum %v (exclusive %v), the setting's lowest value is %v (exclusive %v)",
						s.Name, in.Min, in.ExclusiveMin.IsTrue(), low, s.MinExclusive)
				}
				if in.Max == nil || *in.Max != s.Max {
					t.Errorf("QueueConfig.%s maximum %v, the setting's is %v", s.Name, in.Max, s.Max)
				}
			case queue.Choice:
				// null (left out) comes with nullable, which generators
				// read; an enum listing null they do not.
				if !slices.Equal(enum(in), s.Choices) {
					t.Errorf("QueueConfig.%s takes %v, want the setting's choices: %v", s.Name, enum(in), s.Choices)
				}
			case queue.Instant:
				if in.Pattern == "" {
					t.Errorf("QueueConfig.%s has no pattern: an RFC 3339 time or \"\"", s.Name)
				}
			}
		})
	}
}

// enum is a schema's enum as strings.
func enum(s *openapi3.Schema) []string {
	out := make([]string, 0, len(s.Enum))
	for _, v := range s.Enum {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// checkMessageSchema: a TextByLanguage setting is a string or an object of
// strings (QueueStats: MessageSetting; the PUT and PATCH body's the same,
// its string nullable), each text and the number of languages limited as
// the message setting itself limits them.
func checkMessageSchema(t *testing.T, c *oaContract, out, in *openapi3.SchemaRef) {
	t.Helper()
	maxChars, maxLanguages := messageLimits(t)
	ms := c.doc.Components.Schemas["MessageSetting"]
	if ms == nil || out == nil || out.Ref != "#/components/schemas/MessageSetting" {
		t.Fatalf("QueueStats.message is not a MessageSetting: %+v", out)
	}
	for _, s := range []struct {
		name     string
		schema   *openapi3.Schema
		nullable bool
	}{{"MessageSetting", ms.Value, false}, {"QueueConfig.message", in.Value, true}} {
		var kinds []string
		for _, alt := range s.schema.OneOf {
			kinds = append(kinds, alt.Value.Type.Slice()...)
			text := alt.Value
			if alt.Value.Type.Is("object") {
				text = alt.Value.AdditionalProperties.Schema.Value
				if alt.Value.MaxProps == nil || *alt.Value.MaxProps != maxLanguages {
					t.Errorf("%s's object: maxProperties %v, want %d", s.name, orNone(alt.Value.MaxProps), maxLanguages)
				}
			} else if alt.Value.Nullable != s.nullable {
				t.Errorf("%s's string: nullable %v, want %v (null means left out in a body)", s.name, alt.Value.Nullable, s.nullable)
			}
			if text.MaxLength == nil || *text.MaxLength != maxChars {
				t.Errorf("%s's %v: maxLength %v, want %d", s.name, alt.Value.Type, orNone(text.MaxLength), maxChars)
			}
		}
		if !slices.Equal(kinds, []string{"string", "object"}) {
			t.Errorf("%s is one of %v, want a string or an object", s.name, kinds)
		}
	}
}

// messageLimits finds the longest text and the most languages the message
// setting accepts, by asking it: the spec must say what the setting does,
// not what a constant beside it claims.
func messageLimits(t *testing.T) (chars, languages uint64) {
	t.Helper()
	setting, ok := queue.SettingNamed("message")
	if !ok {
		t.Fatal("no message setting")
	}
	accepts := func(v any) bool {
		c := queue.DefaultConfig()
		return setting.Set(&c, v) == nil
	}
	const ceiling = 100_000
	longest := sort.Search(ceiling, func(n int) bool { return !accepts(strings.Repeat("a", n+1)) })
	tags := []string{"en", "fr", "de", "es", "it", "pt", "nl", "sv", "da", "fi", "pl", "cs", "hu", "ro", "el", "tr",
		"ru", "uk", "ja", "ko", "zh", "ar", "he", "hi", "th", "vi", "id", "ms", "ca", "eu"}
	most := sort.Search(len(tags), func(n int) bool {
		texts := map[string]string{}
		for _, tag := range tags[:n+1] {
			texts[tag] = "a"
		}
		return !accepts(texts)
	})
	if longest == ceiling || most == len(tags) {
		t.Fatalf("the message setting takes texts of %d characters and %d languages: no limit found", longest, most)
	}
	return uint64(longest), uint64(most)
}

// orNone prints a schema's optional bound.
func orNone(bound *uint64) string {
	if bound == nil {
		return "none"
	}
	return fmt.Sprint(*bound)
}

// TestOpenAPIPhaseFollowsTheRows: openapi.yaml's Phase schema (a phase as
// the admin API takes and shows it) and the schedule's steps have the
// settings a phase may change (queue.Setting.Phased) in blocks generated
// from the rows, and no other: Phase takes each as the setting does (its
// kind, range and choices; not nullable: a phase leaves a setting out by
// not naming it), and each schedule step requires every one.
// WAITROOM_UPDATE_DOCS=1 writes the blocks.
func TestOpenAPIPhaseFollowsTheRows(t *testing.T) {
	const path = "../../openapi.yaml"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	var phase, step, phased []string
	for _, s := range queue.Settings {
		if s.Phased {
			phased = append(phased, s.Name)
			phase = append(phase, "        "+s.Name+": "+phasedSchema(s, true))
			step = append(step, "              "+s.Name+": "+phasedSchema(s, false))
		}
	}
	want := doc
	for _, b := range []struct {
		marker string
		lines  []string
	}{
		{"phased settings", phase},
		{"step's required", []string{"            required: [" + strings.Join(append([]string{"phase", "from", "until"}, phased...), ", ") + "]"}},
		{"step's settings", step},
	} {
		i := strings.Index(want, "# "+b.marker+": generated from queue.Settings")
		j := strings.Index(want, "# /"+b.marker+"\n")
		if i < 0 || j < i {
			t.Fatalf("%s lacks its generated block %q", path, b.marker)
		}
		from, to := i+strings.Index(want[i:], "\n")+1, strings.LastIndex(want[:j], "\n")+1
		want = want[:from] + strings.Join(b.lines, "\n") + "\n" + want[to:]
	}
	if os.Getenv("WAITROOM_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != doc {
		t.Fatalf("%s's phased settings differ from queue.Settings' phased rows; run WAITROOM_UPDATE_DOCS=1 go test -run %s ./internal/repolint/", path, t.Name())
	}

	// Nothing phased is listed by hand beside the blocks.
	c := loadOpenAPI(t)
	steps := c.doc.Components.Schemas["QueueSchedule"].Value.Properties["steps"].Value.Items.Value
	for _, tc := range []struct {
		schema string
		own    []string
		got    *openapi3.Schema
	}{
		{"Phase", []string{"name", "startsAt", "endsAt", "preQueue", "template"}, c.doc.Components.Schemas["Phase"].Value},
		{"QueueSchedule's step", []string{"phase", "from", "until", "adaptive", "template"}, steps},
	} {
		var props []string
		for name := range tc.got.Properties {
			props = append(props, name)
		}
		if want := sorted(append(tc.own, phased...)); !slices.Equal(sorted(props), want) {
			t.Errorf("%s's properties %v; want its own and the phased settings: %v", tc.schema, sorted(props), want)
		}
	}
}

// phasedSchema is a phased setting's schema as a phase takes it (in) or a
// schedule step shows it.
func phasedSchema(s queue.Setting, in bool) string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	var out string
	switch s.Kind {
	case queue.TextByLanguage:
		return "{$ref: '#/components/schemas/MessageSetting'}"
	case queue.LaneList:
		return "{type: array, maxItems: 8, items: {$ref: '#/components/schemas/Lane'}}"
	case queue.Choice:
		return "{type: string, enum: [" + strings.Join(s.Choices, ", ") + "]}"
	case queue.Bool:
		return "{type: boolean}"
	case queue.Instant:
		return "{type: string, format: date-time}"
	case queue.Number:
		out = "type: number"
	default: // Integer, Duration
		out = "type: integer, format: int64"
	}
	if in {
		low := s.Min
		if s.ZeroMeansOff {
			low = 0
		}
		out += ", minimum: " + g(low)
		if s.MinExclusive {
			out += ", exclusiveMinimum: true"
		}
		out += ", maximum: " + g(s.Max)
	}
	return "{" + out + "}"
}

// sorted is a sorted copy of names.
func sorted(names []string) []string { return slices.Sorted(slices.Values(names)) }
