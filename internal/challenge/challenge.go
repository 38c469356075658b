// Package challenge is the proof of work a browser does, unseen, before it
// takes a place in a line: entering costs a person's browser about a second
// and a script that wants a thousand places a thousand times that.
//
// It follows ALTCHA's v2 proof of work (altcha.org, MIT; the reference
// libraries altcha-lib and altcha-lib-go), the subset waitroom needs:
//
//   - the server issues parameters {algorithm "PBKDF2/SHA-256", nonce, salt
//     (16 random bytes each, hex), cost (PBKDF2 iterations), keyLength 32,
//     keyPrefix (hex), expiresAt (Unix seconds), data {"queue": name}} and
//     signs them: signature = hex(HMAC-SHA-256(key, canonical JSON of the
//     parameters)), the JSON with its keys sorted as ALTCHA's canonicalJSON
//     writes it;
//   - the solver tries counters 0, 1, 2, … deriving
//     key = PBKDF2-HMAC-SHA-256(password = nonce ‖ uint32 big-endian counter,
//     salt, cost, 32 bytes) until the key's hex starts with keyPrefix;
//   - it sends back base64(JSON {"challenge": {"parameters", "signature"},
//     "solution": {"counter", "derivedKey"}}), which the server checks with
//     one derivation: not expired, signed by it, for this queue, and the key
//     derived from the counter is the one sent and starts with the prefix.
//
// Why PBKDF2 rather than ALTCHA v1's one SHA-256 per attempt: the page runs
// each attempt through WebCrypto, whose call costs tens of microseconds
// whatever it computes, so with one hash per call a native script hashes
// 10-100× faster than the page and no difficulty is both cheap for people
// and dear for scripts. deriveBits runs the PBKDF2 iterations natively in
// the browser, so with a few hundred of them per attempt the page works
// nearly as fast as native code (docs/security.md has the measurements).
//
// The prefix is fixed at three hex zeros (1 in 4096 attempts succeeds), and
// the difficulty is the cost: a solution takes 4096 × cost iterations on
// average, and checking one takes cost. Each solution is good for one place
// once: the caller records Verified.ReplayKey in the store until the
// challenge expires.
package challenge

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

const (
	// Algorithm is the one ALTCHA v2 algorithm issued and accepted.
	Algorithm = "PBKDF2/SHA-256"
	// KeyPrefix is what a solution's derived key starts with (hex): 12 zero
	// bits, so one attempt in 4096 succeeds.
	KeyPrefix = "000"
	// ExpectedAttempts is how many derivations a solution takes on average
	// (16^len(KeyPrefix)).
	ExpectedAttempts = 4096
	// KeyLength is the derived key's length in bytes.
	KeyLength = 32
	// MaxCost bounds the PBKDF2 iterations per attempt a challenge may
	// carry: above 100,000 checking one solution would take tens of
	// milliseconds of the server's time. (What a queue may ask for, and
	// asks by default, is its challengeCost setting's: package queue.)
	MaxCost = 100_000
	// TTL is how long an issued challenge may be solved and used.
	TTL = 5 * time.Minute
	// MaxPayloadLen bounds a solution as sent (base64); ours are ~500 bytes.
	MaxPayloadLen = 2048
)

// Errors of a solution. Both are answered the same way (solve a new one),
// but told apart in the message.
var (
	// ErrInvalid: malformed, not signed by this server, for another queue,
	// or the work is wrong.
	ErrInvalid = errors.New("challenge solution invalid")
	// ErrExpired: the challenge's time ran out.
	ErrExpired = errors.New("challenge expired")
)

// Parameters are a challenge as ALTCHA v2 writes it. The fields are in
// alphabetical order, so encoding/json writes the canonical JSON that is
// signed (keys sorted; the values here need no escaping that JavaScript's
// JSON.stringify would write differently).
type Parameters struct {
	Algorithm string            `json:"algorithm"`
	Cost      int               `json:"cost"`
	Data      map[string]string `json:"data"`
	ExpiresAt int64             `json:"expiresAt"`
	KeyLength int               `json:"keyLength"`
	KeyPrefix string            `json:"keyPrefix"`
	Nonce     string            `json:"nonce"`
	Salt      string            `json:"salt"`
}

// Challenge is what GET …/challenge answers: the parameters and their
// signature.
type Challenge struct {
	Parameters Parameters `json:"parameters"`
	Signature  string     `json:"signature"`
}

// Solution is the solver's answer.
type Solution struct {
	Counter    int64  `json:"counter"`
	DerivedKey string `json:"derivedKey"`
	// Time is how long solving took (ms), as ALTCHA's solvers report it;
	// informative only.
	Time float64 `json:"time,omitempty"`
}

// Payload is what a client sends back, base64-encoded JSON.
type Payload struct {
	Challenge Challenge `json:"challenge"`
	Solution  Solution  `json:"solution"`
}

// Encode is the payload as sent: standard base64 of its JSON (what ALTCHA's
// widget sends, btoa(JSON.stringify(payload))).
func (p Payload) Encode() string {
	b, _ := json.Marshal(p)
	return base64.StdEncoding.EncodeToString(b)
}

// Issuer makes and checks challenges with one secret; every instance given
// the same secret checks what any of them issued.
type Issuer struct {
	key []byte
	now func() time.Time
	// derive is Parameters.derive, the one costly step of a check (a test
	// counts it: a forged solution must be refused before it).
	derive func(c Parameters, n uint32) []byte
}

