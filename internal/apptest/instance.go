package apptest

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

// Patience is how long a test waits for a condition before it fails: what
// takes a second on a quiet machine may take ten on a loaded CI machine,
// and waiting is polled, so a long bound costs a passing test nothing.
const Patience = time.Minute

// Backend names the stores a test boots the program on.
type Backend struct {
	Name     string // for the subtest's name
	Redis    bool   // real Redis (else the in-process line)
	Postgres bool   // real PostgreSQL (else SQLite)
}

// Backends are the two ways waitroom runs: embedded, and on real servers.
var Backends = []Backend{
	{Name: "embedded"},
	{Name: "redis+postgres", Redis: true, Postgres: true},
}

// Instance is one booted waitroom plus a client that speaks its contract.
// A client of a program started some other way (a built binary, a
// process of the test's own) is an Instance with T, Base and, as its calls
// need them, AuthSecret and AdminToken.
type Instance struct {
	T          testing.TB  // the test its helpers fail (ReportingTo: a subtest)
	Main       *app.Main   // the program (nil for a client only)
	Base       string      // "http://127.0.0.1:port"
	AuthSecret string      // --auth-secret: the key of users' JWTs (JWT, As)
	AdminToken string      // --admin-token (AdminAuth)
	KeyPrefix  string      // Redis key prefix (empty when embedded)
	Logs       *SyncWriter // the program's log (text), when booted here
}

// Boot starts the real program (serve) on :0 on the backend's stores, with
// a fresh data dir, secrets of its own, the cheapest challenge and no drain
// delay; edit may adjust the config before it starts. The program is closed
// when the test ends, and a failing Close fails the test.
// LeastChallengeCost is the least proof of work a queue may ask
// (challengeCost's minimum in queue.Settings), the cost the instances
// here set: an anonymous visitor solves it at once.
var LeastChallengeCost = func() int {
	s, _ := queue.SettingNamed("challengeCost")
	return int(s.Min)
}()

func Boot(t testing.TB, b Backend, edit func(*app.Config)) *Instance {
	t.Helper()
	cfg, err := app.Parse(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return start(t, cfg, b, "wrapp", edit, nil)
}

// start runs cfg as a test's program: on :0 on the backend's stores (keys
// under a unique prefix starting keyPrefix), with a fresh data dir,
// secrets of its own, the cheapest challenge and no drain delay; edit may
// adjust the config before it starts, and clock, when not nil, is its wall
// clock (app.Main.Clock). The program is closed when the test ends, and a
// failing Close fails the test.
func start(t testing.TB, cfg app.Config, b Backend, keyPrefix string, edit func(*app.Config), clock func() time.Time) *Instance {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.AuthSecret = fmt.Sprintf("secret-%032x", rand.Uint64()) // ≥ 32 bytes, as on Redis
	cfg.AdminToken = fmt.Sprintf("admin-%032x", rand.Uint64())
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.DrainDelay = 0 // no load balancer in tests
	// The least work a challenge may ask: tests that take places as
	// anonymous sessions solve it in milliseconds (the default's cost is
	// measured in internal/httpapi's bots_e2e_test.go and docs/security.md).
	cfg.Queue.ChallengeCost = LeastChallengeCost
	if b.Redis {
		cfg.RedisURL = testenv.RedisURL(t)
		cfg.KeyPrefix = fmt.Sprintf("%s%d:", keyPrefix, rand.Int64())
	}
	if b.Postgres {
		cfg.DatabaseURL = testenv.DatabaseURL(t)
	}
	if edit != nil {
		edit(&cfg)
	}
	logs := &SyncWriter{}
	var level slog.Level // info, unless the test asks for debug (every request's access log line)
	level.UnmarshalText([]byte(cfg.LogLevel))
	m := &app.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level})), Stdout: io.Discard, Clock: clock}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("boot: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if p := Panics(logs.String()); p != "" {
			t.Errorf("the program's log has a panic: %s", p)
		}
	})
	return &Instance{T: t, Main: m, Base: "http://" + m.Addr(), AuthSecret: cfg.AuthSecret, AdminToken: cfg.AdminToken, KeyPrefix: cfg.KeyPrefix, Logs: logs}
}

// BootOnPrivateRedis starts a redis-server of the test's own (with extra
// config directives) and boots the program on it, for tests that take
// Redis away or change it under the program.
func BootOnPrivateRedis(t *testing.T, redisArgs ...string) (*Instance, *testenv.RedisServer) {
	t.Helper()
	srv := testenv.StartRedis(t, redisArgs...)
	in := Boot(t, Backend{Name: "private redis"}, func(c *app.Config) {
		c.RedisURL = srv.URL()
		c.KeyPrefix = "wr:"
	})
	return in, srv
}

// JWT returns a valid user JWT for user (signed with AuthSecret, an hour long).
func (in *Instance) JWT(user string) string {
	return identity.New([]byte(in.AuthSecret)).SignJWT(user, time.Hour)
}

// Response is a decoded answer.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any // the JSON object of a JSON answer
	Raw    string         // the body as it came
}

// Do sends a request from the test's goroutine and fails the test if it
// got no answer. auth is a full Authorization header value ("" for none);
// body is as Call's; headers are name, value, ….
func (in *Instance) Do(method, path, auth string, body any, headers ...string) Response {
	in.T.Helper()
	r, err := in.Send(http.DefaultClient, Call{Method: method, Path: path, Auth: auth, Body: body, Headers: headers})
	if err != nil {
		in.T.Fatal(err)
	}
	return r
}

