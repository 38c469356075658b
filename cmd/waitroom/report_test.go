package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/report/reporttest"
)

// rollupsServer stands in for an instance's admin API: it answers the
// rollups route with the known sale as JSON (the shape the route must
// answer: a report.Sale), the audit log with one entry, and /healthz as
// waitroom does, and records the queries it was asked.
func rollupsServer(t *testing.T, token string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	sale, _ := reporttest.Sale("spring-drop")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/healthz": // asked first, without the token
			w.Write([]byte(`{"status":"ok","service":"waitroom"}`))
		case r.Header.Get("Authorization") != "Bearer "+token:
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"admin_unauthorized","message":"admin token missing or wrong"}}`))
		case r.Method == http.MethodGet && r.URL.Path == "/admin/v1/audit" && r.URL.Query().Get("queue") == "spring-drop":
			w.Write([]byte(`{"entries":[{"id":"1","at":"2026-12-04T20:30:00Z","actor":{"kind":"backend"},"queue":"spring-drop",` +
				`"op":"sold-out","outcome":"done","changes":[{"field":"unitsLeft","before":3,"after":0}]}]}`))
		case r.Method != http.MethodGet || r.URL.Path != "/admin/v1/queues/spring-drop/rollups":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"queue_not_found","message":"queue not found"}}`))
		default:
			json.NewEncoder(w).Encode(sale)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

func TestReportCommand(t *testing.T) {
	srv, asked := rollupsServer(t, "s3cret")
	now := reporttest.Start.Add(3 * time.Hour)
	dir := t.TempDir()
	_, truth := reporttest.Sale("spring-drop")
	for _, tt := range []struct {
		name  string
		args  []string
		env   map[string]string
		query string // what the instance was asked
		file  string // where the report went ("": standard output)
		want  []string
	}{
		{"a file, the span as instants", []string{"--queue", "spring-drop", "--since", "2026-12-04T19:00:00Z", "--until", "2026-12-04T21:00:00Z",
			"--out", filepath.Join(dir, "a.html"), "--tz", "UTC", "--admin-token", "s3cret"}, nil,
			"since=2026-12-04T19%3A00%3A00Z&until=2026-12-04T21%3A00%3A00Z", filepath.Join(dir, "a.html"),
			[]string{`<html lang="en">`, "From 2026-12-04 19:00 to 2026-12-04 21:00 (UTC)", truth.EnteredText() + " took a place",
				"<td>backend</td><td>sold-out</td><td>unitsLeft: 3 → 0</td>"}},
		{"standard output, a duration, Korean in Seoul's time", []string{"--queue", "spring-drop", "--since", "4h", "--out", "-", "--lang", "ko", "--tz", "Asia/Seoul"},
			map[string]string{"WAITROOM_ADMIN_TOKEN": "s3cret"},
			"since=2026-12-04T19%3A00%3A00Z&until=2026-12-04T23%3A00%3A00Z", "",
			[]string{`<html lang="ko">`, "2026-12-05 05:33</th><td>품절</td>"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--addr", srv.URL}, tt.args...)
			if err := reportCmd(args, env(tt.env), now, &out, &errOut); err != nil {
				t.Fatalf("report %q: %v\n%s", args, err, errOut.String())
			}
			// The rollups, then who changed what in the same span.
			if got := asked(); len(got) < 2 || !strings.HasSuffix(got[len(got)-2], "/rollups?"+tt.query) || !strings.HasPrefix(got[len(got)-1], "/admin/v1/audit?") {
				t.Errorf("asked %q, want the rollups of %s and the audit log", got, tt.query)
			}
			html := out.String()
			if tt.file != "" {
				if html != "spring-drop: 45 minutes with figures, 5 moments: "+tt.file+"\n" {
					t.Errorf("printed %q", html)
				}
				b, err := os.ReadFile(tt.file)
				if err != nil {
					t.Fatal(err)
				}
				html = string(b)
			}
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("the report lacks %q", w)
				}
			}
		})
	}
}

func TestReportCommandRefused(t *testing.T) {
	srv, _ := rollupsServer(t, "s3cret")
	now := reporttest.Start
	token := []string{"--addr", srv.URL, "--admin-token", "s3cret", "--out", filepath.Join(t.TempDir(), "r.html")}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no queue", token, "--queue is required"},
		{"a wrong token", []string{"--addr", srv.URL, "--admin-token", "wrong", "--queue", "spring-drop"}, "401 admin_unauthorized"},
		{"a queue that does not exist", append(token, "--queue", "nosuch"), "404 queue_not_found"},
		{"a since that is neither", append(token, "--queue", "spring-drop", "--since", "yesterday"), "--since"},
		{"since after until", append(token, "--queue", "spring-drop", "--since", "1h", "--until", "2h"), "is not before --until"},
		{"an unknown zone", append(token, "--queue", "spring-drop", "--tz", "Mars/Olympus"), "--tz"},
		{"a language it is not written in", append(token, "--queue", "spring-drop", "--lang", "ja"), `no language "ja"`},
		{"a stray argument", append(token, "--queue", "spring-drop", "extra"), "unexpected arguments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := reportCmd(tt.args, env(nil), now, &out, &errOut)
			if err == nil || !strings.Contains(err.Error()+errOut.String(), tt.want) {
				t.Errorf("report %q = %v (%s), want an error naming %q", tt.args, err, errOut.String(), tt.want)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q on an error", out.String())
			}
		})
	}
}
