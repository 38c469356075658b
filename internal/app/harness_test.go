package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/testenv"
)

// patience is how long a test waits for a condition before it fails: what
// takes a second on a quiet machine may take ten on a loaded CI machine,
// and waiting is polled, so a long bound costs a passing test nothing.
const patience = time.Minute

// backend names the stores a test boots the program on.
type backend struct {
	name  string
	redis bool // real Redis (else the in-process line)
	pg    bool // real PostgreSQL (else SQLite)
}

// backends are the two ways waitroom runs: embedded, and on real servers.
var backends = []backend{
	{name: "embedded"},
	{name: "redis+postgres", redis: true, pg: true},
}

// instance is one booted waitroom plus a client that speaks its contract.
type instance struct {
	t      testing.TB
	m      *app.Main
	base   string
	secret string
	admin  string
	prefix string // Redis key prefix (empty when embedded)
	logs   *syncWriter
}

// boot starts the real program on :0. edit may adjust the config.
func boot(t testing.TB, b backend, edit func(*app.Config)) *instance {
	t.Helper()
	cfg, err := app.Parse(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.AuthSecret = fmt.Sprintf("secret-%032x", rand.Uint64()) // ≥ 32 bytes, as on Redis
	cfg.AdminToken = fmt.Sprintf("admin-%032x", rand.Uint64())
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.DrainDelay = 0 // no load balancer in tests
	// The least work a challenge may ask: tests that take places as
	// anonymous sessions solve it in milliseconds (the default's cost is
	// measured in bots_e2e_test.go and docs/security.md).
	cfg.Queue.ChallengeCost = queue.MinChallengeCost
	if b.redis {
		cfg.RedisURL = testenv.RedisURL(t)
		cfg.KeyPrefix = fmt.Sprintf("wrapp%d:", rand.Int64())
	}
	if b.pg {
		cfg.DatabaseURL = testenv.DatabaseURL(t)
	}
	if edit != nil {
		edit(&cfg)
	}
	logs := &syncWriter{w: &strings.Builder{}}
	m := &app.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil)), Stdout: io.Discard}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("boot: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &instance{t: t, m: m, base: "http://" + m.Addr(), secret: cfg.AuthSecret, admin: cfg.AdminToken, prefix: cfg.KeyPrefix, logs: logs}
}

// bootOnPrivateRedis starts a redis-server of the test's own (with extra
// config directives) and boots the program on it, for tests that take
// Redis away or change it under the program.
func bootOnPrivateRedis(t *testing.T, redisArgs ...string) (*instance, *testenv.RedisServer) {
	t.Helper()
	srv := testenv.StartRedis(t, redisArgs...)
	in := boot(t, backend{name: "private redis"}, func(c *app.Config) {
		c.RedisURL = srv.URL()
		c.KeyPrefix = "wr:"
	})
	return in, srv
}

// jwt returns a valid bearer token for user.
func (in *instance) jwt(user string) string {
	return identity.New([]byte(in.secret)).SignJWT(user, time.Hour)
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends a request from the test's goroutine. auth is a full
// Authorization header value ("" for none).
func (in *instance) do(method, path, auth string, body any, headers ...string) response {
	in.t.Helper()
	r, err := in.send(http.DefaultClient, apiCall{method: method, path: path, auth: auth, body: body, headers: headers})
	if err != nil {
		in.t.Fatal(err)
	}
	return r
}

// fireAllConns bounds fireAll's connections: enough for every concurrency
// test here (50 orders on one token at most), and few enough that each one's
// request is written at once.
const fireAllConns = 64

// apiCall is one request of the contract, for send and fireAll.
type apiCall struct {
	method, path, auth string
	body               any // nil, a string or []byte sent as is, or a value sent as JSON
	headers            []string
}

// send makes one request and reports any failure as an error rather than
// failing the test, so it is safe from any goroutine.
func (in *instance) send(client *http.Client, c apiCall) (response, error) {
	var rd io.Reader
	switch b := c.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(c.method, in.base+c.path, rd)
	if err != nil {
		return response{}, err
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	for i := 0; i+1 < len(c.headers); i += 2 {
		req.Header.Set(c.headers[i], c.headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", c.method, c.path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: reading the body: %w", c.method, c.path, err)
	}
	r := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			return r, fmt.Errorf("%s %s: body is not JSON: %q", c.method, c.path, raw)
		}
	}
	return r, nil
}

