// Package humancheck asks a human-check provider whether a token its
// widget handed a browser is good: the siteverify protocol as Cloudflare
// Turnstile documents it (a form POST of secret, response, remoteip and
// idempotency_key; a JSON answer of success and error-codes), which
// hCaptcha and reCAPTCHA speak too. It reads success, error-codes and
// action, never a score: a provider that answers success with a low score
// (reCAPTCHA v3, hCaptcha Enterprise) passes the token, so only checkbox or
// challenge modes (Turnstile, reCAPTCHA v2, hCaptcha) are fit. hostname is
// not checked: waitroom does not know the hostnames it is served under,
// and the provider ties a site key to its own list of them. It owns only
// the protocol: spending a token once across instances is the gate's
// (package gatekeeper, through the store), and what becomes of a refused
// one is the queue's suspects setting.
package humancheck

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Turnstile's documented endpoints: the defaults of --human-check-verify-url
// and --human-check-script-url.
const (
	DefaultVerifyURL = "https://challenges.cloudflare.com/turnstile/v0/siteverify"
	DefaultScriptURL = "https://challenges.cloudflare.com/turnstile/v0/api.js"
)

// Action is what the waiting page renders the widget with (waiting.js);
// a token the provider says was minted for another action came from
// another form of the site, or another site of the key, and is refused.
const Action = "enter"

// DefaultTimeout bounds one Verify, retry included: a person waits for it
// before their place is taken.
const DefaultTimeout = 3 * time.Second

// TokenLifetime is how long a provider's token is good for after its widget
// minted it (Turnstile: 300 s); a spent token is remembered that long.
const TokenLifetime = 300 * time.Second

// maxTokenLen is Turnstile's documented longest token; a longer one is no
// provider's, and is refused without asking.
const maxTokenLen = 2048

// Verdict is what the provider said of a token.
type Verdict int

const (
	// Retry: the token is spent or expired (timeout-or-duplicate): the
	// browser should be asked again. The zero Verdict, so that a caller
	// that ignores an error neither lets anyone in nor marks them.
	Retry Verdict = iota
	// Passed: the provider vouches for the token.
	Passed
	// Failed: the provider refused the token (invalid-input-response and
	// the like): a forged or foreign token, the mark of a likely bot.
	Failed
)

func (v Verdict) String() string {
	switch v {
	case Passed:
		return "passed"
	case Failed:
		return "failed"
	}
	return "retry"
}

// ErrUnavailable: the provider could not be asked, or answered in a way
// that says the fault is not the token's (a timeout, a 5xx, an answer that
// is not its JSON, a secret it does not know). The caller answers 503 and
// Retry-After; nobody is marked for it.
var ErrUnavailable = errors.New("the human-check provider cannot be asked now")

// Options configures a Checker.
type Options struct {
	// Secret is the widget's secret key (--human-check-secret-file).
	Secret string
	// SiteKey is the widget's public key, which the page hands the widget
	// (--human-check-site-key).
	SiteKey string
	// VerifyURL is the provider's siteverify (default DefaultVerifyURL);
	// ScriptURL its widget's script (default DefaultScriptURL).
	VerifyURL, ScriptURL string
	// Client makes the calls (default: one of its own).
	Client *http.Client
	// Timeout bounds one Verify (default DefaultTimeout).
	Timeout time.Duration
	// Logger is told of a provider that refuses waitroom itself (a wrong
	// secret): every Verify fails until an operator fixes it.
	Logger *slog.Logger
}

// Checker asks the provider about tokens; safe for concurrent use.
type Checker struct {
	o            Options
	scriptOrigin string
}

// New checks o and returns its Checker.
func New(o Options) (*Checker, error) {
	if o.Secret == "" {
		return nil, errors.New("humancheck: no secret")
	}
	if o.SiteKey == "" {
		return nil, errors.New("humancheck: no site key (the widget cannot be shown without it)")
	}
	o.VerifyURL = cmpOr(o.VerifyURL, DefaultVerifyURL)
	o.ScriptURL = cmpOr(o.ScriptURL, DefaultScriptURL)
	if _, err := httpURL(o.VerifyURL); err != nil {
		return nil, fmt.Errorf("humancheck: verify URL: %w", err)
	}
	script, err := httpURL(o.ScriptURL)
	if err != nil {
		return nil, fmt.Errorf("humancheck: script URL: %w", err)
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Checker{o: o, scriptOrigin: script.Scheme + "://" + script.Host}, nil
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// httpURL parses an absolute http(s) URL.
func httpURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%q: want an absolute http(s) URL", s)
	}
	return u, nil
}

