package app_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads /metrics into "name{labels}" → value.
func scrape(t *testing.T, in *instance) map[string]float64 {
	t.Helper()
	res, err := http.Get(in.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("/metrics: %d %s", res.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsAddUp runs a scripted crowd through every way in and out of
// the line and checks that /metrics balances exactly:
// entered = waiting + admitted + left; admitted = consumed + active + expired + returned.
func TestMetricsAddUp(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			in := boot(t, b, nil)
			q := "metrics"
			if r := in.do("PUT", "/admin/v1/queues/"+q, in.adminAuth(),
				`{"ratePerSecond":1000,"batchSize":100,"intervalMs":100,"tokenTtlSeconds":5,"paused":true}`); r.status != 200 {
				t.Fatalf("queue: %d %s", r.status, r.raw)
			}
			if r := in.do("PUT", "/admin/v1/products/metrics-tee", in.adminAuth(),
				map[string]any{"name": "tee", "stock": 5, "queue": q}); r.status != 200 {
				t.Fatalf("product: %d %s", r.status, r.raw)
			}
			users := make([]string, 30)
			for i := range users {
				users[i] = fmt.Sprintf("m-user-%d", i)
				if r := in.do("POST", "/api/v1/queues/"+q+"/entries", in.as(users[i]), nil); r.status != 200 {
					t.Fatalf("enter: %d %s", r.status, r.raw)
				}
				in.do("POST", "/api/v1/queues/"+q+"/entries", in.as(users[i]), nil) // re-entry: not a new join
			}
			for _, u := range users[25:] { // 5 leave the line
				if r := in.do("DELETE", "/api/v1/queues/"+q+"/entries/me", in.as(u), nil); r.status != 204 {
					t.Fatalf("leave: %d", r.status)
				}
			}
			in.do("PATCH", "/admin/v1/queues/"+q, in.adminAuth(), `{"paused":false}`)
			tokens := map[string]string{}
			for _, u := range users[:25] {
				tokens[u] = in.waitReady(q, u)
			}
			var buys []apiCall
			for _, u := range users[:10] { // 10 try to buy 5: 5 created, 5 out of stock
				buys = append(buys, apiCall{method: "POST", path: "/api/v1/orders", auth: in.as(u),
					body: map[string]any{"productId": "metrics-tee", "quantity": 1}, headers: []string{"X-Entry-Token", tokens[u]}})
			}
			in.fireAll(buys)
			for _, u := range users[10:13] { // 3 give their token back
				in.do("DELETE", "/api/v1/queues/"+q+"/entries/me", in.as(u), nil)
			}
			in.do("POST", "/api/v1/queues/"+q+"/entries", "", nil) // one unauthenticated rejection

			series := func(name string) string { return name + `{queue="` + q + `"}` }
			m := scrape(t, in)
			want := map[string]float64{
				series("waitroom_entered_total"):                    30,
				series("waitroom_left_total"):                       5,
				series("waitroom_admitted_total"):                   25,
				series("waitroom_queue_length"):                     0,
				series("waitroom_tokens_consumed_total"):            5,
				series("waitroom_tokens_returned_total"):            3,
				`waitroom_orders_total{result="created"}`:           5,
				`waitroom_orders_total{result="out_of_stock"}`:      5,
				`waitroom_rejected_total{reason="out_of_stock"}`:    5,
				`waitroom_rejected_total{reason="unauthenticated"}`: 1,
				`waitroom_store_up`:                                 1,
				series("waitroom_tokens_cap"):                       0,
				`waitroom_status_held`:                              0,
			}
			for k, v := range want {
				if got, ok := m[k]; !ok || got != v {
					t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
				}
			}
			balance := func(when string, m map[string]float64) {
				t.Helper()
				entered, waiting, admitted, left := m[series("waitroom_entered_total")], m[series("waitroom_queue_length")],
					m[series("waitroom_admitted_total")], m[series("waitroom_left_total")]
				consumed, active, expired, returned := m[series("waitroom_tokens_consumed_total")], m[series("waitroom_tokens_active")],
					m[series("waitroom_tokens_expired_total")], m[series("waitroom_tokens_returned_total")]
				if entered != waiting+admitted+left {
					t.Errorf("%s: entered %v ≠ waiting %v + admitted %v + left %v", when, entered, waiting, admitted, left)
				}
				if admitted != consumed+active+expired+returned {
					t.Errorf("%s: admitted %v ≠ consumed %v + active %v + expired %v + returned %v", when, admitted, consumed, active, expired, returned)
				}
			}
			balance("before expiry", m)
			if m[series("waitroom_tokens_active")] != 17 {
				t.Errorf("active tokens %v, want 17 (25 admitted − 5 consumed − 3 returned)", m[series("waitroom_tokens_active")])
			}
			// The 5 s tokens run out (5 s, so that a loaded machine still
			// sees all 25 READY before any expires).
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				m = scrape(t, in)
				if m[series("waitroom_tokens_active")] == 0 || time.Now().After(deadline) {
					break
				}
			}
			balance("after expiry", m)
			if m[series("waitroom_tokens_expired_total")] != 17 || m[series("waitroom_tokens_active")] != 0 {
				t.Errorf("after the TTL: expired %v active %v, want 17 and 0",
					m[series("waitroom_tokens_expired_total")], m[series("waitroom_tokens_active")])
			}
			if m[`waitroom_http_request_duration_seconds_count{code="200",route="POST /api/v1/queues/{queue}/entries"}`] < 60 {
				t.Errorf("HTTP histogram did not count the 60 enters: %v", m)
			}
			for k := range m {
				if strings.Contains(k, "m-user-") {
					t.Fatalf("a user id leaked into a label: %s", k)
				}
			}
		})
	}
}