// fireAllConns bounds FireAll's connections: enough for every concurrency
// test here (50 orders on one token at most), and few enough that each one's
// request is written at once.
const fireAllConns = 64

// Call is one request of the contract, for Send and FireAll.
type Call struct {
	Method, Path, Auth string
	Body               any      // nil, a string or []byte sent as is, or a value sent as JSON
	Headers            []string // name, value, …
}

// Send makes one request and reports any failure as an error rather than
// failing the test, so it is safe from any goroutine.
func (in *Instance) Send(client *http.Client, c Call) (Response, error) {
	var rd io.Reader
	switch b := c.Body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return Response{}, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(c.Method, in.Base+c.Path, rd)
	if err != nil {
		return Response{}, err
	}
	if c.Auth != "" {
		req.Header.Set("Authorization", c.Auth)
	}
	for i := 0; i+1 < len(c.Headers); i += 2 {
		req.Header.Set(c.Headers[i], c.Headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("%s %s: %w", c.Method, c.Path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return Response{}, fmt.Errorf("%s %s: reading the body: %w", c.Method, c.Path, err)
	}
	r := Response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			return r, fmt.Errorf("%s %s: body is not JSON: %q", c.Method, c.Path, raw)
		}
	}
	return r, nil
}

// FireAll sends all calls at once (released together after every goroutine
// is ready) and returns the answers in call order. It fails the test that
// owns in (in.T), from the caller's goroutine, if any call failed.
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
func (in *Instance) FireAll(calls []Call) []Response {
	in.T.Helper()
	tr := &http.Transport{MaxConnsPerHost: fireAllConns, MaxIdleConnsPerHost: fireAllConns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	out := make([]Response, len(calls))
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
			out[i], errs[i] = in.Send(client, c)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	if err := errors.Join(errs...); err != nil {
		in.T.Fatal(err)
	}
	return out
}

// As is the Authorization header of user: "Bearer " and their JWT.
func (in *Instance) As(user string) string { return "Bearer " + in.JWT(user) }

// AdminAuth is the Authorization header of the admin API.
func (in *Instance) AdminAuth() string { return "Bearer " + in.AdminToken }

// ErrorCode returns the error code of an error answer.
func (r Response) ErrorCode() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// Num reads a numeric field of the body (0 when absent).
func (r Response) Num(field string) float64 {
	v, _ := r.Body[field].(float64)
	return v
}

// Str reads a string field of the body ("" when absent).
func (r Response) Str(field string) string {
	v, _ := r.Body[field].(string)
	return v
}

// Solve fetches a challenge of queue (under prefix: "" for serve, the
// gateway's prefix) and solves it natively: the X-Challenge-Solution an
// anonymous session enters with.
func (in *Instance) Solve(prefix, queue string) string {
	in.T.Helper()
	r := in.Do("GET", prefix+"/api/v1/queues/"+queue+"/challenge", "", nil)
	if r.Status != http.StatusOK {
		in.T.Fatalf("GET challenge of %s: %d %s", queue, r.Status, r.Raw)
	}
	var c challenge.Challenge
	if err := json.Unmarshal([]byte(r.Raw), &c); err != nil {
		in.T.Fatalf("challenge: %v: %s", err, r.Raw)
	}
	p, err := challenge.Solve(context.Background(), c, 2)
	if err != nil {
		in.T.Fatal(err)
	}
	return p.Encode()
}

// EnterAnonymously takes a place in queue for the session cookie
// ("wr_session=…"), solving the challenge the queue asks for.
func (in *Instance) EnterAnonymously(prefix, queue, cookie string) Response {
	in.T.Helper()
	return in.Do("POST", prefix+"/api/v1/queues/"+queue+"/entries", "", nil,
		"Cookie", cookie, "X-Challenge-Solution", in.Solve(prefix, queue))
}

// WaitReady polls user's status in queue until READY (for Patience at
// most) and returns their entry token.
func (in *Instance) WaitReady(queue, user string) string {
	in.T.Helper()
	deadline := time.Now().Add(Patience)
	for time.Now().Before(deadline) {
		r := in.Do("GET", "/api/v1/queues/"+queue+"/entries/me", in.As(user), nil)
		if r.Str("status") == "READY" {
			return r.Str("token")
		}
		time.Sleep(20 * time.Millisecond)
	}
	in.T.Fatalf("%s not READY in %s after %v", user, queue, Patience)
	return ""
}

// Panics returns the first line of log that tells of a panic in the
// program (Go's server's "http: panic serving", a handler's recovered
// "panic: "), or "" when it has none. Every instance a test boots here
// fails its test on one (issue 49: a panic per refused POST went unseen
// because the answer was still right).
func Panics(log string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "http: panic serving") || strings.Contains(line, "panic: ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// SyncWriter is a log any goroutine may write to and the test read at any
// time. Its zero value is empty and ready.
type SyncWriter struct {
	mu sync.Mutex
	w  strings.Builder
}

// Write appends p.
func (s *SyncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// String is everything written so far.
func (s *SyncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// SessionCookie returns a fresh anonymous session cookie ("wr_session=…") as the
// page hands out.
func (in *Instance) SessionCookie() string {
	in.T.Helper()
	_, v := identity.New([]byte(in.AuthSecret)).NewSession()
	return identity.CookieName + "=" + v
}

// ReportingTo returns the instance reporting to t: a subtest must fail
// itself, not the test that booted the instance (FailNow only works on the
// test's own goroutine).
func (in *Instance) ReportingTo(t *testing.T) *Instance {
	c := *in
	c.T = t
	return &c
}
