package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestSaleMeasuredEndToEnd is issue 38's scenario: 200 users take a place
// in a paused line, 20 of them leave, 10 never come back; after the
// no-show wait the line resumes, the 170 present are let in and 150 of
// them buy, the other 20 let their entries expire. /metrics then reads
// each funnel counter exactly (entered 200, left 20, skipped 10, admitted
// 170, entries used 150, orders placed 150, entries expired 20), and so
// do the store's per-minute rows (GET …/rollups); the mean time in line
// /metrics observed is within one tick of what the users lived, as the
// outside can pin it: each enter's request, the last poll that found them
// waiting, and the held status poll that tells them READY (a held poll
// answers as soon as admission reaches them).
func TestSaleMeasuredEndToEnd(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			q := apptest.UniqueID("sale")
			const tick = 200 * time.Millisecond
			in.PutQueue(q, map[string]any{"paused": true, "ratePerSecond": 50, "batchSize": 10, "intervalMs": tick.Milliseconds(),
				"abandonAfterSeconds": 15, "tokenTtlSeconds": 30, "admitPerUnit": 0})
			product := apptest.UniqueID("sale-tee")
			if r := in.Do("PUT", "/admin/v1/products/"+product, in.AdminAuth(), map[string]any{"name": "tee", "stock": 1000, "queue": q}); r.Status != 200 {
				t.Fatalf("product: %d %s", r.Status, r.Raw)
			}
			rollups := func() map[string]any {
				r := in.Do("GET", "/admin/v1/queues/"+q+"/rollups?since="+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), in.AdminAuth(), nil)
				if r.Status != 200 {
					t.Fatalf("rollups: %d %s", r.Status, r.Raw)
				}
				return r.Body
			}
			// Counting starts at the line's first reading: wait for it.
			eventually(t, apptest.Patience, "the queue's first row", func() bool { m, _ := rollups()["minutes"].([]any); return len(m) > 0 })

			users := make([]string, 200)         // the no-shows first, where admission judges them
			entered := map[string][2]time.Time{} // the enter's request: sent, answered
			for i := range users {
				users[i] = fmt.Sprintf("sale-%03d", i)
				before := time.Now()
				if r := in.Do("POST", entriesPath(q), in.As(users[i]), nil); r.Status != 200 {
					t.Fatalf("enter: %d %s", r.Status, r.Raw)
				}
				entered[users[i]] = [2]time.Time{before, time.Now()}
			}
			noShows, leavers, present := users[:10], users[180:], users[10:180]
			for _, u := range leavers {
				if r := in.Do("DELETE", mePath(q), in.As(u), nil); r.Status != 204 {
					t.Fatalf("leave: %d %s", r.Status, r.Raw)
				}
			}
			// The present ask every 2 s (as the page does) through the
			// no-show wait (TestNoShowsSkipped: up to 1.5 × 15 s).
			for start := time.Now(); time.Since(start) < 25*time.Second; time.Sleep(2 * time.Second) {
				var calls []apptest.Call
				for _, u := range present {
					calls = append(calls, apptest.Call{Method: "GET", Path: mePath(q), Auth: in.As(u)})
				}
				for i, r := range in.FireAll(calls) {
					if r.Str("status") != "WAITING" {
						t.Fatalf("%s while paused: %d %s", present[i], r.Status, r.Raw)
					}
				}
			}
			resumed := time.Now() // nobody was let in before this
			in.PatchQueue(q, map[string]any{"paused": false})
			ready := readyTimes(t, in, q, present)

			var buys []apptest.Call
			for _, u := range present[:150] {
				buys = append(buys, apptest.Call{Method: "POST", Path: "/api/v1/orders", Auth: in.As(u),
					Body: map[string]any{"productId": product, "quantity": 1}, Headers: []string{"X-Entry-Token", ready[u].token}})
			}
			for i, r := range in.FireAll(buys) {
				// 150 at once may outwait the Redis client's fail-fast
				// timeouts on loaded cores: a 503 with Retry-After keeps the
				// token, and the buyer tries again, as a client does.
				for try := 0; r.Status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") != "" && try < 5; try++ {
					time.Sleep(200 * time.Millisecond)
					r = apptest.Shop{Instance: in}.DoCall(buys[i])
				}
				if r.Status != 201 {
					t.Fatalf("order of %s: %d %s", present[i], r.Status, r.Raw)
				}
			}

			series := func(name string) string { return name + `{queue="` + q + `"}` }
			want := map[string]float64{
				series("waitroom_entered_total"): 200, series("waitroom_left_total"): 20, series("waitroom_abandoned_total"): 10,
				series("waitroom_admitted_total"): 170, series("waitroom_tokens_consumed_total"): 150,
				series("waitroom_orders_placed_total"): 150, series("waitroom_tokens_expired_total"): 20,
				series("waitroom_time_in_line_seconds_count"): 170,
				// All 200 took their place in a paused line, told the wait
				// was not known (no range): every one admitted is scored
				// "unknown", and the ratio, of the scored only, counts none.
				`waitroom_estimate_covered_total{outcome="unknown",queue="` + q + `"}`: 170, series("waitroom_estimate_ratio_count"): 0,
			}
			var m map[string]float64
			eventually(t, 45*time.Second, "the 20 unused entries expired", func() bool {
				m = apptest.Metrics(t, in.Base)
				return m[series("waitroom_tokens_expired_total")] == 20
			})
			for k, v := range want {
				if m[k] != v {
					t.Errorf("%s = %v, want %v", k, m[k], v)
				}
			}
			// The truth as the outside can pin it: each user took their place
			// during their enter's request, and was let in after the resume
			// and the last poll that found them, or anyone ahead of them,
			// waiting was sent (admission goes in line order), and before
			// they, or anyone behind them, was told READY.
			var least, most time.Duration
			after, before := resumed, time.Now()
			for i, u := range present {
				after = maxTime(after, ready[u].waiting)
				least += after.Sub(entered[u][1])
				v := present[len(present)-1-i]
				before = minTime(before, ready[v].at)
				most += before.Sub(entered[v][0])
			}
			lo, hi, measured := least.Seconds()/170, most.Seconds()/170, m[series("waitroom_time_in_line_seconds_sum")]/170
			t.Logf("mean time in line: %.3f s on /metrics; lived between %.3f s and %.3f s", measured, lo, hi)
			if measured < lo-tick.Seconds() || measured > hi+tick.Seconds() {
				t.Errorf("mean time in line %.3f s on /metrics: more than a tick (%v) outside the %.3f–%.3f s lived", measured, tick, lo, hi)
			}
			for _, u := range noShows {
				checkNotInQueue(t, in.Do("GET", mePath(q), in.As(u), nil))
			}
			checkRollups(t, q, rollups)
			// The admin page's report is drawn from the same rows.
			report := in.Do("GET", "/admin/v1/queues/"+q+"/report?lang=en&since="+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), in.AdminAuth(), nil)
			const funnel = "200 took a place, 170 were let in, 150 used their entry and 150 ordered; 20 left the line, 10 were skipped as no-shows, 20 entries expired unused."
			if report.Status != 200 || !strings.Contains(report.Raw, funnel) {
				t.Errorf("the report: %d, want the funnel %q in it", report.Status, funnel)
			}
		})
	}
}

