package app

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/waitroom/waitroom/internal/humancheck"
)

// humanCheckFlags registers the human-check provider's settings (entry
// policy turnstile).
func (c *Config) humanCheckFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.HumanCheckSecretFile, "human-check-secret-file", "", "a file holding the human-check provider's secret key (Cloudflare Turnstile's, or any provider's speaking its siteverify protocol: hCaptcha, reCAPTCHA v2; scores such as reCAPTCHA v3's are not read), its trailing newline dropped; with --human-check-site-key it lets queues use entry turnstile; without it such a queue answers 503 human_check_unavailable on this instance")
	fs.StringVar(&c.HumanCheckSiteKey, "human-check-site-key", "", "the provider's public site key, which the waiting page renders the widget with; required with --human-check-secret-file")
	fs.StringVar(&c.HumanCheckVerifyURL, "human-check-verify-url", humancheck.DefaultVerifyURL, "the provider's siteverify endpoint, asked about each token (3 s at most)")
	fs.StringVar(&c.HumanCheckScriptURL, "human-check-script-url", humancheck.DefaultScriptURL, "the provider's widget script, which the waiting page loads only when a line asks for the check; the page's Content-Security-Policy allows its origin in script-src and frame-src")
}

// validateHumanCheck checks the provider's settings: the keys come in a
// pair, and the URLs and the secret file must work.
func (c Config) validateHumanCheck(bad badSetting) {
	if c.HumanCheckSecretFile == "" && c.HumanCheckSiteKey == "" {
		return
	}
	if c.HumanCheckSecretFile == "" {
		bad("human-check-secret-file", "required with --human-check-site-key")
		return
	}
	if c.HumanCheckSiteKey == "" {
		bad("human-check-site-key", "required with --human-check-secret-file: the widget cannot be shown without it")
		return
	}
	if _, err := c.HumanChecker(nil); err != nil {
		bad("human-check-secret-file", "%v", err)
	}
}

// HumanChecker is the human-check provider's client (nil, nil without
// --human-check-secret-file): the secret read from its file now.
func (c Config) HumanChecker(logger *slog.Logger) (*humancheck.Checker, error) {
	if c.HumanCheckSecretFile == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(c.HumanCheckSecretFile)
	if err != nil {
		return nil, err
	}
	secret := string(bytes.TrimRight(raw, "\r\n"))
	if secret == "" {
		return nil, errors.New(c.HumanCheckSecretFile + " is empty")
	}
	h, err := humancheck.New(humancheck.Options{Secret: secret, SiteKey: c.HumanCheckSiteKey,
		VerifyURL: c.HumanCheckVerifyURL, ScriptURL: c.HumanCheckScriptURL, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("%w (--human-check-verify-url, --human-check-script-url)", err)
	}
	return h, nil
}
