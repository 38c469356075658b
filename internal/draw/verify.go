package draw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Mismatch is where a record differs from what its own values recompute
// to: the entry (a field, or an element of a list, as in "order[17]") and
// both values.
type Mismatch struct {
	Entry          string
	Record, Recomp string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("%s: the record says %q, recomputed %q", m.Entry, m.Record, m.Recomp)
}

// Verify recomputes r from its seed, its queue, its opening, its beacon and
// its participants (no secret needed) and answers the first entry that
// differs (*Mismatch), or nil when every value matches: the commitment,
// the participants' order and hash, the final seed, the order and each
// ticket. A match proves the seed was fixed when its commitment was
// published, not before anyone joined: people join until the opening, so
// a commitment published before the opening (the ledger's madeAt, see
// Checked.LateNote) shows the seed was fixed while nobody could know the
// order yet.
func Verify(r Record) error {
	if r.Version != Version {
		return &Mismatch{"version", fmt.Sprint(r.Version), fmt.Sprint(Version)}
	}
	seed, err := ParseSeed(r.Seed)
	if err != nil {
		return &Mismatch{"seed", r.Seed, "64 hex digits"}
	}
	if !r.OpensAt.IsZero() && r.OpensAt.UnixMilli() != r.OpensAtMs {
		return &Mismatch{"opensAt", r.OpensAt.Format(time.RFC3339Nano), time.UnixMilli(r.OpensAtMs).UTC().Format(time.RFC3339Nano)}
	}
	var named *Beacon
	randomness := ""
	if r.Beacon != nil {
		named = &Beacon{URL: r.Beacon.URL, Round: r.Beacon.Round}
		randomness = r.Beacon.Randomness
	}
	if c := Commitment(seed, r.Queue, time.UnixMilli(r.OpensAtMs), named); c != r.Commitment {
		return &Mismatch{"commitment", r.Commitment, c}
	}
	for i, id := range r.Participants {
		// An id is ParticipantID's: without the check, an "id" holding a
		// newline would hash as two (ParticipantsHash joins them by lines).
		if !IsParticipantID(id) {
			return &Mismatch{fmt.Sprintf("participants[%d]", i), id, "32 lowercase hex digits"}
		}
		if i > 0 && r.Participants[i-1] >= id {
			return &Mismatch{fmt.Sprintf("participants[%d]", i), id, "an id above " + r.Participants[i-1] + " (ascending, each once)"}
		}
	}
	if h := ParticipantsHash(r.Participants); h != r.ParticipantsHash {
		return &Mismatch{"participantsHash", r.ParticipantsHash, h}
	}
	if f := FinalSeed(seed, r.ParticipantsHash, randomness); f != r.FinalSeed {
		return &Mismatch{"finalSeed", r.FinalSeed, f}
	}
	order, err := Order(r.FinalSeed, r.Participants)
	if err != nil {
		return err
	}
	if m := compareList("order", r.Order, order, func(s string) string { return s }); m != nil {
		return m
	}
	tickets := make([]int64, len(order))
	for i := range tickets {
		tickets[i] = r.FirstTicket + int64(i)
	}
	if m := compareList("tickets", r.Tickets, tickets, func(t int64) string { return fmt.Sprint(t) }); m != nil {
		return m
	}
	return nil
}

// compareList names the first element of got that differs from want, or
// the length where one ends early.
func compareList[T comparable](name string, got, want []T, show func(T) string) *Mismatch {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return &Mismatch{fmt.Sprintf("%s[%d]", name, i), show(got[i]), show(want[i])}
		}
	}
	if len(got) != len(want) {
		return &Mismatch{name + " length", fmt.Sprint(len(got)), fmt.Sprint(len(want))}
	}
	return nil
}

// Verdict is Verify's answer as one line, the one both verifiers (waitroom
// verify-draw, examples/verify-draw) print: "matches: <n> participants,
// commitment <hex>", or the first entry that differs (Mismatch); ok is
// which.
func Verdict(r Record) (line string, ok bool) {
	if err := Verify(r); err != nil {
		return err.Error(), false
	}
	return fmt.Sprintf("matches: %d participants, commitment %s", len(r.Participants), r.Commitment), true
}

// CheckBeacon asks a drand chain for the round r's beacon names and
// compares its randomness with the record's: Verify takes the record's
// value as given, and only the chain can say it is the round's. chain is
// the record's beacon URL or any mirror of the same chain (drand's relays
// all serve each chain under its hash). First it checks the round keeps
// the rule NewDrand's Name names rounds by: its time (from the chain's
// /info) a full period or more after the record's opening, so that nobody
// could know its randomness while the list was open. It answers the line both
// verifiers print after the verdict, or a *Mismatch ("beacon.round",
// "beacon.randomness"). Like Drand.Read it checks the randomness is
// SHA-256 of the round's signature, not the signature itself.
func CheckBeacon(ctx context.Context, client *http.Client, chain string, r Record) (string, error) {
	if r.Beacon == nil {
		return "beacon: the record names none", nil
	}
	d := NewDrand(chain, client).(*drand)
	info, err := d.info(ctx, d.url)
	if err != nil {
		return "", err
	}
	// Compared as rounds, not instants: a record's round can be any
	// number, and its instant would overflow a time.Duration.
	opens := time.UnixMilli(r.OpensAtMs)
	if first := firstRoundAtOrAfter(info, opens.Add(time.Duration(info.Period)*time.Second)); r.Beacon.Round < first {
		return "", &Mismatch{"beacon.round", fmt.Sprint(r.Beacon.Round),
			fmt.Sprintf("a round from %d (a period or more after the opening)", first)}
	}
	b, err := d.Read(ctx, Beacon{URL: d.url, Round: r.Beacon.Round})
	if errors.Is(err, ErrNotYet) {
		return "", fmt.Errorf("beacon: round %d is not out yet at %s", r.Beacon.Round, chain)
	}
	if err != nil {
		return "", err
	}
	if b.Randomness != r.Beacon.Randomness {
		return "", &Mismatch{"beacon.randomness", r.Beacon.Randomness, b.Randomness}
	}
	return fmt.Sprintf("beacon: round %d's randomness is the chain's at %s", r.Beacon.Round, b.URL), nil
}

// IsParticipantID says whether id is as ParticipantID writes one: 32
// lowercase hex digits.
func IsParticipantID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range []byte(id) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
