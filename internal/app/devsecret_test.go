package app_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

func TestDevSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // made by DevSecret
	// Processes starting together agree on one secret.
	secrets := make([]string, 8)
	var wg sync.WaitGroup
	for i := range secrets {
		wg.Go(func() {
			s, err := app.DevSecret(dir)
			if err != nil {
				t.Errorf("DevSecret: %v", err)
			}
			secrets[i] = s
		})
	}
	wg.Wait()
	for _, s := range secrets {
		if s != secrets[0] || len(s) != 64 {
			t.Fatalf("secrets %q: want one 64-hex-digit secret", secrets)
		}
	}
	info, err := os.Stat(filepath.Join(dir, app.DevSecretFile))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("the secret's file mode is %v, want 0600", perm)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, app.DevSecretFile+".*")); len(leftovers) > 0 {
		t.Errorf("temp files left behind: %v", leftovers)
	}
	if again, err := app.ReadDevSecret(dir); err != nil || again != secrets[0] {
		t.Errorf("ReadDevSecret = %q, %v; want %q", again, err, secrets[0])
	}
}

// TestEmbeddedKeepsItsSecret: on the embedded default without
// --auth-secret, a user's JWT (and the page's session) still works after a
// restart; with Redis and no --auth-secret nothing is written and the
// secret is random, as before.
func TestEmbeddedKeepsItsSecret(t *testing.T) {
	dir := t.TempDir()
	noSecret := func(c *app.Config) { c.AuthSecret = ""; c.DataDir = dir }
	first := apptest.Boot(t, apptest.Backend{Name: "embedded"}, noSecret)
	secret, err := app.ReadDevSecret(dir)
	if err != nil {
		t.Fatalf("no dev secret after the first start: %v", err)
	}
	jwt := "Bearer " + app.SignUserJWT(secret, "", "", "carol", time.Hour)
	if r := first.Do("POST", "/api/v1/queues/default/entries", jwt, nil); r.Status != 200 {
		t.Fatalf("enter with a JWT signed by the dev secret: %d %s", r.Status, r.Raw)
	}
	page := first.Do("GET", "/", "", nil)
	cookie := strings.Split(page.Header.Get("Set-Cookie"), ";")[0]
	if err := first.Main.Close(); err != nil {
		t.Fatal(err)
	}

	second := apptest.Boot(t, apptest.Backend{Name: "embedded"}, noSecret)
	if r := second.Do("GET", "/api/v1/queues/default/entries/me", jwt, nil); r.Status != 200 {
		t.Errorf("the JWT after a restart: %d %s", r.Status, r.Raw)
	}
	if r := second.Do("GET", "/api/v1/queues/default/entries/me", "", nil, "Cookie", cookie); r.Status != 200 {
		t.Errorf("the session cookie after a restart: %d %s", r.Status, r.Raw)
	}

	t.Run("with Redis", func(t *testing.T) {
		dir := t.TempDir()
		in := apptest.Boot(t, apptest.Backend{Name: "redis", Redis: true}, func(c *app.Config) { c.AuthSecret = ""; c.DataDir = dir })
		if _, err := os.Stat(filepath.Join(dir, app.DevSecretFile)); !os.IsNotExist(err) {
			t.Errorf("a Redis instance wrote a dev secret: %v", err)
		}
		if r := in.Do("GET", "/api/v1/queues/default/entries/me", jwt, nil); r.Status != 401 {
			t.Errorf("a JWT of the dev secret on a Redis instance with a random one: %d", r.Status)
		}
	})
}

