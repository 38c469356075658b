package redisstore_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs up to eight of the package's parallel tests at once where
// go test would run as many as there are cores (two on the CI machine):
// the store suites wait on the wall clock (no-show times, phases, ticks)
// and leave the CPU idle. The package took 191 s with two and 91 s with
// eight on a quiet machine. Only here: the end-to-end packages' tests use
// the CPU, and more of them at once made their timings a loaded machine's.
// An explicit -parallel wins.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", "8"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
