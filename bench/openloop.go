package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The open-loop generator. A closed-loop client (wrk, one request per
// connection at a time) slows down when the server does, so a stall hides
// itself: the requests that would have arrived during it are never sent.
// Here request i is due at start + i/rate whatever happened before, and its
// latency is counted from that intended time, not from when a connection
// got round to sending it (as wrk2 and vegeta do): a server that falls
// behind shows the whole of its backlog in the tail.

// Request is one request of a load.
type Request struct {
	Method, Path string
	// Auth is the Authorization header's value ("" for none).
	Auth string
	// Header is one more header, "Name: value" ("" for none): the page's
	// X-Waitroom-Ticket.
	Header string
	// To is the index of the server in the load's Bases (0: the first).
	To int
}

// Clients the generator can speak through (OpenLoop.Client).
const (
	// ClientRaw writes HTTP/1.1 requests itself on keep-alive connections
	// and reads only the status, the length and the body: a few µs of CPU
	// per request, so the generator leaves the shared cores to the server.
	ClientRaw = "raw"
	// ClientNetHTTP is net/http's client, for comparison.
	ClientNetHTTP = "net/http"
)

// OpenLoop is a constant-rate load.
type OpenLoop struct {
	// Bases are the servers, "http://host:port"; Request.To picks one.
	Bases []string
	// Rate is requests per second; request i is due at i/Rate seconds.
	Rate float64
	// Duration bounds the schedule: Rate × Duration requests in all.
	Duration time.Duration
	// Conns is the connections (each one request at a time); enough that
	// the server, not the pool, is what a late answer waits for.
	Conns int
	// Client is ClientRaw (default) or ClientNetHTTP.
	Client string
	// Next is request i.
	Next func(i int64) Request
	// Grace is how long after the schedule's end answers are still waited
	// for (default 10 s); requests unanswered then count as timeouts.
	Grace time.Duration
}

// LoadResult is what a load measured. Latencies of an open-loop load are
// from each request's intended send time.
type LoadResult struct {
	Requests int // scheduled
	Answered int // got an HTTP answer (any status)
	OK       int // 2xx
	// ByStatus counts answers by HTTP status; Errors counts requests that
	// got no answer (connection errors), TimedOut those never answered
	// within the grace.
	ByStatus    map[int]int
	Errors      int
	TimedOut    int
	ErrorSample string
	// Offered is the rate asked for; AnsweredRate is answers per second
	// over the time from the first intended send to the last answer.
	Offered, AnsweredRate float64
	Elapsed               time.Duration
	P50, P99, P999, Max   time.Duration
	// LagP99 is the 99th percentile of (actual send − intended send): the
	// generator's own lateness, included in the latencies above.
	LagP99 time.Duration
}

// String is a one-line summary for progress logs.
func (r LoadResult) String() string {
	return fmt.Sprintf("offered %.0f/s answered %.0f/s p50 %s p99 %s p99.9 %s max %s (send lag p99 %s), %d of %d ok, %s",
		r.Offered, r.AnsweredRate, msStr(r.P50), msStr(r.P99), msStr(r.P999), msStr(r.Max), msStr(r.LagP99),
		r.OK, r.Requests, r.statusSummary())
}

func (r LoadResult) statusSummary() string {
	var parts []string
	codes := make([]int, 0, len(r.ByStatus))
	for c := range r.ByStatus {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", r.ByStatus[c], c))
	}
	if r.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d errors", r.Errors))
	}
	if r.TimedOut > 0 {
		parts = append(parts, fmt.Sprintf("%d unanswered", r.TimedOut))
	}
	return strings.Join(parts, ", ")
}

// unanswered stands for the latency of a request that never got an answer:
// above every real one, so it lands in the tail where it belongs.
const unanswered = time.Duration(math.MaxInt64)

func msStr(d time.Duration) string {
	if d == unanswered {
		return "timeout"
	}
	return fmt.Sprintf("%.2f ms", ms(d))
}

// scheduled is when request i of a constant-rate load is due, after the
// start. Computed from i, never accumulated, so no drift builds up.
func scheduled(i int64, rate float64) time.Duration {
	return time.Duration(math.Round(float64(i) * float64(time.Second) / rate))
}

// scheduleCount is how many requests a rate over a duration makes.
func scheduleCount(rate float64, d time.Duration) int64 {
	return int64(math.Floor(rate*d.Seconds() + 1e-9))
}

