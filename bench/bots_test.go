package bench

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBotsShort runs the bots section in its short mode (800 places) and
// checks its shape: every run admitted as many as it counts, no request
// failed, no person was refused, the carrier-NAT people all hold a place.
// With the signals, every bot is marked by construction (in the ranges
// file, or scored below the threshold) and no person is, so there the
// people are all of the admitted, and the CPU comparison ran; the timing
// goals are bench/run.sh -sections bots'.
func TestBotsShort(t *testing.T) {
	o := Options{Short: true, Sections: []string{"bots"}}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	// A guard against a hang, not a speed check: ten times a quiet run's.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bots == nil || len(r.Bots.Runs) != len(botsRunSpecs) {
		t.Fatalf("bots: %+v", r.Bots)
	}
	for _, run := range r.Bots.Runs {
		if run.Errors > 0 || run.Admitted != r.Bots.Admit || run.People403 > 0 || run.NATPlaced != r.Bots.NAT {
			t.Errorf("%s: %d errors (%s), %d admitted of %d, %d people refused, %d of %d NAT people placed",
				run.Name, run.Errors, run.ErrorSample, run.Admitted, r.Bots.Admit, run.People403, run.NATPlaced, r.Bots.NAT)
		}
		if (!run.Bots || run.Signals) && run.PeopleShare != 1 {
			t.Errorf("%s: people are %.2f of those admitted", run.Name, run.PeopleShare)
		}
		if run.PeopleShadowed > 0 || run.Signals && run.Bots && run.Shadowed != r.Bots.DCBots+r.Bots.ScoredBots {
			t.Errorf("%s: %d places shadowed, %d of them people's", run.Name, run.Shadowed, run.PeopleShadowed)
		}
		if (run.CPU != nil) != (run.Bots && run.Signals) {
			t.Errorf("%s: the CPU comparison: %+v", run.Name, run.CPU)
		}
	}
	// The section goes between its markers in security.md beside the
	// benchmarks' doc, the rest of both kept.
	dir := t.TempDir()
	doc, sec := filepath.Join(dir, "benchmarks.md"), filepath.Join(dir, "security.md")
	os.WriteFile(doc, []byte("benchmarks kept\n"), 0o644)
	os.WriteFile(sec, []byte("before\n<!-- bench:bots -->\nOLD BLOCK\n<!-- /bench:bots -->\nafter\n"), 0o644)
	if err := Write(r, doc, filepath.Join(dir, "svg"), "bench/run.sh --short -sections bots"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	md, _ := os.ReadFile(sec)
	if string(b) != "benchmarks kept\n" || !strings.HasPrefix(string(md), "before\n<!-- bench:bots -->\n") ||
		!strings.HasSuffix(string(md), "<!-- /bench:bots -->\nafter\n") || strings.Contains(string(md), "OLD BLOCK") {
		t.Errorf("written: benchmarks.md %q, security.md:\n%s", b, md)
	}
	for _, run := range r.Bots.Runs {
		if !strings.Contains(string(md), "| "+run.Name+": ") {
			t.Errorf("the section lacks the %s run:\n%s", run.Name, md)
		}
	}
}

// TestBotsReadsAnswers: an answer's ticket and poll interval are kept,
// READY is counted once, the admin list is read for its count, signals and
// addresses, and the places shadowed are the instance's count, people's
// among them those beyond the bots' places.
func TestBotsReadsAnswers(t *testing.T) {
	r := &botsRunner{}
	tk := &botClient{}
	r.note(tk, map[string]any{"status": "WAITING", "ticket": "t1.1733443202123456789.7.mac", "pollAfterSeconds": 5.0})
	if tk.after != 5 || tk.ticket != "t1.1733443202123456789.7.mac" || !tk.ready.IsZero() {
		t.Errorf("a waiting answer read as %+v", tk)
	}
	r.crowd = []*botClient{{kind: kindPerson, placed: time.Now()}, {kind: kindDC, placed: time.Now()}, {kind: kindDC}}
	for _, c := range []struct{ shadowLength, shadowed, people int }{{1, 1, 0}, {3, 3, 2}, {0, 0, 0}, {-1, -1, 0}} {
		run := BotsRun{ShadowLength: c.shadowLength}
		r.count(&run)
		if run.Shadowed != c.shadowed || run.PeopleShadowed != c.people {
			t.Errorf("shadowLength %d, one bot placed: shadowed %d (people %d), want %d (%d)", c.shadowLength, run.Shadowed, run.PeopleShadowed, c.shadowed, c.people)
		}
	}
	c := &botClient{}
	r.note(c, map[string]any{"status": "READY"})
	r.note(c, map[string]any{"status": "READY"})
	if c.ready.IsZero() || r.readySeen.Load() != 1 {
		t.Errorf("READY twice: seen %d", r.readySeen.Load())
	}
	var list suspectList
	raw := `{"queue":"q","shadowLength":5,"suspects":[{"id":"1","signals":["address_range"],"address":"a1"},` +
		`{"id":"2","signals":["address_range"],"address":"a1"},{"id":"3","signals":["edge_score","poll_rate"],"address":"b2"}]}`
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatal(err)
	}
	var run BotsRun
	list.count(&run)
	want := map[string]int{"address_range": 2, "edge_score": 1, "poll_rate": 1}
	if run.ListedLength != 5 || run.Listed != 3 || run.ListedAddresses != 2 || !maps.Equal(run.ListedSignals, want) {
		t.Errorf("the list read as %+v", run)
	}
}
