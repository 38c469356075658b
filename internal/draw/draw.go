// Package draw is a fair opening anyone can check (issue 57): the seed is
// committed to before the opening, the participants are closed at it, the
// order comes from both (and, optionally, a public randomness beacon's
// round named in advance), and the record published afterwards lets anyone
// recompute every place with no secret (Verify; examples/verify-draw in
// Python does the same). Everything here is a pure function of its inputs,
// in one frozen encoding (version 1, written down with test vectors in
// docs/draws.md; what each mode guarantees is docs/operations.md's "A draw
// anyone can check"): changing a byte of it
// changes every published record's meaning, so it never changes; a new
// encoding would be version 2.
//
// The package knows neither the store nor HTTP: admission draws with it,
// the stores keep its values, the API publishes them.
package draw

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is the encoding's. A record names it; Verify refuses another.
const Version = 1

// The texts every hash of version 1 starts with, so that no value of one
// kind can be passed off as another's.
const (
	commitPrefix       = "waitroom-draw/v1 commit\n"
	saltPrefix         = "waitroom-draw/v1 salt\n"
	participantsPrefix = "waitroom-draw/v1 participants\n"
	finalPrefix        = "waitroom-draw/v1 final\n"
)

// Seed is the secret a draw starts from: 256 bits from crypto/rand, drawn
// when the queue gets its opening and kept by the store until the draw
// publishes it. It never prints: String, its slog value and its JSON are
// redacted, so a commitment logged by mistake does not give it away. Hex
// gives it, for the store and the published record only.
type Seed [32]byte

// NewSeed draws a seed from crypto/rand.
func NewSeed() Seed {
	var s Seed
	rand.Read(s[:]) // never fails (crypto/rand panics rather than return a weak value)
	return s
}

// Hex is the seed as the store keeps it and the record publishes it.
func (s Seed) Hex() string { return hex.EncodeToString(s[:]) }

// seedWithheld is what a seed prints as, anywhere but Hex.
const seedWithheld = "[seed withheld until the draw]"

// String hides the seed: see Seed.
func (Seed) String() string { return seedWithheld }

// LogValue hides the seed from slog, whose JSON handler would otherwise
// write its 32 bytes as numbers.
func (Seed) LogValue() slog.Value { return slog.StringValue(seedWithheld) }

// MarshalText hides the seed from encoding/json and the like (a store
// keeps it through Hex, in MarshalStored).
func (Seed) MarshalText() ([]byte, error) { return []byte(seedWithheld), nil }

// ParseSeed reads a seed written by Hex. Its error does not repeat what it
// was given: that may be a seed a digit short.
func ParseSeed(h string) (Seed, error) {
	var s Seed
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != len(s) {
		return s, fmt.Errorf("a seed is 64 hex digits, not %d characters of which some may not be hex", len(h))
	}
	copy(s[:], b)
	return s, nil
}

// Beacon names a public randomness beacon's round (drand's HTTP API): the
// draw's order depends on that round's randomness, published after the
// opening by a party the shop does not control, so a shop that knows its
// own seed still cannot know the order while people can join. Named in
// the commitment, so it cannot be chosen afterwards.
type Beacon struct {
	// URL is the beacon's HTTP endpoint (a drand chain's: URL/info,
	// URL/public/{round}).
	URL   string `json:"url"`
	Round uint64 `json:"round"`
	// Randomness is the round's, hex, once read (the record); "" in a
	// commitment.
	Randomness string `json:"randomness,omitempty"`
}

// Commitment hashes what the draw will start from before anyone joins:
//
//	SHA-256("waitroom-draw/v1 commit\n" + seed hex + "\n" + queue + "\n" +
//	        opening in Unix ms + "\n" [+ beacon URL + "\n" + round + "\n"])
//
// in lowercase hex. The beacon's line is there only when one is named.
func Commitment(seed Seed, queue string, opensAt time.Time, beacon *Beacon) string {
	var b strings.Builder
	b.WriteString(commitPrefix)
	line(&b, seed.Hex(), queue, strconv.FormatInt(opensAt.UnixMilli(), 10))
	if beacon != nil {
		line(&b, beacon.URL, strconv.FormatUint(beacon.Round, 10))
	}
	return sum(b.String())
}

// Participant is how a person appears in a draw: an id that no one can
// link to their user id without their salt, which only they are shown.
// The salt is derived (Participants.Of), so every instance shows a person
// the same one without storing it; the id is
//
//	HMAC-SHA256(key = salt, as its 32 hex digits; message = user id)
//
// first 16 bytes, lowercase hex. Anyone told a person's salt and user id
// can check that the id is theirs.
type Participant struct {
	ID   string `json:"participant"`
	Salt string `json:"salt"`
}

// ParticipantID is the id of user with salt (see Participant).
func ParticipantID(salt, user string) string {
	return hex.EncodeToString(mac([]byte(salt), user)[:16])
}

// Participants derives the salts from a key every instance shares (from
// --auth-secret), never published: it keeps the published list of ids
// from naming anyone.
type Participants struct{ key []byte }

