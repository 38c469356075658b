// Package accesscode is a queue's access codes (issue 53): single-use or
// capped codes a shop hands out (made here, or uploaded from its CRM) that
// put their holder in a lane. It makes codes, reads what a person typed,
// and hashes them: the stores keep only the hash, so a code is never
// stored, logged or counted in clear.
//
// A code is 16 symbols of Crockford's base32 (0-9 and A-Z without I, L, O
// and U): 80 bits from crypto/rand, so guessing one is hopeless whatever
// the rate limits. What a person types is read forgivingly: case, spaces
// and hyphens do not matter, and the look-alikes O, I and L read as 0, 1
// and 1, so "abcd-efgh…" and "ABCDEFGH…" are one code.
package accesscode

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// alphabet is Crockford's base32: 32 symbols, so each carries 5 bits.
const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Length is how many symbols a code made here has: 80 bits.
const Length = 16

// MinLength and MaxLength bound a code's symbols, made here or uploaded: at
// least 80 bits, whatever made it.
const (
	MinLength = 16
	MaxLength = 64
)

var (
	// ErrInvalid: no code the queue holds (wrong, expired, or another
	// queue's). The answer is 403 invalid_code.
	ErrInvalid = errors.New("invalid access code")
	// ErrUsed: the code held no redemption left: a single-use code already
	// redeemed, anywhere. The answer is 409 code_used.
	ErrUsed = errors.New("access code already used")
	// ErrMalformed: text that cannot be a code (a symbol outside the
	// alphabet, too short or too long).
	ErrMalformed = errors.New("not an access code")
)

// MaxUses bounds a code's redemptions: more than any sale hands out, and
// few enough that every store keeps the count exactly (Redis's Lua
// writes a number of more than 14 digits in exponent form).
const MaxUses = 1_000_000_000

// Code is one code as a store keeps it: never the code itself.
type Code struct {
	// Hash is Hash(the code).
	Hash string
	// Lane is the lane it puts its holder in.
	Lane string
	// Uses is how many redemptions it holds: 1 for a single-use code.
	Uses int64
	// ExpiresAt, when not zero, is when it stops being redeemable.
	ExpiresAt time.Time
}

// Check says whether a store may keep c: its hash and lane named, its
// uses 1 to MaxUses; ErrMalformed if not.
func (c Code) Check() error {
	switch {
	case c.Hash == "":
		return fmt.Errorf("%w: a code without its hash", ErrMalformed)
	case c.Lane == "":
		return fmt.Errorf("%w: a code without a lane", ErrMalformed)
	case c.Uses < 1 || c.Uses > MaxUses:
		return fmt.Errorf("%w: %d uses, not 1 to %d", ErrMalformed, c.Uses, MaxUses)
	}
	return nil
}

// Added is what a store did with an upload.
type Added struct {
	// Added were new; Duplicates were held already (by hash: the code
	// already there is kept as it was, its redemptions too).
	Added, Duplicates int
}

// New makes a code: Length symbols from crypto/rand, grouped in fours
// with hyphens for people to read and type.
func New() string {
	var b [Length]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return a weak value)
	var out strings.Builder
	for i, v := range b {
		if i > 0 && i%4 == 0 {
			out.WriteByte('-')
		}
		out.WriteByte(alphabet[v&31]) // 256 is a multiple of 32: uniform
	}
	return out.String()
}

// Canonical is the code s as a person typed it, read forgivingly: upper
// case, without spaces or hyphens, O read as 0 and I, L as 1. ErrMalformed
// for a symbol outside the alphabet or a length outside
// [MinLength, MaxLength].
func Canonical(s string) (string, error) {
	var out strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch {
		case r == '-' || r == ' ':
			continue
		case r == 'O':
			r = '0'
		case r == 'I' || r == 'L':
			r = '1'
		}
		if r > 'Z' || !strings.ContainsRune(alphabet, r) {
			return "", ErrMalformed
		}
		out.WriteRune(r)
	}
	if n := out.Len(); n < MinLength || n > MaxLength {
		return "", ErrMalformed
	}
	return out.String(), nil
}

// Hash is what a store keeps of the code s (as typed): the SHA-256 of its
// canonical form, in hex. A code carries 80 bits or more, so no salt or
// slow hash is needed: no table of hashes could cover them. ErrMalformed
// as Canonical.
func Hash(s string) (string, error) {
	c, err := Canonical(s)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:]), nil
}
