// Command verify-webhook is a shop's receiver of waitroom's events in Go:
// it checks each POST's Waitroom-Signature against the shared secret,
// refuses a signature more than 5 minutes from now (a replay), and acts on
// each event id once, however many times it is delivered (delivery is at
// least once). Nothing beyond the standard library.
//
//	WEBHOOK_SECRET_FILE=webhook-secret go run ./examples/verify-webhook/go
//	waitroom serve --webhook http://127.0.0.1:3001/hooks --webhook-secret-file webhook-secret
//
// Settings (environment): LISTEN (127.0.0.1:3001), WEBHOOK_SECRET_FILE
// (the file given to --webhook-secret-file; its trailing newline dropped).
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tolerance is how far a signature's timestamp may be from this server's
// clock: older is a replay (or a clock badly off), refused.
const tolerance = 5 * time.Minute

// event is what waitroom sends: docs/operations.md, "Webhooks".
type event struct {
	ID    string         `json:"id"`
	Type  string         `json:"type"`
	Queue string         `json:"queue"`
	At    time.Time      `json:"at"`
	Data  map[string]any `json:"data"`
}

var errMalformed = errors.New("no Waitroom-Signature of the form t=…,v1=…")

// verify checks header (t=<unix seconds>,v1=<hex>[,v1=…]) against body:
// one v1 must be HMAC-SHA256(secret, "<t>.<body>"), and t within
// tolerance of now.
func verify(secret []byte, header string, body []byte, now time.Time) error {
	var t string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			t = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	sec, err := strconv.ParseInt(t, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errMalformed
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(t + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	ok := false
	for _, sig := range sigs {
		ok = ok || hmac.Equal(sig, want) // constant time
	}
	if !ok {
		return errors.New("the signature is not the shared secret's")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("signed %v from now, more than %v", d.Round(time.Second), tolerance)
	}
	return nil
}

// receiver acts on each event once. In a real shop the ids go in the
// database, in the transaction that acts on the event.
type receiver struct {
	secret []byte
	mu     sync.Mutex
	seen   map[string]bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	// The signature is over the body as received: verify before parsing.
	switch err := verify(rc.secret, r.Header.Get("Waitroom-Signature"), body, time.Now()); {
	case errors.Is(err, errMalformed):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var e event
	if err := json.Unmarshal(body, &e); err != nil || e.ID == "" {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	duplicate := rc.seen[e.ID]
	rc.seen[e.ID] = true
	rc.mu.Unlock()
	if !duplicate {
		log.Printf("event %s: %s of queue %s at %s %v", e.ID, e.Type, e.Queue, e.At.Format(time.RFC3339), e.Data)
	}
	// 2xx either way: a duplicate is delivered, and must not be sent again.
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"received":true,"duplicate":%t}`+"\n", duplicate)
}

func main() {
	raw, err := os.ReadFile(os.Getenv("WEBHOOK_SECRET_FILE"))
	if err != nil {
		log.Fatalf("WEBHOOK_SECRET_FILE: %v", err)
	}
	addr := os.Getenv("LISTEN")
	if addr == "" {
		addr = "127.0.0.1:3001"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on " + ln.Addr().String())
	srv := &http.Server{Handler: &receiver{secret: []byte(strings.TrimRight(string(raw), "\r\n")), seen: map[string]bool{}},
		ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.Serve(ln))
}
