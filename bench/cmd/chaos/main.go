// Command chaos runs the chaos run (package bench, RunChaos): three waitroom
// processes on a Redis of its own (AOF, appendfsync everysec) and the
// PostgreSQL named by WAITROOM_TEST_DATABASE_URL, a crowd of 200 polling
// and buying, while Redis is killed -9 and started again after 5 s, one
// instance is killed -9, and PostgreSQL is stopped for 5 s (by the shell
// commands WAITROOM_CHAOS_PG_STOP and WAITROOM_CHAOS_PG_START). It prints
// the outcome as Markdown and exits 1 if any promise broke.
//
// With -on-store-error admit or wait it runs the store-error run instead
// (bench.RunStoreError): `waitroom proxy` with that setting in front of an
// upstream of its own, Redis killed for 10 s under load.
//
//	bench/run.sh --chaos    # starts PostgreSQL and sets all of that
//	bench/run.sh --chaos [--short] -on-store-error admit
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/bench"
	"github.com/waitroom/waitroom/internal/degraded"
)

func main() {
	short := flag.Bool("short", false, "60 users on a 25 s timeline instead of 200 on 60 s")
	command := flag.String("command", "bench/run.sh --chaos", "the command named in the report as reproducing it")
	onStoreError := flag.String("on-store-error", "", "run the store-error run instead, with this --on-store-error (admit or wait)")
	flag.Parse()
	run := run
	if *onStoreError != "" {
		run = func(short bool, command string) error { return runStoreError(short, command, *onStoreError) }
	}
	if err := run(*short, *command); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func run(short bool, command string) error {
	dbURL, stop, start := os.Getenv("WAITROOM_TEST_DATABASE_URL"), os.Getenv("WAITROOM_CHAOS_PG_STOP"), os.Getenv("WAITROOM_CHAOS_PG_START")
	if dbURL == "" || stop == "" || start == "" {
		return fmt.Errorf("WAITROOM_TEST_DATABASE_URL, WAITROOM_CHAOS_PG_STOP and WAITROOM_CHAOS_PG_START are required (bench/run.sh --chaos sets them)")
	}
	dir, bin, err := build("waitroom-chaos")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	shell := func(script string) func(context.Context) error {
		return func(ctx context.Context) error {
			if out, err := exec.CommandContext(ctx, "sh", "-c", script).CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %v\n%s", script, err, out)
			}
			return nil
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelTime := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelTime()
	rep, err := bench.RunChaos(ctx, bench.ChaosOptions{Binary: bin, DatabaseURL: dbURL, StopDatabase: shell(stop),
		StartDatabase: shell(start), Dir: dir, Short: short, Log: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Print(rep.Markdown(command))
	if len(rep.Violations) > 0 {
		return fmt.Errorf("%d promises broken", len(rep.Violations))
	}
	return nil
}

// runStoreError is the store-error run (bench.RunStoreError).
func runStoreError(short bool, command, mode string) error {
	m, err := degraded.ParseMode(mode)
	if err != nil {
		return fmt.Errorf("-on-store-error: %v", err)
	}
	dir, bin, err := build("waitroom-store-error")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelTime := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelTime()
	rep, err := bench.RunStoreError(ctx, bench.StoreErrorOptions{Binary: bin, Dir: dir, Mode: m, Short: short, Log: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Print(rep.Markdown(command + " -on-store-error " + mode))
	if len(rep.Violations) > 0 {
		return fmt.Errorf("%d promises broken", len(rep.Violations))
	}
	return nil
}

// build makes a temp dir (named by pattern, for the caller to remove) and
// builds waitroom into it.
func build(pattern string) (dir, bin string, err error) {
	if dir, err = os.MkdirTemp("", pattern); err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "waitroom")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/waitroom").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dir, bin, nil
}
