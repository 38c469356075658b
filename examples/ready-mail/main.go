// Command ready-mail is a shop's receiver of waitroom's entry.ready events
// that sends each person an e-mail when it is their turn (issue 55,
// docs/operations.md "Telling people it is their turn"): it verifies the
// signature, drops an event id it has acted on, looks the user up in the
// shop's own records (here a JSON file of user id → e-mail address) and
// sends the mail over SMTP. Nothing beyond the standard library.
//
//	WEBHOOK_SECRET_FILE=webhook-secret USERS_FILE=users.json SMTP_ADDR=127.0.0.1:25 \
//	  MAIL_FROM=shop@example.com SHOP_URL=https://shop.example.com/ go run ./examples/ready-mail
//	waitroom serve --webhook http://127.0.0.1:3002/hooks --webhook-secret-file webhook-secret
//	  (and the queue's notifyOnReady on)
//
// Settings (environment): LISTEN (127.0.0.1:3002), WEBHOOK_SECRET_FILE,
// USERS_FILE, SMTP_ADDR (host:port of a relay that takes mail from here
// without login), MAIL_FROM, SHOP_URL (the link in the mail).
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
	"net/smtp"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// event is what waitroom sends (docs/operations.md, "Webhooks").
type event struct {
	ID    string         `json:"id"`
	Type  string         `json:"type"`
	Queue string         `json:"queue"`
	At    time.Time      `json:"at"`
	Data  map[string]any `json:"data"`
}

// verify checks header (t=<unix seconds>,v1=<hex>[,v1=…]) against the body
// as received: one v1 must be HMAC-SHA256(secret, "<t>.<body>"), and t
// within 5 minutes of now (older: a replay).
func verify(secret []byte, header string, body []byte, now time.Time) error {
	var t string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		if sig, err := hex.DecodeString(v); k == "v1" && err == nil {
			sigs = append(sigs, sig)
		} else if k == "t" {
			t = v
		}
	}
	sec, err := strconv.ParseInt(t, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errors.New("no Waitroom-Signature of the form t=…,v1=…")
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(t + "."))
	mac.Write(body)
	ok := false
	for _, sig := range sigs {
		ok = ok || hmac.Equal(sig, mac.Sum(nil)) // constant time
	}
	if d := now.Sub(time.Unix(sec, 0)); !ok || d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("not signed by the shared secret within 5 minutes of now")
	}
	return nil
}

// mailer sends each entry.ready once. In a real shop the ids acted on go
// in the database, in the transaction that records the mail as sent, and
// the addresses come from the customers' table.
type mailer struct {
	secret         []byte
	smtpAddr, from string
	shopURL        string
	emails         map[string]string // user id → address: the shop's records

	mu   sync.Mutex
	seen map[string]bool // event ids acted on
}

func (m *mailer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, "POST an event", http.StatusBadRequest)
		return
	}
	if err := verify(m.secret, r.Header.Get("Waitroom-Signature"), body, time.Now()); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var e event
	if err := json.Unmarshal(body, &e); err != nil || e.ID == "" {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	if err := m.act(e); err != nil {
		// Not acknowledged: waitroom tries again with backoff.
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// act sends e's mail unless e was acted on already. An id is marked only
// once its mail went: a mail that failed is sent on the retry. Mails are
// sent concurrently (waitroom sends up to 32 events at once, and never one
// event in two attempts at once).
func (m *mailer) act(e event) error {
	m.mu.Lock()
	done := m.seen[e.ID]
	m.mu.Unlock()
	if done || e.Type != "entry.ready" {
		return nil // a duplicate, or an event this receiver does not act on
	}
	user, _ := e.Data["user"].(string)
	if to, ok := m.emails[user]; ok { // else no address for them: nothing to send, ever
		expires, _ := time.Parse(time.RFC3339, fmt.Sprint(e.Data["expiresAt"]))
		msg := "From: " + m.from + "\r\nTo: " + to + "\r\nSubject: It is your turn\r\n" +
			"Content-Type: text/plain; charset=utf-8\r\n\r\n" +
			"It is your turn in " + e.Queue + ". Your place is kept until " + expires.UTC().Format("15:04 MST") + ":\r\n" +
			m.shopURL + "\r\n"
		if err := smtp.SendMail(m.smtpAddr, nil, m.from, []string{to}, []byte(msg)); err != nil {
			return fmt.Errorf("sending the mail: %w", err)
		}
	}
	m.mu.Lock()
	m.seen[e.ID] = true
	m.mu.Unlock()
	return nil
}

func main() {
	secret, err := os.ReadFile(os.Getenv("WEBHOOK_SECRET_FILE"))
	if err != nil {
		log.Fatalf("WEBHOOK_SECRET_FILE: %v", err)
	}
	users, err := os.ReadFile(os.Getenv("USERS_FILE"))
	m := &mailer{secret: []byte(strings.TrimRight(string(secret), "\r\n")), smtpAddr: os.Getenv("SMTP_ADDR"),
		from: os.Getenv("MAIL_FROM"), shopURL: os.Getenv("SHOP_URL"), seen: map[string]bool{}}
	if err == nil {
		err = json.Unmarshal(users, &m.emails)
	}
	if err != nil {
		log.Fatalf("USERS_FILE: %v", err)
	}
	addr := os.Getenv("LISTEN")
	if addr == "" {
		addr = "127.0.0.1:3002"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on " + ln.Addr().String())
	log.Fatal((&http.Server{Handler: m, ReadHeaderTimeout: 5 * time.Second}).Serve(ln))
}
