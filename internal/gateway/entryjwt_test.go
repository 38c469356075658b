package gateway

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestSignerSignsVerifiableEntries(t *testing.T) {
	s, err := ParseSigner(GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	e := Entry{Issuer: "https://shop.example/_waitroom", Audience: "http://10.0.0.5:8080", User: "alice", Queue: "default", Route: "POST /checkout", ID: "jti-1"}
	h, err := s.Sign(e, now)
	if err != nil {
		t.Fatal(err)
	}
	var claims EntryClaims
	tok, err := jwt.ParseWithClaims(h, &claims, func(tk *jwt.Token) (any, error) {
		if tk.Header["kid"] != s.KeyID() {
			t.Errorf("kid %v, want %s", tk.Header["kid"], s.KeyID())
		}
		return s.key.Public().(ed25519.PublicKey), nil
	}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil || !tok.Valid {
		t.Fatalf("does not verify: %v", err)
	}
	if claims.Subject != "alice" || claims.Queue != "default" || claims.ID != "jti-1" || claims.Route != "POST /checkout" ||
		claims.Issuer != e.Issuer || len(claims.Audience) != 1 || claims.Audience[0] != e.Audience ||
		!claims.IssuedAt.Time.Equal(now) || !claims.ExpiresAt.Time.Equal(now.Add(EntryJWTTTL)) {
		t.Fatalf("claims %+v", claims)
	}
	// The same entry within half its life: the same header; later, a new one.
	if again, _ := s.Sign(e, now.Add(EntryJWTTTL/2-time.Second)); again != h {
		t.Error("signed again within half the header's life")
	}
	if later, _ := s.Sign(e, now.Add(EntryJWTTTL/2)); later == h {
		t.Error("reused a header past half its life")
	}
	for name, other := range map[string]Entry{
		"another user":  {Issuer: e.Issuer, Audience: e.Audience, User: "bob", Queue: "default", Route: e.Route, ID: "jti-1"},
		"another route": {Issuer: e.Issuer, Audience: e.Audience, User: "alice", Queue: "default", Route: "POST /api/buy", ID: "jti-1"},
	} {
		if h2, _ := s.Sign(other, now); h2 == h {
			t.Errorf("%s got alice's header for %s", name, e.Route)
		}
	}
}

func TestParseSignerRefusals(t *testing.T) {
	for name, pem := range map[string]string{
		"empty":       "",
		"not PEM":     "hello",
		"public only": publicPEM(t),
		"RSA-looking": "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
		"garbage key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	} {
		if _, err := ParseSigner([]byte(pem)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The first private key signs; a public key after it is published too.
	two := string(GenerateKey()) + publicPEM(t)
	s, err := ParseSigner([]byte(two))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(s.JWKS()), `"kid"`); n != 2 {
		t.Fatalf("JWKS has %d keys, want 2: %s", n, s.JWKS())
	}
}

func publicPEM(t *testing.T) string {
	t.Helper()
	s, err := ParseSigner(GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509MarshalPublic(s.key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return "-----BEGIN PUBLIC KEY-----\n" + der + "\n-----END PUBLIC KEY-----\n"
}

func x509MarshalPublic(k ed25519.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(k)
	return base64.StdEncoding.EncodeToString(der), err
}