// sample is one request's timing: latency from its intended send time, and
// how late the generator sent it.
type sample struct {
	latency, lag time.Duration
}

// timing returns a request's sample from its intended send time, the time
// it was really sent, and the time its answer arrived.
func timing(intended, sent, answered time.Time) sample {
	return sample{latency: answered.Sub(intended), lag: max(0, sent.Sub(intended))}
}

// recorder collects samples and statuses; one per worker, merged at the end.
type recorder struct {
	latencies, lags []time.Duration
	byStatus        map[int]int
	errors          int
	errorSample     string
	first, last     time.Time
}

func newRecorder(capacity int) *recorder {
	return &recorder{latencies: make([]time.Duration, 0, capacity), lags: make([]time.Duration, 0, capacity), byStatus: map[int]int{}}
}

// add records an answered request (status > 0) or a failed one (err).
func (r *recorder) add(s sample, status int, err error, answeredAt time.Time) {
	if err != nil {
		r.errors++
		if r.errorSample == "" {
			r.errorSample = err.Error()
		}
		r.latencies = append(r.latencies, unanswered)
		r.lags = append(r.lags, s.lag)
		return
	}
	r.byStatus[status]++
	r.latencies = append(r.latencies, s.latency)
	r.lags = append(r.lags, s.lag)
	if answeredAt.After(r.last) {
		r.last = answeredAt
	}
}

// result merges the recorders' samples into exact percentiles: every
// latency is kept and sorted (a few million at most), so no histogram's
// bucket width blurs the tail. missing requests were never answered.
func result(recs []*recorder, scheduledN int, missing int, start time.Time, offered float64) LoadResult {
	res := LoadResult{Requests: scheduledN, ByStatus: map[int]int{}, Offered: offered, TimedOut: missing}
	var lat, lag []time.Duration
	last := start
	for _, r := range recs {
		lat = append(lat, r.latencies...)
		lag = append(lag, r.lags...)
		for c, n := range r.byStatus {
			res.ByStatus[c] += n
			res.Answered += n
			if c >= 200 && c < 300 {
				res.OK += n
			}
		}
		res.Errors += r.errors
		if res.ErrorSample == "" {
			res.ErrorSample = r.errorSample
		}
		if r.last.After(last) {
			last = r.last
		}
	}
	for range missing {
		lat = append(lat, unanswered)
	}
	slices.Sort(lat)
	slices.Sort(lag)
	res.P50, res.P99, res.P999 = percentile(lat, 50), percentile(lat, 99), percentile(lat, 99.9)
	if len(lat) > 0 {
		res.Max = lat[len(lat)-1]
	}
	res.LagP99 = percentile(lag, 99)
	res.Elapsed = last.Sub(start)
	if res.Elapsed > 0 {
		res.AnsweredRate = float64(res.Answered) / res.Elapsed.Seconds()
	}
	return res
}

// Run sends the load and returns what it measured. Every request is sent,
// late if the connections are busy (the lateness counts in its latency),
// until the schedule ends; what is unanswered Grace after it times out.
func (l OpenLoop) Run(ctx context.Context) (LoadResult, error) {
	n := scheduleCount(l.Rate, l.Duration)
	if n <= 0 || l.Conns <= 0 || l.Next == nil {
		return LoadResult{}, fmt.Errorf("open loop: nothing to do (rate %v, duration %v, conns %d)", l.Rate, l.Duration, l.Conns)
	}
	grace := l.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	newConn, err := clientFor(l.Client, l.Bases, l.Conns)
	if err != nil {
		return LoadResult{}, err
	}
	start := time.Now().Add(20 * time.Millisecond) // every worker ready before the first is due
	hardStop := start.Add(l.Duration + grace)
	ctx, cancel := context.WithDeadline(ctx, hardStop)
	defer cancel()
	var next atomic.Int64
	recs, recorded := onConns(l.Conns, newConn, int(n)/l.Conns+16, func(c conn, rec *recorder) {
		wait := time.NewTimer(time.Hour)
		defer wait.Stop()
		for {
			i := next.Add(1) - 1
			if i >= n || ctx.Err() != nil {
				return
			}
			intended := start.Add(scheduled(i, l.Rate))
			if d := time.Until(intended); d > 0 {
				wait.Reset(d)
				select {
				case <-wait.C:
				case <-ctx.Done():
					return
				}
			}
			req := l.Next(i)
			sent := time.Now()
			status, _, err := c.do(ctx, req)
			if err != nil && ctx.Err() != nil {
				return // the grace ran out: counted as unanswered below
			}
			done := time.Now()
			rec.add(timing(intended, sent, done), status, err, done)
		}
	})
	return result(recs, int(n), int(n)-recorded, start, l.Rate), nil
}

