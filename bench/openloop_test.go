package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSchedule(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rate float64
		i    int64
		want time.Duration
	}{
		{1000, 0, 0},
		{1000, 1, time.Millisecond},
		{1000, 2500, 2500 * time.Millisecond},
		{3, 1, 333333333}, // rounded, not truncated
		{3, 2, 666666667},
		{3, 3, time.Second}, // computed from i, so a third three times is exactly one second
		{25_000, 25_000 * 3600, time.Hour},
	} {
		if got := scheduled(c.i, c.rate); got != c.want {
			t.Errorf("scheduled(%d, %v) = %v, want %v", c.i, c.rate, got, c.want)
		}
	}
	for _, c := range []struct {
		rate float64
		d    time.Duration
		want int64
	}{
		{1000, time.Second, 1000},
		{25_000, 10 * time.Second, 250_000},
		{0.5, 3 * time.Second, 1},
		{3, time.Second, 3},
		{1000, 1500 * time.Microsecond, 1},
	} {
		if got := scheduleCount(c.rate, c.d); got != c.want {
			t.Errorf("scheduleCount(%v, %v) = %d, want %d", c.rate, c.d, got, c.want)
		}
	}
}

// TestLatencyFromIntendedTime: a request sent late because the connections
// were busy carries its wait in its latency (no coordinated omission).
func TestLatencyFromIntendedTime(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name                string
		sentAfter, answered time.Duration
		want                sample
	}{
		{"on time", 0, 2 * time.Millisecond, sample{latency: 2 * time.Millisecond}},
		{"sent 30 ms late", 30 * time.Millisecond, 32 * time.Millisecond, sample{latency: 32 * time.Millisecond, lag: 30 * time.Millisecond}},
		{"clock read early", -time.Microsecond, time.Millisecond, sample{latency: time.Millisecond}},
	} {
		if got := timing(t0, t0.Add(c.sentAfter), t0.Add(c.answered)); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestPercentiles(t *testing.T) {
	t.Parallel()
	// 1..1000 ms shuffled over three recorders, plus one error and two
	// requests never answered: they sort above every answer.
	recs := []*recorder{newRecorder(0), newRecorder(0), newRecorder(0)}
	start := time.Now()
	for i := 1000; i >= 1; i-- {
		d := time.Duration(i) * time.Millisecond
		recs[i%3].add(sample{latency: d, lag: d / 10}, 200+(i%2)*300, nil, start.Add(d))
	}
	recs[0].add(sample{}, 0, fmt.Errorf("connection reset"), time.Time{})
	res := result(recs, 1003, 2, start, 1000)
	want := LoadResult{
		Requests: 1003, Answered: 1000, OK: 500,
		ByStatus: map[int]int{200: 500, 500: 500}, Errors: 1, TimedOut: 2, ErrorSample: "connection reset",
		Offered: 1000, AnsweredRate: 1000, Elapsed: time.Second,
		// Nearest rank over 1003 latencies: the 50th is the 502nd (502 ms),
		// the 99th the 993rd, the 99.9th the 1002nd: the failed ones.
		P50: 502 * time.Millisecond, P99: 993 * time.Millisecond, P999: unanswered, Max: unanswered,
		LagP99: 99 * time.Millisecond,
	}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if s := res.String(); !strings.Contains(s, "p99.9 timeout") || !strings.Contains(s, "500×500") {
		t.Errorf("summary: %s", s)
	}
}

func TestReadResponse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, raw  string
		status     int
		body       string
		keep, fail bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"ok\":true}\n\nNEXT", 200, "{\"ok\":true}\n\n", true, false},
		{"chunked", "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=1\r\n world\r\n0\r\n\r\n", 503, "hello world", true, false},
		{"close", "HTTP/1.1 429 Too Many Requests\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}", 429, "{}", false, false},
		{"to the end", "HTTP/1.0 200 OK\r\n\r\nall of it", 200, "all of it", false, false},
		{"garbage", "SSH-2.0-OpenSSH\r\n\r\n", 0, "", false, true},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 0, "", false, true},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, "", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf []byte
			status, body, keep, err := readResponse(bufio.NewReader(strings.NewReader(c.raw)), &buf)
			if (err != nil) != c.fail {
				t.Fatalf("err %v, want failure %v", err, c.fail)
			}
			if c.fail {
				return
			}
			if status != c.status || string(body) != c.body || keep != c.keep {
				t.Errorf("got %d %q keep %v, want %d %q keep %v", status, body, keep, c.status, c.body, c.keep)
			}
		})
	}
}

func TestAppendRequest(t *testing.T) {
	t.Parallel()
	got := string(appendRequest(nil, Request{Method: "POST", Path: "/a?b=1", Auth: "Bearer x"}, "127.0.0.1:9"))
	want := "POST /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization: Bearer x\r\nContent-Length: 0\r\n\r\n"
	if got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := string(appendRequest(nil, Request{Method: "GET", Path: "/"}, "h")); got != "GET / HTTP/1.1\r\nHost: h\r\n\r\n" {
		t.Errorf("%q", got)
	}
}

// TestLoadsAgainstAServer: both clients, open and closed loop, against a
// real HTTP server: every scheduled request is sent once, answered, and
// counted by status. No timing is asserted: the open loop waits a minute
// for its last answers, the closed loop ends after a count of requests,
// not a time.
func TestLoadsAgainstAServer(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer u" || r.URL.Path != "/p" {
			http.Error(w, "wrong request", 400)
			return
		}
		if r.Method == "POST" {
			w.WriteHeader(http.StatusCreated)
		}
		fmt.Fprintln(w, `{"status":"WAITING"}`)
	}))
	defer srv.Close()
	for _, client := range []string{ClientRaw, ClientNetHTTP} {
		t.Run(client, func(t *testing.T) {
			hits.Store(0)
			next := func(i int64) Request {
				m := "GET"
				if i%2 == 1 {
					m = "POST"
				}
				return Request{Method: m, Path: "/p", Auth: "Bearer u"}
			}
			res, err := OpenLoop{Bases: []string{srv.URL}, Rate: 2000, Duration: 200 * time.Millisecond, Conns: 8, Client: client, Next: next,
				Grace: time.Minute}.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 400 || res.Answered != 400 || res.OK != 400 || hits.Load() != 400 ||
				res.ByStatus[200] != 200 || res.ByStatus[201] != 200 || res.Errors+res.TimedOut != 0 {
				t.Errorf("open loop: %+v, %d hits", res, hits.Load())
			}
			hits.Store(0)
			res, err = ClosedLoop{Bases: []string{srv.URL}, Duration: time.Hour, Count: 100, Conns: 4, Client: client, Next: next}.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 100 || res.Answered != 100 || res.OK != 100 || hits.Load() != 100 {
				t.Errorf("closed loop: %+v, %d hits", res, hits.Load())
			}
			// A load whose time was over before it began (a loaded machine
			// got to it late) still sends a request on each connection.
			hits.Store(0)
			res, err = ClosedLoop{Bases: []string{srv.URL}, Conns: 4, Client: client, Next: next}.Run(context.Background())
			if err != nil || res.OK != 4 || hits.Load() != 4 {
				t.Errorf("closed loop of no time: %+v, %d hits, %v", res, hits.Load(), err)
			}
		})
	}
	if _, err := (OpenLoop{Bases: []string{srv.URL}, Rate: 10, Duration: time.Second, Conns: 1, Client: "carrier-pigeon", Next: func(int64) Request { return Request{} }}).Run(context.Background()); err == nil {
		t.Error("unknown client accepted")
	}
}
