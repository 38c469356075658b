package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBotsShort runs the bots section in its short mode (800 places) and
// checks its shape: every run admitted as many as it counts, no request
// failed, no person was refused, the carrier-NAT people all hold a place.
// The share of people is asserted only where it is exact by construction
// (no bots: all people); the goals are bench/run.sh -sections bots'.
func TestBotsShort(t *testing.T) {
	o := Options{Short: true, Sections: []string{"bots"}, BotsRuns: []string{"before"}}
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
	if r.Bots == nil || len(r.Bots.Runs) != len(o.BotsRuns) {
		t.Fatalf("bots: %+v", r.Bots)
	}
	for _, run := range r.Bots.Runs {
		if run.Errors > 0 || run.Admitted != r.Bots.Admit || run.People403 > 0 || run.NATPlaced != r.Bots.NAT {
			t.Errorf("%s: %d errors (%s), %d admitted of %d, %d people refused, %d of %d NAT people placed",
				run.Name, run.Errors, run.ErrorSample, run.Admitted, r.Bots.Admit, run.People403, run.NATPlaced, r.Bots.NAT)
		}
		if !run.Bots && run.PeopleShare != 1 {
			t.Errorf("%s: people are %.2f of those admitted with no bots", run.Name, run.PeopleShare)
		}
	}
	md := botsMarkdown(r.Bots, "stamp")
	for _, run := range r.Bots.Runs {
		if !strings.Contains(md, "| "+run.Name+": ") {
			t.Errorf("the section lacks the %s run:\n%s", run.Name, md)
		}
	}
}
