package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/apptest"
)

// `waitroom codes generate` against a running instance: it prints the
// header and N codes as CSV, each one stored (redeemable once, counted in
// the lane's codes left); a lane that takes no codes, or a bad flag, is an
// error and prints no code.
func TestCodesGenerate(t *testing.T) {
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	q := apptest.UniqueID("drop")
	in.PutQueue(q, map[string]any{"paused": true, "lanes": []map[string]any{
		{"name": "invited", "codes": true, "share": 0.5}, {"name": "public", "share": 0.5}}})
	base := []string{"generate", "--queue", q, "--addr", in.Base, "--admin-token", in.AdminToken}

	var out, errOut bytes.Buffer
	args := append(append([]string{}, base...), "--lane", "invited", "--count", "3", "--uses", "2", "--expires", "2099-01-01T00:00:00Z")
	if err := codesCmd(args, env(nil), &out, &errOut); err != nil {
		t.Fatalf("codes generate: %v\n%s", err, errOut.String())
	}
	rows, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil || len(rows) != 4 || strings.Join(rows[0], ",") != "code,lane,uses,expiresAt" {
		t.Fatalf("printed %q (%v), want a header and 3 codes", out.String(), err)
	}
	for _, r := range rows[1:] {
		if _, err := accesscode.Canonical(r[0]); err != nil || len(r[0]) != 19 || r[1] != "invited" || r[2] != "2" || r[3] != "2099-01-01T00:00:00Z" {
			t.Errorf("row %q: want a code XXXX-XXXX-XXXX-XXXX, invited, 2, the expiry", r)
		}
	}
	for _, l := range in.QueueStats(q).Body["laneStats"].([]any) {
		if l := l.(map[string]any); l["name"] == "invited" && l["codesLeft"] != 6.0 {
			t.Errorf("invited's codes left: %v, want 3 codes × 2 uses", l["codesLeft"])
		}
	}
	if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("holder"), map[string]string{"accessCode": rows[2][0]}); r.Str("lane") != "invited" {
		t.Errorf("redeeming a printed code: %d %s, want a place in invited", r.Status, r.Raw)
	}

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a lane without codes", append(append([]string{}, base...), "--lane", "public", "--count", "2"), "rejected 2 codes"},
		{"no count", append(append([]string{}, base...), "--lane", "invited"), "--count"},
		{"no uses", append(append([]string{}, base...), "--lane", "invited", "--count", "1", "--uses", "0"), "--uses"},
		{"too many uses", append(append([]string{}, base...), "--lane", "invited", "--count", "1", "--uses", "1000000001"), "--uses"},
		{"a bad expiry", append(append([]string{}, base...), "--lane", "invited", "--count", "1", "--expires", "soon"), "--expires"},
		{"no subcommand", []string{"make"}, "generate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := codesCmd(tt.args, env(nil), &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v, want an error saying %q", err, tt.want)
			}
			if strings.Count(out.String(), "\n") > 1 {
				t.Errorf("printed codes despite the failure: %q", out.String())
			}
		})
	}
}

// TestCodesGenerateStopsPartWay: a run of 100,001 codes (two uploads)
// whose second upload fails prints the 100,000 the first stored (live) and
// says how many were stored and that the rest were not; when the second
// upload reached the instance but no answer came back, it says that those
// may be held all the same (they count in codesLeft, printed nowhere).
func TestCodesGenerateStopsPartWay(t *testing.T) {
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	for _, tt := range []struct {
		name      string
		drop      bool
		codesLeft float64
		want      string
	}{
		{"the second upload refused", false, 100_000, "100000 of 100001 codes were stored (live: those printed, keep them), the other 1 were not"},
		{"the second upload unanswered", true, 100_001, "the other 1 were not (but for 1 of them, which the instance may hold all the same"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := apptest.UniqueID("drop")
			in.PutQueue(q, map[string]any{"paused": true, "lanes": []map[string]any{
				{"name": "invited", "codes": true, "share": 0.5}, {"name": "public", "share": 0.5}}})
			args := []string{"generate", "--queue", q, "--lane", "invited", "--count", "100001",
				"--addr", failingSecondUpload(t, in.Base, tt.drop), "--admin-token", in.AdminToken}
			var out, errOut bytes.Buffer
			err := codesCmd(args, env(nil), &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v, want an error saying %q", err, tt.want)
			}
			if !tt.drop && strings.Contains(err.Error(), "may hold") {
				t.Errorf("%v: a refused upload said to be maybe held", err)
			}
			rows, err := csv.NewReader(&out).ReadAll()
			if err != nil || len(rows) != 100_001 {
				t.Fatalf("printed %d rows (%v), want the header and the 100,000 codes stored", len(rows), err)
			}
			if left := codesLeft(in, q); left != tt.codesLeft {
				t.Errorf("invited's codes left: %v, want %v", left, tt.codesLeft)
			}
			if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("holder"), map[string]string{"accessCode": rows[100_000][0]}); r.Str("lane") != "invited" {
				t.Errorf("redeeming the last code printed: %d %s, want a place in invited", r.Status, r.Raw)
			}
		})
	}
}

// codesLeft is the queue's invited lane's codesLeft.
func codesLeft(in *apptest.Instance, q string) any {
	for _, l := range in.QueueStats(q).Body["laneStats"].([]any) {
		if l := l.(map[string]any); l["name"] == "invited" {
			return l["codesLeft"]
		}
	}
	return nil
}

// failingSecondUpload is the instance at base behind a proxy that fails
// the second codes upload: answered 503 without reaching the instance, or
// (drop) passed on to it and then cut without an answer.
func failingSecondUpload(t *testing.T, base string, drop bool) string {
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var uploads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/codes") || uploads.Add(1) != 2 {
			proxy.ServeHTTP(w, r)
			return
		}
		if drop {
			proxy.ServeHTTP(httptest.NewRecorder(), r) // stored, and nobody is told
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"code":"unavailable","message":"temporarily unavailable; retry after 5 s"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
