package queue

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// saleAt is a two-phase sale opening at t0: members draw at 50/s for an
// hour behind a pre-queue, then the public comes first-come at the
// queue's own 100/s with a message of its own.
func saleAt(t *testing.T, t0 time.Time) Config {
	t.Helper()
	phases := `[{"name": "members", "startsAt": "` + t0.Format(time.RFC3339) + `", "preQueue": true,
	  "ratePerSecond": 50, "queueingMethod": "random", "entry": "signed", "maxActiveTokens": 200,
	  "sessionMaxSeconds": 900, "message": {"en": "Members' draw", "ja": "会員抽選"}, "template": "members"},
	 {"name": "public", "startsAt": "` + t0.Add(time.Hour).Format(time.RFC3339) + `", "endsAt": "` + t0.Add(3*time.Hour).Format(time.RFC3339) + `",
	  "message": "Open to all"}]`
	c, err := Apply(DefaultConfig(), map[string]any{"phases": json.RawMessage(phases)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPhasesChangeTheSettingsInForce(t *testing.T) {
	t0 := time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)
	c := saleAt(t, t0)
	if !c.OpensAt.Equal(t0) {
		t.Errorf("opensAt %v: a first phase's pre-queue is the queue's opening at %v", c.OpensAt, t0)
	}
	before := c.InForce(t0.Add(-time.Second))
	if before.PhaseInForce != "" || before.RatePerSecond != 100 || before.Method != MethodFIFO {
		t.Errorf("before the first phase: %q %v %v, want the queue's own", before.PhaseInForce, before.RatePerSecond, before.Method)
	}
	m := c.InForce(t0)
	if m.PhaseInForce != "members" || m.RatePerSecond != 50 || m.Method != MethodRandom || m.Join != JoinSigned ||
		m.MaxActiveTokens != 200 || m.SessionMax != 15*time.Minute || m.PageTemplate != "members" || m.Adaptive {
		t.Errorf("members: %+v", m)
	}
	if got := m.Message.For(); got != "Members' draw" {
		t.Errorf("members' message %q", got)
	}
	p := c.InForce(t0.Add(time.Hour))
	if p.PhaseInForce != "public" || p.RatePerSecond != 100 || p.Method != MethodFIFO || p.Join != JoinChallenge ||
		p.MaxActiveTokens != 0 || p.PageTemplate != "" || p.Message.For() != "Open to all" {
		t.Errorf("public: %+v", p)
	}
	if after := c.InForce(t0.Add(3 * time.Hour)); after.PhaseInForce != "" || !after.Message.empty() {
		t.Errorf("after the last phase ended: %q %q, want the queue's own", after.PhaseInForce, after.Message.For())
	}
}

func TestScheduleStepsThroughThePhases(t *testing.T) {
	t0 := time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)
	c := saleAt(t, t0)
	type step struct {
		name        string
		from, until time.Time
	}
	var got []step
	for _, s := range c.Schedule(t0.Add(-time.Hour)) {
		got = append(got, step{s.Name, s.StartsAt, s.EndsAt})
	}
	want := []step{{"", t0.Add(-time.Hour), t0}, {"members", t0, time.Time{}}, {"public", t0.Add(time.Hour), t0.Add(3 * time.Hour)}, {"", t0.Add(3 * time.Hour), time.Time{}}}
	if len(got) != len(want) {
		t.Fatalf("schedule %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: %v, want %v", i, got[i], want[i])
		}
	}
	// Seen from inside the public phase, the members' is over.
	if s := c.Schedule(t0.Add(2 * time.Hour)); len(s) != 2 || s[0].Name != "public" || s[1].Name != "" {
		t.Errorf("from the public phase: %+v", s)
	}
}

func TestPhasesRoundTripThroughTheStore(t *testing.T) {
	c := saleAt(t, time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC))
	fields := StoreFields(c)
	m := map[string]string{}
	for i := 0; i < len(fields); i += 2 {
		m[fields[i]] = fields[i+1]
	}
	back, err := configFromStore(m)
	if err != nil {
		t.Fatal(err)
	}
	phases, _ := SettingNamed("phases")
	if a, b := phases.Format(c), phases.Format(back); a != b {
		t.Errorf("stored and read back:\n%s\n%s", a, b)
	}
}