// NewIssuer returns an Issuer signing with a key derived from secret (so
// the same secret signing session cookies never signs a challenge the same
// way). now is its clock (time.Now when nil).
func NewIssuer(secret []byte, now func() time.Time) *Issuer {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waitroom-challenge-key"))
	if now == nil {
		now = time.Now
	}
	return &Issuer{key: m.Sum(nil), now: now, derive: Parameters.derive}
}

// Issue returns a fresh signed challenge for queue at cost iterations per
// attempt.
func (is *Issuer) Issue(queue string, cost int) Challenge {
	p := Parameters{
		Algorithm: Algorithm,
		Cost:      cost,
		Data:      map[string]string{"queue": queue},
		ExpiresAt: is.now().Add(TTL).Unix(),
		KeyLength: KeyLength,
		KeyPrefix: KeyPrefix,
		Nonce:     randomHex(16),
		Salt:      randomHex(16),
	}
	return Challenge{Parameters: p, Signature: is.sign(p)}
}

func (is *Issuer) sign(p Parameters) string {
	b, _ := json.Marshal(p)
	m := hmac.New(sha256.New, is.key)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// Verified is an accepted solution.
type Verified struct {
	// ReplayKey identifies the challenge (its nonce): record it until
	// ExpiresAt and refuse it a second time.
	ReplayKey string
	ExpiresAt time.Time
	// Cost is the challenge's, as it was issued and signed: a place may ask
	// for a dearer one than the queue's (a suspect's, issue 51).
	Cost int
}

// Verify checks an encoded payload for queue: ErrExpired, ErrInvalid
// (wrapped with the reason), or the challenge it solves. The cheap checks
// (shape, expiry, signature) come first, so a forged payload costs no
// derivation; an accepted one costs exactly one.
func (is *Issuer) Verify(encoded, queue string) (Verified, error) {
	p, err := Decode(encoded)
	if err != nil {
		return Verified{}, err
	}
	c := p.Challenge.Parameters
	if err := c.check(); err != nil {
		return Verified{}, err
	}
	if c.Data["queue"] != queue || len(c.Data) != 1 {
		return Verified{}, fmt.Errorf("%w: issued for another queue", ErrInvalid)
	}
	expires := time.Unix(c.ExpiresAt, 0)
	if !is.now().Before(expires) {
		return Verified{}, ErrExpired
	}
	if subtle.ConstantTimeCompare([]byte(is.sign(c)), []byte(p.Challenge.Signature)) != 1 {
		return Verified{}, fmt.Errorf("%w: not signed by this server", ErrInvalid)
	}
	s := p.Solution
	if s.Counter < 0 || s.Counter > 1<<32-1 {
		return Verified{}, fmt.Errorf("%w: counter out of range", ErrInvalid)
	}
	key := is.derive(c, uint32(s.Counter))
	if !hasPrefix(key, c.KeyPrefix) {
		return Verified{}, fmt.Errorf("%w: the derived key does not start with %s", ErrInvalid, c.KeyPrefix)
	}
	if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(key)), []byte(strings.ToLower(s.DerivedKey))) != 1 {
		return Verified{}, fmt.Errorf("%w: derivedKey is not the counter's key", ErrInvalid)
	}
	return Verified{ReplayKey: c.Nonce, ExpiresAt: expires, Cost: c.Cost}, nil
}

// Decode reads an encoded payload (standard or URL-safe base64, with or
// without padding), refusing unknown fields.
func Decode(encoded string) (Payload, error) {
	var p Payload
	if len(encoded) == 0 || len(encoded) > MaxPayloadLen {
		return p, fmt.Errorf("%w: empty, or longer than %d bytes", ErrInvalid, MaxPayloadLen)
	}
	raw, err := decodeBase64(encoded)
	if err != nil {
		return p, fmt.Errorf("%w: not base64", ErrInvalid)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("%w: not an ALTCHA v2 payload: %v", ErrInvalid, err)
	}
	if dec.More() {
		return p, fmt.Errorf("%w: trailing data after the payload", ErrInvalid)
	}
	return p, nil
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// check refuses parameters this server would never have issued, before any
// cryptography.
func (c Parameters) check() error {
	switch {
	case c.Algorithm != Algorithm:
		return fmt.Errorf("%w: algorithm must be %s", ErrInvalid, Algorithm)
	case c.Cost < 1 || c.Cost > MaxCost:
		return fmt.Errorf("%w: cost out of range", ErrInvalid)
	case c.KeyLength != KeyLength:
		return fmt.Errorf("%w: keyLength must be %d", ErrInvalid, KeyLength)
	case !isHex(c.KeyPrefix, 1, 2*KeyLength):
		return fmt.Errorf("%w: keyPrefix must be hex", ErrInvalid)
	case !isHex(c.Nonce, 32, 32):
		return fmt.Errorf("%w: nonce must be 16 bytes of hex", ErrInvalid)
	case !isHex(c.Salt, 32, 32):
		return fmt.Errorf("%w: salt must be 16 bytes of hex", ErrInvalid)
	}
	return nil
}

// derive is one attempt: the key for counter n.
func (c Parameters) derive(n uint32) []byte {
	nonce, _ := hex.DecodeString(c.Nonce)
	salt, _ := hex.DecodeString(c.Salt)
	password := binary.BigEndian.AppendUint32(nonce, n)
	key, err := pbkdf2.Key(sha256.New, string(password), salt, c.Cost, KeyLength)
	if err != nil {
		panic(err) // only for lengths and iteration counts check() refuses
	}
	return key
}

// hasPrefix reports whether key's hex starts with prefix (lower-case hex,
// possibly of odd length, as ALTCHA compares hex strings).
func hasPrefix(key []byte, prefix string) bool {
	return strings.HasPrefix(hex.EncodeToString(key), strings.ToLower(prefix))
}

func isHex(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
