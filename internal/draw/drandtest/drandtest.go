// Package drandtest is a local server that speaks drand's HTTP API (v1:
// /info, /public/latest, /public/{round}) for tests: it is not drand. Its
// chain has the genesis and period it is given and a clock the test sets;
// each round's "signature" is 48 random bytes (no BLS: nothing here signs
// anything) and its randomness SHA-256 of them, as drand's is. A round
// ahead of its clock is answered 425 Too Early, as drand's HTTP relay
// (api.drand.sh) answers it, or 404, as drand's own server does
// (FutureNotFound).
package drandtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Server is the chain and its HTTP server (URL is the chain's base URL).
type Server struct {
	*httptest.Server
	Genesis time.Time // whole seconds, as drand's genesis_time
	Period  time.Duration
	Hash    string // the chain's hash, hex (random)

	mu             sync.Mutex
	now            func() time.Time
	signatures     map[uint64][]byte
	asked          []string
	futureNotFound bool
	wrongRandom    bool
}

// New serves a chain whose round 1 is out at genesis (truncated to the
// second) and a round every period (whole seconds), on the real clock
// until SetClock. It stops at the test's end.
func New(t interface{ Cleanup(func()) }, genesis time.Time, period time.Duration) *Server {
	s := &Server{Genesis: genesis.Truncate(time.Second), Period: period.Truncate(time.Second), Hash: randomHex(32),
		now: time.Now, signatures: map[uint64][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /info", s.info)
	mux.HandleFunc("GET /public/{round}", s.public)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// SetClock sets the chain's clock: rounds after now's are not out.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// FutureNotFound makes a round ahead of the clock answer 404, as drand's
// own server (not its relay) answers it.
func (s *Server) FutureNotFound() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.futureNotFound = true
}

// WrongRandomness makes every round answer a randomness that is not
// SHA-256 of its signature: a chain (or a man in the middle) to refuse.
func (s *Server) WrongRandomness() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wrongRandom = true
}

// Asked is the paths asked so far, in order.
func (s *Server) Asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

// Randomness is round's randomness, hex, as the server answers it (drawn
// now if never asked): what a test expects a draw to have read.
func (s *Server) Randomness(round uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := sha256.Sum256(s.signature(round))
	return hex.EncodeToString(sum[:])
}

// TimeOf is when round is out: genesis + (round-1) * period.
func (s *Server) TimeOf(round uint64) time.Time {
	return s.Genesis.Add(time.Duration(round-1) * s.Period)
}

func (s *Server) signature(round uint64) []byte {
	sig, ok := s.signatures[round]
	if !ok {
		sig = make([]byte, 48)
		rand.Read(sig)
		s.signatures[round] = sig
	}
	return sig
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.asked = append(s.asked, r.URL.Path)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"public_key": randomHex(96), "period": int64(s.Period / time.Second), "genesis_time": s.Genesis.Unix(),
		"hash": s.Hash, "groupHash": randomHex(32), "schemeID": "bls-unchained-g1-rfc9380",
		"metadata": map[string]string{"beaconID": "drandtest"},
	})
}

func (s *Server) public(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, r.URL.Path)
	current := uint64(1 + s.now().Sub(s.Genesis)/s.Period)
	if s.now().Before(s.Genesis) {
		current = 0
	}
	round := current
	if v := r.PathValue("round"); v != "latest" {
		var err error
		if round, err = strconv.ParseUint(v, 10, 64); err != nil {
			http.Error(w, "Failed to parse round parameter", http.StatusBadRequest)
			return
		}
	}
	if round == 0 || round > current {
		if s.futureNotFound {
			http.Error(w, "", http.StatusNotFound)
		} else {
			http.Error(w, "Requested future beacon", http.StatusTooEarly)
		}
		return
	}
	sig := s.signature(round)
	sum := sha256.Sum256(sig)
	randomness := hex.EncodeToString(sum[:])
	if s.wrongRandom {
		randomness = randomHex(32)
	}
	writeJSON(w, http.StatusOK, map[string]any{"round": round, "randomness": randomness, "signature": hex.EncodeToString(sig)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
