package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// A ticket Go's int64 does not take: named, as a difference.
	mistyped := filepath.Join(t.TempDir(), "mistyped.json")
	b = bytes.Replace(b, []byte(`"tickets":[1001,`), []byte(`"tickets":[true,`), 1)
	if err := os.WriteFile(mistyped, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file, want string
		ok               bool
	}{
		{"a record that matches", vectorRecord, "matches: 7 participants, commitment b275cbb8372479c94daad31a9f99194039f52adc8f91fc212f96cd2f90c6ef73\n", true},
		{"two places swapped", changed, `order[2]: the record says "8be5510f9106dc6f7c4d17202eb9bc68", recomputed "146bca3edcb4a98a9b2fe2bdb7bdc320"` + "\n", false},
		{"a ticket that is true", mistyped, `tickets[0]: the record says "true", recomputed "an integer"` + "\n", false},
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
// is checked against its ledger: listed as drawn (exit 0), with the
// commitments withdrawn before it listed; made at the record's opening or
// after it (exit 2: it matches, and proves nothing), whatever the entry's
// own opensAt says; listed but not drawn, or not listed (exit 1).
func TestVerifyDrawAddr(t *testing.T) {
	r, err := draw.ReadRecord(vectorRecord)
	if err != nil {
		t.Fatal(err)
	}
	opens := r.OpensAt
	entry := func(hash string, madeAt time.Time, state draw.State) draw.Committed {
		return draw.Committed{Hash: hash, Queue: "sale", OpensAt: opens, MadeAt: madeAt, State: state}
	}
	rerolled := entry(strings.Repeat("cd", 32), opens.Add(-72*time.Hour), draw.Withdrawn)
	rerolled.OpensAt, rerolled.WithdrawnAt = opens.Add(-time.Hour), opens.Add(-48*time.Hour)
	movedOpening := entry(r.Commitment, opens.Add(-time.Second), draw.Drawn)
	movedOpening.OpensAt = opens.Add(-time.Minute) // the ledger's opensAt is not the record's
	matches := "matches: 7 participants, commitment " + r.Commitment + "\n"
	late := func(made string) string {
		return "committed only at the opening: commitment " + r.Commitment + " was made at " + made +
			", not before the opening at 2026-12-24T18:00:00Z: the record matches it, but a commitment that late proves nothing\n"
	}
	for _, tt := range []struct {
		name   string
		ledger []draw.Committed
		want   string
		err    error
	}{
		{"committed a day before", []draw.Committed{entry(r.Commitment, opens.Add(-24*time.Hour), draw.Drawn)}, matches, nil},
		{"after a re-roll", []draw.Committed{rerolled, entry(strings.Repeat("ef", 32), opens.Add(-30*time.Hour), draw.Drawn),
			entry(r.Commitment, opens.Add(-24*time.Hour), draw.Drawn), entry(strings.Repeat("ab", 32), opens, draw.Withdrawn)},
			matches + "withdrawn before it: " + rerolled.Hash + " (opening 2026-12-24T17:00:00Z, withdrawn 2026-12-22T18:00:00Z)\n", nil},
		{"committed at the opening", []draw.Committed{entry(r.Commitment, opens, draw.Drawn)},
			matches + late("2026-12-24T18:00:00Z"), errTooLate},
		{"committed after the opening", []draw.Committed{entry(r.Commitment, opens.Add(1500*time.Millisecond), draw.Drawn)},
			matches + late("2026-12-24T18:00:01.5Z"), errTooLate},
		{"committed after the ledger's opening, before the record's", []draw.Committed{movedOpening}, matches, nil},
		{"listed, still pending", []draw.Committed{entry(r.Commitment, opens.Add(-time.Hour), draw.Pending)},
			"ledger: the record's commitment " + r.Commitment + " is listed pending, not drawn\n", errNoMatch},
		{"listed, withdrawn", []draw.Committed{entry(r.Commitment, opens.Add(-time.Hour), draw.Withdrawn)},
			"ledger: the record's commitment " + r.Commitment + " is listed withdrawn, not drawn\n", errNoMatch},
		{"not in the ledger", []draw.Committed{entry(strings.Repeat("ab", 32), opens.Add(-time.Hour), draw.Drawn)},
			"ledger: the record's commitment " + r.Commitment + " is not among queue sale's 1 commitments\n", errNoMatch},
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
			if err != tt.err {
				t.Fatalf("err %v, want %v; printed %s", err, tt.err, out.String())
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
// consistent with itself; so is one whose round comes less than a full
// period after the opening (at beacon.round: its randomness could be out
// while the list was open); the first round a period after it matches.
func TestVerifyDrawAsksTheChain(t *testing.T) {
	ctx := context.Background()
	chain := drandtest.New(t, time.Now().Add(-time.Hour), 3*time.Second)
	opens := chain.Genesis.Add(10 * time.Minute) // round 201's time: round 202 is the first a period after
	beacon := func(round uint64, randomness string) draw.Beacon {
		return draw.Beacon{URL: chain.URL, Round: round, Randomness: randomness}
	}
	real := beacon(202, chain.Randomness(202))
	forged := beacon(202, strings.Repeat("0f", 32))
	for _, tt := range []struct {
		name   string
		beacon draw.Beacon
		want   string
		ok     bool
	}{
		{"the round's value", real, "beacon: round 202's randomness is the chain's at " + chain.URL + "\n", true},
		{"another value", forged, `beacon.randomness: the record says "` + forged.Randomness + `", recomputed "` + real.Randomness + `"` + "\n", false},
		{"a round at the opening", beacon(201, chain.Randomness(201)),
			`beacon.round: the record says "201", recomputed "a round from 202 (a period or more after the opening)"` + "\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			named := draw.Beacon{URL: tt.beacon.URL, Round: tt.beacon.Round}
			r, err := draw.Draw(draw.NewCommitted("sale", opens, &named), []string{strings.Repeat("aa", 16), strings.Repeat("bb", 16)}, &tt.beacon, 1, time.Now())
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

// TestExitStatus: verify-draw's verdicts reach main as its exit status,
// wrapped or not; any other error is 1.
func TestExitStatus(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{errTooLate, 2},
		{fmt.Errorf("checking: %w", errTooLate), 2},
		{errNoMatch, 1},
		{errors.New("--addr: no host"), 1},
	} {
		if got := exitStatusOf(tt.err); got != tt.want {
			t.Errorf("exitStatusOf(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
