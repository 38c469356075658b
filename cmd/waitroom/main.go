// Command waitroom puts a fair waiting line in front of an order API.
//
//	waitroom [serve] [flags]   serve the line, the order API and the page
//	waitroom proxy [flags]     put the line in front of any HTTP backend
//
// Run `waitroom serve --help` or `waitroom proxy --help` for every setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/waitroom/waitroom/internal/app"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "waitroom:", err)
			os.Exit(1)
		}
	}
}

func run(args []string) error {
	parse := app.Parse
	switch {
	case len(args) > 0 && args[0] == "serve":
		args = args[1:]
	case len(args) > 0 && args[0] == "proxy":
		parse, args = app.ParseProxy, args[1:]
	case len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-':
		return fmt.Errorf("unknown command %q (commands: serve, proxy)", args[0])
	}
	cfg, err := parse(args, os.Getenv, os.Stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := &app.Main{Config: cfg, Logger: app.NewLogger(cfg, os.Stderr)}
	if err := m.Run(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		m.Logger.Info("shutting down: draining")
	case <-m.Done():
	}
	stop() // a second signal kills the process the usual way
	if err := m.Close(); err != nil {
		return err
	}
	m.Logger.Info("stopped")
	return nil
}
