package webhook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
	"github.com/waitroom/waitroom/internal/webhook"
)

// TestVerifyWebhookExamples runs each receiver of examples/verify-webhook,
// in the shops' languages (Go, Node, Python: their standard libraries
// only), and holds it to what a receiver must get right: an event a running
// waitroom delivers is taken; an event signed now is taken, and again as a
// duplicate (acknowledged, not acted on twice); one signed four minutes
// ago is taken; an event signed with another secret, a body changed after
// it was signed, and a signature six minutes old (a replay) are refused
// with 401; no signature is 400.
func TestVerifyWebhookExamples(t *testing.T) {
	t.Parallel()
	for _, ex := range []struct {
		name  string
		start func(t *testing.T) []string // the command line that runs the example
	}{
		{"go", func(t *testing.T) []string {
			bin := filepath.Join(t.TempDir(), "verify-webhook")
			out, err := exec.Command("go", append(append([]string{"build"}, apptest.GoBuildFlags...), "-o", bin, "../../examples/verify-webhook/go")...).CombinedOutput()
			if err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			return []string{bin}
		}},
		{"node", func(t *testing.T) []string {
			testenv.NodeModules(t) // a Node.js recent enough is on PATH
			dir := apptest.CopyTree(t, "../../examples/verify-webhook/node")
			return []string{"node", filepath.Join(dir, "server.js")}
		}},
		{"python", func(t *testing.T) []string {
			script, err := filepath.Abs("../../examples/verify-webhook/python/verify_webhook.py")
			if err != nil {
				t.Fatal(err)
			}
			return []string{testenv.Python(t), "-B", script}
		}},
	} {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			argv := ex.start(t)
			secretFile := filepath.Join(t.TempDir(), "webhook-secret")
			if err := os.WriteFile(secretFile, append(secret, '\n'), 0o600); err != nil {
				t.Fatal(err)
			}
			url := fmt.Sprintf("http://127.0.0.1:%d/hooks", testenv.FreePort(t))
			apptest.StartExample(t, argv, "LISTEN="+strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/hooks"),
				"WEBHOOK_SECRET_FILE="+secretFile)

			// As waitroom sends it: a pause of the default queue.
			in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) {
				c.Webhooks, c.WebhookSecretFile = []string{url}, secretFile
			})
			in.PatchQueue("default", map[string]any{"paused": true})
			delivered := `waitroom_webhook_deliveries_total{receiver="` + url + `",result="delivered"}`
			// Two events: the audit log's admin.changed and queue.paused.
			waitFor(t, "waitroom's events taken", func() bool { return apptest.Metrics(t, in.Base)[delivered] == 2 })
			if n := apptest.Metrics(t, in.Base)[`waitroom_webhook_attempts_failed_total{receiver="`+url+`"}`]; n != 0 {
				t.Fatalf("%v attempts refused by the example: want its first taken", n)
			}

			now := time.Now()
			body := func(id string) []byte {
				return fmt.Appendf(nil, `{"id":%q,"type":"stock.sold_out","queue":"sale","at":"2026-12-05T10:00:00Z","data":{}}`, id)
			}
			other := []byte("another-secret-of-the-same-size!!")
			for _, c := range []struct {
				what      string
				body      []byte
				signature string
				status    int
				duplicate bool
			}{
				{"an event signed now", body("e1"), webhook.Sign(secret, now, body("e1")), http.StatusOK, false},
				{"the same event again, signed anew", body("e1"), webhook.Sign(secret, now.Add(time.Second), body("e1")), http.StatusOK, true},
				{"signed four minutes ago", body("e2"), webhook.Sign(secret, now.Add(-4*time.Minute), body("e2")), http.StatusOK, false},
				{"signed with another secret", body("e3"), webhook.Sign(other, now, body("e3")), http.StatusUnauthorized, false},
				{"a body changed after signing", body("e4"), webhook.Sign(secret, now, body("e5")), http.StatusUnauthorized, false},
				{"signed six minutes ago", body("e6"), webhook.Sign(secret, now.Add(-6*time.Minute), body("e6")), http.StatusUnauthorized, false},
				{"signed six minutes ahead", body("e7"), webhook.Sign(secret, now.Add(6*time.Minute), body("e7")), http.StatusUnauthorized, false},
				{"no signature", body("e8"), "", http.StatusBadRequest, false},
			} {
				status, answer := post(t, url, c.body, c.signature)
				if status != c.status || status == http.StatusOK && answer["duplicate"] != c.duplicate {
					t.Errorf("%s: %d %v, want %d (duplicate: %v)", c.what, status, answer, c.status, c.duplicate)
				}
			}
		})
	}
}

// post sends body with the signature header, as waitroom does, and reads
// the JSON answer.
func post(t *testing.T, url string, body []byte, signature string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set(webhook.SignatureHeader, signature)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var answer map[string]any
	json.Unmarshal(raw, &answer)
	return res.StatusCode, answer
}
