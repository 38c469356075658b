package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/waitroom/waitroom/internal/draw"
)

// errNoMatch is verify-draw's exit status 1 once it has said why on
// standard output.
var errNoMatch = errors.New("verify-draw: the record does not check out")

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
			"that the record's commitment is in the queue's ledger, published before the draw;\n"+
			"with --drand, that the beacon's randomness is the drand round's.\n"+
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
			return err
		}
		return say(ctx, stdout, r, *chain, "")
	}
	base, err := instanceURL(*addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	ledger, err := draw.Fetch(ctx, nil, base, *q, *commitment)
	if err != nil {
		return err
	}
	r, c, err := ledger.Check(*q)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return errNoMatch
	}
	return say(ctx, stdout, r, *chain, draw.LateNote(c))
}

// say prints the verdict on r; then, with a drand chain, what it says of
// the beacon (a beacon that differs is the verdict instead); then note, if
// any.
func say(ctx context.Context, stdout io.Writer, r draw.Record, chain, note string) error {
	line, ok := draw.Verdict(r)
	var beacon string
	if ok && chain != "" {
		var err error
		beacon, err = draw.CheckBeacon(ctx, nil, chain, r)
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
	if note != "" {
		fmt.Fprintln(stdout, note)
	}
	if !ok {
		return errNoMatch
	}
	return nil
}
