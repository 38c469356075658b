package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"

	"github.com/waitroom/waitroom/internal/app"
)

// adminTarget is the running instance a command reaches through the admin
// API (sold-out, restock, report), as its flags name it.
type adminTarget struct {
	addr, token, dataDir *string
}

// adminFlags adds the flags that name the instance and its admin token.
func adminFlags(flags *flag.FlagSet) adminTarget {
	return adminTarget{
		addr: flags.String("addr", "http://127.0.0.1:8080", "the running instance: its URL, or its listen address as given to serve (:8080 is this machine's port 8080); "+
			"behind waitroom proxy, with its --prefix (http://127.0.0.1:8080/_waitroom; /_waitroom is tried by itself when the root is not waitroom). "+
			"The admin token is sent only once the address has answered GET /healthz as waitroom"),
		token:   flags.String("admin-token", "", "the admin token, as given to serve; empty: the one the embedded default keeps in --data-dir"),
		dataDir: flags.String("data-dir", app.DefaultDataDir, "the embedded default's data directory, as given to serve"),
	}
}

// fromEnv takes serve's environment twins of the flags; flags given on the
// command line, parsed after, win.
func (adminTarget) fromEnv(flags *flag.FlagSet, getenv func(string) string) {
	for _, name := range []string{"addr", "admin-token", "data-dir"} {
		if v := getenv(app.EnvName(name)); v != "" {
			flags.Set(name, v)
		}
	}
}

// resolve is the instance and the admin token: --admin-token, else the one
// the embedded default keeps in --data-dir. The instance is --addr once it
// has answered as waitroom (findWaitroom), so the token is never sent
// anywhere else; what findWaitroom notes goes to notes.
func (a adminTarget) resolve(ctx context.Context, notes io.Writer) (at waitroomBase, token string, err error) {
	base, err := instanceURL(*a.addr)
	if err != nil {
		return waitroomBase{}, "", fmt.Errorf("--addr: %w", err)
	}
	if token = *a.token; token == "" {
		token, err = app.ReadAdminToken(*a.dataDir)
		if errors.Is(err, fs.ErrNotExist) {
			return waitroomBase{}, "", fmt.Errorf("no admin token: pass --admin-token (or WAITROOM_ADMIN_TOKEN) as given to serve, "+
				"or run this where the embedded default keeps one, %s", filepath.Join(*a.dataDir, app.AdminTokenFile))
		}
		if err != nil {
			return waitroomBase{}, "", err
		}
	}
	if at, err = findWaitroom(ctx, base, notes); err != nil {
		return waitroomBase{}, "", fmt.Errorf("%w (the admin token was not sent)", err)
	}
	return at, token, nil
}

// parseQueueCommand parses the flags of a command about one queue and
// checks what each needs: no stray argument, and --queue.
func parseQueueCommand(flags *flag.FlagSet, args []string, queue *string) error {
	if err := flags.Parse(args); err != nil {
		return err
	}
	switch {
	case flags.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %v", flags.Args())
	case *queue == "":
		flags.Usage()
		return errors.New("--queue is required")
	}
	return nil
}

// maxAdminAnswer bounds an admin API answer read by a command: a report's
// figures for the longest span kept (14 days of minutes) fit many times.
const maxAdminAnswer = 256 << 20

// adminClient follows no redirect: a command sends the admin token to the
// address that answered as waitroom and to no other, and a redirect is
// shown as the answer it is.
var adminClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// adminCall sends one admin API request (path under the instance, with its
// query) and decodes its JSON answer into out; a refusal is an error
// carrying the API's status, code and message.
func adminCall(ctx context.Context, method string, at waitroomBase, path, token string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, at.url+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := adminClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxAdminAnswer))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %v", res.Status, err)
	}
	if err := apiRefusal(res.StatusCode, raw); err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s", res.Status)
	}
	if res.StatusCode == http.StatusNoContent {
		return nil // a revoke: nothing to read
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: the answer is not the admin API's JSON: %v", res.Status, err)
	}
	return nil
}

// apiRefusal is the API's error object in an answer, as an error with its
// status, code and message (nil when the answer carries none).
func apiRefusal(status int, raw []byte) error {
	var refusal struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &refusal) == nil && refusal.Error != nil {
		return fmt.Errorf("%d %s: %s", status, refusal.Error.Code, refusal.Error.Message)
	}
	return nil
}