// fireAll sends all calls at once (released together after every goroutine
// is ready) and returns the answers in call order. It fails the test that
// owns in (in.t), from the caller's goroutine, if any call failed.
//
// Its client opens at most fireAllConns connections and reuses them within
// this call only. A thousand requests on a thousand fresh connections, all
// made by this process on a busy 2-core machine, left some connection with
// no request written for longer than the server's ReadHeaderTimeout (5 s),
// and a pooling client reused across calls kept connections the server had
// closed meanwhile: either way a POST failed with EOF and is not retried
// (TestQueueContract/*/crowd's "EOF on request 296"). The connections are
// closed when the call returns, so none is left for http.Server.Shutdown to
// wait on.
func (in *instance) fireAll(calls []apiCall) []response {
	in.t.Helper()
	tr := &http.Transport{MaxConnsPerHost: fireAllConns, MaxIdleConnsPerHost: fireAllConns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	out := make([]response, len(calls))
	errs := make([]error, len(calls))
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i, c := range calls {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			out[i], errs[i] = in.send(client, c)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	if err := errors.Join(errs...); err != nil {
		in.t.Fatal(err)
	}
	return out
}

// as is shorthand for a user's bearer header.
func (in *instance) as(user string) string { return "Bearer " + in.jwt(user) }

// adminAuth is the admin bearer header.
func (in *instance) adminAuth() string { return "Bearer " + in.admin }

// errorCode returns the error code of an error answer.
func (r response) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// num reads a numeric field.
func (r response) num(field string) float64 {
	v, _ := r.body[field].(float64)
	return v
}

func (r response) str(field string) string {
	v, _ := r.body[field].(string)
	return v
}

// solve fetches a challenge of queue (under prefix: "" for serve, the
// gateway's prefix) and solves it natively: the X-Challenge-Solution an
// anonymous session enters with.
func (in *instance) solve(prefix, queue string) string {
	in.t.Helper()
	r := in.do("GET", prefix+"/api/v1/queues/"+queue+"/challenge", "", nil)
	if r.status != http.StatusOK {
		in.t.Fatalf("GET challenge of %s: %d %s", queue, r.status, r.raw)
	}
	var c challenge.Challenge
	if err := json.Unmarshal([]byte(r.raw), &c); err != nil {
		in.t.Fatalf("challenge: %v: %s", err, r.raw)
	}
	p, err := challenge.Solve(context.Background(), c, 2)
	if err != nil {
		in.t.Fatal(err)
	}
	return p.Encode()
}

// enterAnonymously takes a place in queue for the session cookie
// ("wr_session=…"), solving the challenge the queue asks for.
func (in *instance) enterAnonymously(prefix, queue, cookie string) response {
	in.t.Helper()
	return in.do("POST", prefix+"/api/v1/queues/"+queue+"/entries", "", nil,
		"Cookie", cookie, "X-Challenge-Solution", in.solve(prefix, queue))
}

// waitReady polls a user's status until READY and returns the token.
func (in *instance) waitReady(queue, user string) string {
	in.t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		r := in.do("GET", "/api/v1/queues/"+queue+"/entries/me", in.as(user), nil)
		if r.str("status") == "READY" {
			return r.str("token")
		}
		time.Sleep(20 * time.Millisecond)
	}
	in.t.Fatalf("%s not READY in %s after %v", user, queue, patience)
	return ""
}