// NewParticipants keeps a copy of key.
func NewParticipants(key []byte) Participants { return Participants{key: slices.Clone(key)} }

// Of is user's salt and id in queue's draws: the first 16 bytes of
// HMAC-SHA256(key, "waitroom-draw/v1 salt\n" + queue + "\n" + user),
// hex, and the id made with it.
func (p Participants) Of(queue, user string) Participant {
	salt := hex.EncodeToString(mac(p.key, saltPrefix+queue+"\n"+user)[:16])
	return Participant{ID: ParticipantID(salt, user), Salt: salt}
}

// IDs is Of(queue, u).ID for each of users, in their order: what an
// opening works out for its whole pre-queue at once, spread over the
// cores, with no allocation per person but the id itself.
func (p Participants) IDs(queue string, users []string) []string {
	out := make([]string, len(users))
	spread(len(users), func(lo, hi int) {
		salts := hmac.New(sha256.New, p.key)
		var buf []byte
		var salt [sha256.Size]byte
		var saltHex [32]byte
		for i := lo; i < hi; i++ {
			salts.Reset()
			buf = append(append(append(append(buf[:0], saltPrefix...), queue...), '\n'), users[i]...)
			salts.Write(buf)
			salts.Sum(salt[:0])
			hex.Encode(saltHex[:], salt[:16])
			id := hmacSHA256(saltHex[:], users[i], &buf)
			out[i] = hex.EncodeToString(id[:16])
		}
	})
	return out
}

// ParticipantsHash closes the list: SHA-256("waitroom-draw/v1
// participants\n" + each id, ascending, followed by "\n"), hex. ids must be
// sorted (Record.Participants is).
func ParticipantsHash(ids []string) string {
	var b strings.Builder
	b.WriteString(participantsPrefix)
	line(&b, ids...)
	return sum(b.String())
}

// FinalSeed is what the order is drawn with: SHA-256("waitroom-draw/v1
// final\n" + seed hex + "\n" + participants hash + "\n" + beacon
// randomness hex ("" without a beacon) + "\n"), hex. A shop that knows its
// seed and adds sock puppets changes the hash, and with it every place,
// but cannot aim a place without trying lists one by one; with a beacon it
// cannot aim at all, since the randomness comes after the list is closed.
func FinalSeed(seed Seed, participantsHash, beaconRandomness string) string {
	var b strings.Builder
	b.WriteString(finalPrefix)
	line(&b, seed.Hex(), participantsHash, beaconRandomness)
	return sum(b.String())
}

// Order is the participants ranked by their sort key, HMAC-SHA256(key =
// the final seed's 32 bytes, message = id), ascending bytewise (ties, which
// take a 2^-256 chance, by id): a keyed permutation, uniform while the final
// seed is unknown.
func Order(finalSeed string, ids []string) ([]string, error) {
	key, err := hex.DecodeString(finalSeed)
	if err != nil || len(key) != sha256.Size {
		return nil, fmt.Errorf("a final seed is 64 hex digits, not %q", finalSeed)
	}
	type ranked struct {
		id  string
		key [sha256.Size]byte
	}
	all := make([]ranked, len(ids))
	spread(len(ids), func(lo, hi int) {
		h := hmac.New(sha256.New, key)
		var buf []byte
		for i := lo; i < hi; i++ {
			h.Reset()
			buf = append(buf[:0], ids[i]...)
			h.Write(buf)
			all[i].id = ids[i]
			h.Sum(all[i].key[:0])
		}
	})
	slices.SortFunc(all, func(a, b ranked) int {
		return cmp.Or(bytes.Compare(a.key[:], b.key[:]), strings.Compare(a.id, b.id))
	})
	out := make([]string, len(all))
	for i, r := range all {
		out[i] = r.id
	}
	return out, nil
}

// hmacSHA256 is HMAC-SHA256(key, msg) for a key of at most a block (64
// bytes), written out (RFC 2104) so that a key per person costs no
// allocation; scratch is reused between calls.
func hmacSHA256(key []byte, msg string, scratch *[]byte) [sha256.Size]byte {
	var pad [64]byte
	copy(pad[:], key)
	for i := range pad {
		pad[i] ^= 0x36
	}
	b := append(append((*scratch)[:0], pad[:]...), msg...)
	inner := sha256.Sum256(b)
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
	b = append(append(b[:0], pad[:]...), inner[:]...)
	*scratch = b
	return sha256.Sum256(b)
}

// spread runs f over [0, n) cut in one part per core (a part of at least
// 4,096: fewer are not worth a goroutine).
func spread(n int, f func(lo, hi int)) {
	parts := max(1, min(runtime.GOMAXPROCS(0), n/4096))
	var wg sync.WaitGroup
	for w := range parts {
		lo, hi := n*w/parts, n*(w+1)/parts
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}

func mac(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// line writes each value followed by a newline.
func line(b *strings.Builder, values ...string) {
	for _, v := range values {
		b.WriteString(v)
		b.WriteByte('\n')
	}
}