// ClosedLoop is as many requests as Conns connections can carry back to
// back for Duration (as wrk runs): the server's maximum rate, with
// latencies from each actual send. Each connection sends at least one
// request, however late it got going: a loaded machine may start one after
// a short Duration is over, and a load of no request measures nothing.
type ClosedLoop struct {
	Bases    []string
	Duration time.Duration
	// Count, when > 0, ends the load after that many requests (Duration
	// still bounds it).
	Count  int64
	Conns  int
	Client string
	Next   func(i int64) Request
}

// Run sends the load and returns what it measured; Offered is the answered rate.
func (l ClosedLoop) Run(ctx context.Context) (LoadResult, error) {
	newConn, err := clientFor(l.Client, l.Bases, l.Conns)
	if err != nil {
		return LoadResult{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	stop := start.Add(l.Duration)
	var next atomic.Int64
	recs, total := onConns(l.Conns, newConn, 1024, func(c conn, rec *recorder) {
		for first := true; ctx.Err() == nil; first = false {
			sent := time.Now()
			if !first && !sent.Before(stop) {
				return
			}
			i := next.Add(1) - 1
			if l.Count > 0 && i >= l.Count {
				return
			}
			status, _, err := c.do(ctx, l.Next(i))
			done := time.Now()
			rec.add(timing(sent, sent, done), status, err, done)
		}
	})
	res := result(recs, total, 0, start, 0)
	res.Offered = res.AnsweredRate
	return res, nil
}

// onConns runs work on n connections at once, each with a recorder of its
// own, and returns the recorders and the samples they hold.
func onConns(n int, newConn func() conn, capacity int, work func(conn, *recorder)) ([]*recorder, int) {
	recs := make([]*recorder, n)
	var wg sync.WaitGroup
	for w := range n {
		recs[w] = newRecorder(capacity)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newConn()
			defer c.close()
			work(c, recs[w])
		}()
	}
	wg.Wait()
	total := 0
	for _, r := range recs {
		total += len(r.latencies)
	}
	return recs, total
}

// conn is one client connection: one request at a time.
type conn interface {
	// do sends req and returns the answer's status and body (valid until
	// the next call).
	do(ctx context.Context, req Request) (int, []byte, error)
	close()
}

func clientFor(kind string, bases []string, conns int) (func() conn, error) {
	if len(bases) == 0 {
		return nil, errors.New("no server to load")
	}
	switch kind {
	case "", ClientRaw:
		hosts := make([]string, len(bases))
		for i, b := range bases {
			hosts[i] = strings.TrimPrefix(b, "http://")
			if hosts[i] == b || strings.Contains(hosts[i], "/") {
				return nil, fmt.Errorf("raw client: base %q is not http://host:port", b)
			}
		}
		return func() conn { return &rawConn{hosts: hosts, conns: make([]rawConnTo, len(hosts))} }, nil
	case ClientNetHTTP:
		hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns}}
		return func() conn { return &netHTTPConn{bases: bases, hc: hc} }, nil
	}
	return nil, fmt.Errorf("unknown client %q (want %s or %s)", kind, ClientRaw, ClientNetHTTP)
}

// requestTimeout bounds one request, held polls (≤ 25 s) included.
const requestTimeout = 30 * time.Second

// netHTTPConn is a request through net/http's client (connections pooled
// by its Transport).
type netHTTPConn struct {
	bases []string
	hc    *http.Client
	body  bytes.Buffer
}

func (c *netHTTPConn) do(ctx context.Context, r Request) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, c.bases[r.To]+r.Path, nil)
	if err != nil {
		return 0, nil, err
	}
	if r.Auth != "" {
		req.Header.Set("Authorization", r.Auth)
	}
	if name, value, ok := strings.Cut(r.Header, ":"); ok {
		req.Header.Set(name, strings.TrimSpace(value))
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	c.body.Reset()
	if _, err := c.body.ReadFrom(res.Body); err != nil {
		return 0, nil, err
	}
	return res.StatusCode, c.body.Bytes(), nil
}

