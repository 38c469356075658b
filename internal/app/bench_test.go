package app_test

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/waitroom/waitroom/internal/apptest"
)

// BenchmarkHTTP measures the hot paths through the real server on real
// Redis, beside the bare JSON endpoint (/healthz) of the same binary, so the
// figures to compare are the ratios within one run:
//
//	scripts/test.sh -run '^$' -bench HTTP -benchtime 5s ./internal/app/
func BenchmarkHTTP(b *testing.B) {
	in := apptest.Boot(b, apptest.Backend{Name: "redis", Redis: true}, nil)
	if r := in.Do("PUT", "/admin/v1/queues/bench", in.AdminAuth(), `{"paused":true,"capacity":10000000}`); r.Status != 200 {
		b.Fatalf("creating the bench queue: %d %s", r.Status, r.Raw)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var users atomic.Int64
	jwts := make([]string, 50_000)
	for i := range jwts {
		jwts[i] = "Bearer " + in.JWT(fmt.Sprintf("bench-%d", i))
	}
	run := func(b *testing.B, method, path string) {
		b.SetParallelism(16) // 16 × GOMAXPROCS concurrent clients, as wrk's connections
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest(method, in.Base+path, nil)
				req.Header.Set("Authorization", jwts[users.Add(1)%int64(len(jwts))])
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Errorf("%s %s: %d", method, path, res.StatusCode)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	}
	b.Run("bare", func(b *testing.B) { run(b, "GET", "/healthz") })
	b.Run("enter", func(b *testing.B) { run(b, "POST", "/api/v1/queues/bench/entries") })
	b.Run("status", func(b *testing.B) { run(b, "GET", "/api/v1/queues/bench/entries/me") })
}
