package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/testenv"
)

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
	cfg.AuthSecret = fmt.Sprintf("secret-%d", rand.Int64())
	cfg.AdminToken = fmt.Sprintf("admin-%d", rand.Int64())
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.DrainDelay = 0 // no load balancer in tests
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
	m := &app.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("boot: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &instance{t: t, m: m, base: "http://" + m.Addr(), secret: cfg.AuthSecret, admin: cfg.AdminToken, prefix: cfg.KeyPrefix}
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

// do sends a request. auth is a full Authorization header value ("" for none).
func (in *instance) do(method, path, auth string, body any, headers ...string) response {
	in.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, in.base+path, rd)
	if err != nil {
		in.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			in.t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
		}
	}
	return r
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

// waitReady polls a user's status until READY and returns the token.
func (in *instance) waitReady(queue, user string) string {
	in.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r := in.do("GET", "/api/v1/queues/"+queue+"/entries/me", in.as(user), nil)
		if r.str("status") == "READY" {
			return r.str("token")
		}
		time.Sleep(20 * time.Millisecond)
	}
	in.t.Fatalf("%s never became READY in %s", user, queue)
	return ""
}
