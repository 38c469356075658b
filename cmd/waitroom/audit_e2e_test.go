package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/webhook"
)

// TestAuditLogOfAScriptedSale (issue 56): a sale behind `waitroom proxy`,
// changed through every path there is: the queues file at start, the
// admin API, the CLI (sold-out, restock, codes; a named operator's token
// made, used, refused above its role and revoked), a reload of the queues
// file, and the backend's sold-out and restock (a repeat of which is no
// change). The audit log then holds each change, in order, with its actor
// and its values before and after; the report's "What happened" shows
// them; each went out as admin.changed, signed; and no secret is found in
// any log line, metric, audit entry, webhook, error or page.
func TestAuditLogOfAScriptedSale(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			s := startAuditedSale(t, b)
			s.script(t)
			log := s.auditLog(t)
			wantAuditTrail(t, log)
			s.hooks.waitFor(t, log)
			s.secrets = append(s.secrets, s.codes...)
			s.grepForSecrets(t, log)
		})
	}
}

// auditedSale is a proxy in front of a backend that sends commands, with
// a queues file and a webhook receiver.
type auditedSale struct {
	p       *apptest.Proxied
	queues  string // the queues file
	hooks   *auditHooks
	codes   []string // the access codes the CLI printed
	secrets []string // what must appear nowhere (the other parts add theirs: named tokens, session cookies)
	answers []string // every error body and page read, for the grep
}

const auditQueue = "drop"

func queuesFileWith(rate int) string {
	return fmt.Sprintf(`queues:
  %s:
    paused: true
    ratePerSecond: %d
    lanes:
      - {name: invited, codes: true, share: 0.5}
      - {name: public, share: 0.5}
`, auditQueue, rate)
}

func startAuditedSale(t *testing.T, b apptest.Backend) *auditedSale {
	dir := t.TempDir()
	s := &auditedSale{queues: filepath.Join(dir, "queues.yaml")}
	hookSecret := fmt.Sprintf("hook-secret-%032x", rand.Uint64())
	secretFile := filepath.Join(dir, "webhook-secret")
	for path, text := range map[string]string{s.queues: queuesFileWith(50), secretFile: hookSecret} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.hooks = startAuditHooks(t, []byte(hookSecret))
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := r.URL.Query().Get("cmd"); c != "" {
			w.Header().Set("X-Waitroom-Command", c)
		}
		w.Write([]byte("done"))
	}))
	t.Cleanup(backend.Close)
	s.p = apptest.BootGateway(t, b, backend.URL, []string{"--protect", "POST /buy"}, func(c *app.Config) {
		c.QueuesFile, c.WebhookSecretFile, c.Webhooks = s.queues, secretFile, []string{s.hooks.url}
	})
	s.secrets = []string{s.p.AdminToken, s.p.AuthSecret, hookSecret}
	return s
}

