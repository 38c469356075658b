// Command check records the line's history under faults and checks it
// against the model (package internal/fairness): -histories of each kind of
// fault, three instances on a Redis of its own (AOF, appendfsync everysec)
// and the PostgreSQL named by WAITROOM_TEST_DATABASE_URL, or the embedded
// line. It prints one line per kind, the totals
// ("histories, operations, faults injected, linearizable: N/N") and the
// table of docs/operations.md, the path of each failing history's
// visualisation, and exits 1 if any history broke a promise.
//
//	bench/run.sh --check                  # 100 histories of each kind
//	bench/run.sh --check -histories 5     # a quicker look
//	bench/run.sh --check -kinds redis-kill,network
//	go run ./bench/cmd/check -recheck -timeout 30m DIR/*-unknown.jsonl
//	                                      # segments a run could not decide
//	                                      # in its minute, checked at leisure
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/internal/fairness"
)

func main() {
	histories := flag.Int("histories", 100, "histories of each kind")
	kinds := flag.String("kinds", strings.Join(fairness.Kinds, ","), "kinds of fault, comma-separated")
	duration := flag.Duration("duration", 4*time.Second, "each history's length")
	out := flag.String("out", os.TempDir(), "where failing histories' visualisations go")
	recheck := flag.Bool("recheck", false, "check again the saved segments named as arguments (-unknown.jsonl)")
	timeout := flag.Duration("timeout", 30*time.Minute, "with -recheck: the time each segment may take")
	flag.Parse()
	if *recheck {
		if err := recheckAll(flag.Args(), *timeout, *out); err != nil {
			fmt.Fprintln(os.Stderr, "check:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*histories, strings.Split(*kinds, ","), *duration, *out); err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
}

func run(histories int, kinds []string, duration time.Duration, out string) error {
	dbURL := os.Getenv("WAITROOM_TEST_DATABASE_URL")
	if dbURL == "" {
		return fmt.Errorf("WAITROOM_TEST_DATABASE_URL is required (bench/run.sh --check sets it)")
	}
	dir, err := os.MkdirTemp("", "waitroom-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rep, err := fairness.Run(ctx, fairness.Options{Dir: dir, Out: out, DatabaseURL: dbURL, Histories: histories,
		Duration: duration, Kinds: kinds, Log: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Println(rep.Totals())
	fmt.Printf("\n%s\n", rep.Markdown())
	fmt.Printf("Took %v on %d histories of %v each (no-show: %v, %d at a time).\n", rep.Took.Round(time.Second),
		histories*len(kinds), duration, max(duration, fairness.NoShowLength), fairness.NoShowAtOnce)
	failed := 0
	for _, k := range rep.Kinds {
		for _, f := range k.Failures {
			fmt.Printf("%s %s\n", k.Kind, f)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d histories broke a promise", failed)
	}
	return nil
}

// recheckAll checks each saved segment again with timeout and prints its
// verdict; it fails when one is not linearizable or still undecided.
func recheckAll(paths []string, timeout time.Duration, out string) error {
	bad := 0
	for _, path := range paths {
		start := time.Now()
		v, err := fairness.Recheck(path, timeout, out)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d operations, %s in %v\n", path, v.Operations, v.Result, time.Since(start).Round(time.Millisecond))
		for _, problem := range v.Violations {
			fmt.Printf("  %s\n", problem)
		}
		if !v.OK() {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d segments not shown linearizable", bad, len(paths))
	}
	return nil
}
