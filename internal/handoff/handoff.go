// Package handoff is carrying a place in line to another session (issue
// 55): the person waiting on a laptop asks for a link, opens it on a
// phone, and the phone's session takes the place over, the same ticket
// (or a READY entry's token) and every mark it has. It makes the link's
// single-use codes and hashes them, so the stores keep only the hash, and
// names the errors a handoff is answered with. The move itself is a
// store's one atomic step (queue.Store's PutHandoff and ClaimHandoff).
package handoff

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// TTL is how long a link lasts: long enough to open it on a phone lying
// beside the laptop, short enough that a link seen over a shoulder or
// left in a chat is soon worth nothing.
const TTL = 5 * time.Minute

// MovedFor is how long, at least, the session a place moved away from is
// told MOVED (queue.Moved) before it reads as any session with no place:
// a page asleep on a laptop is told why its place is gone when it wakes.
// The stores keep the mark for the longer of this and the queue's token
// lifetime.
const MovedFor = 10 * time.Minute

// codeBytes is a code's entropy: 160 bits (the issue asks for 128 or
// more), 32 symbols of base32.
const codeBytes = 20

var (
	// ErrNoPlace: the session holds no place to hand off (nor a live
	// token). The answer is 404 not_in_queue.
	ErrNoPlace = errors.New("no place to hand off")
	// ErrNotNeeded: a signed user's place follows their user id to any
	// device they sign in on; no link is made. The answer is 409
	// handoff_not_needed.
	ErrNotNeeded = errors.New("a signed user's place follows their user id: no handoff needed")
	// ErrGone: the link was used, has expired, was never made, or the
	// place it carried is gone (left, let in and spent). The answer is 410
	// handoff_gone.
	ErrGone = errors.New("handoff link used or expired")
	// ErrAlreadyInLine: the session claiming holds a place (or a live
	// token) in the queue already; nothing is moved and the link stays
	// good. The answer is 409 already_in_line.
	ErrAlreadyInLine = errors.New("this session already holds a place in the queue")
	// ErrMalformed: text that cannot be a code. Answered as ErrGone: a
	// guesser learns nothing from the difference.
	ErrMalformed = errors.New("not a handoff code")
)

var encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// New makes a code for a link: 160 bits from crypto/rand in lower-case
// base32 (letters and digits only: safe in a URL path, and as a QR code's
// text).
func New() string {
	var b [codeBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return a weak value)
	return strings.ToLower(encoding.EncodeToString(b[:]))
}

// Hash is what a store keeps of code: the SHA-256 of its bytes, in hex.
// A code carries 160 bits, so no salt or slow hash is needed. ErrMalformed
// for text New cannot have made.
func Hash(code string) (string, error) {
	if len(code) != encoding.EncodedLen(codeBytes) {
		return "", ErrMalformed
	}
	if _, err := encoding.DecodeString(strings.ToUpper(code)); err != nil || strings.ToLower(code) != code {
		return "", ErrMalformed
	}
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:]), nil
}
