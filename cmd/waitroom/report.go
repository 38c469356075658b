package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/staff"
)

// reportTimeout bounds reading a sale's figures: 14 days of minutes is a
// few megabytes.
const reportTimeout = 2 * time.Minute

// reportCmd runs `waitroom report`: a queue's figures, read from a running
// instance's admin API, made into the sale's report, one HTML file.
func reportCmd(args []string, getenv func(string) string, now time.Time, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("waitroom report", flag.ContinueOnError)
	flags.SetOutput(stderr)
	q := flags.String("queue", "", "the queue (required)")
	since := flags.String("since", "", "from when: an RFC 3339 instant (2026-12-04T20:00:00Z) or a duration before now (6h); empty: from the first minute kept")
	until := flags.String("until", "", "until when, likewise; empty: now")
	out := flags.String("out", "", "the file to write; - for standard output; empty: waitroom-report-QUEUE.html")
	lang := flags.String("lang", report.Languages()[0], "the report's language: "+strings.Join(report.Languages(), ", "))
	tz := flags.String("tz", "Local", "the time zone the report writes instants in (an IANA name: UTC, Asia/Seoul)")
	target := adminFlags(flags)
	flags.Usage = func() {
		fmt.Fprint(stderr, "Usage: waitroom report --queue Q [--since T] [--until T] [--out FILE] [--addr URL]\n\n"+
			"Makes the sale's report: the queue's figures minute by minute, read from a running\n"+
			"instance (the admin API's GET /admin/v1/queues/{queue}/rollups), as one HTML file\n"+
			"that needs nothing else: charts of the line, admission, time in line and the\n"+
			"estimates, the funnel, what happened when. --addr, --admin-token and --data-dir\n"+
			"have environment twins, as for serve.\n\n")
		flags.PrintDefaults()
	}
	target.fromEnv(flags, getenv)
	if err := parseQueueCommand(flags, args, q); err != nil {
		return err
	}
	from, to, err := reportSpan(*since, *until, now)
	if err != nil {
		return err
	}
	loc, err := time.LoadLocation(*tz)
	if err != nil {
		return fmt.Errorf("--tz: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	at, token, err := target.resolve(ctx, stderr)
	if err != nil {
		return err
	}
	return writeReport(ctx, adminRollups{at: at, token: token}, *q, from, to, *out,
		report.Options{Lang: *lang, Location: loc, Now: now}, stdout)
}

// writeReport reads the sale from src and writes its report to the file
// out names (standard output for -), saying where on stdout.
func writeReport(ctx context.Context, src report.Source, queue string, from, to time.Time, out string, o report.Options, stdout io.Writer) error {
	sale, err := src.Sale(ctx, queue, from, to)
	if err != nil {
		return fmt.Errorf("report %s: %w", queue, err)
	}
	// The span asked for is the report's, whatever the source echoes.
	if !from.IsZero() {
		sale.From = from
	}
	if !to.IsZero() {
		sale.Until = to
	}
	if out == "-" {
		return report.Render(stdout, sale, o)
	}
	if out == "" {
		out = "waitroom-report-" + queue + ".html"
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := report.Render(f, sale, o); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: %d minutes with figures, %d moments: %s\n", queue, len(sale.Minutes), len(sale.Moments), out)
	return err
}

// reportSpan reads --since and --until: each an RFC 3339 instant or a
// duration before now; --until defaults to now.
func reportSpan(since, until string, now time.Time) (from, to time.Time, err error) {
	parse := func(name, v string) (time.Time, error) {
		if v == "" {
			return time.Time{}, nil
		}
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return now.Add(-d), nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("--%s: %q is neither an RFC 3339 instant nor a duration before now (6h)", name, v)
		}
		return t, nil
	}
	if from, err = parse("since", since); err != nil {
		return
	}
	if to, err = parse("until", until); err != nil {
		return
	}
	if to.IsZero() {
		to = now
	}
	if !from.IsZero() && !from.Before(to) {
		err = fmt.Errorf("--since %s is not before --until %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	return
}

// adminRollups reads a queue's figures through the admin API: GET
// /admin/v1/queues/{queue}/rollups?since=&until= (RFC 3339; either left
// out when zero), whose answer is a report.Sale as JSON.
type adminRollups struct {
	at    waitroomBase
	token string
}

var _ report.Source = adminRollups{}

func (a adminRollups) Sale(ctx context.Context, queue string, since, until time.Time) (report.Sale, error) {
	q := url.Values{}
	if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339))
	}
	if !until.IsZero() {
		q.Set("until", until.UTC().Format(time.RFC3339))
	}
	path := "/admin/v1/queues/" + url.PathEscape(queue) + "/rollups"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var sale report.Sale
	if err := adminCall(ctx, http.MethodGet, a.at, path, a.token, nil, &sale); err != nil {
		return sale, err
	}
	// Who changed what in the span (the report's "What happened").
	q.Set("queue", queue)
	q.Set("limit", strconv.Itoa(staff.MaxAuditLimit))
	if !until.IsZero() { // to the millisecond: a change made this second is in
		q.Set("until", until.UTC().Format(time.RFC3339Nano))
	}
	var log struct {
		Entries []staff.Entry `json:"entries"`
	}
	err := adminCall(ctx, http.MethodGet, a.at, "/admin/v1/audit?"+q.Encode(), a.token, nil, &log)
	sale.Audit = log.Entries
	return sale, err
}