// TestBanner: the embedded default's start banner hands out a JWT that
// works, and says how to make more.
func TestBanner(t *testing.T) {
	var out bytes.Buffer
	cfg, err := app.Parse([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m := &app.Main{Config: cfg, Logger: slog.New(slog.DiscardHandler), Stdout: &out, Command: "go run ./cmd/waitroom"}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	banner := out.String()
	t.Logf("banner:\n%s", banner)
	for _, want := range []string{
		"page:        http://" + m.Addr() + "/",
		"admin:       http://" + m.Addr() + "/admin",
		"admin token: " + m.Config.AdminToken,
		"go run ./cmd/waitroom token --user alice --data-dir " + cfg.DataDir,
		filepath.Join(cfg.DataDir, app.DevSecretFile),
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner lacks %q", want)
		}
	}
	// The example runs as printed.
	_, tryIt, ok := strings.Cut(banner, "try it:")
	if !ok {
		t.Fatal("no example in the banner")
	}
	_, auth, _ := strings.Cut(strings.TrimSpace(tryIt), "-H 'Authorization: ")
	auth = strings.TrimSuffix(strings.SplitN(auth, "\n", 2)[0], "'")
	in := &apptest.Instance{T: t, Base: "http://" + m.Addr()}
	if r := in.Do("POST", "/api/v1/queues/default/entries", auth, nil); r.Status != 200 {
		t.Errorf("the banner's example: %d %s", r.Status, r.Raw)
	}
}

// TestGatewayBanner: `waitroom proxy`'s banner names the shop where people
// reach it (issue 49): waitroom's own address when nothing stands in front;
// the public address --entry-issuer names (the gateway's public URL) when
// it names one; and behind a proxy (--trusted-proxies: nginx or Caddy
// asking for decisions) with no address named, that the shop is at the
// proxy's address, never waitroom's own port as the shop.
func TestGatewayBanner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		// want and never are read with "ADDR" as the instance's address.
		want  []string
		never []string
	}{
		{"in front", nil,
			[]string{"  shop:        http://ADDR/\n", "  line:        http://ADDR/_waitroom/\n", "  admin:       http://ADDR/_waitroom/admin (token "},
			[]string{"proxy"}},
		{"public URL named", []string{"--trusted-proxies", "127.0.0.1", "--entry-issuer", "https://shop.example.com/_waitroom"},
			[]string{"  shop:        https://shop.example.com/   (its public address, from --entry-issuer)\n",
				"  line:        https://shop.example.com/_waitroom/\n", "  admin:       http://ADDR/_waitroom/admin (token "},
			[]string{"shop:        http://ADDR"}},
		{"under a path, another prefix", []string{"--prefix", "/_line", "--entry-issuer", "https://example.com/shop/_line/"},
			[]string{"  shop:        https://example.com/shop/   (its public address, from --entry-issuer)\n",
				"  line:        https://example.com/shop/_line/\n"},
			nil},
		{"behind a proxy, its address not named", []string{"--trusted-proxies", "127.0.0.1", "--entry-issuer", "shop-gateway"},
			[]string{"  shop:        behind your proxy: open the shop at your proxy's address, not waitroom's own http://ADDR/\n",
				"(--entry-issuer, the public URL such as https://shop.example.com/_waitroom, would name it here)",
				"  line:        at your proxy's address, under /_waitroom/\n", "  admin:       http://ADDR/_waitroom/admin (token "},
			[]string{"shop:        http://", "line:        http://"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--upstream", "http://127.0.0.1:9"}, tc.args...)
			cfg, err := app.ParseProxy(args, func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			m := &app.Main{Config: cfg, Logger: slog.New(slog.DiscardHandler), Stdout: &out}
			if err := m.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			banner := out.String()
			t.Logf("banner:\n%s", banner)
			for _, want := range tc.want {
				if want = strings.ReplaceAll(want, "ADDR", m.Addr()); !strings.Contains(banner, want) {
					t.Errorf("the banner lacks %q", want)
				}
			}
			for _, never := range tc.never {
				if never = strings.ReplaceAll(never, "ADDR", m.Addr()); strings.Contains(banner, never) {
					t.Errorf("the banner says %q", never)
				}
			}
		})
	}
}

// TestLogDurations: durations are logged as Go writes them, in both formats.
func TestLogDurations(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		logger := app.NewLogger(app.Config{LogFormat: format, LogLevel: "info"}, &buf)
		logger.Info("started", "interval", 100*time.Millisecond, slog.Group("g", "ttl", 5*time.Minute))
		for _, want := range []string{"100ms", "5m0s"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("%s: %q lacks %s", format, buf.String(), want)
			}
		}
		if strings.Contains(buf.String(), "100000000") {
			t.Errorf("%s: a duration in nanoseconds: %q", format, buf.String())
		}
	}
}
