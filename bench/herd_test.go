package bench

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testenv"
)

// TestHarnessShort runs every section of the harness in its short mode
// against the test servers and checks only its shape: every section ran to
// the end, nothing errored, every user and request is accounted for, the
// report has its sections. No figure is asserted, not even that one is
// above zero (a shared machine, and -race: a run of a second may finish no
// request); a run that finished none says why. The figures are
// bench/run.sh's business. Without wrk on PATH the hot paths section is
// left out, except under CI, where that fails the test.
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
	// in the gateway section, its figures fine); ten times a quiet run's.
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}

	if r.Herd == nil || len(r.Herd.Modes) != len(HerdModes) {
		t.Fatalf("herd: %+v", r.Herd)
	}
	for _, m := range r.Herd.Modes {
		checkHerd(t, "herd "+m.Mode.Name, m)
		// The samplers ran: every order's latency, the busy connections
		// (never more than the pool), the rate in force (the adaptive one
		// but for the burst).
		if len(m.Latency) != m.Orders || m.BusySamples == 0 || m.MaxBusyConns < 1 || m.MaxBusyConns > r.Herd.PoolSize ||
			len(m.Rate) == 0 || m.Mode.Adaptive == (m.Mode.Name == "burst") {
			t.Errorf("herd %s: %d latencies for %d orders, busy connections %d in %d samples, adaptive %v with %d rate samples",
				m.Mode.Name, len(m.Latency), m.Orders, m.MaxBusyConns, m.BusySamples, m.Mode.Adaptive, len(m.Rate))
		}
		// The sale's report was read from the instance (TestHerdReport
		// audits it in chromium).
		if m.Sale == nil || len(m.Sale.HTML) == 0 {
			t.Errorf("herd %s: no report of the sale: %+v", m.Mode.Name, m.Sale)
		}
	}
	checkCapacity(t, r.Herd)

	// The degradation: both runs ran their time out without an error; the
	// users not served by then are accounted for.
	if d := r.Degrade; d == nil || len(d.Runs) != 2 {
		t.Errorf("degrade: %+v", r.Degrade)
	} else {
		for _, run := range d.Runs {
			checkHerd(t, "degrade "+run.Name, run.Result)
			if res := run.Result; (len(run.P95PerSecond) == 0) != (res.Orders == 0) {
				t.Errorf("degrade %s: %d orders, %d seconds with a p95", run.Name, res.Orders, len(run.P95PerSecond))
			}
		}
	}
	// The no-shows: 30% vanished, every present user ordered.
	if n := r.NoShow; n == nil || len(n.Runs) != 2 {
		t.Errorf("noshow: %+v", r.NoShow)
	} else {
		for _, run := range n.Runs {
			checkHerd(t, "noshow "+run.Name, run.Result)
			if res := run.Result; res.Vanished != n.Users*3/10 {
				t.Errorf("noshow %s: %d of %d vanished, want 30%%", run.Name, res.Vanished, n.Users)
			}
		}
	}

	// The sale: with the cap nobody let in is refused for want of stock;
	// in both runs the database sold the stock whole, each unit once, and
	// every user is accounted for (no time is asserted).
	if so := r.SoldOut; so == nil || len(so.Runs) != len(soldOutPerUnit) {
		t.Errorf("soldout: %+v", r.SoldOut)
	} else {
		for _, run := range so.Runs {
			checkSoldOut(t, so, run)
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
		if len(h.Runs) != 4 {
			t.Errorf("hot paths: %d runs, want 4: %+v", len(h.Runs), h)
		}
		for _, w := range h.Runs {
			checkWrk(t, "hot paths "+w.Name, w)
		}
	}

	// The gateway: every run answered 2xx, the odd spelling too (read one
	// way, it is still a page nothing protects, and forwarded).
	if g := r.Gateway; g == nil {
		t.Error("gateway: no report")
	} else if g.Skipped != "" {
		if testenv.InCI() {
			t.Errorf("gateway skipped under CI (scripts/test.sh installs wrk): %s", g.Skipped)
		}
		t.Logf("gateway skipped: %s", g.Skipped)
	} else {
		// directly, bare, waitroom ×3, nginx, and nginx + auth_request and
		// Caddy + forward_auth (unprotected, session-protected) deciding.
		want := 10
		if g.NginxSkipped != "" {
			want--
			if testenv.InCI() {
				t.Errorf("gateway: nginx skipped under CI (scripts/test.sh installs it): %s", g.NginxSkipped)
			}
			t.Logf("gateway: nginx skipped: %s", g.NginxSkipped)
		}
		for _, why := range g.DecidingSkipped {
			want -= 2
			if testenv.InCI() {
				t.Errorf("gateway: a deciding front skipped under CI (scripts/test.sh installs nginx and caddy): %s", why)
			}
			t.Logf("gateway: %s", why)
		}
		// The short run measures the fast upstream only.
		if len(g.Fast.Rows) != want || len(g.Slow.Rows) != 0 {
			t.Errorf("gateway: %d and %d rows, want %d and 0: %+v", len(g.Fast.Rows), len(g.Slow.Rows), want, g)
		}
		for _, w := range append(g.Fast.Rows, g.Slow.Rows...) {
			checkWrk(t, "gateway "+w.Name+" "+w.Path, w.WrkRun)
		}
	}

	// The front: both runs ran, nothing was answered wrongly (a poll the
	// generator gave up waiting for is a starved machine's, counted
	// apart), every place a page worked out from the document was within
	// its stated bound of the exact rank
	// (a correctness check, not a figure), and pages saw READY.
	if f := r.Front; f == nil {
		t.Error("front: no report")
	} else if f.Skipped != "" {
		if testenv.InCI() {
			t.Errorf("front skipped under CI (scripts/test.sh installs nginx): %s", f.Skipped)
		}
		t.Logf("front skipped: %s", f.Skipped)
	} else {
		checkFront(t, f)
	}

	// Accuracy: each rate with one and with three admitting instances (a
	// run waits until its admitters have let someone in before it counts).
	if a := r.Accuracy; a == nil || len(a.Runs) != 4 {
		t.Errorf("accuracy: %+v", r.Accuracy)
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
			if l.Waiting <= 0 || l.Calls != 300 {
				t.Errorf("memory: enters timed %+v, want 300 of them", l)
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
		"**What the backend bears**", "| fixed rate |", "Goals (issue 52)", "<!-- bench:degrade -->", "<!-- bench:noshow -->", "<!-- bench:soldout -->", "bench/bench-degrade-latency.svg", "bench/bench-herd-rate.svg"} {
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

// checkHerd: a herd run ended without an error, and every user is
// accounted for: ordered, vanished (no-shows), or still waiting when a run
// of fixed length ended (degrade: on a loaded machine that may be all of
// them, which is said, not failed).
func checkHerd(t *testing.T, what string, res HerdResult) {
	t.Helper()
	if res.Errors != 0 || res.Orders+res.Vanished+res.Unserved != res.Users {
		t.Errorf("%s: %d orders, %d vanished, %d still waiting at the end, of %d users; %d errors (first: %s)",
			what, res.Orders, res.Vanished, res.Unserved, res.Users, res.Errors, res.ErrorSample)
	}
	if res.Orders == 0 && res.Unserved > 0 {
		t.Logf("%s: no order finished in the run's %v: %d users still waiting when it ended (a loaded machine); %d answers 503 (first: %s)",
			what, res.Duration.Round(time.Millisecond), res.Unserved, res.Retries, cmp.Or(res.RetrySample, "none"))
	}
	if res.Retries > 0 { // a loaded machine may make Redis or the database fail fast; clients retry
		t.Logf("%s: %d answers 503, retried (first: %s)", what, res.Retries, res.RetrySample)
	}
}

// checkCapacity: the short sweep ran its two points (one when the lowest
// rate already failed: a loaded machine), each with every user accounted
// for and no error; the capacity is a rate that passed (0 when none did),
// the order's own latency the first point's p50. Each mode's arrival to
// order is no shorter than its time in line.
func checkCapacity(t *testing.T, h *HerdReport) {
	t.Helper()
	c := h.Capacity
	if c == nil || c.ByHand || len(c.Points) == 0 || len(c.Points) > 2 {
		t.Fatalf("herd capacity: %+v, want a sweep of two points", c)
	}
	for _, p := range c.Points {
		if p.Errors != 0 || p.Orders+p.Unserved != c.Users {
			t.Errorf("herd capacity at %.2f/s: %d orders, %d unserved, %d errors, of %d users", p.Rate, p.Orders, p.Unserved, p.Errors, c.Users)
		}
	}
	first := c.Points[0]
	if c.OwnLatency != first.P50 || (c.Noise == nil) != (first.Orders == 0) {
		t.Errorf("herd capacity: own latency %v, noise %+v, from a first point of p50 %v and %d orders", c.OwnLatency, c.Noise, first.P50, first.Orders)
	}
	passed := slices.ContainsFunc(c.Points, func(p HerdSweepPoint) bool { return p.Pass && p.Rate == c.Rate })
	if c.Rate != 0 && !passed || c.Rate == 0 && first.Pass {
		t.Errorf("herd capacity %.2f/s from the points %+v", c.Rate, c.Points)
	}
	for _, m := range h.Modes {
		if m.Orders > 0 && (m.LineP95 <= 0 || m.ArrivalToOrderP95 < m.LineP95) {
			t.Errorf("herd %s: time in line p95 %v, arrival to order p95 %v", m.Mode.Name, m.LineP95, m.ArrivalToOrderP95)
		}
	}
}

// checkSoldOut: a run of the sale sold its stock whole, each unit once,
// refused nobody it let in when admission was capped by the stock, and
// every user ended bought, refused (410 or 409) or told SOLD_OUT.
func checkSoldOut(t *testing.T, so *SoldOutReport, run SoldOutRun) {
	t.Helper()
	if run.Orders != so.Units || run.UnitsLeft != 0 || run.Doubled != 0 || run.Lost != 0 {
		t.Errorf("soldout admitPerUnit %g: %d orders of %d units, %d left, %d doubled, %d lost",
			run.AdmitPerUnit, run.Orders, so.Units, run.UnitsLeft, run.Doubled, run.Lost)
	}
	if run.AdmitPerUnit > 0 && run.OutOfStock != 0 {
		t.Errorf("soldout admitPerUnit %g: %d users let in were answered out_of_stock", run.AdmitPerUnit, run.OutOfStock)
	}
	if ended := run.Orders + run.OutOfStock + run.Refused + run.SawSoldOut; run.Errors != 0 || ended != so.Users {
		t.Errorf("soldout admitPerUnit %g: %d bought, %d out_of_stock, %d refused, %d told SOLD_OUT, of %d users; %d errors (first: %s)",
			run.AdmitPerUnit, run.Orders, run.OutOfStock, run.Refused, run.SawSoldOut, so.Users, run.Errors, run.ErrorSample)
	}
	if run.Retries > 0 {
		t.Logf("soldout admitPerUnit %g: %d answers 503, retried (first: %s)", run.AdmitPerUnit, run.Retries, run.RetrySample)
	}
}

// checkWrk: a wrk run answered only 2xx, without an error. One that
// finished no request in its time (a second or three, on a machine that
// may be loaded) says why: what one of its requests got when sent alone,
// and what the server logged; it fails only if that was not a 2xx either.
func checkWrk(t *testing.T, what string, w WrkRun) {
	t.Helper()
	switch {
	case w.Non2xx != 0 || w.Errors != 0:
		t.Errorf("%s: %d of %d answers not 2xx, %d errors; one request sent alone: %s", what, w.Non2xx, w.Requests, w.Errors, w.Alone)
	case w.Requests == 0 && !w.AloneOK:
		t.Errorf("%s: no request finished in the run; one request sent alone: %s", what, w.Alone)
	case w.Requests == 0:
		t.Logf("%s: no request finished in the run (a loaded machine); one request sent alone: %s", what, w.Alone)
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
	// A guard against a hang: ten times a quiet run's.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Herd == nil || r.Herd.Clients != HerdPolling || len(r.Herd.Modes) != len(HerdModes) {
		t.Fatalf("herd: %+v", r.Herd)
	}
	for _, m := range r.Herd.Modes {
		checkHerd(t, "herd "+m.Mode.Name, m)
		if m.StatusPolls == 0 {
			t.Errorf("herd %s: no status poll", m.Mode.Name)
		}
	}
	checkCapacity(t, r.Herd)
	if _, err := Run(ctx, Options{Sections: []string{"herd"}, HerdClients: "psychic"}); err == nil || !strings.Contains(err.Error(), "psychic") {
		t.Errorf("unknown client model: %v", err)
	}
}

func checkFront(t *testing.T, f *FrontReport) {
	t.Helper()
	if len(f.Runs) != 2 || !f.Runs[0].Document || f.Runs[1].Document {
		t.Fatalf("front: runs %+v, want the document's then the exact polls'", f.Runs)
	}
	for _, run := range f.Runs {
		if run.Failed > 0 || run.Outside > 0 || run.Waiting == 0 {
			t.Errorf("front %s: %d failed, %d places outside the bound, %d waiting", run.Name, run.Failed, run.Outside, run.Waiting)
		}
	}
	if doc := f.Runs[0]; doc.Placed == 0 && doc.Polls > doc.Asks {
		t.Errorf("front: %d reads of the document placed no one", doc.Polls-doc.Asks)
	}
}
