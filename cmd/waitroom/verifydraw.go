package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/waitroom/waitroom/internal/draw"
)

// exitStatus is an error main exits with Status (not 1) once the command
// has said why on standard output.
type exitStatus struct {
	msg    string
	Status int
}

func (e *exitStatus) Error() string   { return e.msg }
func (e *exitStatus) ExitStatus() int { return e.Status }

var (
	// errNoMatch is verify-draw's exit status 1: the record differs.
	errNoMatch = &exitStatus{"verify-draw: the record does not check out", 1}
	// errTooLate is its exit status 2: the record matches a commitment
	// made only at the opening, which proves nothing (Checked.LateNote).
	errTooLate = &exitStatus{"verify-draw: the record matches, but its commitment was made only at the opening", 2}
)

// verifyDrawCmd runs `waitroom verify-draw`: a drawn opening's record,
// from a running instance's public GET /api/v1/queues/{q}/draw or from a
// file, recomputed (draw.Verify); no secret is needed or sent.
func verifyDrawCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("waitroom verify-draw", flag.ContinueOnError)
	flags.SetOutput(stderr)
	q := flags.String("queue", "", "the queue (with --addr)")
	addr := flags.String("addr", "", "the waitroom instance whose published draw to check: its URL (behind waitroom proxy, with its --prefix)")
	commitment := flags.String("commitment", "", "with --addr, the commitment whose record to check; empty: the newest drawn")
	file := flags.String("file", "", "a record's JSON (the record of GET /api/v1/queues/{q}/draw), instead of --addr")
	chain := flags.String("drand", "", "also ask this drand chain for the record's beacon round and compare its randomness: "+
		"the record's beacon URL, or any mirror of the same chain (https://api.drand.sh/CHAINHASH); empty: the record's value is taken as given")
	flags.Usage = func() {
		fmt.Fprint(stderr, "Usage: waitroom verify-draw --queue Q --addr URL [--commitment HEX]\n"+
			"       waitroom verify-draw --file record.json\n\n"+
			"Recomputes a drawn opening from its published record (docs/draws.md): the commitment,\n"+
			"the participants' hash, the final seed, the order and the tickets. Prints \"matches: …\"\n"+
			"and exits 0, or the first entry that differs and exits 1. With --addr it also checks\n"+
			"that the record's commitment is drawn in the queue's ledger, lists the commitments\n"+
			"withdrawn before it, and exits 2 when the commitment was made only at the opening or\n"+
			"after it (the record matches, but proves nothing); with --drand, that the beacon's\n"+
			"round comes a period or more after the opening and its randomness is the chain's.\n"+
			"Needs no secret. examples/verify-draw does the same in Python.\n\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	switch {
	case flags.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %v", flags.Args())
	case (*file == "") == (*addr == ""):
		flags.Usage()
		return errors.New("give either --file or --addr (with --queue)")
	case *file != "" && (*q != "" || *commitment != ""):
		return errors.New("--queue and --commitment go with --addr, not --file")
	case *addr != "" && *q == "":
		return errors.New("--queue is required with --addr")
	}
	if *file != "" {
		r, err := draw.ReadRecord(*file)
		if err != nil {
			return mistyped(stdout, err)
		}
		return say(ctx, stdout, draw.Checked{Record: r}, *chain)
	}
	base, err := instanceURL(*addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	ledger, err := draw.Fetch(ctx, nil, base, *q, *commitment)
	if err != nil {
		return mistyped(stdout, err)
	}
	checked, err := ledger.Check(*q)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return errNoMatch
	}
	return say(ctx, stdout, checked, *chain)
}

// mistyped prints, and answers as errNoMatch, a record's value of the
// wrong type (a *draw.Mismatch from reading it): the verdict on it. Any
// other error it answers as is.
func mistyped(stdout io.Writer, err error) error {
	var m *draw.Mismatch
	if !errors.As(err, &m) {
		return err
	}
	fmt.Fprintln(stdout, m)
	return errNoMatch
}

// say prints the verdict on c's record; then, with a drand chain, what it
// says of the beacon (a beacon that differs is the verdict instead); then,
// when the ledger was read, the commitments withdrawn before it and, when
// the record matches, whether its commitment came too late (a record from
// a file has neither).
func say(ctx context.Context, stdout io.Writer, c draw.Checked, chain string) error {
	line, ok := draw.Verdict(c.Record)
	var beacon string
	if ok && chain != "" {
		var err error
		beacon, err = draw.CheckBeacon(ctx, nil, chain, c.Record)
		var m *draw.Mismatch
		if errors.As(err, &m) {
			line, ok = m.Error(), false
		} else if err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, line)
	if ok && beacon != "" {
		fmt.Fprintln(stdout, beacon)
	}
	for _, note := range c.Notes() {
		fmt.Fprintln(stdout, note)
	}
	switch {
	case !ok:
		return errNoMatch
	case c.LateNote() != "":
		fmt.Fprintln(stdout, c.LateNote())
		return errTooLate
	}
	return nil
}
