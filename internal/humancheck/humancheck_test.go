package humancheck_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/humancheck/localprovider"
)

const secret, siteKey = "0x-local-secret", "1x-local-site-key"

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startProvider runs the local stand-in provider and a Checker of it.
func startProvider(t *testing.T, secretSent string) (*localprovider.Provider, *humancheck.Checker, *clock) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)}
	p := localprovider.New(localprovider.Options{Secret: secret, SiteKey: siteKey, Now: clk.Now})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	c, err := humancheck.New(humancheck.Options{Secret: secretSent, SiteKey: siteKey,
		VerifyURL: srv.URL + localprovider.VerifyPath, ScriptURL: srv.URL + localprovider.ScriptPath})
	if err != nil {
		t.Fatal(err)
	}
	return p, c, clk
}

var addr = netip.MustParseAddr("203.0.113.7")

func TestVerifyAgainstTheLocalProvider(t *testing.T) {
	p, c, clk := startProvider(t, secret)
	ctx := context.Background()
	stale := p.Mint("shop.example", "")
	clk.Add(200 * time.Second)
	fresh := p.Mint("shop.example", "")
	clk.Add(101 * time.Second) // stale is 301 s old, fresh 101 s
	good := p.Mint("shop.example", "")
	entering := p.Mint("shop.example", humancheck.Action)
	elsewhere := p.Mint("shop.example", "login")
	for _, tc := range []struct {
		name  string
		token string
		want  humancheck.Verdict
	}{
		{"a minted token passes", good, humancheck.Passed},
		{"the same token again is spent: asked again", good, humancheck.Retry},
		{"a token past 300 s is expired: asked again", stale, humancheck.Retry},
		{"a token within 300 s passes", fresh, humancheck.Passed},
		{"a token of the waiting page's action passes", entering, humancheck.Passed},
		{"a token minted for another action is refused: a suspect", elsewhere, humancheck.Failed},
		{"a forged token is refused: a suspect", p.Forge(), humancheck.Failed},
		{"garbage is refused", "not-a-token", humancheck.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Verify(ctx, tc.token, addr)
			if err != nil || got != tc.want {
				t.Errorf("Verify = %v, %v; want %v, nil", got, err, tc.want)
			}
		})
	}
}

func TestALongTokenIsRefusedWithoutAsking(t *testing.T) {
	p, c, _ := startProvider(t, secret)
	long := make([]byte, 2049)
	for i := range long {
		long[i] = 'a'
	}
	if got, err := c.Verify(context.Background(), string(long), addr); err != nil || got != humancheck.Failed {
		t.Errorf("Verify = %v, %v; want failed", got, err)
	}
	if p.Asked() != 0 {
		t.Errorf("the provider was asked %d times", p.Asked())
	}
}

// A wrong secret is waitroom's own fault: an error (503 for the caller),
// never a suspect.
func TestAWrongSecretIsAnErrorNotAVerdict(t *testing.T) {
	p, c, _ := startProvider(t, "not-the-secret")
	got, err := c.Verify(context.Background(), p.Mint("shop.example", ""), addr)
	if !errors.Is(err, humancheck.ErrUnavailable) || got == humancheck.Failed || got == humancheck.Passed {
		t.Errorf("Verify = %v, %v; want an ErrUnavailable and no verdict", got, err)
	}
}

// A provider that cannot be asked is an error, within the timeout.
func TestAProviderInTroubleIsAnError(t *testing.T) {
	release := make(chan struct{})
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"5xx", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) }},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>maintenance</html>")) }},
		{"internal-error", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"success":false,"error-codes":["internal-error"]}`))
		}},
		{"no answer", func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm() // read to the end, so that the server sees the client go
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c, err := humancheck.New(humancheck.Options{Secret: secret, SiteKey: siteKey, VerifyURL: srv.URL, Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got, err := c.Verify(context.Background(), "lp.token", addr)
			if !errors.Is(err, humancheck.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Verify = %v, %v; want an error", got, err)
			}
			if got != humancheck.Retry {
				t.Errorf("verdict %v with an error; want the zero verdict (retry)", got)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %v, beyond the timeout", took)
			}
		})
	}
	close(release)
}

// A call lost on the way is made again with the same idempotency key,
// which the provider answers as it did the first: the token passes once,
// not "timeout-or-duplicate".
func TestALostCallIsRetriedWithTheSameKey(t *testing.T) {
	p := localprovider.New(localprovider.Options{Secret: secret, SiteKey: siteKey})
	var calls atomic.Int32
	var keys sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		keys.Store(r.PostForm.Get("idempotency_key"), true)
		if r.PostForm.Get("remoteip") != addr.String() {
			t.Errorf("remoteip %q, want %s", r.PostForm.Get("remoteip"), addr)
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, r)
		if calls.Add(1) == 1 {
			panic(http.ErrAbortHandler) // the provider took it; the answer is lost
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(rec.Body.Bytes())
	}))
	defer srv.Close()
	c, err := humancheck.New(humancheck.Options{Secret: secret, SiteKey: siteKey, VerifyURL: srv.URL + localprovider.VerifyPath})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Verify(context.Background(), p.Mint("shop.example", ""), addr)
	if err != nil || got != humancheck.Passed {
		t.Errorf("Verify = %v, %v; want passed", got, err)
	}
	n := 0
	keys.Range(func(any, any) bool { n++; return true })
	if calls.Load() != 2 || n != 1 {
		t.Errorf("%d calls with %d keys; want 2 calls with one key", calls.Load(), n)
	}
}

func TestNewChecksItsOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    humancheck.Options
	}{
		{"no secret", humancheck.Options{SiteKey: siteKey}},
		{"no site key", humancheck.Options{Secret: secret}},
		{"a relative verify URL", humancheck.Options{Secret: secret, SiteKey: siteKey, VerifyURL: "/siteverify"}},
		{"a script URL not http", humancheck.Options{Secret: secret, SiteKey: siteKey, ScriptURL: "javascript:alert(1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := humancheck.New(tc.o); err == nil {
				t.Error("New took it")
			}
		})
	}
	c, err := humancheck.New(humancheck.Options{Secret: secret, SiteKey: siteKey})
	if err != nil {
		t.Fatal(err)
	}
	if c.ScriptURL() != humancheck.DefaultScriptURL || c.ScriptOrigin() != "https://challenges.cloudflare.com" {
		t.Errorf("script %q, origin %q", c.ScriptURL(), c.ScriptOrigin())
	}
}
