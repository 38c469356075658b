// Command bench runs waitroom's benchmark harness (package bench) against
// the Redis and PostgreSQL named by WAITROOM_TEST_REDIS_URL and
// WAITROOM_TEST_DATABASE_URL (bench/run.sh starts throwaway ones), and
// writes the figures into docs/benchmarks.md and SVG charts beside it.
//
//	bench/run.sh            # everything but the million, a few minutes
//	bench/run.sh --short    # seconds: a smoke run, figures not claims
//	bench/run.sh --million  # a million in line, open loop: several minutes
//
// With WAITROOM_BENCH_INSTANCE set it is instead one waitroom instance for
// the million section (bench.ServeInstance).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/bench"
)

func main() {
	if os.Getenv(bench.InstanceEnv) != "" {
		os.Exit(bench.ServeInstance())
	}
	short := flag.Bool("short", false, "seconds instead of minutes (a smoke run)")
	sections := flag.String("sections", "", "comma-separated subset of herd,degrade,noshow,soldout,hot,accuracy,memory,gateway,front,million,bots,lanes,codes,estimates,ready (default all but million, bots, lanes, codes, estimates and ready)")
	botsRuns := flag.String("bots-runs", "", "comma-separated subset of the bots section's runs: signals,before,no bots (default all three)")
	doc := flag.String("doc", "docs/benchmarks.md", "markdown file to write the sections into (empty: none)")
	svgDir := flag.String("svg", "docs/bench", "directory of the SVG charts")
	command := flag.String("command", "bench/run.sh", "the command named in the report as reproducing it")
	profile := flag.Bool("profile", true, "CPU-profile the server under the wrk enter load")
	herdRate := flag.Float64("herd-rate", 0, "admitted users/s of the herd's schedules (0: the seed's 100)")
	herdClients := flag.String("herd-clients", bench.HerdPage, "the herd's client model: page (as the waiting page: pollAfterSeconds, and ?waitSeconds=20 so the server answers the moment a user near the front is READY) or polling (pollAfterSeconds only)")
	millionUsers := flag.Int("million-users", 0, "people in line in the million section (0: 1,000,000)")
	herdFixed := flag.Bool("herd-fixed", false, "run the herd's schedules at a fixed rate instead of the adaptive one")
	herdModes := flag.String("herd-modes", "", "comma-separated subset of the herd's schedules: burst,spread,spread+jitter (default all)")
	herdCapacity := flag.Float64("herd-capacity", 0, "skip the herd's capacity sweep and take this many users/s as what the backend bears (0: sweep it)")
	herdOwnLatency := flag.Duration("herd-own-latency", 0, "with -herd-capacity: the order's own latency the figures are read against (0: the order's work, 200ms)")
	herdSweepOnly := flag.Bool("herd-sweep-only", false, "run the herd's capacity sweep and none of its modes")
	gatewayProfiles := flag.String("gateway-profiles", "", "write CPU profiles of the gateway section's Go proxy runs into this directory (their figures then include the profiler)")
	frontProfiles := flag.String("front-profiles", "", "write CPU profiles of the front section's instances over each run's window into this directory (their figures then include the profiler)")
	jsonOut := flag.String("json", "", "also write every figure and time series of the run to this file, as JSON")
	estimatesRuns := flag.String("estimates-runs", "", "comma-separated subset of the estimates section's runs by name (\"burst (fixed)\", \"30% no-shows\", \"slowdown\", ...; default all)")
	estimatesBefore := flag.String("estimates-before", "", "the -json of an estimates run on the code before issue 54, whose figures the estimates section sets beside this run's")
	// 30 minutes, not 20: the herd's capacity sweep adds 3 to the
	// default run.
	limit := flag.Duration("limit", 30*time.Minute, "stop everything after this long")
	flag.Parse()

	o := bench.Options{
		RedisURL:        os.Getenv("WAITROOM_TEST_REDIS_URL"),
		DatabaseURL:     os.Getenv("WAITROOM_TEST_DATABASE_URL"),
		Short:           *short,
		Profile:         *profile,
		WrkScript:       "bench/wrk-users.lua",
		HerdRate:        *herdRate,
		HerdClients:     *herdClients,
		HerdFixed:       *herdFixed,
		HerdCapacity:    *herdCapacity,
		HerdOwnLatency:  *herdOwnLatency,
		HerdSweepOnly:   *herdSweepOnly,
		MillionUsers:    *millionUsers,
		Log:             os.Stderr,
		GatewayProfiles: *gatewayProfiles,
		FrontProfiles:   *frontProfiles,
	}
	if o.RedisURL == "" || o.DatabaseURL == "" {
		fmt.Fprintln(os.Stderr, "bench: WAITROOM_TEST_REDIS_URL and WAITROOM_TEST_DATABASE_URL are required (bench/run.sh sets them)")
		os.Exit(2)
	}
	if *herdModes != "" {
		o.HerdModes = strings.Split(*herdModes, ",")
	}
	if *sections != "" {
		o.Sections = strings.Split(*sections, ",")
	}
	if *botsRuns != "" {
		o.BotsRuns = strings.Split(*botsRuns, ",")
	}
	if *estimatesRuns != "" {
		o.EstimatesRuns = strings.Split(*estimatesRuns, ",")
	}
	if *estimatesBefore != "" {
		var before bench.Report
		b, err := os.ReadFile(*estimatesBefore)
		if err == nil {
			err = json.Unmarshal(b, &before)
		}
		if err == nil && before.Estimates == nil {
			err = fmt.Errorf("%s holds no estimates section", *estimatesBefore)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -estimates-before:", err)
			os.Exit(2)
		}
		o.EstimatesBefore = before.Estimates
		o.EstimatesBefore.Date = before.Date
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()
	start := time.Now()
	r, err := bench.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(r, "", " ")
		if err == nil {
			err = os.WriteFile(*jsonOut, b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: writing the JSON:", err)
			os.Exit(1)
		}
	}
	if *doc != "" {
		if err := bench.Write(r, *doc, *svgDir, *command); err != nil {
			fmt.Fprintln(os.Stderr, "bench: writing the report:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "bench: wrote %s and %s/*.svg\n", *doc, *svgDir)
		if r.Herd != nil {
			for _, m := range r.Herd.Modes {
				if m.Sale != nil && len(m.Sale.HTML) > 0 {
					fmt.Fprintf(os.Stderr, "bench: the herd's %s sale, its report: %s\n", m.Mode.Name, filepath.Join(*svgDir, bench.HerdReportFile(m.Mode.Name)))
				}
			}
		}
	}
	fmt.Fprintf(os.Stderr, "bench: done in %v\n", time.Since(start).Round(time.Second))
}
