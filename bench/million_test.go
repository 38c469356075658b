package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testenv"
)

// TestMain lets the test binary serve as a waitroom instance process, as
// the bench binary does (InstanceEnv), for TestMillionMiniature.
func TestMain(m *testing.M) {
	if os.Getenv(InstanceEnv) != "" {
		os.Exit(ServeInstance())
	}
	os.Exit(m.Run())
}

// TestMillionMiniature runs the million section in its short mode (a few
// thousand users, second-long steps) and checks its shape: every part of
// it ran, every request was answered 2xx, the report has its sections. No
// figure is asserted (they are bench/run.sh --million's), not even that a
// rate or a latency is above zero.
func TestMillionMiniature(t *testing.T) {
	o := Options{
		RedisURL:    testenv.RedisURL(t),
		DatabaseURL: testenv.DatabaseURL(t),
		Short:       true,
		Sections:    []string{"million"},
	}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	// A guard against a hang, not a speed check: ten times a quiet run's
	// (under the short line's 300 s of admission: millionSizes.rate).
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Herd != nil || r.Hot != nil || r.Million == nil {
		t.Fatalf("sections run: %+v", r)
	}
	m := r.Million
	for _, p := range m.Memory {
		if p.Users <= 0 || p.RedisBytes <= 0 || p.InstanceHeap <= 0 || p.InstanceRSS <= 0 || p.TicketBytes <= 0 || p.TicketBytesLongIDs <= 0 {
			t.Errorf("memory: %+v", p)
		}
	}
	if len(m.Memory) != 2 || m.FillUse.Server <= 0 {
		t.Errorf("fill: %d points, %+v", len(m.Memory), m.FillUse)
	}
	// Every load was answered in full, with nothing but 2xx: the short
	// mode's open loops wait a minute for their last answers, and each
	// connection of a closed loop sends at least one request.
	loads := map[string]LoadResult{"bare": m.Bare, "enter closed loop": m.EnterClosed, "enter open loop": m.EnterOpen}
	for _, c := range m.Clients {
		loads["client "+c.Client] = c.Result
	}
	for i, s := range m.Sweep {
		loads[fmt.Sprintf("sweep %d", i)] = s.Result
	}
	for _, s := range m.Scale {
		loads[fmt.Sprintf("%d instances", s.Instances)] = s.Result
	}
	for name, l := range loads {
		if l.Requests == 0 || l.OK != l.Requests {
			t.Errorf("%s: %d of %d requests answered 2xx: %s (first error: %s)", name, l.OK, l.Requests, l.statusSummary(), cmp.Or(l.ErrorSample, "none"))
		}
	}
	if len(m.Clients) != 2 || len(m.Sweep) == 0 || len(m.Scale) != 2 || len(m.Slot) != 4 {
		t.Errorf("%d clients, %d sweep steps, %d scale runs, %d slot runs", len(m.Clients), len(m.Sweep), len(m.Scale), len(m.Slot))
	}
	if p := m.Pollers; p.Far.Answered == 0 || p.Far.OK != p.Far.Answered || p.Ready == 0 {
		t.Errorf("poller model: %d polls answered from far back, %d of them 2xx (%s), %d users let in: %+v",
			p.Far.Answered, p.Far.OK, p.Far.statusSummary(), p.Ready, p)
	}
	for _, s := range m.Slot {
		// Scripts ran, though fewer than calls for enter: concurrent enters share one (redisstore's enterbatch.go).
		if s.Calls == 0 || s.Use.Scripts == 0 || s.Use.Redis <= 0 {
			t.Errorf("slot %s: %+v", s.Script, s)
		}
	}
	sampled := 0.0
	for _, s := range append(m.EnterProfile, m.StatusProfile...) {
		sampled += s.Us
	}
	if len(m.EnterProfile) == 0 || len(m.StatusProfile) == 0 || sampled <= 0 {
		t.Errorf("profiles: %v %v", m.EnterProfile, m.StatusProfile)
	}

	// The section is written between its markers, and the rest kept.
	doc := filepath.Join(t.TempDir(), "benchmarks.md")
	os.WriteFile(doc, []byte("kept\n<!-- bench:million -->\nold\n<!-- /bench:million -->\n"), 0o644)
	if err := Write(r, doc, filepath.Join(t.TempDir(), "svg"), "bench/run.sh --million"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	for _, want := range []string{"kept\n", "| goal | figure |", "**The scale law**", "10,000,000 over 100 queues", "| enter.lua"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "\nold\n") {
		t.Error("report kept the old block")
	}
}
