package httpapi_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/suspect"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestAuditOfProductsAndSuspects (issue 56): a product put, put again and
// restocked, and a suspect cleared, are each in the audit log with who
// did it and the values before and after (a product's stock tells its
// queue its units left, which is the queue's change too); the log's
// filters select by queue, actor and time, and refuse what they cannot
// read.
func TestAuditOfProductsAndSuspects(t *testing.T) {
	t.Parallel()
	in := apptest.Boot(t, apptest.Backend{Name: "redis", Redis: true}, nil)
	admin := in.AdminAuth()
	q, product := apptest.UniqueID("audited"), apptest.UniqueID("tee")
	start := time.Now()
	do := func(method, path string, body any) {
		t.Helper()
		if r := in.Do(method, path, admin, body); r.Status != 200 {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Raw)
		}
	}
	do("PUT", "/admin/v1/queues/"+q, map[string]any{"paused": true})
	do("PUT", "/admin/v1/products/"+product, map[string]any{"name": "Tee", "stock": 10, "queue": q})
	do("PUT", "/admin/v1/products/"+product, map[string]any{"name": "Tee", "stock": 12, "queue": q})
	do("POST", "/admin/v1/products/"+product+"/restock", map[string]any{"quantity": 3})
	st, err := redisstore.New(testenv.RedisClient(t), in.KeyPrefix).EnterShadow(context.Background(), q, apptest.UniqueID("bot"), suspect.Mark{Signals: []string{"poll_rate"}, Address: "3f9a"})
	if err != nil {
		t.Fatal(err)
	}
	do("POST", "/admin/v1/queues/"+q+"/suspects/"+strconv.FormatInt(st.Ticket, 10)+"/clear", nil)

	ticket := strconv.FormatInt(st.Ticket, 10)
	wantAudit(t, in, "?queue="+q+"&actor=ADMIN", []string{
		"PUT /admin/v1/queues/{queue} | paused:<nil>→true challengeCost:<nil>→10", // the test's new queues' cost is not the default
		"PUT /admin/v1/products/{id} | unitsLeft:<nil>→10",
		"PUT /admin/v1/products/{id} product " + product + " | name:<nil>→Tee stock:<nil>→10 queue:<nil>→" + q,
		"PUT /admin/v1/products/{id} | unitsLeft:10→12",
		"PUT /admin/v1/products/{id} product " + product + " | stock:10→12",
		"POST /admin/v1/products/{id}/restock | unitsLeft:12→15",
		"POST /admin/v1/products/{id}/restock product " + product + " | stock:12→15",
		"POST /admin/v1/queues/{queue}/suspects/{id}/clear | suspect:" + ticket + "→cleared",
	})
	wantAudit(t, in, "?queue="+q+"&limit=1", []string{"POST /admin/v1/queues/{queue}/suspects/{id}/clear | suspect:" + ticket + "→cleared"})
	wantAudit(t, in, "?queue="+q+"&actor=backend", nil)
	wantAudit(t, in, "?queue="+q+"&until="+start.UTC().Format(time.RFC3339Nano), nil)
	wantAudit(t, in, "?queue="+q+"&since="+time.Now().Add(time.Minute).UTC().Format(time.RFC3339), nil)
	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "since=yesterday", "until=2026-13-01T00:00:00Z",
		"since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z", "actor=" + strings.Repeat("a", 201)} {
		if r := in.Do("GET", "/admin/v1/audit?"+bad, admin, nil); r.Status != 400 || !strings.Contains(r.Raw, `"invalid_request"`) {
			t.Errorf("GET /admin/v1/audit?%s: %d %s, want 400 invalid_request", bad, r.Status, r.Raw)
		}
	}
}

// wantAudit reads the audit log with query and checks each entry's
// operation, detail and changes, in order.
func wantAudit(t *testing.T, in *apptest.Instance, query string, want []string) {
	t.Helper()
	r := in.Do("GET", "/admin/v1/audit"+query, in.AdminAuth(), nil)
	entries, ok := r.Body["entries"].([]any)
	if r.Status != 200 || !ok {
		t.Fatalf("GET /admin/v1/audit%s: %d %s", query, r.Status, r.Raw)
	}
	var got []string
	for _, e := range entries {
		e := e.(map[string]any)
		line := e["op"].(string)
		if d, _ := e["detail"].(string); d != "" {
			line += " " + d
		}
		var cs []string
		for _, c := range anyList(e["changes"]) {
			c := c.(map[string]any)
			cs = append(cs, fmt.Sprintf("%v:%v→%v", c["field"], c["before"], c["after"]))
		}
		if a := e["actor"].(map[string]any); a["kind"] != "admin-token" || a["addr"] == "" {
			t.Errorf("an entry's actor: %v", a)
		}
		got = append(got, line+" | "+strings.Join(cs, " "))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("GET /admin/v1/audit%s:\n%s\nwant:\n%s", query, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func anyList(v any) []any { l, _ := v.([]any); return l }
