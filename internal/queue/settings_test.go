package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/suspect"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestConfigThroughTheStoreFields: every setting survives the store's
// hash, whatever its kind; a field the hash lacks takes its default.
func TestConfigThroughTheStoreFields(t *testing.T) {
	c := Config{RatePerSecond: 33.5, BatchSize: 7, Interval: 250 * time.Millisecond, Capacity: 1234,
		TokenTTL: 1500 * time.Millisecond, MaxActiveTokens: 9, Paused: true, Adaptive: true, MinRate: 2.5, MaxRate: 28,
		TargetLatency: 275 * time.Millisecond, AbandonAfter: 20 * time.Second,
		OpensAt: time.Date(2026, 12, 24, 11, 0, 0, 123e6, time.UTC), RateDerivation: "by hand",
		Method: MethodPassthrough, Join: JoinSigned, ChallengeCost: 1234,
		Suspects: suspect.Refuse, SuspectChallengeCost: 2345, ShadowAdmits: suspect.AdmitLast, ShadowCapacity: 77, HumanCheckSigned: true}
	fields := StoreFields(c)
	m := map[string]string{}
	for i := 0; i < len(fields); i += 2 {
		m[fields[i]] = fields[i+1]
	}
	if len(m) != len(Settings) {
		t.Fatalf("%d fields for %d settings: %v", len(m), len(Settings), fields)
	}
	got, err := configFromStore(m)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}

	old := map[string]string{"rate": "10", "batch": "5", "interval_ms": "100", "capacity": "9", "ttl_ms": "60000", "paused": "0", "derivation": "x"}
	got, err = configFromStore(old)
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultConfig()
	if got.MaxActiveTokens != 0 || got.Adaptive || got.MinRate != def.MinRate || got.MaxRate != def.MaxRate ||
		got.TargetLatency != def.TargetLatency || got.AbandonAfter != 0 || !got.OpensAt.IsZero() || got.RatePerSecond != 10 ||
		got.Join != JoinChallenge || got.ChallengeCost != def.ChallengeCost || got.Method != MethodFIFO {
		t.Fatalf("a config written before the newer settings: %+v", got)
	}
	for field, bad := range map[string]string{"rate": "fast", "entry": "everyone", "method": "lottery"} {
		damaged := maps.Clone(old)
		damaged[field] = bad
		if _, err := configFromStore(damaged); err == nil || !strings.Contains(err.Error(), field) {
			t.Fatalf("a malformed field %s: %v", field, err)
		}
	}
}

// TestApply: the admin's changes, their rules, and refusals that name the
// setting and change nothing.
func TestApply(t *testing.T) {
	base := DefaultConfig()
	base.Adaptive = true

	c, err := Apply(base, map[string]any{"ratePerSecond": 50.0})
	if err != nil || c.Adaptive || c.RatePerSecond != 50 || c.RateDerivation != "set by admin" {
		t.Fatalf("a manual rate: %+v, %v; want adaptive off and the rate set by admin", c, err)
	}
	c, err = Apply(base, map[string]any{"ratePerSecond": 50.0, "adaptive": true})
	if err != nil || !c.Adaptive || c.RatePerSecond != 50 {
		t.Fatalf("a rate to start the adaptive one from: %+v, %v", c, err)
	}
	c, err = Apply(base, map[string]any{"paused": true, "opensAt": "2026-12-24T20:00:00+09:00", "abandonAfterSeconds": int64(30)})
	if err != nil || !c.Adaptive || !c.Paused || !c.OpensAt.Equal(time.Date(2026, 12, 24, 11, 0, 0, 0, time.UTC)) || c.AbandonAfter != 30*time.Second {
		t.Fatalf("other settings: %+v, %v", c, err)
	}
	if c, err = Apply(c, map[string]any{"opensAt": ""}); err != nil || !c.OpensAt.IsZero() {
		t.Fatalf("clearing opensAt: %v, %v", c.OpensAt, err)
	}
	if c, err = Apply(c, map[string]any{"entry": "signed", "challengeCost": int64(2000)}); err != nil || c.Join != JoinSigned || c.ChallengeCost != 2000 {
		t.Fatalf("the join policy and its cost: %v %v, %v", c.Join, c.ChallengeCost, err)
	}

	for _, tc := range []struct {
		name    string
		changes map[string]any
		field   string
	}{
		{"read-only", map[string]any{"rateDerivation": "mine"}, "rateDerivation"},
		{"unknown", map[string]any{"rate": 5.0}, "rate"},
		{"out of range", map[string]any{"batchSize": int64(0)}, "batchSize"},
		{"abandon 1 s", map[string]any{"abandonAfterSeconds": int64(1)}, "abandonAfterSeconds"},
		{"abandon 14 s", map[string]any{"abandonAfterSeconds": int64(14)}, "abandonAfterSeconds"},
		{"negative target", map[string]any{"targetLatencyMs": int64(-1)}, "targetLatencyMs"},
		{"malformed opensAt", map[string]any{"opensAt": "24 Dec"}, "opensAt"},
		{"wrong type", map[string]any{"paused": "yes"}, "paused"},
		{"huge interval", map[string]any{"intervalMs": int64(1) << 62}, "intervalMs"},
		{"unknown join policy", map[string]any{"entry": "everyone"}, "entry"},
		{"empty join policy", map[string]any{"entry": ""}, "entry"},
		{"join policy not a string", map[string]any{"entry": 1.0}, "entry"},
		{"challenge too cheap", map[string]any{"challengeCost": int64(9)}, "challengeCost"},
		{"challenge too dear", map[string]any{"challengeCost": int64(100_001)}, "challengeCost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply(base, tc.changes)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v; want ErrInvalidConfig naming %s", err, tc.field)
			}
			if d := cmp.Diff(base, got); d != "" {
				t.Fatalf("a refused change changed the config:\n%s", d)
			}
		})
	}
}

