package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/draw/drandtest"
)

// vectorRecord is docs/draws.md's test vector without a beacon.
const vectorRecord = "../../internal/draw/testdata/vector-without-beacon.json"

func TestVerifyDrawFile(t *testing.T) {
	r, err := draw.ReadRecord(vectorRecord)
	if err != nil {
		t.Fatal(err)
	}
	r.Order[2], r.Order[3] = r.Order[3], r.Order[2]
	changed := filepath.Join(t.TempDir(), "changed.json")
	b, _ := json.Marshal(r)
	if err := os.WriteFile(changed, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file, want string
		ok               bool
	}{
		{"a record that matches", vectorRecord, "matches: 7 participants, commitment b275cbb8372479c94daad31a9f99194039f52adc8f91fc212f96cd2f90c6ef73\n", true},
		{"two places swapped", changed, `order[2]: the record says "8be5510f9106dc6f7c4d17202eb9bc68", recomputed "146bca3edcb4a98a9b2fe2bdb7bdc320"` + "\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := verifyDrawCmd(context.Background(), []string{"--file", tt.file}, &out, &errOut)
			if (err == nil) != tt.ok || !tt.ok && !errors.Is(err, errNoMatch) {
				t.Fatalf("err %v, want ok %v", err, tt.ok)
			}
			if out.String() != tt.want {
				t.Fatalf("printed %q, want %q", out.String(), tt.want)
			}
		})
	}
	var out, errOut bytes.Buffer
	if err := verifyDrawCmd(context.Background(), []string{"--file", vectorRecord, "--addr", "http://x"}, &out, &errOut); err == nil {
		t.Fatal("--file with --addr was taken")
	}
}

// TestVerifyDrawAddr: the record read from an instance's public draw route
// is checked against its ledger: listed, listed but made only at the
// opening, not listed.
func TestVerifyDrawAddr(t *testing.T) {
	r, err := draw.ReadRecord(vectorRecord)
	if err != nil {
		t.Fatal(err)
	}
	opens := r.OpensAt
	entry := func(hash string, madeAt time.Time) draw.Committed {
		return draw.Committed{Hash: hash, OpensAt: opens, MadeAt: madeAt, State: draw.Drawn}
	}
	matches := "matches: 7 participants, commitment " + r.Commitment + "\n"
	for _, tt := range []struct {
		name   string
		ledger []draw.Committed
		want   string
		ok     bool
	}{
		{"committed a day before", []draw.Committed{entry(r.Commitment, opens.Add(-24*time.Hour))}, matches, true},
		{"committed only at the opening", []draw.Committed{entry(r.Commitment, opens.Add(1500*time.Millisecond))},
			matches + "committed only at the opening: commitment " + r.Commitment + " was made at 2026-12-24T18:00:01.5Z, the opening was at 2026-12-24T18:00:00Z\n", true},
		{"not in the ledger", []draw.Committed{entry(strings.Repeat("ab", 32), opens.Add(-time.Hour))},
			"ledger: the record's commitment " + r.Commitment + " is not among queue sale's 1 commitments\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				asked = req.URL.RequestURI()
				json.NewEncoder(w).Encode(draw.Ledger{Queue: "sale", Commitments: tt.ledger, Record: &r})
			}))
			defer srv.Close()
			var out, errOut bytes.Buffer
			err := verifyDrawCmd(context.Background(), []string{"--queue", "sale", "--addr", srv.URL, "--commitment", r.Commitment}, &out, &errOut)
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok %v; printed %s", err, tt.ok, out.String())
			}
			if out.String() != tt.want {
				t.Fatalf("printed %q, want %q", out.String(), tt.want)
			}
			if want := "/api/v1/queues/sale/draw?commitment=" + r.Commitment; asked != want {
				t.Fatalf("asked %s, want %s", asked, want)
			}
		})
	}
}

// TestVerifyDrawAsksTheChain: with --drand, a record whose beacon value is
// not the round's is refused at beacon.randomness, though it is
// consistent with itself; the round's own value matches.
func TestVerifyDrawAsksTheChain(t *testing.T) {
	ctx := context.Background()
	chain := drandtest.New(t, time.Now().Add(-time.Hour), 3*time.Second)
	named := draw.Beacon{URL: chain.URL, Round: 100}
	real := draw.Beacon{URL: chain.URL, Round: 100, Randomness: chain.Randomness(100)}
	forged := draw.Beacon{URL: chain.URL, Round: 100, Randomness: strings.Repeat("0f", 32)}
	for _, tt := range []struct {
		name   string
		beacon draw.Beacon
		want   string
		ok     bool
	}{
		{"the round's value", real, "beacon: round 100's randomness is the chain's at " + chain.URL + "\n", true},
		{"another value", forged, `beacon.randomness: the record says "` + forged.Randomness + `", recomputed "` + real.Randomness + `"` + "\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := draw.Draw(draw.NewCommitted("sale", time.Now(), &named), []string{strings.Repeat("aa", 16), strings.Repeat("bb", 16)}, &tt.beacon, 1, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "r.json")
			b, _ := json.Marshal(r)
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			err = verifyDrawCmd(ctx, []string{"--file", file, "--drand", chain.URL}, &out, &errOut)
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok %v; printed %s", err, tt.ok, out.String())
			}
			if tt.ok {
				tt.want = "matches: 2 participants, commitment " + r.Commitment + "\n" + tt.want
			}
			if out.String() != tt.want {
				t.Fatalf("printed %q, want %q", out.String(), tt.want)
			}
		})
	}
}
