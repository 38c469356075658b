package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testenv"
)

// TestHarnessShort runs every section of the harness in its short mode
// against the test servers and checks only that it works: every section
// produced numbers and nothing failed. Timings are never asserted (a shared
// machine, and -race); the figures are bench/run.sh's business. Without wrk
// on PATH the hot paths section is left out, except under CI, where that
// fails the test.
func TestHarnessShort(t *testing.T) {
	o := Options{
		RedisURL:    testenv.RedisURL(t),
		DatabaseURL: testenv.DatabaseURL(t),
		Short:       true,
		WrkScript:   "wrk-users.lua",
	}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	// A guard against a hang, not a speed check: with the test command's
	// other packages beside it on a shared machine at load average 19, the
	// short run took over two minutes (two runs failed on a 2-minute guard
	// in the gateway section, its figures fine).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}

	if r.Herd == nil || len(r.Herd.Modes) != len(HerdModes) {
		t.Fatalf("herd: %+v", r.Herd)
	}
	for _, m := range r.Herd.Modes {
		if m.Errors != 0 || m.Orders != r.Herd.Users {
			t.Errorf("herd %s: %d of %d orders, %d errors (first: %s)", m.Mode.Name, m.Orders, r.Herd.Users, m.Errors, m.ErrorSample)
		}
		if m.Retries > 0 { // a loaded machine may make Redis or the database fail fast; clients retry
			t.Logf("herd %s: %d answers 503, retried (first: %s)", m.Mode.Name, m.Retries, m.RetrySample)
		}
		if m.P50 <= 0 || m.P95 < m.P50 || m.P99 < m.P95 || m.RatioP95ToBurst <= 0 || len(m.Latency) != m.Orders {
			t.Errorf("herd %s: latencies p50 %v p95 %v p99 %v ratio %v", m.Mode.Name, m.P50, m.P95, m.P99, m.RatioP95ToBurst)
		}
		if m.BusySamples == 0 || m.MaxBusyConns < 1 || m.MaxBusyConns > r.Herd.PoolSize {
			t.Errorf("herd %s: busy connections %d in %d samples", m.Mode.Name, m.MaxBusyConns, m.BusySamples)
		}
		if m.Mode.Adaptive == (m.Mode.Name == "burst") || len(m.Rate) == 0 || m.SettledRate < herdMinRate || m.SettledRate > m.Mode.Rate {
			t.Errorf("herd %s: adaptive %v, settled at %v from %d samples", m.Mode.Name, m.Mode.Adaptive, m.SettledRate, len(m.Rate))
		}
	}

	// The degradation: both runs ordered, stepped and were sampled.
	if d := r.Degrade; d == nil || len(d.Runs) != 2 {
		t.Errorf("degrade: %+v", r.Degrade)
	} else {
		for _, run := range d.Runs {
			// Not P95Before: in the short run the step comes 5 s in, and on a
			// loaded machine no order may have finished by then.
			if run.Result.Orders == 0 || run.Result.Errors != 0 || len(run.P95PerSecond) == 0 || run.Peak <= 0 {
				t.Errorf("degrade %s: %d orders, %d errors (first: %s), p95 before %v", run.Name, run.Result.Orders,
					run.Result.Errors, run.Result.ErrorSample, run.P95Before)
			}
		}
	}
	// The no-shows: 30% vanished, every present user ordered.
	if n := r.NoShow; n == nil || len(n.Runs) != 2 {
		t.Errorf("noshow: %+v", r.NoShow)
	} else {
		for _, run := range n.Runs {
			res := run.Result
			if res.Vanished != n.Users*3/10 || res.Orders != n.Users-res.Vanished || res.Errors != 0 || res.LastPresentReady <= 0 {
				t.Errorf("noshow %s: %d vanished, %d orders, %d errors (first: %s)", run.Name, res.Vanished, res.Orders, res.Errors, res.ErrorSample)
			}
		}
	}

	if h := r.Hot; h == nil {
		t.Error("hot paths: no report")
	} else if h.Skipped != "" {
		if testenv.InCI() {
			t.Errorf("hot paths skipped under CI (scripts/test.sh installs wrk): %s", h.Skipped)
		}
		t.Logf("hot paths skipped: %s", h.Skipped)
	} else {
		if len(h.Runs) != 4 || h.EnterRatio <= 0 || h.StatusRatio <= 0 {
			t.Errorf("hot paths: %+v", h)
		}
		for _, w := range h.Runs {
			if w.ReqPerSec <= 0 || w.Non2xx != 0 {
				t.Errorf("hot paths %s: %.0f req/s, %d non-2xx", w.Name, w.ReqPerSec, w.Non2xx)
			}
		}
	}

	// The gateway: every run answered 2xx, the odd spelling too (read
	// every way, it is still /product, unprotected, and forwarded).
	if g := r.Gateway; g == nil {
		t.Error("gateway: no report")
	} else if g.Skipped != "" {
		if testenv.InCI() {
			t.Errorf("gateway skipped under CI (scripts/test.sh installs wrk): %s", g.Skipped)
		}
		t.Logf("gateway skipped: %s", g.Skipped)
	} else {
		want := 6 // directly, bare, waitroom ×3, nginx
		if g.NginxSkipped != "" {
			want--
			t.Logf("gateway: nginx skipped: %s", g.NginxSkipped)
		}
		if len(g.Fast.Rows) != want || len(g.Slow.Rows) != want || g.Fast.SpeltToBare <= 0 || g.Slow.SpeltToBare <= 0 {
			t.Errorf("gateway: %+v", g)
		}
		for _, w := range append(g.Fast.Rows, g.Slow.Rows...) {
			if w.ReqPerSec <= 0 || w.Non2xx != 0 || w.Errors != 0 {
				t.Errorf("gateway %s %s: %.0f req/s, %d non-2xx, %d errors", w.Name, w.Path, w.ReqPerSec, w.Non2xx, w.Errors)
			}
		}
	}

	if a := r.Accuracy; a == nil || len(a.Runs) == 0 {
		t.Error("accuracy: no runs")
	} else {
		for _, run := range a.Runs {
			if run.Admitted <= 0 || run.Measured <= 0 {
				t.Errorf("accuracy %g/s × %d: admitted %d", run.Configured, run.Instances, run.Admitted)
			}
		}
	}

	if m := r.Memory; m == nil || len(m.Points) != 2 || len(m.Latency) != 2 {
		t.Errorf("memory: %+v", r.Memory)
	} else {
		for _, p := range m.Points {
			if p.Waiting <= 0 || p.BytesPerUser <= 0 {
				t.Errorf("memory: %+v", p)
			}
		}
		for _, l := range m.Latency {
			if l.P50 <= 0 || l.P99 < l.P50 {
				t.Errorf("memory latency: %+v", l)
			}
		}
	}

	// The report and its charts are written (here into a temp dir).
	dir := t.TempDir()
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte("# B\n\n<!-- bench:herd -->\nold\n<!-- /bench:herd -->\n\nkept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(r, doc, filepath.Join(dir, "bench"), "bench/run.sh --short"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	for _, want := range []string{"kept", "| spread+jitter |", "<!-- bench:memory -->", "bench/bench-herd-latency.svg",
		"<!-- bench:degrade -->", "<!-- bench:noshow -->", "bench/bench-degrade-latency.svg", "bench/bench-herd-rate.svg"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "\nold\n") {
		t.Error("report kept the old herd block")
	}
	svg, err := os.ReadFile(filepath.Join(dir, "bench", "bench-herd-latency.svg"))
	if err != nil || !strings.HasPrefix(string(svg), "<svg") {
		t.Errorf("herd chart: %v %.40q", err, svg)
	}
}

// TestHerdPollingShort runs the herd alone, short, with clients that never
// wait for news (-herd-clients polling): every user orders, nothing fails.
func TestHerdPollingShort(t *testing.T) {
	o := Options{
		RedisURL:    testenv.RedisURL(t),
		DatabaseURL: testenv.DatabaseURL(t),
		Short:       true,
		Sections:    []string{"herd"},
		HerdClients: HerdPolling,
	}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Herd == nil || r.Herd.Clients != HerdPolling || len(r.Herd.Modes) != len(HerdModes) {
		t.Fatalf("herd: %+v", r.Herd)
	}
	for _, m := range r.Herd.Modes {
		if m.Errors != 0 || m.Orders != r.Herd.Users || m.StatusPolls == 0 {
			t.Errorf("herd %s: %d of %d orders, %d errors (first: %s), %d polls", m.Mode.Name, m.Orders, r.Herd.Users, m.Errors, m.ErrorSample, m.StatusPolls)
		}
	}
	if _, err := Run(ctx, Options{Sections: []string{"herd"}, HerdClients: "psychic"}); err == nil || !strings.Contains(err.Error(), "psychic") {
		t.Errorf("unknown client model: %v", err)
	}
}