func (c *netHTTPConn) close() {}

// rawConn is one HTTP/1.1 keep-alive connection to each server, written
// to directly: it reads only what the load needs of the answer (the
// status, the Content-Length or chunks, and the body). No allocation per
// request.
type rawConn struct {
	hosts []string
	conns []rawConnTo
	req   []byte
	body  []byte
}

type rawConnTo struct {
	c net.Conn
	r *bufio.Reader
}

var errMalformed = errors.New("malformed HTTP answer")

func (c *rawConn) do(ctx context.Context, r Request) (int, []byte, error) {
	to := &c.conns[r.To]
	if to.c == nil {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", c.hosts[r.To])
		if err != nil {
			return 0, nil, err
		}
		to.c, to.r = nc, bufio.NewReaderSize(nc, 4096)
	}
	deadline := time.Now().Add(requestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	to.c.SetDeadline(deadline)
	c.req = appendRequest(c.req[:0], r, c.hosts[r.To])
	status, body, keep, err := to.roundTrip(c.req, &c.body)
	if err != nil || !keep {
		to.close()
	}
	return status, body, err
}

// appendRequest appends the HTTP/1.1 bytes of r.
func appendRequest(b []byte, r Request, host string) []byte {
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, r.Path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if r.Auth != "" {
		b = append(b, "Authorization: "...)
		b = append(b, r.Auth...)
		b = append(b, "\r\n"...)
	}
	if r.Header != "" {
		b = append(b, r.Header...)
		b = append(b, "\r\n"...)
	}
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		b = append(b, "Content-Length: 0\r\n"...)
	}
	return append(b, "\r\n"...)
}

func (to *rawConnTo) roundTrip(req []byte, body *[]byte) (status int, b []byte, keep bool, err error) {
	if _, err := to.c.Write(req); err != nil {
		return 0, nil, false, err
	}
	return readResponse(to.r, body)
}

// readResponse reads one HTTP/1.1 answer: its status, its body (into *buf,
// reused) and whether the connection stays open.
func readResponse(r *bufio.Reader, buf *[]byte) (status int, body []byte, keep bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, errMalformed
	}
	status, err = strconv.Atoi(string(line[9:12])) // the compiler spares the conversion's allocation
	if err != nil {
		return 0, nil, false, errMalformed
	}
	length, chunked, keep := -1, false, true
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, err
		}
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return 0, nil, false, errMalformed
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, false, errMalformed
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			keep = !bytes.EqualFold(value, []byte("close"))
		}
	}
	b := (*buf)[:0]
	switch {
	case status == http.StatusNoContent || status == http.StatusNotModified:
		// No body, whatever the headers say (RFC 9112 §6.3).
	case chunked:
		for {
			line, err = r.ReadSlice('\n')
			if err != nil {
				return 0, nil, false, err
			}
			size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
			n, err := strconv.ParseInt(string(size), 16, 32)
			if err != nil || n < 0 {
				return 0, nil, false, errMalformed
			}
			if n == 0 {
				if _, err := r.Discard(2); err != nil { // the last chunk's CRLF (no trailers sent here)
					return 0, nil, false, err
				}
				break
			}
			at := len(b)
			b = slices.Grow(b, int(n))[:at+int(n)]
			if _, err := io.ReadFull(r, b[at:]); err != nil {
				return 0, nil, false, err
			}
			if _, err := r.Discard(2); err != nil {
				return 0, nil, false, err
			}
		}
	case length >= 0:
		b = slices.Grow(b, length)[:length]
		if _, err := io.ReadFull(r, b); err != nil {
			return 0, nil, false, err
		}
	default: // no length: the body runs to the connection's end
		keep = false
		rest, err := io.ReadAll(r)
		if err != nil {
			return 0, nil, false, err
		}
		b = append(b, rest...)
	}
	*buf = b
	return status, b, keep, nil
}

func (c *rawConn) close() {
	for i := range c.conns {
		c.conns[i].close()
	}
}

func (to *rawConnTo) close() {
	if to.c != nil {
		to.c.Close()
		to.c, to.r = nil, nil
	}
}
