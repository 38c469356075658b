// Command verify-entry is a shop's protected handler in Go behind
// `waitroom proxy`: before it sells, it checks the X-Waitroom-Entry header
// the gateway adds (docs/gateway.md) against the gateway's key set, and
// keeps the entry's jti under a unique key so that one entry buys once.
//
//	WAITROOM_JWKS_URL=http://127.0.0.1:8080/_waitroom/.well-known/jwks.json \
//	  go run ./examples/verify-entry/go
//	waitroom proxy --upstream http://127.0.0.1:3000 --protect 'POST /buy'
//
// Settings (environment): LISTEN (127.0.0.1:3000), WAITROOM_JWKS_URL,
// WAITROOM_QUEUE (the queue guarding the route, "default"),
// WAITROOM_ENTRY_ISSUER and WAITROOM_ENTRY_AUDIENCE (checked when set),
// USED_ENTRIES_DB (the SQLite file of spent entries, used-entries.db).
package main

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	_ "modernc.org/sqlite"
)

// leeway is the clock difference between the gateway and this server that
// exp, iat and nbf forgive.
const leeway = 5 * time.Second

func main() {
	listen := env("LISTEN", "127.0.0.1:3000")
	db, err := sql.Open("sqlite", env("USED_ENTRIES_DB", "used-entries.db"))
	if err != nil {
		log.Fatal(err)
	}
	// The unique key: a second use of one entry cannot insert its jti.
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS used_entries (
		jti TEXT PRIMARY KEY, user_id TEXT NOT NULL, used_at TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	v := &verifier{
		keys:     &keySet{url: env("WAITROOM_JWKS_URL", "http://127.0.0.1:8080/_waitroom/.well-known/jwks.json")},
		queue:    env("WAITROOM_QUEUE", "default"),
		issuer:   os.Getenv("WAITROOM_ENTRY_ISSUER"),
		audience: os.Getenv("WAITROOM_ENTRY_AUDIENCE"),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /buy", func(w http.ResponseWriter, r *http.Request) {
		entry, err := v.verify(r.Context(), r.Header.Get("X-Waitroom-Entry"))
		if err != nil {
			status := http.StatusForbidden
			if r.Header.Get("X-Waitroom-Entry") == "" {
				status = http.StatusUnauthorized
			}
			reply(w, status, map[string]any{"error": err.Error()})
			return
		}
		// In a real shop: in the transaction that records the purchase.
		res, err := db.ExecContext(r.Context(), `INSERT INTO used_entries (jti, user_id, used_at)
			VALUES (?, ?, ?) ON CONFLICT (jti) DO NOTHING`, entry.ID, entry.Subject, time.Now().UTC().Format(time.RFC3339Nano))
		if err != nil {
			reply(w, http.StatusServiceUnavailable, map[string]any{"error": "the used entries cannot be read"})
			return
		}
		if n, _ := res.RowsAffected(); n == 0 {
			reply(w, http.StatusConflict, map[string]any{"error": "this entry was used already"})
			return
		}
		reply(w, http.StatusOK, map[string]any{"bought": true, "user": entry.Subject, "jti": entry.ID})
	})
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// verifier checks X-Waitroom-Entry.
type verifier struct {
	keys             *keySet
	queue            string
	issuer, audience string
}

// verify returns the entry's claims if raw is a compact JWT signed EdDSA by
// a key of the set, unexpired, for this route's queue (and issuer and
// audience, when set), naming a user and an entry.
func (v *verifier) verify(ctx context.Context, raw string) (*jwt.Claims, error) {
	if raw == "" {
		return nil, errors.New("no X-Waitroom-Entry: the request did not come through the waiting room")
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, fmt.Errorf("X-Waitroom-Entry: %w", err)
	}
	key, err := v.keys.get(ctx, tok.Headers[0].KeyID)
	if err != nil {
		return nil, err
	}
	var claims jwt.Claims
	var extra struct {
		Queue string `json:"queue"`
	}
	if err := tok.Claims(key, &claims, &extra); err != nil {
		return nil, fmt.Errorf("X-Waitroom-Entry: %w", err)
	}
	want := jwt.Expected{Time: time.Now(), Issuer: v.issuer}
	if v.audience != "" {
		want.AnyAudience = jwt.Audience{v.audience}
	}
	if err := claims.ValidateWithLeeway(want, leeway); err != nil {
		return nil, fmt.Errorf("X-Waitroom-Entry: %w", err)
	}
	switch {
	case claims.Expiry == nil:
		return nil, errors.New("X-Waitroom-Entry: no exp")
	case extra.Queue != v.queue:
		return nil, fmt.Errorf("X-Waitroom-Entry: for the queue %q, not %q", extra.Queue, v.queue)
	case claims.Subject == "" || claims.ID == "":
		return nil, errors.New("X-Waitroom-Entry: no sub or jti")
	}
	return &claims, nil
}

// keySet is the gateway's JWKS, fetched when a kid is not in it (a key
// rotated in), at most once every refetchAfter.
type keySet struct {
	url     string
	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetched time.Time
}

const refetchAfter = 10 * time.Second

func (s *keySet) get(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[kid]; ok {
		return k, nil
	}
	if time.Since(s.fetched) >= refetchAfter {
		if err := s.fetch(ctx); err != nil {
			return nil, err
		}
	}
	if k, ok := s.keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("X-Waitroom-Entry: signed with a key (kid %q) not in the gateway's key set", kid)
}

func (s *keySet) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the key set: %w", err)
	}
	defer res.Body.Close()
	var set jose.JSONWebKeySet
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("the key set: %s", res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		return fmt.Errorf("the key set: %w", err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if pub, ok := k.Key.(ed25519.PublicKey); ok && k.Algorithm == string(jose.EdDSA) {
			keys[k.KeyID] = pub
		}
	}
	s.keys, s.fetched = keys, time.Now()
	return nil
}

func reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
