package httpapi_test

// Entry turnstile through the real program, on both stores, against the
// local stand-in provider (package localprovider: a widget and siteverify
// as Turnstile documents them, not Turnstile).

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/humancheck/localprovider"
)

// withHumanCheck configures an instance to ask p's provider, served at url.
func withHumanCheck(t *testing.T, url string) func(*app.Config) {
	secret := filepath.Join(t.TempDir(), "human-check-secret")
	if err := os.WriteFile(secret, []byte("local-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *app.Config) {
		c.HumanCheckSecretFile, c.HumanCheckSiteKey = secret, "local-site-key"
		c.HumanCheckVerifyURL, c.HumanCheckScriptURL = url+localprovider.VerifyPath, url+localprovider.ScriptPath
	}
}

func TestHumanCheckEntry(t *testing.T) {
	p := localprovider.New(localprovider.Options{Secret: "local-secret", SiteKey: "local-site-key"})
	provider := httptest.NewServer(p)
	t.Cleanup(provider.Close)
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			in := apptest.Boot(t, b, withHumanCheck(t, provider.URL))
			q := apptest.UniqueID("human")
			in.PutQueue(q, map[string]any{"paused": true, "entry": "turnstile", "suspects": "refuse"})
			entries := "/api/v1/queues/" + q + "/entries"
			enter := func(token string) apptest.Response {
				return in.Do("POST", entries, "", nil, "Cookie", in.SessionCookie(), httpapi.HumanCheckTokenHeader, token)
			}

			r := in.Do("POST", entries, "", nil, "Cookie", in.SessionCookie())
			checkErrorAnswer(t, r, http.StatusForbidden, "human_check_required")
			e := r.Body["error"].(map[string]any)
			if e["siteKey"] != "local-site-key" || e["scriptUrl"] != provider.URL+localprovider.ScriptPath {
				t.Errorf("human_check_required names %v and %v", e["siteKey"], e["scriptUrl"])
			}
			token := p.Mint("127.0.0.1", "enter")
			if r := enter(token); r.Status != 200 || r.Str("status") != "WAITING" {
				t.Fatalf("a good token: %d %s", r.Status, r.Raw)
			}
			asked := p.Asked()
			checkErrorAnswer(t, enter(token), http.StatusForbidden, "human_check_required") // replayed by another session
			if p.Asked() != asked {
				t.Errorf("a replayed token was sent to the provider")
			}
			checkErrorAnswer(t, enter(p.Forge()), http.StatusForbidden, "suspected_bot")
			checkErrorAnswer(t, enter(strings.Repeat("x", 4000)), http.StatusForbidden, "suspected_bot")

			// Without JavaScript: the page says it cannot, and takes nothing.
			page := in.Do("GET", "/q/"+q+"/noscript?lang=en", "", nil, "Cookie", in.SessionCookie())
			if !strings.Contains(page.Raw, `data-state="humancheck"`) {
				t.Errorf("the page without JavaScript: %d %.600s", page.Status, page.Raw)
			}
			if st := in.Do("GET", "/admin/v1/queues/"+q, in.AdminAuth(), nil); st.Num("length") != 1 {
				t.Errorf("%v places, want the good token's one", st.Num("length"))
			}
		})
	}
}

// An instance without the provider's keys cannot check: 503 with
// Retry-After, never a place.
func TestHumanCheckWithoutKeys(t *testing.T) {
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	in.PutQueue("human", map[string]any{"paused": true, "entry": "turnstile"})
	r := in.Do("POST", "/api/v1/queues/human/entries", "", nil, "Cookie", in.SessionCookie(), httpapi.HumanCheckTokenHeader, "lp.token")
	checkErrorAnswer(t, r, http.StatusServiceUnavailable, "human_check_unavailable")
	if r.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if st := in.Do("GET", "/admin/v1/queues/human", in.AdminAuth(), nil); st.Num("length") != 0 {
		t.Errorf("%v places taken", st.Num("length"))
	}
}
