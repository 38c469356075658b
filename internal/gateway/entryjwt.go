package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// EntryJWTTTL is how long an X-Waitroom-Entry header stays valid: it is
// checked by the backend as the request arrives, so a short life is enough
// and a leaked header is soon worthless.
const EntryJWTTTL = 2 * time.Minute

// Signer signs the X-Waitroom-Entry header each protected request carries
// upstream: a compact JWT (EdDSA, Ed25519) that the backend verifies offline
// with the public keys served as a JWKS, so it can trust that the request
// was let in by the line without asking waitroom anything.
type Signer struct {
	key  ed25519.PrivateKey
	kid  string
	jwks []byte

	// signed keeps each entry's header for half its life: a browser's
	// requests through a checkout reuse it rather than pay for a signature
	// each (tens of microseconds of CPU).
	mu     sync.Mutex
	signed map[Entry]signedEntry
}

type signedEntry struct {
	header string
	at     time.Time
}

// maxSigned bounds the headers kept (about 400 bytes each); when full the
// cache starts over.
const maxSigned = 50_000

// jwk is one public key as RFC 8037 writes an Ed25519 key.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// ParseSigner reads PEM blocks: the first PRIVATE KEY (PKCS #8, Ed25519;
// `openssl genpkey -algorithm ed25519` writes one) signs; every key in the
// file, private or PUBLIC KEY, is published. To rotate, put the new key
// first and keep the old one after it (or just its public key) for at least
// EntryJWTTTL, until the headers it signed have expired.
func ParseSigner(pemData []byte) (*Signer, error) {
	var (
		signing ed25519.PrivateKey
		public  []ed25519.PublicKey
	)
	for rest := pemData; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("a PRIVATE KEY block: %w", err)
			}
			ek, ok := k.(ed25519.PrivateKey)
			if !ok {
				return nil, fmt.Errorf("a PRIVATE KEY block holds a %T, want an Ed25519 key", k)
			}
			if signing == nil {
				signing = ek
			}
			public = append(public, ek.Public().(ed25519.PublicKey))
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("a PUBLIC KEY block: %w", err)
			}
			ek, ok := k.(ed25519.PublicKey)
			if !ok {
				return nil, fmt.Errorf("a PUBLIC KEY block holds a %T, want an Ed25519 key", k)
			}
			public = append(public, ek)
		default:
			return nil, fmt.Errorf("a %q block: want PRIVATE KEY or PUBLIC KEY (Ed25519)", b.Type)
		}
	}
	if signing == nil {
		return nil, errors.New("no Ed25519 PRIVATE KEY block (make one with: openssl genpkey -algorithm ed25519)")
	}
	s := &Signer{key: signing, kid: thumbprint(signing.Public().(ed25519.PublicKey)), signed: map[Entry]signedEntry{}}
	set := struct {
		Keys []jwk `json:"keys"`
	}{}
	seen := map[string]bool{}
	for _, k := range public {
		kid := thumbprint(k)
		if seen[kid] {
			continue
		}
		seen[kid] = true
		set.Keys = append(set.Keys, jwk{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k), Kid: kid, Alg: "EdDSA", Use: "sig"})
	}
	var err error
	s.jwks, err = json.Marshal(set)
	return s, err
}

// GenerateKey returns a new Ed25519 signing key as PEM, for the embedded
// default (kept in the data directory so it survives a restart).
func GenerateKey() []byte {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err) // an Ed25519 key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// thumbprint is the key's RFC 7638 JWK thumbprint, its kid.
func thumbprint(k ed25519.PublicKey) string {
	canon := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(k) + `"}`
	sum := sha256.Sum256([]byte(canon))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// JWKS is the public key set, served at {prefix}/.well-known/jwks.json.
func (s *Signer) JWKS() []byte { return s.jwks }

// KeyID is the kid of the signing key.
func (s *Signer) KeyID() string { return s.kid }

// EntryClaims are what X-Waitroom-Entry says.
type EntryClaims struct {
	jwt.RegisteredClaims
	// Queue is the line the user came through.
	Queue string `json:"queue"`
	// Route is the protected route's pattern, as configured, that the
	// entry was checked for ("POST /checkout"): a backend can refuse an
	// entry let in for another route.
	Route string `json:"route"`
}

// Entry is who and what one X-Waitroom-Entry is for.
type Entry struct {
	// Issuer (iss) names the gateway (--entry-issuer: its public URL, or
	// its prefix); Audience (aud) the backend (--entry-audience: the
	// upstream's URL unless set).
	Issuer, Audience string
	User             string // sub
	Queue, Route     string
	// ID (jti) names the entry token without revealing it (EntryID).
	ID string
}

// Sign returns the header for e: one issued at now, or within the last
// half of EntryJWTTTL for the same entry.
func (s *Signer) Sign(e Entry, now time.Time) (string, error) {
	s.mu.Lock()
	prev, ok := s.signed[e]
	s.mu.Unlock()
	if ok && now.Sub(prev.at) < EntryJWTTTL/2 && !now.Before(prev.at) {
		return prev.header, nil
	}
	header, err := s.sign(e, now)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if len(s.signed) >= maxSigned {
		clear(s.signed)
	}
	s.signed[e] = signedEntry{header: header, at: now}
	s.mu.Unlock()
	return header, nil
}

func (s *Signer) sign(e Entry, now time.Time) (string, error) {
	claims := EntryClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    e.Issuer,
			Subject:   e.User,
			ID:        e.ID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(EntryJWTTTL)),
		},
		Queue: e.Queue,
		Route: e.Route,
	}
	if e.Audience != "" {
		claims.Audience = jwt.ClaimStrings{e.Audience}
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = s.kid
	return t.SignedString(s.key)
}

// EntryID names an entry token without revealing it: the jti a backend can
// keep under a unique key to enforce a single use itself.
func EntryID(queueName, user, token string) string {
	sum := sha256.Sum256([]byte("waitroom-entry\x00" + queueName + "\x00" + user + "\x00" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// jwks serves the public keys of X-Waitroom-Entry (RFC 7517). Backends
// cache it for a minute; a kid they do not know makes them fetch it again.
func (g *Gateway) jwks(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=60")
	w.Write(g.o.Signer.JWKS())
}
