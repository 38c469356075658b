// Command chaos runs the chaos run (package bench, RunChaos): three waitroom
// processes on a Redis of its own (AOF, appendfsync everysec) and the
// PostgreSQL named by WAITROOM_TEST_DATABASE_URL, a crowd of 200 polling
// and buying, while Redis is killed -9 and started again after 5 s, one
// instance is killed -9, and PostgreSQL is stopped for 5 s (by the shell
// commands WAITROOM_CHAOS_PG_STOP and WAITROOM_CHAOS_PG_START). It prints
// the outcome as Markdown and exits 1 if any promise broke.
//
//	bench/run.sh --chaos    # starts PostgreSQL and sets all of that
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
)

func main() {
	short := flag.Bool("short", false, "60 users on a 25 s timeline instead of 200 on 60 s")
	command := flag.String("command", "bench/run.sh --chaos", "the command named in the report as reproducing it")
	flag.Parse()
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
	dir, err := os.MkdirTemp("", "waitroom-chaos")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "waitroom")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/waitroom").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
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