// SiteKey is the widget's public key.
func (c *Checker) SiteKey() string { return c.o.SiteKey }

// ScriptURL is the widget's script, which the page loads when asked for a
// check.
func (c *Checker) ScriptURL() string { return c.o.ScriptURL }

// ScriptOrigin is the script's origin (scheme://host[:port]): what the
// page's Content-Security-Policy allows in script-src and frame-src; ""
// for no Checker (no provider configured: the page allows nothing more).
func (c *Checker) ScriptOrigin() string {
	if c == nil {
		return ""
	}
	return c.scriptOrigin
}

// answer is siteverify's JSON (the fields waitroom reads).
type answer struct {
	Success    bool     `json:"success"`
	ErrorCodes []string `json:"error-codes"`
	Hostname   string   `json:"hostname"`
	Action     string   `json:"action"`
}

// Verify asks the provider about token, sent from addr (its remoteip; the
// zero Addr sends none). An error (wrapping ErrUnavailable, or ctx's own)
// says only that the provider could not be asked.
func (c *Checker) Verify(ctx context.Context, token string, addr netip.Addr) (Verdict, error) {
	if token == "" || len(token) > maxTokenLen {
		return Failed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	form := url.Values{"secret": {c.o.Secret}, "response": {token}, "idempotency_key": {newUUID()}}
	if addr.IsValid() {
		form.Set("remoteip", addr.Unmap().String())
	}
	a, err := c.ask(ctx, form)
	// The idempotency key makes a second try safe: a provider that took the
	// first answers the second alike instead of timeout-or-duplicate.
	if err != nil && ctx.Err() == nil {
		a, err = c.ask(ctx, form)
	}
	if err != nil {
		return Retry, err
	}
	return c.verdict(a)
}

// newUUID is a random (version 4) UUID: Turnstile's idempotency_key.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// ask makes one siteverify call.
func (c *Checker) ask(ctx context.Context, form url.Values) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.VerifyURL, strings.NewReader(form.Encode()))
	if err != nil {
		return answer{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := c.o.Client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return answer{}, fmt.Errorf("%w: reading the answer: %v", ErrUnavailable, err)
	}
	if res.StatusCode != http.StatusOK {
		return answer{}, fmt.Errorf("%w: siteverify answered %d", ErrUnavailable, res.StatusCode)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return answer{}, fmt.Errorf("%w: siteverify's answer is not its JSON: %v", ErrUnavailable, err)
	}
	return a, nil
}

// verdict reads siteverify's answer. The error codes are Turnstile's,
// with hCaptcha's and reCAPTCHA's names for the same things.
func (c *Checker) verdict(a answer) (Verdict, error) {
	if a.Success {
		// The provider vouches only for the action its widget was rendered
		// with; one that names none (hCaptcha) is taken at its word.
		if a.Action != "" && a.Action != Action {
			return Failed, nil
		}
		return Passed, nil
	}
	for _, code := range a.ErrorCodes {
		switch code {
		case "timeout-or-duplicate", "expired-input-response", "already-seen-response", "invalid-or-already-seen-response":
			// A person whose page waited too long, or sent its token twice:
			// asked again, never marked.
			return Retry, nil
		case "missing-input-secret", "invalid-input-secret", "sitekey-secret-mismatch", "bad-request", "invalid-remoteip":
			// waitroom's own fault: nobody passes until an operator fixes
			// the secret, and nobody is marked for it.
			c.o.Logger.Error("the human-check provider refuses waitroom's own request: check --human-check-secret-file and --human-check-verify-url",
				"verify_url", c.o.VerifyURL, "error_codes", a.ErrorCodes)
			return Retry, fmt.Errorf("%w: siteverify says %s", ErrUnavailable, code)
		case "internal-error":
			return Retry, fmt.Errorf("%w: siteverify says internal-error", ErrUnavailable)
		}
	}
	// invalid-input-response, or a refusal without a reason: the provider
	// does not vouch for this token.
	return Failed, nil
}
