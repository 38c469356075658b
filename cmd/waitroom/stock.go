package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// stockTimeout bounds a stock command (asking whether --addr is waitroom,
// then the admin call): an instance that does not answer in this long is as
// good as down for an operator at a shell.
const stockTimeout = 30 * time.Second

// stock runs `waitroom sold-out` and `waitroom restock`: the admin API's
// POST /admin/v1/queues/{queue}/sold-out and …/restock on a running
// instance, for an operator's shell or a shop's script. It prints what the
// queue has left to sell as the instance answered it; a refusal is an
// error carrying the API's code and message.
func stock(command string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("waitroom "+command, flag.ContinueOnError)
	flags.SetOutput(stderr)
	q := flags.String("queue", "", "the queue (required)")
	target := adminFlags(flags)
	units := int64(-1)
	if command == "restock" {
		flags.Int64Var(&units, "units", -1, "the units the queue has left to sell; left out: recounted from the order API's products (gateway mode: not known)")
	}
	synopsis := "waitroom " + command + " --queue Q [--addr URL]"
	if command == "restock" {
		synopsis += " [--units N]"
	}
	flags.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%s\n--addr, --admin-token and --data-dir have environment twins, as for serve.\n\n",
			synopsis, stockUsage[command])
		flags.PrintDefaults()
	}
	target.fromEnv(flags, getenv)
	if err := parseQueueCommand(flags, args, q); err != nil {
		return err
	}
	unitsGiven := false
	flags.Visit(func(f *flag.Flag) { unitsGiven = unitsGiven || f.Name == "units" })
	if unitsGiven && units < 0 {
		return fmt.Errorf("--units: must be 0 or more, got %d", units)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stockTimeout)
	defer cancel()
	at, token, err := target.resolve(ctx, stderr)
	if err != nil {
		return err
	}
	var body []byte
	if unitsGiven {
		body, _ = json.Marshal(map[string]int64{"unitsLeft": units})
	}
	left, err := postStock(ctx, at, "/admin/v1/queues/"+url.PathEscape(*q)+"/"+command, token, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", command, *q, err)
	}
	_, err = fmt.Fprintf(stdout, "%s: %s\n", *q, left)
	return err
}

// stockUsage says what each command does, for its --help.
var stockUsage = map[string]string{
	"sold-out": "Marks the queue sold out on a running instance (the admin API's POST\n" +
		"/admin/v1/queues/{queue}/sold-out): nobody new takes a place, whoever waits keeps\n" +
		"theirs and is told the queue is sold out, admission lets nobody in.",
	"restock": "Tells the queue on a running instance what it has to sell again (the admin\n" +
		"API's POST /admin/v1/queues/{queue}/restock): --units N, else recounted from the\n" +
		"order API's products (not known in gateway mode). Everyone keeps their place.",
}

// instanceURL is --addr as a URL: a listen address as serve takes it
// (":8080", "0.0.0.0:8080") names this machine.
func instanceURL(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("%q is neither a URL nor a listen address (host:port): %v", addr, err)
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		addr = "http://" + net.JoinHostPort(host, port)
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q: want an http:// or https:// URL", addr)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// postStock sends one of the stock commands and reads the queue's stock
// from its answer (the queue's stats).
func postStock(ctx context.Context, at waitroomBase, path, token string, body []byte) (string, error) {
	var answer struct {
		UnitsLeft *int64 `json:"unitsLeft"`
		SoldOut   bool   `json:"soldOut"`
	}
	if err := adminCall(ctx, http.MethodPost, at, path, token, body, &answer); err != nil {
		return "", err
	}
	switch {
	case answer.SoldOut:
		return "sold out (0 units left)", nil
	case answer.UnitsLeft == nil:
		return "units left not known (admission is not capped by the stock)", nil
	}
	return fmt.Sprintf("%d units left", *answer.UnitsLeft), nil
}
