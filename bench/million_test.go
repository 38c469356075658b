package bench

import (
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
// thousand users, second-long steps) and checks that every part of it
// produced figures; the figures themselves are bench/run.sh --million's.
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
	if len(m.Memory) != 2 || m.FillRate <= 0 || m.FillUse.Server <= 0 {
		t.Errorf("fill: %d points, %v/s, %+v", len(m.Memory), m.FillRate, m.FillUse)
	}
	// Every load was answered in full, with nothing but 200s: a few
	// hundred requests a second never time out, even on a busy machine.
	loads := map[string]LoadResult{"bare": m.Bare, "enter open loop": m.EnterOpen}
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
		if l.Requests == 0 || l.OK != l.Requests || l.P50 <= 0 || l.P99 < l.P50 {
			t.Errorf("%s: %s", name, l)
		}
	}
	if m.EnterClosed.OK == 0 || m.EnterClosed.OK != m.EnterClosed.Requests || m.EnterRatio <= 0 {
		t.Errorf("enter closed loop: %s, ratio %v", m.EnterClosed, m.EnterRatio)
	}
	if len(m.Clients) != 2 || len(m.Sweep) == 0 || len(m.Scale) != 2 || len(m.Slot) != 4 {
		t.Errorf("%d clients, %d sweep steps, %d scale runs, %d slot runs", len(m.Clients), len(m.Sweep), len(m.Scale), len(m.Slot))
	}
	if p := m.Pollers; p.Far.Answered == 0 || p.Far.OK != p.Far.Answered || p.Ready == 0 || p.Offered <= 0 {
		t.Errorf("poller model: %+v", p)
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
