package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/web"
)

// help prints the commands and what they do.
func help(w io.Writer) error {
	_, err := fmt.Fprint(w, `waitroom puts a fair waiting line in front of an order API.

Usage: waitroom [command] [flags]

Commands:
  serve     serve the line, the order API, the waiting page and the admin page
            (the command when none is named)
  proxy     put the line in front of any HTTP backend (gateway mode, docs/gateway.md)
  token     print a user JWT to try the API with: token --user ID [--ttl 1h]
  page      check DIR: check a --page-dir (the shop's waiting page templates,
            docs/page.md) as serve would at start, without serving it
  sold-out  mark a queue sold out on a running instance: sold-out --queue Q
            [--addr http://127.0.0.1:8080] (the admin API, with --admin-token)
  restock   tell a queue on a running instance what it has to sell again:
            restock --queue Q [--units N] (without --units: recounted from the
            order API's products)
  tokens    named tokens for the admin API, each with a role: tokens create
            --name N --role viewer|operator|admin [--expires 720h] prints the
            token once; tokens list; tokens revoke NAME (the admin API, with
            --admin-token)
  codes     access codes for a lane (docs/operations.md, "Lanes and codes"):
            codes generate --queue Q --lane L --count N [--uses U]
            [--expires RFC3339] stores them on a running instance (the admin
            API, with --admin-token) and prints them as CSV
  report    the sale's report, one HTML file: report --queue Q [--since 6h]
            [--until T] [--out FILE] (the queue's figures minute by minute,
            read from a running instance through the admin API)
  solve     anonymous visitors for a smoke or load test: solve [--queue Q]
            [--count N] [--enter] [--addr URL] prints each one's session
            cookie and its solved proof of work (or, with --enter, takes its
            place and prints its status)
  verify-draw  recompute a drawn opening from its published record:
            verify-draw --queue Q --addr URL [--commitment HEX], or --file
            record.json [--drand URL]; prints "matches" or the first entry
            that differs (docs/draws.md; no secret needed)
  version   print the version and the source revision this binary was built from
  help      print this help

"waitroom <command> --help" lists a command's flags; every flag
has a WAITROOM_* environment twin (--redis-url ↔ WAITROOM_REDIS_URL), the flag wins.
`)
	return err
}

// token prints an HS256 JWT for a user, signed with the auth secret serve
// uses: --auth-secret (or WAITROOM_AUTH_SECRET), else the dev secret the
// embedded default keeps in --data-dir.
func token(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("waitroom token", flag.ContinueOnError)
	flags.SetOutput(stderr)
	user := flags.String("user", "", "the user id, the JWT's sub: 1-128 printable ASCII characters without spaces or braces (required)")
	ttl := flags.Duration("ttl", time.Hour, "how long the JWT is valid")
	secret := flags.String("auth-secret", "", "the HS256 secret, as given to serve; empty: the dev secret the embedded default keeps in --data-dir")
	dataDir := flags.String("data-dir", app.DefaultDataDir, "the embedded default's data directory, as given to serve")
	audience := flags.String("auth-audience", "", "the JWT's aud, as serve's --auth-audience requires (empty: none)")
	issuer := flags.String("auth-issuer", "", "the JWT's iss, as serve's --auth-issuer requires (empty: none)")
	flags.Usage = func() {
		fmt.Fprintf(stderr, "Usage: waitroom token --user ID [--ttl 1h]\n\n"+
			"Prints a JWT that waitroom accepts as user ID (Authorization: Bearer …): what a\n"+
			"shop's login would hand its users. --auth-secret, --data-dir, --auth-audience and\n"+
			"--auth-issuer have environment twins, as for serve.\n\n")
		flags.PrintDefaults()
	}
	// The settings shared with serve take serve's environment twins.
	for _, name := range []string{"auth-secret", "data-dir", "auth-audience", "auth-issuer"} {
		if v := getenv(app.EnvName(name)); v != "" {
			flags.Set(name, v)
		}
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	switch {
	case flags.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %v", flags.Args())
	case *user == "":
		flags.Usage()
		return errors.New("--user is required")
	case *ttl <= 0:
		return fmt.Errorf("--ttl: must be > 0, got %v", *ttl)
	}
	if err := queue.ValidateUserID(*user); err != nil {
		return fmt.Errorf("--user: %w", err)
	}
	if *secret == "" {
		var err error
		if *secret, err = app.ReadDevSecret(*dataDir); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no auth secret: pass --auth-secret (or WAITROOM_AUTH_SECRET) as given to serve, "+
				"or start the embedded default once, which keeps one in %s",
				filepath.Join(*dataDir, app.DevSecretFile))
		} else if err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(stdout, app.SignUserJWT(*secret, *audience, *issuer, *user, *ttl))
	return err
}

// page runs `waitroom page check DIR`: the checks serve makes of
// --page-dir at start (every template parsed, its blocks placed, run in
// every language), without starting a server.
func page(args []string, stdout, stderr io.Writer) error {
	if len(args) != 2 || args[0] != "check" {
		fmt.Fprint(stderr, "Usage: waitroom page check DIR\n\n"+
			"Checks a page directory as `waitroom serve --page-dir DIR` does at start: every\n"+
			"template (DIR/waiting.html, DIR/queues/{queue}/waiting.html) parses, places\n"+
			"waitroom's blocks and runs in every language, and every asset it names is in\n"+
			"DIR/assets. A problem is printed with its file and line, and the exit status is 1.\n")
		return errors.New("page: want `page check DIR`")
	}
	return web.Check(args[1], stdout)
}

// versionText names the module version and the source revision from the
// build info the Go toolchain stamps into the binary.
func versionText() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "waitroom: no build info"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "waitroom %s", bi.Main.Version)
	switch {
	case rev == "":
		b.WriteString(", revision unknown (built without version control information, e.g. by go run)")
	case modified:
		fmt.Fprintf(&b, ", revision %s (%s) with local changes", rev, at)
	default:
		fmt.Fprintf(&b, ", revision %s (%s)", rev, at)
	}
	fmt.Fprintf(&b, ", %s", bi.GoVersion)
	return b.String()
}

// selfCommand is how to run this program again, for the start banner:
// "go run ./cmd/waitroom" when it was started that way, else the name it
// was started by.
func selfCommand() string {
	arg0 := os.Args[0]
	if strings.Contains(arg0, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/waitroom" // a binary go run built in its temp dir
	}
	return arg0
}
