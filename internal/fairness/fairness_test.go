package fairness

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testenv"
)

// TestShortCheck is the short check every CI run makes: a few histories
// of each kind of fault, recorded on the real program and checked.
func TestShortCheck(t *testing.T) {
	o := Options{Dir: t.TempDir(), Histories: 1, Duration: 3 * time.Second, Log: testWriter{t}}
	if testing.Short() {
		t.Skip("the short check boots Redis and three instances")
	}
	o.DatabaseURL = testenv.DatabaseURL(t)
	testenv.RedisURL(t) // redis-server must be there (scripts/test.sh installs it)
	if kinds := os.Getenv("WAITROOM_FAIRNESS_KINDS"); kinds != "" {
		o.Kinds = []string{kinds}
	}
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Totals())
	for _, k := range rep.Kinds {
		for _, f := range k.Failures {
			t.Errorf("%s: %s", k.Kind, f)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
