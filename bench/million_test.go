package bench

import (
	"context"
	"os"
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
	t.Logf("%+v", r.Million)
}
