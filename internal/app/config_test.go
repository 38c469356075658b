package app_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/web"
)

func TestParse(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	t.Run("defaults derive the seed's rate", func(t *testing.T) {
		c, err := app.Parse(nil, env(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		q, err := c.QueueConfig()
		if err != nil {
			t.Fatal(err)
		}
		if q.RatePerSecond != 100 || q.BatchSize != 10 || q.Interval != 100*time.Millisecond ||
			q.Capacity != 100_000 || q.TokenTTL != 5*time.Minute {
			t.Fatalf("defaults: %+v", q)
		}
		if q.RateDerivation != "40 conns × 0.5 × 1000/200 ms = 100/s" {
			t.Fatalf("derivation %q", q.RateDerivation)
		}
		if q.Adaptive || q.MinRate != 1 || q.MaxRate != 100 || q.TargetLatency != 250*time.Millisecond || q.AbandonAfter != 0 {
			t.Fatalf("adaptive and no-show defaults: %+v", q)
		}
	})
	t.Run("per-queue flags, env twins and help come from queue.Settings", func(t *testing.T) {
		var help strings.Builder
		app.Parse([]string{"--help"}, env(), &help)
		flags := 0
		for _, s := range queue.Settings {
			if s.Flag == "" {
				continue
			}
			flags++
			if h := web.SettingHelp(s.Name); h == "" || !strings.Contains(help.String(), "-"+s.Flag) || !strings.Contains(help.String(), h) {
				t.Errorf("--help lacks --%s with the setting's help %q", s.Flag, h)
			}
			// A value other than the default, through the env twin and
			// through the flag (the rules between settings may refuse the
			// whole config; what was read is read all the same).
			c := queue.DefaultConfig()
			want := map[queue.Kind]string{queue.Number: "3.5", queue.Integer: "777", queue.Duration: "17s", queue.Bool: "true"}[s.Kind]
			if s.Kind == queue.Choice { // the first that is not the default
				want = s.Choices[0]
				if want == s.Format(c) {
					want = s.Choices[1]
				}
			}
			if err := s.Parse(&c, want); err != nil || s.Format(c) == s.Format(queue.DefaultConfig()) {
				t.Fatalf("%s: no other value to set (%q, %v)", s.Name, want, err)
			}
			for _, how := range []struct {
				args []string
				env  []string
			}{{nil, []string{app.EnvName(s.Flag), want}}, {[]string{"--" + s.Flag + "=" + want}, nil}} {
				got, _ := app.Parse(how.args, env(how.env...), io.Discard)
				if v := s.Format(got.Queue); v != s.Format(c) {
					t.Errorf("%v %v: %s is %s, want %s", how.args, how.env, s.Name, v, s.Format(c))
				}
			}
		}
		if flags < 12 {
			t.Fatalf("only %d per-queue flags", flags)
		}
	})
	t.Run("env twin, flag wins", func(t *testing.T) {
		c, err := app.Parse([]string{"--capacity", "7"}, env("WAITROOM_CAPACITY", "5", "WAITROOM_REDIS_URL", "redis://x:1/0"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.Queue.Capacity != 7 || c.RedisURL != "redis://x:1/0" {
			t.Fatalf("capacity %d redis %q", c.Queue.Capacity, c.RedisURL)
		}
	})
	t.Run("secrets: 32 bytes on Redis, anything on the embedded default", func(t *testing.T) {
		long := strings.Repeat("s", 32)
		if _, err := app.Parse([]string{"--redis-url", "redis://x:1/0", "--auth-secret", long, "--admin-token", long}, env(), io.Discard); err != nil {
			t.Fatalf("32-byte secrets refused: %v", err)
		}
		if _, err := app.Parse([]string{"--redis-url", "redis://x:1/0"}, env(), io.Discard); err != nil {
			t.Fatalf("no secrets given (random ones are made): %v", err)
		}
		if _, err := app.Parse([]string{"--auth-secret", "dev", "--admin-token", "dev"}, env(), io.Discard); err != nil {
			t.Fatalf("short secrets on the embedded default: %v", err)
		}
	})
	t.Run("the bot defences' defaults", func(t *testing.T) {
		c, err := app.Parse(nil, env(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := c.QueueConfig()
		if q.Join != "challenge" || q.ChallengeCost != queue.DefaultConfig().ChallengeCost || c.SessionMaxAge != 24*time.Hour ||
			c.AddressEntryBurst != 100 || c.AddressEntryRate != 1 || c.AddressSessionBurst != 100 || c.AddressSessionRate != 1 || c.TrustedProxies != "" {
			t.Fatalf("defaults: %+v %+v", q, c)
		}
	})
	t.Run("new queues follow the backend when asked", func(t *testing.T) {
		c, err := app.Parse([]string{"--adaptive", "--min-rate", "5", "--target-latency", "300ms", "--abandon-after", "2m",
			"--batch", "20"}, env(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := c.QueueConfig()
		if !q.Adaptive || q.MinRate != 5 || q.MaxRate != 200 || q.TargetLatency != 300*time.Millisecond || q.AbandonAfter != 2*time.Minute {
			t.Fatalf("%+v; want the ceiling at 20 per 100 ms = 200/s", q)
		}
	})
	t.Run("derived rate follows the pool", func(t *testing.T) {
		c, err := app.Parse([]string{"--db-pool-size", "20", "--order-latency", "100ms"}, env(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if q, _ := c.QueueConfig(); q.RatePerSecond != 100 {
			t.Fatalf("rate %v, want 20 × 0.5 × 10 = 100", q.RatePerSecond)
		}
	})
	bad := []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--order-pool-share", "1.5"}, nil, "--order-pool-share"},
		{[]string{"--db-pool-size", "0"}, nil, "--db-pool-size"},
		{[]string{"--log-format", "xml"}, nil, "--log-format"},
		{[]string{"--rate", "500"}, nil, "batchSize"}, // 500/s × 100 ms = 50 per tick > batch 10
		{nil, []string{"WAITROOM_CAPACITY", "lots"}, "WAITROOM_CAPACITY"},
		{[]string{"--token-ttl", "0s"}, nil, "tokenTtlSeconds"},
		{[]string{"extra"}, nil, "unexpected arguments"},
		{[]string{"--redis-mode", "ring"}, nil, "--redis-mode"},
		{[]string{"--status-snapshot-age", "-1s"}, nil, "--status-snapshot-age"},
		// On Redis (a real deployment) a short secret stops the start.
		{[]string{"--redis-url", "redis://x:1/0", "--auth-secret", "short"}, nil, "--auth-secret: must be at least 32 bytes"},
		{[]string{"--redis-url", "redis://x:1/0", "--auth-secret", strings.Repeat("s", 31)}, nil, "--auth-secret"},
		{[]string{"--redis-url", "redis://x:1/0", "--admin-token", "admin"}, nil, "--admin-token: must be at least 32 bytes"},
		{nil, []string{"WAITROOM_REDIS_URL", "redis://x:1/0", "WAITROOM_AUTH_SECRET", "short"}, "--auth-secret"},
		{[]string{"--entry-policy", "everyone"}, nil, "entry must be any, challenge, signed or turnstile"},
		{[]string{"--challenge-cost", "5"}, nil, "challengeCost"},
		{[]string{"--session-max-age", "10s"}, nil, "--session-max-age"},
		{[]string{"--trusted-proxies", "10.0.0.0/8,lb.internal"}, nil, "--trusted-proxies"},
		{[]string{"--address-entry-burst", "0"}, nil, "--address-entry-burst"},
		{[]string{"--address-session-rate", "-1"}, nil, "--address-session-rate"},
		{[]string{"--abandon-after", "10s"}, nil, "abandonAfterSeconds"},
		{[]string{"--adaptive", "--max-rate", "500"}, nil, "maxRatePerSecond"},
		{[]string{"--min-rate", "200", "--max-rate", "50"}, nil, "minRatePerSecond"},
		{nil, []string{"WAITROOM_TARGET_LATENCY", "0s"}, "targetLatencyMs"},
	}
	for _, tc := range bad {
		t.Run("refuses "+strings.Join(append(tc.args, tc.env...), " "), func(t *testing.T) {
			_, err := app.Parse(tc.args, env(tc.env...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestParseProxy(t *testing.T) {
	noEnv := func(string) string { return "" }
	key := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(key, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
	notEd := filepath.Join(t.TempDir(), "text.pem")
	os.WriteFile(notEd, []byte("no PEM here"), 0o600)

	t.Run("defaults and lists", func(t *testing.T) {
		c, err := app.ParseProxy([]string{"--upstream", "http://127.0.0.1:3000", "--protect", "POST /checkout",
			"--protect", "POST /drops/{id}/buy queue=drops; PUT /cart", "--protect-session", "GET /checkout"}, noEnv, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.Prefix != "/_waitroom" || c.UpstreamTimeout != 30*time.Second {
			t.Fatalf("defaults: prefix %q, timeout %v", c.Prefix, c.UpstreamTimeout)
		}
		routes, err := c.Routes()
		if err != nil || len(routes) != 4 || routes[1].Queue != "drops" || !routes[2].Consume || routes[3].Consume {
			t.Fatalf("routes %+v, %v", routes, err)
		}
	})
	t.Run("env twins; the command line replaces the env's list", func(t *testing.T) {
		env := func(k string) string {
			return map[string]string{"WAITROOM_UPSTREAM": "https://shop.internal", "WAITROOM_PROTECT": "POST /a;POST /b"}[k]
		}
		c, err := app.ParseProxy(nil, env, io.Discard)
		if err != nil || c.Upstream != "https://shop.internal" || len(c.Protect) != 2 {
			t.Fatalf("from env: %+v, %v", c.Protect, err)
		}
		c, err = app.ParseProxy([]string{"--protect", "POST /c"}, env, io.Discard)
		if err != nil || len(c.Protect) != 1 || c.Protect[0] != "POST /c" {
			t.Fatalf("flag over env: %q, %v", c.Protect, err)
		}
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--upstream"},
		{[]string{"--upstream", "127.0.0.1:3000"}, "--upstream"},
		{[]string{"--upstream", "ftp://shop"}, "--upstream"},
		{[]string{"--upstream", "http://"}, "--upstream"},
		{[]string{"--upstream", "http://shop/?x=1"}, "--upstream"},
		{[]string{"--upstream", "http://%zz"}, "--upstream"},
		{[]string{"--upstream", "http://shop", "--protect", "checkout"}, "--protect"},
		{[]string{"--upstream", "http://shop", "--protect", "POST /a/{b"}, "--protect"},
		{[]string{"--upstream", "http://shop", "--protect", "POST /a queue=bad name"}, "--protect"},
		{[]string{"--upstream", "http://shop", "--protect-session", "GET /x/{y}/{y}"}, "--protect-session"},
		{[]string{"--upstream", "http://shop", "--protect", "POST /a", "--protect-session", "POST /a"}, "--protect"},
		{[]string{"--upstream", "http://shop", "--protect", "POST /{x}/b", "--protect", "POST /a/{y}"}, "conflicts"},
		{[]string{"--upstream", "http://shop", "--protect", "POST /_waitroom/buy"}, "--prefix"},
		{[]string{"--upstream", "http://shop", "--prefix", "/"}, "--prefix"},
		{[]string{"--upstream", "http://shop", "--prefix", "waitroom"}, "--prefix"},
		{[]string{"--upstream", "http://shop", "--upstream-timeout", "0s"}, "--upstream-timeout"},
		{[]string{"--upstream", "http://shop", "--entry-signing-key", "/nonexistent/key.pem"}, "--entry-signing-key"},
		{[]string{"--upstream", "http://shop", "--entry-signing-key", key}, "--entry-signing-key"},
		{[]string{"--upstream", "http://shop", "--entry-signing-key", notEd}, "--entry-signing-key"},
	} {
		t.Run("refuses "+strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := app.ParseProxy(tc.args, noEnv, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
	if _, err := app.Parse([]string{"--upstream", "http://shop"}, noEnv, io.Discard); err == nil {
		t.Error("serve accepted a gateway flag")
	}
}

func TestBadBypassRulesStopTheStart(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		rule, want string
	}{
		{"ip 10.0.0.0/8", `unknown kind "ip"`},
		{"cidr 10.0.0.0/33", `"cidr 10.0.0.0/33": bad CIDR`},
		{"header X-Staff-Key" + staffKey, "missing '='"},
		{"header X-Staff-Key=@/nonexistent/key", "reading the value"},
		{"header X-Staff-Key=", "empty value"},
		{"cidr 10.0.0.0/8 queue=no/slash", "queue=no/slash"},
	} {
		for _, parse := range []struct {
			name string
			run  func([]string, func(string) string, io.Writer) (app.Config, error)
			args []string
		}{{"serve", app.Parse, nil}, {"proxy", app.ParseProxy, []string{"--upstream", "http://127.0.0.1:1"}}} {
			t.Run(parse.name+" "+tc.rule, func(t *testing.T) {
				_, err := parse.run(append(parse.args, "--bypass", "cidr 192.0.2.0/24", "--bypass", tc.rule), noEnv, io.Discard)
				if err == nil || !strings.Contains(err.Error(), "--bypass: ") || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one naming --bypass and %q", err, tc.want)
				}
				if strings.Contains(err.Error(), staffKey) {
					t.Errorf("the error shows the secret: %v", err)
				}
			})
		}
	}
	t.Run("the environment twin", func(t *testing.T) {
		_, err := app.Parse(nil, func(k string) string {
			return map[string]string{"WAITROOM_BYPASS": "cidr 10.0.0.0/8; header X-Staff-Key"}[k]
		}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--bypass") || !strings.Contains(err.Error(), "missing '='") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("good rules, repeated and from the environment", func(t *testing.T) {
		c, err := app.Parse([]string{"--bypass", "cidr 10.0.0.0/8", "--bypass", "header X-Staff-Key=@" + staffKeyFile(t) + " queue=sale"}, noEnv, io.Discard)
		if err != nil || len(c.Bypass) != 2 {
			t.Fatalf("%q, %v", c.Bypass, err)
		}
	})
}

// staffKey is the bypass header's secret in these tests; its file ends in
// a newline, as an editor leaves it.
const staffKey = "staff-0123456789abcdef-key"

func staffKeyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "staff-key")
	if err := os.WriteFile(path, []byte(staffKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Webhooks need a secret, named as the flag to give when missing; the env
// twin takes several receivers separated by commas, and the command line
// replaces them.
func TestWebhookSettings(t *testing.T) {
	noEnv := func(string) string { return "" }
	dir := t.TempDir()
	secret := filepath.Join(dir, "webhook-secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("k", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("0123456789abcde\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // "" for none
	}{
		{"a webhook without a secret", []string{"--webhook", "https://shop.example/hooks"}, "--webhook-secret-file: required with a webhook"},
		{"a secret file that is not there", []string{"--webhook", "https://shop.example/hooks", "--webhook-secret-file", filepath.Join(dir, "none")}, "--webhook-secret-file: open"},
		{"a secret of 15 bytes", []string{"--webhook", "https://shop.example/hooks", "--webhook-secret-file", short}, "holds 15 bytes, want at least 16"},
		{"not a URL over HTTP", []string{"--webhook", "shop.example/hooks", "--webhook-secret-file", secret}, "--webhook: "},
		{"retried for a second", []string{"--webhook-retry-for", "1s"}, "--webhook-retry-for: must be 1m..72h"},
		{"a webhook and its secret", []string{"--webhook", "https://shop.example/hooks", "--webhook-secret-file", secret}, ""},
		{"no webhook, no secret", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := app.Parse(tc.args, noEnv, io.Discard)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	t.Run("the env twin's list, and the command line over it", func(t *testing.T) {
		env := map[string]string{"WAITROOM_WEBHOOK": "https://a.example/h, https://b.example/h;http://10.0.0.5:3000/h",
			"WAITROOM_WEBHOOK_SECRET_FILE": secret}
		c, err := app.Parse(nil, func(k string) string { return env[k] }, io.Discard)
		if err != nil || strings.Join(c.Webhooks, " ") != "https://a.example/h https://b.example/h http://10.0.0.5:3000/h" {
			t.Fatalf("%q, %v", c.Webhooks, err)
		}
		c, err = app.Parse([]string{"--webhook", "https://c.example/h"}, func(k string) string { return env[k] }, io.Discard)
		if err != nil || strings.Join(c.Webhooks, " ") != "https://c.example/h" || c.WebhookRetryFor != time.Hour {
			t.Fatalf("%q retried for %v, %v", c.Webhooks, c.WebhookRetryFor, err)
		}
		if s, err := c.WebhookSecret(); err != nil || string(s) != strings.Repeat("k", 32) {
			t.Fatalf("secret %q, %v: want the file's without its newline", s, err)
		}
	})
}

// --draw-beacon is a drand chain's HTTP base, or nothing.
func TestDrawBeaconSetting(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		name string
		args []string
		want string // "" for none
	}{
		{"none", nil, ""},
		{"a chain's base", []string{"--draw-beacon", "https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"}, ""},
		{"no scheme", []string{"--draw-beacon", "api.drand.sh"}, "--draw-beacon: must be an http:// or https:// URL"},
		{"another scheme", []string{"--draw-beacon", "ftp://drand.example"}, "--draw-beacon: must be an http:// or https:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := app.Parse(tc.args, noEnv, io.Discard)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}
