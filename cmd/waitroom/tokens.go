package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// tokensCmd runs `waitroom tokens create|list|revoke`: the admin API's
// named tokens (issue 56) on a running instance, reached as `waitroom
// sold-out` reaches it (--addr, --admin-token). It cannot open the
// embedded store while the server runs, so it never does.
func tokensCmd(args []string, getenv func(string) string, now time.Time, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokensUsage)
		return errors.New("tokens: want create, list or revoke")
	}
	sub, args := args[0], args[1:]
	flags := flag.NewFlagSet("waitroom tokens "+sub, flag.ContinueOnError)
	flags.SetOutput(stderr)
	target := adminFlags(flags)
	name := flags.String("name", "", "create: the token's name, 1 to 64 of a-z, A-Z, 0-9, '.', '_', '-' (required)")
	role := flags.String("role", "", "create: viewer, operator or admin (required)")
	expires := flags.Duration("expires", 0, "create: how long the token works, e.g. 720h (0: until revoked)")
	flags.Usage = func() {
		fmt.Fprint(stderr, tokensUsage)
		flags.PrintDefaults()
	}
	target.fromEnv(flags, getenv)
	if err := flags.Parse(args); err != nil {
		return err
	}
	var positional []string // revoke's NAME, before or among the flags
	for flags.NArg() > 0 {
		positional = append(positional, flags.Arg(0))
		if err := flags.Parse(flags.Args()[1:]); err != nil {
			return err
		}
	}
	var method, path string
	var body []byte
	switch {
	case sub == "create" && len(positional) == 0:
		req := map[string]any{"name": *name, "role": *role}
		if *expires > 0 {
			req["expiresAt"] = now.Add(*expires).UTC().Format(time.RFC3339)
		}
		method, path = http.MethodPost, "/admin/v1/tokens"
		body, _ = json.Marshal(req)
	case sub == "list" && len(positional) == 0:
		method, path = http.MethodGet, "/admin/v1/tokens"
	case sub == "revoke" && len(positional) == 1:
		method, path = http.MethodDelete, "/admin/v1/tokens/"+url.PathEscape(positional[0])
	default:
		flags.Usage()
		return fmt.Errorf("tokens %s: unexpected arguments %v", sub, positional)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stockTimeout)
	defer cancel()
	at, token, err := target.resolve(ctx, stderr)
	if err != nil {
		return err
	}
	var answer map[string]any
	if err := adminCall(ctx, method, at, path, token, body, &answer); err != nil {
		return fmt.Errorf("tokens %s: %w", sub, err)
	}
	return printTokens(sub, path, answer, stdout)
}

// printTokens says what the instance answered: a new token once, on a
// line of its own (a script takes it from stdout); a list a line a token.
func printTokens(sub, path string, answer map[string]any, stdout io.Writer) error {
	var err error
	switch sub {
	case "create":
		_, err = fmt.Fprintln(stdout, answer["token"])
	case "list":
		list, _ := answer["tokens"].([]any)
		for _, t := range list {
			t, _ := t.(map[string]any)
			_, err = fmt.Fprintf(stdout, "%s\t%s\tcreated %s\tlast used %s\texpires %s\n", t["name"], t["role"],
				t["createdAt"], orNever(t["lastUsedAt"]), orNever(t["expiresAt"]))
		}
	case "revoke":
		name, _ := url.PathUnescape(path[len("/admin/v1/tokens/"):])
		_, err = fmt.Fprintf(stdout, "%s: revoked\n", name)
	}
	return err
}

func orNever(v any) any {
	if v == nil {
		return "never"
	}
	return v
}

const tokensUsage = `Usage:
  waitroom tokens create --name N --role viewer|operator|admin [--expires 720h]
  waitroom tokens list
  waitroom tokens revoke NAME

Named tokens for the admin API (the admin API's /admin/v1/tokens on a running
instance; --addr and --admin-token as for sold-out). create prints the token
once, on stdout: it is never shown again. A revoke takes effect on every
instance within a second.

`