func TestPhasesRefusedNameTheirFault(t *testing.T) {
	at := func(h int) string { return time.Date(2026, 12, 24, h, 0, 0, 0, time.UTC).Format(time.RFC3339) }
	for _, tc := range []struct{ phases, want string }{
		{`[{"name": "a", "startsAt": "` + at(1) + `", "ratePerSecond": 0}]`, "ratePerSecond"},
		{`[{"name": "a", "startsAt": "` + at(1) + `", "ratePerSecond": 500}]`, "batchSize"},
		{`[{"name": "a", "startsAt": "` + at(1) + `", "queueingMethod": "lottery"}]`, "queueingMethod"},
		{`[{"name": "a"}]`, "startsAt is required"},
		{`[{"name": "a", "startsAt": "` + at(2) + `", "endsAt": "` + at(1) + `"}]`, "endsAt is not after"},
		{`[{"name": "a", "startsAt": "` + at(2) + `"}, {"name": "b", "startsAt": "` + at(1) + `"}]`, "order they start"},
		{`[{"name": "a", "startsAt": "` + at(1) + `", "endsAt": "` + at(3) + `"}, {"name": "b", "startsAt": "` + at(2) + `"}]`, "before the phase before it ends"},
		{`[{"name": "a", "startsAt": "` + at(1) + `"}, {"name": "a", "startsAt": "` + at(2) + `"}]`, "taken"},
		{`[{"name": "a", "startsAt": "` + at(1) + `"}, {"name": "b", "startsAt": "` + at(2) + `", "preQueue": true}]`, "first phase"},
		{`[{"name": "Members!", "startsAt": "` + at(1) + `"}]`, "name must be"},
		{`[{"name": "a", "startsAt": "` + at(1) + `", "rate": 5}]`, "unknown field"},
		{`[{"name": "a", "startsAt": "` + at(1) + `", "sessionMaxSeconds": 10}]`, "sessionMaxSeconds"},
		{`{"name": "a"}`, "list of phases"},
	} {
		c, err := Apply(DefaultConfig(), map[string]any{"phases": json.RawMessage(tc.phases)})
		if err == nil {
			err = c.Validate()
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an invalid config naming %q", tc.phases, err, tc.want)
		}
	}
	var nine []string
	for i := range 9 {
		nine = append(nine, `{"name": "p`+string(rune('0'+i))+`", "startsAt": "`+at(i+1)+`"}`)
	}
	c, err := Apply(DefaultConfig(), map[string]any{"phases": json.RawMessage("[" + strings.Join(nine, ",") + "]")})
	if err == nil {
		err = c.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "at most 8") {
		t.Errorf("nine phases: %v", err)
	}
}

// TestPhasesStoredByEarlierVersionsRead: phases as an instance before the
// phased rows stored them (its keys in another order) read as they did,
// and are written back with the same keys and values.
func TestPhasesStoredByEarlierVersionsRead(t *testing.T) {
	const old = `[{"name":"members","startsAt":"2026-12-24T20:00:00Z","preQueue":true,"ratePerSecond":50,"queueingMethod":"random",` +
		`"maxActiveTokens":200,"sessionMaxSeconds":900,"entry":"signed","message":{"en":"Members' draw","ja":"会員抽選"},"template":"members"},` +
		`{"name":"public","startsAt":"2026-12-24T21:00:00Z","endsAt":"2026-12-24T23:00:00Z","message":""}]`
	c, err := configFromStore(map[string]string{"rate": "100", "batch": "10", "interval_ms": "100", "capacity": "100000", "ttl_ms": "300000", "phases": old})
	if err != nil {
		t.Fatal(err)
	}
	m := c.InForce(time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC))
	if m.PhaseInForce != "members" || m.RatePerSecond != 50 || m.Adaptive || m.Method != MethodRandom || m.MaxActiveTokens != 200 ||
		m.SessionMax != 15*time.Minute || m.Join != JoinSigned || m.Message.For() != "Members' draw" || m.PageTemplate != "members" ||
		m.RateDerivation != "phase members: 50/s" {
		t.Errorf("members read from an earlier version's store: %+v", m)
	}
	var was, is []map[string]any
	phases, _ := SettingNamed("phases")
	if err := json.Unmarshal([]byte(old), &was); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(phases.Format(c)), &is); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(was, is); diff != "" {
		t.Errorf("written back (-earlier +now):\n%s", diff)
	}
}
