package challenge

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// FuzzVerify feeds arbitrary solutions (as sent in X-Challenge-Solution):
// never a panic, only ErrInvalid or ErrExpired, and nothing accepted but a
// solution of a challenge this issuer signed for this queue.
func FuzzVerify(f *testing.F) {
	is := NewIssuer([]byte("fuzz secret of thirty-two bytes!"), nil)
	good, err := Solve(context.Background(), is.Issue("default", 10), 2)
	if err != nil {
		f.Fatal(err)
	}
	enc := good.Encode()
	raw, _ := base64.StdEncoding.DecodeString(enc)
	for _, s := range []string{
		enc, strings.TrimRight(enc, "="), base64.RawURLEncoding.EncodeToString(raw), "", "=", "%%%", enc[:len(enc)/2],
		base64.StdEncoding.EncodeToString([]byte(`{"challenge":{},"solution":{}}`)),
		base64.StdEncoding.EncodeToString([]byte(`{"challenge":{"parameters":{"algorithm":"PBKDF2/SHA-256","cost":99999999999}},"solution":{"counter":-1}}`)),
		base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"counter":`, `"counter":1`, 1))),
		base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"cost":10`, `"cost":1e9`, 1))),
		base64.StdEncoding.EncodeToString([]byte(string(raw) + " {}")),
	} {
		f.Add(s, "default")
	}
	f.Add(enc, "vip")
	// derived counts the one costly step (a derivation), which only a
	// challenge this issuer signed may reach. (Counted, not timed: on a
	// busy machine a cheap refusal has taken over a second of wall time.)
	derived := 0
	is.derive = func(c Parameters, n uint32) []byte { derived++; return c.derive(n) }
	f.Fuzz(func(t *testing.T, payload, queue string) {
		derived = 0
		v, err := is.Verify(payload, queue)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
				t.Fatalf("Verify: %v, want ErrInvalid or ErrExpired", err)
			}
			// Refused before any real work unless this issuer signed the
			// challenge: a forged solution is cheap.
			if p, derr := Decode(payload); derived > 0 && (derr != nil || is.sign(p.Challenge.Parameters) != p.Challenge.Signature) {
				t.Fatalf("a solution this issuer did not sign was refused after %d derivations", derived)
			}
			return
		}
		// Accepted: it must be what this issuer signed, for this queue, with
		// the work done. (The fuzzing workers each make their own seed
		// challenge, so the check is on the payload, not on good.)
		p, derr := Decode(payload)
		c := p.Challenge.Parameters
		if derr != nil || c.Data["queue"] != queue || is.sign(c) != p.Challenge.Signature || v.ReplayKey != c.Nonce ||
			!strings.EqualFold(hex.EncodeToString(c.derive(uint32(p.Solution.Counter))), p.Solution.DerivedKey) {
			t.Fatalf("Verify accepted %q for %q: %+v (decode %v)", payload, queue, p, derr)
		}
	})
}
