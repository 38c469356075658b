package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/suspect"
)

// shadowFake is the embedded line with a shadow line of its own making:
// the places given, listed in order and cleared by ticket, and the
// shadow counts in the stats. The routes' own work (parsing, errors, the
// answer's shape, the log) is tested here; the stores' shadow line is
// tested by the conformance suite.
type shadowFake struct {
	*memstore.Store
	mu      sync.Mutex
	shadow  []suspect.Place
	cleared int64
	limit   int // the last limit Suspects was asked for
}

func (f *shadowFake) Suspects(ctx context.Context, q string, limit int) ([]suspect.Place, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limit = limit
	return append([]suspect.Place(nil), f.shadow[:min(limit, len(f.shadow))]...), nil
}

func (f *shadowFake) ClearSuspect(ctx context.Context, q string, ticket int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q != "drop" {
		return false, nil
	}
	for i, p := range f.shadow {
		if p.Ticket == ticket {
			f.shadow = append(f.shadow[:i], f.shadow[i+1:]...)
			f.cleared++
			return true, nil
		}
	}
	return false, nil
}

func (f *shadowFake) Stats(ctx context.Context, q string) (queue.Stats, error) {
	st, err := f.Store.Stats(ctx, q)
	f.mu.Lock()
	defer f.mu.Unlock()
	st.ShadowLength, st.ClearedTotal = int64(len(f.shadow)), f.cleared
	st.ShadowEnteredTotal = st.ShadowLength + st.ClearedTotal
	return st, err
}

