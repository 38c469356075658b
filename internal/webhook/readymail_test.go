package webhook_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
	"github.com/waitroom/waitroom/internal/webhook"
)

// TestReadyMailExample runs examples/ready-mail, the receiver
// docs/operations.md shows ("Telling people it is their turn"), between a
// running waitroom and a local SMTP server (smtpStandIn: a stand-in that
// speaks just enough SMTP for net/smtp's client, not a mail server). A
// signed user let into a queue with notifyOnReady gets one mail at the
// address the shop keeps for them, naming the queue; a user the shop has
// no address for, and an anonymous session, get none; an event delivered
// again (signed anew) is acknowledged and sends no second mail; a wrong
// signature is refused with 401.
func TestReadyMailExample(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "ready-mail")
	if out, err := exec.Command("go", append(append([]string{"build"}, apptest.GoBuildFlags...), "-o", bin, "../../examples/ready-mail")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mail := startSMTPStandIn(t)
	dir := t.TempDir()
	secretFile, usersFile := filepath.Join(dir, "webhook-secret"), filepath.Join(dir, "users.json")
	os.WriteFile(secretFile, append(secret, '\n'), 0o600)
	os.WriteFile(usersFile, []byte(`{"alice": "alice@example.com"}`), 0o600)
	url := fmt.Sprintf("http://127.0.0.1:%d/hooks", testenv.FreePort(t))
	apptest.StartExample(t, []string{bin}, "LISTEN="+strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/hooks"),
		"WEBHOOK_SECRET_FILE="+secretFile, "USERS_FILE="+usersFile, "SMTP_ADDR="+mail.addr,
		"MAIL_FROM=shop@example.com", "SHOP_URL=https://shop.example.com/checkout")

	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) {
		c.Webhooks, c.WebhookSecretFile = []string{url}, secretFile
	})
	in.PutQueue("drop", map[string]any{"ratePerSecond": 20, "notifyOnReady": true, "entry": "any"})
	cookie := in.SessionCookie()
	for _, auth := range []string{in.As("bob"), in.As("alice"), ""} {
		if r := in.Do("POST", "/api/v1/queues/drop/entries", auth, nil, "Cookie", cookie); r.Status >= 300 {
			t.Fatalf("enter: %d %s", r.Status, r.Raw)
		}
	}
	in.WaitReady("drop", "alice")
	waitFor(t, "alice's mail", func() bool { return len(mail.sent()) == 1 })
	delivered := `waitroom_webhook_deliveries_total{receiver="` + url + `",result="delivered"}`
	// Three: alice's and bob's entry.ready, and the audit log's
	// admin.changed of the queue put (acknowledged, no mail).
	waitFor(t, "bob's event acknowledged too", func() bool { return apptest.Metrics(t, in.Base)[delivered] == 3 })

	// Again, as a retry whose 2xx was lost would come: acknowledged, no mail.
	body := fmt.Appendf(nil, `{"id":"entry.ready:drop:alice:%d","type":"entry.ready","queue":"drop","at":"2026-12-06T22:00:00Z","data":{"user":"alice","expiresAt":"2026-12-06T22:05:00Z"}}`, 1)
	for _, c := range []struct {
		what      string
		signature string
		status    int
	}{
		{"an event", webhook.Sign(secret, time.Now(), body), http.StatusNoContent},
		{"the same event again, signed anew", webhook.Sign(secret, time.Now().Add(time.Second), body), http.StatusNoContent},
		{"signed with another secret", webhook.Sign([]byte("another-secret-of-the-same-size!!"), time.Now(), body), http.StatusUnauthorized},
	} {
		if status, _ := post(t, url, body, c.signature); status != c.status {
			t.Errorf("%s: %d, want %d", c.what, status, c.status)
		}
	}
	sent := mail.sent()
	if len(sent) != 2 {
		t.Fatalf("%d mails sent, want alice's two (waitroom's event, and the one posted here once): %q", len(sent), sent)
	}
	for _, m := range sent {
		if !strings.Contains(m, "RCPT TO:<alice@example.com>") || !strings.Contains(m, "It is your turn in drop") ||
			!strings.Contains(m, "https://shop.example.com/checkout") {
			t.Errorf("a mail that is not alice's turn:\n%s", m)
		}
	}
}

// TestOperationsDocQuotesTheReadyMailExample: the receiver's code in
// docs/operations.md is examples/ready-mail's, line for line.
func TestOperationsDocQuotesTheReadyMailExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile("../../examples/ready-mail/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- quoted from examples/ready-mail/main.go -->\n```go\n")
	quoted, _, _ := strings.Cut(after, "```\n")
	if !ok || quoted == "" || !strings.Contains(string(code), quoted) {
		t.Errorf("docs/operations.md's quote of examples/ready-mail/main.go is not in it:\n%s", quoted)
	}
}

// smtpStandIn takes mail as an SMTP server would, in this process: a
// stand-in for a real relay, speaking the commands net/smtp's SendMail
// sends (EHLO, MAIL, RCPT, DATA, QUIT) and keeping each mail's envelope
// and text.
type smtpStandIn struct {
	addr string
	mu   sync.Mutex
	got  []string
}

func startSMTPStandIn(t *testing.T) *smtpStandIn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &smtpStandIn{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *smtpStandIn) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	fmt.Fprint(c, "220 stand-in ESMTP\r\n")
	var mail strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			fmt.Fprint(c, "250 stand-in\r\n")
		case strings.HasPrefix(cmd, "MAIL"), strings.HasPrefix(cmd, "RCPT"):
			mail.WriteString(strings.TrimSpace(line) + "\n")
			fmt.Fprint(c, "250 ok\r\n")
		case cmd == "DATA":
			fmt.Fprint(c, "354 go on\r\n")
			for {
				l, err := r.ReadString('\n')
				if err != nil || l == ".\r\n" {
					break
				}
				mail.WriteString(l)
			}
			s.mu.Lock()
			s.got = append(s.got, mail.String())
			s.mu.Unlock()
			mail.Reset()
			fmt.Fprint(c, "250 queued\r\n")
		case cmd == "QUIT":
			fmt.Fprint(c, "221 bye\r\n")
			return
		default:
			fmt.Fprint(c, "250 ok\r\n")
		}
	}
}

func (s *smtpStandIn) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}
