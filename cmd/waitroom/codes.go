package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
)

// codesChunk is how many codes one upload carries: the most the admin API
// takes in one request (POST /admin/v1/queues/{queue}/codes).
const codesChunk = 100_000

// codesMost bounds --count: ten million codes are a few hundred MB of CSV.
const codesMost = 10_000_000

// codesTimeout bounds one chunk's upload, the instance's check included.
const codesTimeout = 2 * time.Minute

const codesUsage = `Usage: waitroom codes generate --queue Q --lane L --count N [--uses U] [--expires RFC3339] [--addr URL]

Makes N access codes for the queue's lane L (80 bits each, Crockford base32:
XXXX-XXXX-XXXX-XXXX), stores them on a running instance through the admin API
(POST /admin/v1/queues/{queue}/codes, in chunks of 100,000; the instance keeps
only their hashes) and prints them as CSV to stdout: code,lane,uses,expiresAt,
header first. Keep the output: it is the only place the codes are in clear.
The lane must be one of the queue's lanes with codes: true. Exit 1 on failure,
saying on stderr how many codes were stored: those printed before it, which are
live; the rest were not (an upload the instance did not answer may have been
stored all the same: the message counts those, which are not printed).
--addr, --admin-token and --data-dir have environment twins, as for serve.

`

// codesCmd runs `waitroom codes generate`.
func codesCmd(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "generate" {
		fmt.Fprint(stderr, codesUsage)
		return errors.New("codes: the one subcommand is generate")
	}
	flags := flag.NewFlagSet("waitroom codes generate", flag.ContinueOnError)
	flags.SetOutput(stderr)
	q := flags.String("queue", "", "the queue (required)")
	laneName := flags.String("lane", "", "the lane the codes put their holders in: one of the queue's lanes with codes: true (required)")
	count := flags.Int("count", 0, "how many codes to make (required; at most 10,000,000)")
	uses := flags.Int64("uses", 1, "the redemptions each code holds: 1 for single-use")
	expires := flags.String("expires", "", "when the codes stop being redeemable, RFC 3339 (2027-06-01T00:00:00Z); empty: never")
	target := adminFlags(flags)
	flags.Usage = func() {
		fmt.Fprint(stderr, codesUsage)
		flags.PrintDefaults()
	}
	target.fromEnv(flags, getenv)
	if err := parseQueueCommand(flags, args[1:], q); err != nil {
		return err
	}
	var expiresAt *time.Time
	if *expires != "" {
		t, err := time.Parse(time.RFC3339, *expires)
		if err != nil {
			return fmt.Errorf("--expires: want an RFC 3339 time such as 2027-06-01T00:00:00Z, got %q", *expires)
		}
		expiresAt = &t
	}
	switch {
	case *laneName == "":
		return errors.New("--lane is required")
	case *count < 1 || *count > codesMost:
		return fmt.Errorf("--count: from 1 to %d, got %d", codesMost, *count)
	case *uses < 1 || *uses > accesscode.MaxUses:
		return fmt.Errorf("--uses: from 1 to %d, got %d", accesscode.MaxUses, *uses)
	}
	g := codesBatch{queue: *q, lane: *laneName, uses: *uses, expiresAt: expiresAt}
	return g.generate(target, *count, stdout, stderr)
}

// codesBatch is what one run of codes generate makes.
type codesBatch struct {
	queue, lane string
	uses        int64
	expiresAt   *time.Time
}

// generate makes count codes, chunk by chunk: each chunk is stored before
// it is printed, so whatever was printed is redeemable, and a failure says
// how many were (codesFailure).
func (g codesBatch) generate(target adminTarget, count int, stdout, stderr io.Writer) error {
	out := csv.NewWriter(stdout)
	out.Write([]string{"code", "lane", "uses", "expiresAt"})
	expires := ""
	if g.expiresAt != nil {
		expires = g.expiresAt.UTC().Format(time.RFC3339)
	}
	for made := 0; made < count; {
		codes := make([]string, min(codesChunk, count-made))
		for i := range codes {
			codes[i] = accesscode.New()
		}
		if mayHold, err := g.store(target, codes, stderr); err != nil {
			out.Flush()
			return codesFailure{queue: g.queue, err: out.Error(), stored: made, count: count, mayHold: mayHold}.with(err)
		}
		for _, c := range codes {
			out.Write([]string{c, g.lane, strconv.FormatInt(g.uses, 10), expires})
		}
		out.Flush()
		if err := out.Error(); err != nil {
			// Stored but not printed: said like an upload nobody answered.
			return codesFailure{queue: g.queue, stored: made, count: count, mayHold: len(codes)}.with(err)
		}
		made += len(codes)
	}
	return nil
}

// codesFailure is a run that stopped part way: the codes stored before are
// live (printed, unless printing failed), the rest are not, but for
// mayHold codes of the chunk being stored that the instance may hold all
// the same (it did not answer, or kept part of a chunk it refused): not
// printed, nobody can redeem them, yet they count in the lane's codesLeft.
type codesFailure struct {
	queue                  string
	err                    error // printing's own failure, if any
	stored, count, mayHold int
}

// with is the failure as the error the command exits 1 with (on stderr).
func (f codesFailure) with(cause error) error {
	msg := fmt.Sprintf("codes generate %s: %v; %d of %d codes were stored (live: those printed, keep them), the other %d were not",
		f.queue, cause, f.stored, f.count, f.count-f.stored)
	if f.mayHold > 0 {
		msg += fmt.Sprintf(" (but for %d of them, which the instance may hold all the same: not printed, nobody can redeem them, "+
			"but they count in the lane's codesLeft)", f.mayHold)
	}
	if f.err != nil {
		msg += fmt.Sprintf("; printing failed too: %v", f.err)
	}
	return errors.New(msg)
}

// store uploads one chunk; a code the instance rejects fails the run (all
// of a chunk's codes share the lane, so one rejected is all rejected).
// mayHold is how many of the chunk's codes the instance may hold despite
// the failure: all of them when the request went out and no answer came
// back; those it added, of a chunk it answered with a refusal.
func (g codesBatch) store(target adminTarget, codes []string, stderr io.Writer) (mayHold int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), codesTimeout)
	defer cancel()
	at, token, err := target.resolve(ctx, stderr)
	if err != nil {
		return 0, err
	}
	body, err := json.Marshal(map[string]any{"lane": g.lane, "uses": g.uses, "expiresAt": g.expiresAt, "codes": codes})
	if err != nil {
		return 0, err
	}
	var answer struct {
		Added, Duplicates, Rejected int
	}
	if err := adminCall(ctx, http.MethodPost, at, "/admin/v1/queues/"+url.PathEscape(g.queue)+"/codes", token, body, &answer); err != nil {
		var unanswered *url.Error // the request may have been stored: the client gave up or lost the connection
		if errors.As(err, &unanswered) {
			return len(codes), err
		}
		return 0, err
	}
	switch {
	case answer.Rejected > 0:
		return answer.Added, fmt.Errorf("the instance rejected %d codes: is %q one of the queue's lanes with codes: true?", answer.Rejected, g.lane)
	case answer.Added != len(codes):
		// 80 random bits each: a duplicate means a broken random source.
		return answer.Added, fmt.Errorf("the instance added %d of %d codes (%d duplicates)", answer.Added, len(codes), answer.Duplicates)
	}
	return 0, nil
}
