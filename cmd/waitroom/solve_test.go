package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/identity"
)

// visitorLines runs `waitroom solve` with args and returns its lines'
// two fields (the Cookie header, then the solution or the status).
func visitorLines(t *testing.T, args ...string) (lines [][2]string, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := solveCmd(context.Background(), append(args, "--workers", "2"), env(nil), &out, &errOut); err != nil {
		t.Fatalf("solve %q: %v\n%s", args, err, errOut.String())
	}
	for line := range strings.Lines(out.String()) {
		cookie, second, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok || !strings.HasPrefix(cookie, identity.CookieName+"=") || second == "" || strings.ContainsAny(second, "\t ") {
			t.Fatalf("line %q: want %s=…<TAB>one field", line, identity.CookieName)
		}
		lines = append(lines, [2]string{cookie, second})
	}
	return lines, errOut.String()
}

// TestSolve: what `waitroom solve` prints takes places in a line that asks
// anonymous visitors for the proof of work, exactly as a script would send
// it (Cookie and X-Challenge-Solution on POST …/entries); a solution takes
// one place, once. With --enter it takes them itself.
func TestSolve(t *testing.T) {
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	q := apptest.UniqueID("smoke")
	in.PutQueue(q, map[string]any{"paused": true, "entry": "challenge"})
	entries := "/api/v1/queues/" + q + "/entries"

	visitors, stderr := visitorLines(t, "--addr", in.Base, "--queue", q, "--count", "2")
	if len(visitors) != 2 || visitors[0][0] == visitors[1][0] || visitors[0][1] == visitors[1][1] {
		t.Fatalf("--count 2: %q, want two visitors with a session and a solution each", visitors)
	}
	if !strings.Contains(stderr, "2 of 2 visitors of "+q+" solved a challenge") {
		t.Errorf("stderr %q, want how long the work took", stderr)
	}
	for i, v := range visitors {
		if r := in.Do("POST", entries, "", nil, "Cookie", v[0], httpapi.ChallengeSolutionHeader, v[1]); r.Status != http.StatusOK || r.Str("status") != "WAITING" {
			t.Fatalf("visitor %d enters with what solve printed: %d %s", i+1, r.Status, r.Raw)
		}
	}
	// A solution is good for one place: another session cannot use it again.
	again, _ := visitorLines(t, "--addr", in.Base, "--queue", q)
	if r := in.Do("POST", entries, "", nil, "Cookie", again[0][0], httpapi.ChallengeSolutionHeader, visitors[0][1]); r.Status != http.StatusForbidden || r.ErrorCode() != "challenge_required" {
		t.Errorf("a used solution again: %d %s, want 403 challenge_required", r.Status, r.Raw)
	}

	entered, _ := visitorLines(t, "--addr", in.Base, "--queue", q, "--count", "3", "--enter")
	for i, v := range entered {
		if v[1] != "WAITING" {
			t.Errorf("--enter visitor %d: status %q, want WAITING (the line is paused)", i+1, v[1])
		}
		if r := in.Do("GET", entries+"/me", "", nil, "Cookie", v[0]); r.Str("status") != "WAITING" {
			t.Errorf("--enter visitor %d's cookie: %d %s, want its place", i+1, r.Status, r.Raw)
		}
	}
	if n := in.QueueStats(q).Num("length"); n != 5 {
		t.Errorf("the line holds %v, want 5 (2 entered with the printed solutions, 3 by --enter)", n)
	}
}

// TestSolveThroughTheGateway: at a gateway's root, solve finds waitroom
// under its prefix, and the cookie it prints holds a place there.
func TestSolveThroughTheGateway(t *testing.T) {
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, apptest.NewUpstreamShop(t, 10), nil)
	p.SetPaused(true)
	visitors, stderr := visitorLines(t, "--addr", p.Base, "--enter")
	if !strings.Contains(stderr, "using "+p.Base+apptest.GatewayPrefix) {
		t.Errorf("stderr %q, want a note that the prefix is used", stderr)
	}
	if len(visitors) != 1 || visitors[0][1] != "WAITING" {
		t.Fatalf("solve --enter through the gateway: %q", visitors)
	}
	if r := p.Do("GET", apptest.GatewayPrefix+"/api/v1/queues/default/entries/me", "", nil, "Cookie", visitors[0][0]); r.Str("status") != "WAITING" {
		t.Errorf("the cookie's place: %d %s", r.Status, r.Raw)
	}
}

func TestSolveRefused(t *testing.T) {
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	signed := apptest.UniqueID("members")
	in.PutQueue(signed, map[string]any{"entry": "signed"})
	for _, tt := range []struct {
		name string
		args []string
		want string // in the error
	}{
		{"a queue that does not exist", []string{"--queue", "nosuchqueue"}, "404 queue_not_found"},
		{"a queue for signed-in users only, entered", []string{"--queue", signed, "--enter"}, "403 signin_required"},
		{"a name no queue can have", []string{"--queue", "bad*name"}, "--queue"},
		{"no visitor", []string{"--count", "0"}, "--count"},
		{"a stray argument", []string{"extra"}, "unexpected arguments"},
		{"not waitroom", []string{"--addr", "http://127.0.0.1:1"}, "connection refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := solveCmd(context.Background(), append([]string{"--addr", in.Base}, tt.args...), env(nil), &out, &errOut)
			if err == nil || !strings.Contains(err.Error()+errOut.String(), tt.want) {
				t.Errorf("solve %q = %v (%s), want an error naming %q", tt.args, err, errOut.String(), tt.want)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q on an error", out.String())
			}
		})
	}
}