// suspectsAPI serves the admin routes on a fake holding two suspects in
// queue "drop" (another queue's shadow line is empty), and returns what
// the server logs.
func suspectsAPI(t *testing.T) (*httpapi.Server, *shadowFake, *bytes.Buffer) {
	t.Helper()
	joined := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	f := &shadowFake{Store: memstore.New(nil), shadow: []suspect.Place{
		{Ticket: 1, Behind: 40, Joined: joined, Mark: suspect.Mark{Signals: []string{"address_range"}, Address: "a1b2c3"}},
		{Ticket: 2, Behind: 41, Joined: joined.Add(time.Second), Mark: suspect.Mark{Signals: []string{"edge_score", "poll_rate"}, Address: "d4e5f6"}},
	}}
	t.Cleanup(func() { f.Close() })
	line := signals.New()
	svc, op := queue.NewService(f, 0, line), operate.New(f, line)
	if err := op.PutConfig(context.Background(), "drop", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	api := httpapi.New(httpapi.Options{Queue: svc, Operate: op, AdminToken: "t", Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	return api, f, &logs
}

// adminCall sends one admin request (with the token unless auth is "")
// and returns the status and the decoded JSON answer.
func adminCall(t *testing.T, api *httpapi.Server, method, path, auth string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", method, path, w.Code, w.Body)
	}
	return w.Code, body
}

func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// The list answers the shadow line in its order with the fields the
// contract names, the address only as the place's hash; limit is passed
// on, defaulted and bounded.
func TestListSuspects(t *testing.T) {
	api, f, _ := suspectsAPI(t)
	status, body := adminCall(t, api, "GET", "/admin/v1/queues/drop/suspects", "Bearer t")
	want := map[string]any{"queue": "drop", "shadowLength": 2.0, "suspects": []any{
		map[string]any{"id": "1", "joinedAt": "2026-12-06T09:00:00Z", "signals": []any{"address_range"}, "address": "a1b2c3", "behind": 40.0},
		map[string]any{"id": "2", "joinedAt": "2026-12-06T09:00:01Z", "signals": []any{"edge_score", "poll_rate"}, "address": "d4e5f6", "behind": 41.0},
	}}
	if status != 200 || f.limit != 100 {
		t.Fatalf("%d, limit %d: %v", status, f.limit, body)
	}
	if d := cmp.Diff(want, body); d != "" {
		t.Errorf("the list (-want +got):\n%s", d)
	}
	if status, body := adminCall(t, api, "GET", "/admin/v1/queues/drop/suspects?limit=1", "Bearer t"); status != 200 || f.limit != 1 || len(body["suspects"].([]any)) != 1 || body["shadowLength"] != 2.0 {
		t.Errorf("limit=1: %d, limit %d: %v", status, f.limit, body)
	}
	for _, c := range []struct {
		name, path, auth string
		status           int
		code             string
	}{
		{"limit 0", "/admin/v1/queues/drop/suspects?limit=0", "Bearer t", 400, "invalid_request"},
		{"limit over the most", "/admin/v1/queues/drop/suspects?limit=1001", "Bearer t", 400, "invalid_request"},
		{"limit not a number", "/admin/v1/queues/drop/suspects?limit=ten", "Bearer t", 400, "invalid_request"},
		{"unknown queue", "/admin/v1/queues/nowhere/suspects", "Bearer t", 404, "queue_not_found"},
		{"bad queue name", "/admin/v1/queues/No%20Such/suspects", "Bearer t", 400, "invalid_queue_name"},
		{"no token", "/admin/v1/queues/drop/suspects", "", 401, "admin_unauthorized"},
		{"wrong token", "/admin/v1/queues/drop/suspects", "Bearer x", 401, "admin_unauthorized"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status, body := adminCall(t, api, "GET", c.path, c.auth); status != c.status || errorCode(body) != c.code {
				t.Errorf("%d %v, want %d %s", status, body, c.status, c.code)
			}
		})
	}
}

// Clearing answers what happened and logs the operator's action; an id
// the shadow line does not hold is 404 suspect_not_found, one that is no
// id 400, and an unknown queue 404 queue_not_found.
func TestClearSuspect(t *testing.T) {
	api, f, logs := suspectsAPI(t)
	status, body := adminCall(t, api, "POST", "/admin/v1/queues/drop/suspects/2/clear", "Bearer t")
	want := map[string]any{"queue": "drop", "id": "2", "cleared": true, "length": 0.0, "shadowLength": 1.0, "clearedTotal": 1.0}
	if d := cmp.Diff(want, body); status != 200 || d != "" {
		t.Fatalf("%d (-want +got):\n%s", status, d)
	}
	if len(f.shadow) != 1 || f.shadow[0].Ticket != 1 {
		t.Errorf("the shadow line after clearing 2: %v", f.shadow)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(l, `"suspect cleared"`) {
			json.Unmarshal([]byte(l), &line)
		}
	}
	if line["queue"] != "drop" || line["suspect"] != "2" || line["level"] != "INFO" {
		t.Errorf("the operator's action logged as %v, in:\n%s", line, logs)
	}
	for _, c := range []struct {
		name, path, auth string
		status           int
		code             string
	}{
		{"cleared already", "/admin/v1/queues/drop/suspects/2/clear", "Bearer t", 404, "suspect_not_found"},
		{"never there", "/admin/v1/queues/drop/suspects/99/clear", "Bearer t", 404, "suspect_not_found"},
		{"zero", "/admin/v1/queues/drop/suspects/0/clear", "Bearer t", 400, "invalid_request"},
		{"negative", "/admin/v1/queues/drop/suspects/-1/clear", "Bearer t", 400, "invalid_request"},
		{"leading zero", "/admin/v1/queues/drop/suspects/01/clear", "Bearer t", 400, "invalid_request"},
		{"not a number", "/admin/v1/queues/drop/suspects/abc/clear", "Bearer t", 400, "invalid_request"},
		{"past int64", "/admin/v1/queues/drop/suspects/9999999999999999999/clear", "Bearer t", 400, "invalid_request"},
		{"unknown queue", "/admin/v1/queues/nowhere/suspects/1/clear", "Bearer t", 404, "queue_not_found"},
		{"no token", "/admin/v1/queues/drop/suspects/1/clear", "", 401, "admin_unauthorized"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status, body := adminCall(t, api, "POST", c.path, c.auth); status != c.status || errorCode(body) != c.code {
				t.Errorf("%d %v, want %d %s", status, body, c.status, c.code)
			}
		})
	}
	if len(f.shadow) != 1 {
		t.Errorf("a refused clear changed the shadow line: %v", f.shadow)
	}
}

// The queue's stats carry the shadow line's numbers.
func TestStatsShowTheShadowLine(t *testing.T) {
	api, _, _ := suspectsAPI(t)
	adminCall(t, api, "POST", "/admin/v1/queues/drop/suspects/1/clear", "Bearer t")
	status, body := adminCall(t, api, "GET", "/admin/v1/queues/drop", "Bearer t")
	got := map[string]any{}
	for _, k := range []string{"shadowLength", "shadowEnteredTotal", "shadowAdmittedTotal", "shadowLeftTotal", "clearedTotal"} {
		got[k] = body[k]
	}
	want := map[string]any{"shadowLength": 1.0, "shadowEnteredTotal": 2.0, "shadowAdmittedTotal": 0.0, "shadowLeftTotal": 0.0, "clearedTotal": 1.0}
	if d := cmp.Diff(want, got); status != 200 || d != "" {
		t.Errorf("%d (-want +got):\n%s", status, d)
	}
}
