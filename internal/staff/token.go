package staff

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// TokenPrefix starts every named token, so that secret scanners (GitHub's,
// gitleaks) can match one in a commit, a paste or a screenshot's text.
const TokenPrefix = "wr_"

// tokenBytes is a named token's entropy: 256 bits.
const tokenBytes = 32

// tokenLen is a named token's length: the prefix and 43 base64url
// characters.
var tokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(tokenBytes)

// NewToken makes a named token: TokenPrefix and 256 random bits, base64url.
// It is shown once; the store keeps only HashToken of it.
func NewToken() string {
	b := make([]byte, tokenBytes)
	rand.Read(b) // never fails (crypto/rand panics rather than return a weak value)
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is the SHA-256 of a token (or a session cookie's value), in
// hex: what the store keeps and looks it up by. A token has 256 random
// bits, so one fast hash is enough (no password stretching): nobody can
// search the space behind it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// LooksLikeToken reports whether s has a named token's shape (the prefix,
// the length, base64url characters): a bearer value of any other shape is
// never looked up in the store.
func LooksLikeToken(s string) bool {
	if len(s) != tokenLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	for _, c := range s[len(TokenPrefix):] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