// TestValidateNamesTheSetting: the rules between settings, each naming one.
func TestValidateNamesTheSetting(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"min above max", func(c *Config) { c.MinRate, c.MaxRate = 50, 5 }, "minRatePerSecond"},
		{"adaptive ceiling beyond a tick", func(c *Config) { c.Adaptive, c.MaxRate = true, 500 }, "maxRatePerSecond"},
		{"rate beyond a tick", func(c *Config) { c.RatePerSecond = 500 }, "batchSize"},
		{"sub-second token TTL", func(c *Config) { c.TokenTTL = 300 * time.Millisecond }, "tokenTtlSeconds"},
		{"interval not whole ms", func(c *Config) { c.Interval = 1500 * time.Microsecond }, "intervalMs"},
		{"abandon 10 s", func(c *Config) { c.AbandonAfter = 10 * time.Second }, "abandonAfterSeconds"},
		{"no join policy", func(c *Config) { c.Join = "" }, "entry"},
		{"no challenge cost", func(c *Config) { c.ChallengeCost = 0 }, "challengeCost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v; want ErrInvalidConfig naming %s", err, tc.field)
			}
		})
	}
	c := DefaultConfig()
	c.Adaptive, c.MaxRate = false, 500 // the ceiling matters only while adaptive
	if err := c.Validate(); err != nil {
		t.Fatalf("adaptive off with a high ceiling: %v", err)
	}
}

// TestOperationsDocListsTheSettings: docs/operations.md's table of the
// per-queue settings is the table in settings.go, rendered; a setting
// added there is documented by running
//
//	WAITROOM_UPDATE_DOCS=1 go test -run TestOperationsDocListsTheSettings ./internal/queue/
func TestOperationsDocListsTheSettings(t *testing.T) {
	const path = "../../docs/operations.md"
	const begin, end = "<!-- settings: generated from queue.Settings -->\n", "<!-- /settings -->"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q … %q block", path, begin, end)
	}
	// What each setting does is the admin page's English text (package
	// web's messages; queue does not import web).
	var help map[string]string
	if raw, err := os.ReadFile("../web/messages/admin/en.json"); err != nil || json.Unmarshal(raw, &help) != nil {
		t.Fatalf("the admin page's English texts: %v", err)
	}
	var b strings.Builder
	b.WriteString("| setting | values | default | flag (default and new queues) | who may change it | what it does |\n|---|---|---|---|---|---|\n")
	def := DefaultConfig()
	for _, s := range Settings {
		values := map[Kind]string{Bool: "true, false", Instant: "RFC 3339 time, or \"\" for none",
			Choice: strings.Join(s.Choices, ", "), readOnlyText: "read-only",
			TextByLanguage: fmt.Sprintf("text, or texts by language (`{\"en\": …}`), ≤ %d characters each; \"\" for none", maxMessageChars),
			PhaseList:      fmt.Sprintf("a list of ≤ %d phases (see Phases below); `[]` for none", maxPhases),
			LaneList:       fmt.Sprintf("a list of ≤ %d lanes (see Lanes and codes below); `[]` for none", lane.MaxLanes)}[s.Kind]
		if values == "" {
			values = s.rangeText()
			if s.Kind == Duration {
				values += map[time.Duration]string{time.Millisecond: " ms", time.Second: " s"}[s.Unit]
			}
		}
		flag := "—"
		if s.Flag != "" {
			flag = "`--" + s.Flag + "`"
		}
		dflt := "none"
		if v := s.Value(def); s.Kind == PhaseList || s.Kind == LaneList {
			dflt = "none"
		} else if v != nil && v != "" {
			dflt = fmt.Sprintf("`%v`", v)
		}
		does := help["settingHelp"+strings.ToUpper(s.Name[:1])+s.Name[1:]]
		if s.Phased {
			does += " A phase may change it."
		}
		role := "—"
		if s.Role != "" {
			role = string(s.Role)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", s.Name, values, dflt, flag, role, does)
	}
	want := doc[:i+len(begin)] + b.String() + doc[j:]
	if os.Getenv("WAITROOM_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != doc {
		t.Errorf("%s's table of settings differs from queue.Settings (-doc +table):\n%s\nrun WAITROOM_UPDATE_DOCS=1 go test -run %s ./internal/queue/",
			path, cmp.Diff(doc[i:j], want[i:len(want)-len(doc)+j]), t.Name())
	}
}

// configFromStore is ConfigFromFields over a hash read whole.
func configFromStore(m map[string]string) (Config, error) {
	return ConfigFromFields(func(f string) (string, bool) { v, ok := m[f]; return v, ok })
}

// TestSettingsNameTheirRoles: the night's levers are an operator's (the
// rate is ratePerSecond and whether it adapts: setting a rate turns the
// adaptive rate off), every other settable setting an admin's, and a
// read-only one names none (issue 56).
func TestSettingsNameTheirRoles(t *testing.T) {
	operator := map[string]bool{"ratePerSecond": true, "adaptive": true, "paused": true, "message": true}
	for _, s := range Settings {
		want := staff.Admin
		switch {
		case s.ReadOnly:
			want = ""
		case operator[s.Name]:
			want = staff.Operator
		}
		if s.Role != want {
			t.Errorf("%s needs %q, want %q", s.Name, s.Role, want)
		}
	}
}