// script changes the sale through each path, in turn.
func (s *auditedSale) script(t *testing.T) {
	p := s.p
	admin := apptest.GatewayPrefix + "/admin/v1"
	if r := p.Do("PATCH", admin+"/queues/"+auditQueue, p.AdminAuth(), map[string]any{"ratePerSecond": 80, "message": "Soon"}); r.Status != 200 {
		t.Fatalf("PATCH: %d %s", r.Status, r.Raw)
	}
	cli := []string{"--addr", p.Base, "--queue", auditQueue, "--admin-token", p.AdminToken}
	var out, errOut bytes.Buffer
	// The night's operator gets a named token of their own (the CLI), and
	// restocks with it.
	admin0 := []string{"--addr", p.Base, "--admin-token", p.AdminToken}
	if err := tokensCmd(append([]string{"create", "--name", "night-ops", "--role", "operator"}, admin0...), env(nil), time.Now(), &out, &errOut); err != nil {
		t.Fatalf("waitroom tokens create: %v\n%s", err, errOut.String())
	}
	opToken := strings.TrimSpace(out.String())
	s.secrets = append(s.secrets, opToken, staff.HashToken(opToken))
	operatorCLI := []string{"--addr", p.Base, "--queue", auditQueue, "--admin-token", opToken}
	for _, c := range [][]string{{"sold-out"}, {"restock", "--units", "7"}} {
		args := append(slices.Clone(cli), c[1:]...)
		if c[0] == "restock" {
			args = append(slices.Clone(operatorCLI), c[1:]...)
		}
		if err := stock(c[0], args, env(nil), &out, &errOut); err != nil {
			t.Fatalf("waitroom %s: %v\n%s", c[0], err, errOut.String())
		}
	}
	// Above the operator's role: refused whole, and logged as refused.
	if r := p.Do("PATCH", admin+"/queues/"+auditQueue, "Bearer "+opToken, map[string]any{"capacity": 5}); r.Status != 403 {
		t.Fatalf("an operator's PATCH of capacity: %d %s, want 403", r.Status, r.Raw)
	} else {
		s.answers = append(s.answers, r.Raw)
	}
	out.Reset()
	if err := codesCmd(append([]string{"generate", "--lane", "invited", "--count", "3"}, cli...), env(nil), &out, &errOut); err != nil {
		t.Fatalf("waitroom codes generate: %v\n%s", err, errOut.String())
	}
	rows, _ := csv.NewReader(&out).ReadAll()
	for _, r := range rows[1:] {
		s.codes = append(s.codes, r[0], strings.ReplaceAll(r[0], "-", ""))
	}
	if err := os.WriteFile(s.queues, []byte(queuesFileWith(60)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Main.ReloadQueues(context.Background()); err != nil {
		t.Fatalf("reload: %v", err)
	}
	for _, cmd := range []string{"sold-out; queue=" + auditQueue, "sold-out; queue=" + auditQueue, "restock; units=5; queue=" + auditQueue} {
		if r := p.Do("GET", "/info?cmd="+url.QueryEscape(cmd), p.As("shopper"), nil); r.Status != 200 {
			t.Fatalf("the backend's %q: %d %s", cmd, r.Status, r.Raw)
		}
	}
	if err := tokensCmd(append([]string{"revoke", "night-ops"}, admin0...), env(nil), time.Now(), &out, &errOut); err != nil {
		t.Fatalf("waitroom tokens revoke: %v\n%s", err, errOut.String())
	}
	// Refused, and their answers read for the grep.
	for _, c := range []struct{ path, auth string }{{admin + "/audit?since=yesterday", p.AdminAuth()}, {admin + "/audit", "Bearer " + p.AdminToken + "x"}} {
		s.answers = append(s.answers, p.Do("GET", c.path, c.auth, nil).Raw)
	}
}

func (s *auditedSale) auditLog(t *testing.T) []staff.Entry {
	r := s.p.Do("GET", apptest.GatewayPrefix+"/admin/v1/audit?queue="+auditQueue, s.p.AdminAuth(), nil)
	var log auditJSON
	if err := json.Unmarshal([]byte(r.Raw), &log); r.Status != 200 || err != nil {
		t.Fatalf("GET /admin/v1/audit: %d %s (%v)", r.Status, r.Raw, err)
	}
	s.answers = append(s.answers, r.Raw)
	return log.Entries
}

type auditJSON struct {
	Entries []staff.Entry `json:"entries"`
}

// wantAuditTrail checks the log holds each change, in order: who, what,
// and the values before and after.
func wantAuditTrail(t *testing.T, log []staff.Entry) {
	t.Helper()
	want := []struct{ who, op, changes string }{
		// Those the file sets, and those the proxy's flags set for new
		// queues (the test's cheapest challenge), apart from the defaults.
		{"queues-file", "load", "ratePerSecond:<nil>→50 paused:<nil>→true challengeCost:<nil>→10 lanes:<nil>→[map[codes:true name:invited share:0.5] map[name:public share:0.5]]"},
		{"admin-token", "PATCH /admin/v1/queues/{queue}", "ratePerSecond:50→80 message:→Soon"},
		{"admin-token", "POST /admin/v1/queues/{queue}/sold-out", "unitsLeft:<nil>→0"},
		{"token night-ops", "POST /admin/v1/queues/{queue}/restock", "unitsLeft:0→7"},
		{"token night-ops", "PATCH /admin/v1/queues/{queue}", ""}, // refused: capacity is the admin's
		{"admin-token", "POST /admin/v1/queues/{queue}/codes", "codes:<nil>→map[added:3 duplicates:0 lanes:map[invited:3]]"},
		{"queues-file", "reload", "ratePerSecond:80→60 message:Soon→"},
		{"backend", "sold-out", "unitsLeft:7→0"},
		{"backend", "restock", "unitsLeft:0→5"},
	}
	var got []string
	for _, e := range log {
		var cs []string
		for _, c := range e.Changes {
			cs = append(cs, fmt.Sprintf("%s:%v→%v", c.Field, c.Before, c.After))
		}
		got = append(got, e.Actor.Label()+" | "+e.Op+" | "+strings.Join(cs, " "))
	}
	var wanted []string
	for _, w := range want {
		wanted = append(wanted, w.who+" | "+w.op+" | "+w.changes)
	}
	if strings.Join(got, "\n") != strings.Join(wanted, "\n") {
		t.Errorf("the audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wanted, "\n"))
	}
	for i, e := range log {
		outcome := staff.Done
		if e.Actor.Kind == staff.KindToken && e.Op == "PATCH /admin/v1/queues/{queue}" {
			outcome = staff.Refused
			if !strings.Contains(e.Detail, "capacity") || e.Actor.Role != staff.Operator {
				t.Errorf("entry %d, the refusal: %+v (naming capacity, the operator's)", i, e)
			}
		}
		if e.Outcome != outcome || e.ID == "" || (i > 0 && e.At.Before(log[i-1].At)) {
			t.Errorf("entry %d: %+v (outcome %s, an ID, in time's order)", i, e, outcome)
		}
		byRequest := e.Actor.Kind == staff.KindAdminToken || e.Actor.Kind == staff.KindToken
		if byRequest != (e.Actor.Addr == "127.0.0.1") {
			t.Errorf("entry %d's address: %+v (an admin request's, and no other's)", i, e.Actor)
		}
	}
}

// grepForSecrets reads everything the sale showed anyone (the log, the
// metrics, the audit log and its report, the admin page, the webhooks,
// the errors) and looks for each secret.
func (s *auditedSale) grepForSecrets(t *testing.T, log []staff.Entry) {
	p := s.p
	get := func(path, auth string) string {
		t.Helper()
		r := p.Do("GET", path, auth, nil)
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
		}
		return r.Raw
	}
	report := get(apptest.GatewayPrefix+"/admin/v1/queues/"+auditQueue+"/report", p.AdminAuth())
	for _, want := range []string{"Who changed what", "queues-file", "backend", "ratePerSecond: 50 → 80", "unitsLeft: 7 → 0"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report's What happened has no %q", want)
		}
	}
	var cliReport, errOut bytes.Buffer
	if err := reportCmd([]string{"--addr", p.Base, "--queue", auditQueue, "--admin-token", p.AdminToken, "--out", "-"}, env(nil), time.Now(), &cliReport, &errOut); err != nil ||
		!strings.Contains(cliReport.String(), "ratePerSecond: 80 → 60") {
		t.Errorf("waitroom report: %v %s; its What happened lacks the reload:\n%s", err, errOut.String(), cliReport.String()[max(0, cliReport.Len()-3000):])
	}
	entries, _ := json.Marshal(log)
	seen := map[string]string{
		"the program's log": p.Logs.String(), "/metrics": get(apptest.GatewayPrefix+"/metrics", ""),
		"the audit log": string(entries), "the report": report, "waitroom report": cliReport.String(),
		"the admin page": get(apptest.GatewayPrefix+"/admin", ""), "the webhooks": s.hooks.bodies(),
		"the answers": strings.Join(s.answers, "\n"),
	}
	for where, text := range seen {
		for _, secret := range s.secrets {
			if secret != "" && strings.Contains(text, secret) {
				t.Errorf("%s shows a secret (%.8s…)", where, secret)
			}
		}
	}
}

// auditHooks is a webhook receiver that verifies each signature and keeps
// the admin.changed events it took.
type auditHooks struct {
	url    string
	secret []byte
	mu     sync.Mutex
	raw    []string
	taken  map[string]events.Event // admin.changed, by id
	news   chan struct{}
}

func startAuditHooks(t *testing.T, secret []byte) *auditHooks {
	h := &auditHooks{secret: secret, taken: map[string]events.Event{}, news: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(webhook.SignatureHeader)
		ts, _ := strconv.ParseInt(strings.TrimPrefix(strings.Split(sig, ",")[0], "t="), 10, 64)
		var e events.Event
		if webhook.Sign(h.secret, time.Unix(ts, 0), body) != sig || json.Unmarshal(body, &e) != nil {
			t.Errorf("a webhook that does not verify: %s %s", sig, body)
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.raw = append(h.raw, string(body))
		if e.Type == events.AdminChanged {
			h.taken[e.ID] = e
		}
		h.mu.Unlock()
		select {
		case h.news <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/hooks"
	return h
}

func (h *auditHooks) bodies() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.raw, "\n")
}

// waitFor waits until each entry of log was taken as admin.changed, its
// data the entry's.
func (h *auditHooks) waitFor(t *testing.T, log []staff.Entry) {
	t.Helper()
	deadline := time.After(apptest.Patience)
	for {
		h.mu.Lock()
		missing := ""
		for _, e := range log {
			ev, ok := h.taken[string(events.AdminChanged)+":"+e.ID]
			if !ok {
				missing = e.ID
				break
			}
			if ev.Queue != e.Queue || ev.Data["op"] != e.Op || !ev.At.Equal(e.At) {
				t.Errorf("admin.changed %+v for the entry %+v", ev, e)
			}
		}
		h.mu.Unlock()
		if missing == "" {
			return
		}
		select {
		case <-h.news:
		case <-deadline:
			t.Fatalf("no admin.changed for entry %s within %v", missing, apptest.Patience)
		}
	}
}
