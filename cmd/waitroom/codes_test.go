package main

import (
	"bytes"
	"encoding/csv"
	"strings"
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
