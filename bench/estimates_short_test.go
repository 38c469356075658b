package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testenv"
)

// TestEstimatesShort runs the estimates section in its short mode (the
// burst at the seed's fixed rate, and the no-shows, slowdown, two phases
// and pause, each a tenth of the crowd over a tenth of the time, the
// pause's burst a fifth) and
// checks what must hold whatever the machine's load: everyone let in or
// accounted for (a no-show never comes back), every WAITING answer says
// whether the wait is known and its fields agree (a known wait's range
// holds its point), join answers carry ranges, and every answer during
// the pause said the wait was not known, "paused", and none after the
// resume still said so (not known for a stall, which a loaded machine
// holding admission up makes, is not the pause's). Coverage and the
// ratios are the long run's figures (bench/run.sh -sections estimates):
// a few seconds of a line hold too few people for them.
func TestEstimatesShort(t *testing.T) {
	o := Options{RedisURL: testenv.RedisURL(t), DatabaseURL: testenv.DatabaseURL(t), Short: true}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	// A guard against a hang, not a speed check.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := runEstimates(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Scenarios) != 5 {
		t.Fatalf("%d scenarios, want 5", len(r.Scenarios))
	}
	md := estimatesMarkdown(r, "stamp")
	for _, e := range r.Scenarios {
		if e.Errors > 0 || e.Admitted+e.Vanished != e.People {
			t.Errorf("%s: %d people, %d admitted, %d no-shows, %d errors (%s)", e.Name, e.People, e.Admitted, e.Vanished, e.Errors, e.ErrorSample)
		}
		if e.Answers == 0 || e.Unsound > 0 || e.Unsaid > 0 {
			t.Errorf("%s: of %d WAITING answers %d unsound (%s), %d without waitTimeKnown", e.Name, e.Answers, e.Unsound, e.UnsoundSample, e.Unsaid)
		}
		if !e.Ranged || e.Scored.Ranged == 0 {
			t.Errorf("%s: no join answer carried a range (%d scored)", e.Name, e.Scored.Count)
		}
		if !strings.Contains(md, "| "+e.Name+" |") {
			t.Errorf("the section lacks %s:\n%s", e.Name, md)
		}
	}
	// Someone joined while paused and was told so; every answer during
	// the pause said so, and none after the resume still said paused.
	pause := r.Scenarios[len(r.Scenarios)-1]
	t.Logf("pause: %d answers while paused, %d asked a second or more after the resume", pause.PausedRight+pause.PausedWrong, pause.AfterResume)
	if len(pause.Events) != 2 || pause.PausedRight == 0 || pause.PausedWrong > 0 || pause.AfterResume == 0 || pause.AfterUnknown > 0 ||
		pause.Unknown["paused"] == 0 {
		t.Errorf("pause: events %v; while paused %d answers said not known, paused, and %d anything else (%s); after the resume %d of %d still said paused; "+
			"joined not known: %v", pause.Events, pause.PausedRight, pause.PausedWrong, pause.PausedSample, pause.AfterUnknown, pause.AfterResume, pause.Unknown)
	}
}
