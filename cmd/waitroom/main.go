// Command waitroom puts a fair waiting line in front of an order API.
//
//	waitroom [serve] [flags]        serve the line, the order API and the pages
//	waitroom proxy [flags]          put the line in front of any HTTP backend
//	waitroom token --user ID        print a user JWT to try the API with
//	waitroom page check DIR         check a --page-dir without serving it
//	waitroom sold-out --queue Q     mark a queue sold out on a running instance
//	waitroom restock --queue Q      tell it what it has to sell again (--units N)
//	waitroom tokens create|list|revoke  the admin API's named tokens (issue 56)
//	waitroom codes generate ...     make access codes, store them on a running instance, print them as CSV
//	waitroom report --queue Q       the sale's report, one HTML file (--since, --until, --out)
//	waitroom solve --queue Q        anonymous visitors for a test: session cookie, solved challenge (--enter)
//	waitroom verify-draw --queue Q  recompute a drawn opening from its published record (--addr, or --file)
//	waitroom version | --version    the version and source revision
//	waitroom help                   the commands
//
// Run `waitroom serve --help` or `waitroom proxy --help` for every setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/internal/app"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "waitroom:", err)
			os.Exit(exitStatusOf(err))
		}
	}
}

// exitStatusOf is 1, or the status an error names (verify-draw's
// verdicts: 1 differs, 2 matches a commitment made too late).
func exitStatusOf(err error) int {
	var s interface{ ExitStatus() int }
	if errors.As(err, &s) {
		return s.ExitStatus()
	}
	return 1
}

func run(args []string) error {
	command := "serve" // when none is named: `waitroom --addr :9090`
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		command, args = args[0], args[1:]
	} else if len(args) > 0 {
		switch args[0] {
		case "--version", "-version":
			command = "version"
		case "--help", "-help", "-h":
			command = "help"
		}
	}
	switch command {
	case "serve":
		return serve(app.Parse, args)
	case "proxy":
		return serve(app.ParseProxy, args)
	case "token":
		return token(args, os.Getenv, os.Stdout, os.Stderr)
	case "page":
		return page(args, os.Stdout, os.Stderr)
	case "sold-out", "restock":
		return stock(command, args, os.Getenv, os.Stdout, os.Stderr)
	case "codes":
		return codesCmd(args, os.Getenv, os.Stdout, os.Stderr)
	case "tokens":
		return tokensCmd(args, os.Getenv, time.Now(), os.Stdout, os.Stderr)
	case "report":
		return reportCmd(args, os.Getenv, time.Now(), os.Stdout, os.Stderr)
	case "solve":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return solveCmd(ctx, args, os.Getenv, os.Stdout, os.Stderr)
	case "verify-draw":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return verifyDrawCmd(ctx, args, os.Stdout, os.Stderr)
	case "version":
		_, err := fmt.Println(versionText())
		return err
	case "help":
		return help(os.Stdout)
	}
	help(os.Stderr)
	return fmt.Errorf("unknown command %q", command)
}

// serve runs the program with the config parse reads (serve's or proxy's)
// until a signal or its own end.
func serve(parse func([]string, func(string) string, io.Writer) (app.Config, error), args []string) error {
	cfg, err := parse(args, os.Getenv, os.Stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP is caught before the server answers anyone: a SIGHUP sent
	// once it answers (as an operator or a test does after its first
	// request) must reload the files, not end the process, as SIGHUP's
	// default action would while it was not caught yet.
	hup := make(chan os.Signal, 1)
	if cfg.Reloads() {
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}

	m := &app.Main{Config: cfg, Logger: app.NewLogger(cfg, os.Stderr), Command: selfCommand()}
	if err := m.Run(ctx); err != nil {
		return err
	}
	waitForEnd(ctx, m, hup)
	stop() // a second signal kills the process the usual way
	if err := m.Close(); err != nil {
		return err
	}
	m.Logger.Info("stopped")
	return nil
}

// waitForEnd returns at SIGINT or SIGTERM (ctx) or when the server stops
// by itself. With --queues or --suspect-ranges, SIGHUP (hup) reads them
// again meanwhile (app.Main.Reload); without either SIGHUP keeps its usual
// meaning (the process ends).
func waitForEnd(ctx context.Context, m *app.Main, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			m.Logger.Info("shutting down: draining")
			return
		case <-m.Done():
			return
		case <-hup:
			m.Logger.Info("SIGHUP: reading the queues file and the suspect ranges again", "queues", m.Config.QueuesFile,
				"suspect_ranges", m.Config.SuspectRanges)
			m.Reload(ctx) // what went wrong is logged
		}
	}
}