// readied is when a user was told READY, and their token, and when the
// last poll that found them waiting was sent.
type readied struct {
	at, waiting time.Time
	token       string
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// readyTimes holds a status poll for each user until they are READY
// (?waitSeconds=: answered as soon as admission reaches them) and says
// when each was told.
func readyTimes(t *testing.T, in *apptest.Instance, q string, users []string) map[string]readied {
	t.Helper()
	var mu sync.Mutex
	out := map[string]readied{}
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var waiting time.Time
			for deadline := time.Now().Add(apptest.Patience); time.Now().Before(deadline); {
				sent := time.Now()
				r, err := in.Send(http.DefaultClient, apptest.Call{Method: "GET", Path: mePath(q) + "?waitSeconds=10", Auth: in.As(u)})
				if err == nil && r.Str("status") == "READY" {
					mu.Lock()
					out[u] = readied{at: time.Now(), waiting: waiting, token: r.Str("token")}
					mu.Unlock()
					return
				}
				waiting = sent
				if err != nil || r.Str("status") != "WAITING" {
					t.Errorf("%s: %v %s", u, err, r.Raw)
					return
				}
				time.Sleep(50 * time.Millisecond) // answered at once: far from the front yet
			}
			t.Errorf("%s not READY within %v", u, apptest.Patience)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// checkRollups: the store's rows add up to the same funnel once the
// detector's pass has written the last of it, the minutes' time in line
// and estimates' outcomes (issue 54) each count the 170 admitted, the
// ratios those scored and scored apart (not those shown no range: they
// joined a paused line), and the resume is a moment of the sale.
func checkRollups(t *testing.T, q string, rollups func() map[string]any) {
	t.Helper()
	want := map[string]float64{"entered": 200, "left": 20, "skipped": 10, "admitted": 170, "used": 150, "ordered": 150, "expired": 20}
	var got map[string]float64
	var waits, ratios, outcomes, scored float64
	var resumed bool
	ok := func() bool {
		body := rollups()
		got, waits, ratios, outcomes, scored, resumed = map[string]float64{}, 0, 0, 0, 0, false
		minutes, _ := body["minutes"].([]any)
		for _, raw := range minutes {
			min, _ := raw.(map[string]any)
			for k := range want {
				n, _ := min[k].(float64)
				got[k] += n
			}
			coverage, _ := min["estimateCoverage"].(map[string]any)
			for outcome, n := range coverage {
				c, _ := n.(float64)
				outcomes += c
				if outcome != "unknown" {
					scored += c
				}
			}
			for h, sum := range map[string]*float64{"timeInLine": &waits, "estimateRatio": &ratios, "apartEstimateRatio": &ratios} {
				buckets, _ := min[h].([]any)
				for _, b := range buckets {
					c, _ := b.(map[string]any)["count"].(float64)
					*sum += c
				}
			}
		}
		moments, _ := body["moments"].([]any)
		for _, raw := range moments {
			mo, _ := raw.(map[string]any)
			resumed = resumed || mo["kind"] == "queue.resumed"
		}
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return waits == 170 && outcomes == 170 && ratios == scored && resumed
	}
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rows add up to %v, %v waits, %v outcomes, %v ratios of %v scored, resumed %v; want %v, 170, 170, as many as scored, true",
				got, waits, outcomes, ratios, scored, resumed, want)
		}
	}
}
