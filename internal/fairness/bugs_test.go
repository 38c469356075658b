//go:build historybugs

package fairness

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestDeliberateBugsAreCaught is the proof that the check can fail: each
// deliberate bug of a -tags historybugs build (internal/app/historybugs.go)
// must be caught within a few histories of the kind that can show it.
// scripts/test.sh runs it on every CI run; it logs how many histories each
// bug needed.
func TestDeliberateBugsAreCaught(t *testing.T) {
	const most = 10
	requireRedisServer(t)
	dbURL := testenv.DatabaseURL(t)
	for _, c := range []struct{ bug, kind string }{
		{"admit-resend", "network"}, // go-redis sends admit.lua again in its stalls
		{"split-enter", "none"},
		{"early-spend", "none"},
		{"lane-shares-reversed", "none"}, // caught beside the model (sharesHeld)
		{"lanes-ignored", "none"},        // caught by the model: a member's place in the public line
	} {
		t.Run(c.bug, func(t *testing.T) {
			t.Setenv(app.HistoryBugEnv, c.bug)
			o := Options{Dir: t.TempDir(), Out: os.TempDir(), DatabaseURL: dbURL, Histories: most, Duration: 3 * time.Second,
				Kinds: []string{c.kind}, StopAtFirst: true}
			rep, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			k := rep.Kinds[0]
			if k.FirstFailure == 0 {
				t.Fatalf("%s not caught in %d %s histories", c.bug, most, c.kind)
			}
			t.Logf("%s caught in history %d of %d (%s): %s", c.bug, k.FirstFailure, most, c.kind, k.Failures[0])
		})
	}
}
