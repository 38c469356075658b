package difffuzz

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/gateway"
)

// Gateway is `waitroom proxy` booted in this process in front of a
// backend, on the embedded line, protecting GatewayRoutes, its default
// queue paused: on a busy night nobody is let straight in, so nothing
// protected may reach the backend without an entry.
type Gateway struct {
	Addr string
	m    *app.Main
	dir  string
	log  panicLog
}

// StartGateway boots the gateway in front of upstream (http://host:port),
// with extra flags of `waitroom proxy` after GatewayRoutes.
func StartGateway(ctx context.Context, upstream string, extra ...string) (*Gateway, error) {
	dir, err := os.MkdirTemp("", "waitroom-difffuzz-")
	if err != nil {
		return nil, err
	}
	g := &Gateway{dir: dir}
	keyFile := filepath.Join(dir, "entry.pem")
	if err := os.WriteFile(keyFile, gateway.GenerateKey(), 0o600); err != nil {
		g.Close()
		return nil, err
	}
	args := append([]string{"--upstream", upstream, "--entry-signing-key", keyFile}, GatewayRoutes...)
	cfg, err := app.ParseProxy(append(args, extra...), func(string) string { return "" }, io.Discard)
	if err != nil {
		g.Close()
		return nil, err
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.AuthSecret = fmt.Sprintf("difffuzz-secret-%032x", rand.Uint64())
	cfg.AdminToken = fmt.Sprintf("difffuzz-admin-%032x", rand.Uint64())
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.DrainDelay = 0
	// Warnings, where Go's server logs a panic in a handler ("http: panic
	// serving"): a run fails on one (issue 49).
	cfg.LogLevel = "warn"
	g.m = &app.Main{Config: cfg, Logger: app.NewLogger(cfg, &g.log), Stdout: io.Discard}
	if err := g.m.Run(ctx); err != nil {
		g.m = nil
		g.Close()
		return nil, err
	}
	g.Addr = g.m.Addr()
	if err := g.pause(ctx, cfg.Prefix, cfg.AdminToken); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// pause pauses the default queue through the admin API.
func (g *Gateway) pause(ctx context.Context, prefix, admin string) error {
	req, err := http.NewRequestWithContext(ctx, "PATCH", "http://"+g.Addr+prefix+"/admin/v1/queues/default", bytes.NewReader([]byte(`{"paused":true}`)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		return fmt.Errorf("pausing the line: %d %s", res.StatusCode, body)
	}
	return nil
}

// Panics is how many panics the gateway has logged so far, and the first.
func (g *Gateway) Panics() (n int, first string) {
	g.log.mu.Lock()
	defer g.log.mu.Unlock()
	return g.log.panics, g.log.first
}

// panicLog counts the log records that tell of a panic, keeping the
// first; the rest of the log (a warning per request the backend's
// commands could not be carried out for, say) is dropped.
type panicLog struct {
	mu     sync.Mutex
	panics int
	first  string
}

func (l *panicLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("panic")) {
		l.mu.Lock()
		if l.panics++; l.first == "" {
			l.first = string(p)
		}
		l.mu.Unlock()
	}
	return len(p), nil
}

// Close stops the gateway and removes its data.
func (g *Gateway) Close() error {
	var err error
	if g.m != nil {
		err = g.m.Close()
	}
	os.RemoveAll(g.dir)
	return err
}
