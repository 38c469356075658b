package app_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/humancheck"
)

// The human-check provider's settings: the keys come in a pair, named as
// the flag to give; the URLs must be absolute; Turnstile's by default.
func TestHumanCheckSettings(t *testing.T) {
	noEnv := func(string) string { return "" }
	dir := t.TempDir()
	secret, empty := filepath.Join(dir, "secret"), filepath.Join(dir, "empty")
	if err := os.WriteFile(secret, []byte("0x4AAAAAAA-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	both := []string{"--human-check-secret-file", secret, "--human-check-site-key", "0x4AAAAAAA-site"}
	for _, tc := range []struct {
		name string
		args []string
		want string // "" for none
	}{
		{"none", nil, ""},
		{"both keys", both, ""},
		{"a site key alone", []string{"--human-check-site-key", "k"}, "--human-check-secret-file: required with --human-check-site-key"},
		{"a secret alone", []string{"--human-check-secret-file", secret}, "--human-check-site-key: required with --human-check-secret-file"},
		{"a secret file that is not there", []string{"--human-check-secret-file", filepath.Join(dir, "none"), "--human-check-site-key", "k"}, "--human-check-secret-file: open"},
		{"an empty secret", []string{"--human-check-secret-file", empty, "--human-check-site-key", "k"}, "is empty"},
		{"a relative verify URL", append(both, "--human-check-verify-url", "/siteverify"), "want an absolute http(s) URL"},
		{"another provider", append(both, "--human-check-verify-url", "https://api.hcaptcha.com/siteverify", "--human-check-script-url", "https://js.hcaptcha.com/1/api.js"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := app.Parse(tc.args, noEnv, io.Discard)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			case tc.want == "" && c.HumanCheckVerifyURL == "":
				t.Fatal("no verify URL")
			}
		})
	}
	c, err := app.Parse(both, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.HumanChecker(nil)
	if err != nil || h.SiteKey() != "0x4AAAAAAA-site" || h.ScriptURL() != humancheck.DefaultScriptURL {
		t.Fatalf("%+v, %v", h, err)
	}
}
