package gatekeeper

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"

	"github.com/waitroom/waitroom/internal/humancheck"
)

// Errors of the human check (entry policy turnstile).
var (
	// ErrHumanCheckRequired: the line asks for a human check from its
	// provider to take a place (403); HumanCheckRequired says what the page
	// needs to show the provider's widget.
	ErrHumanCheckRequired = errors.New("this line asks for a human check to take a place")
)

// errNoHumanCheck: the queue's entry is turnstile, but this instance was
// started without a provider's keys. It says so as the provider's absence
// (503, logged): another instance behind the same balancer may have them,
// and an operator must see the misconfiguration rather than every person
// be refused for good.
var errNoHumanCheck = fmt.Errorf("%w: this instance has no --human-check-secret-file and --human-check-site-key, "+
	"and the queue's entry is turnstile", humancheck.ErrUnavailable)

// HumanCheckRequired is ErrHumanCheckRequired with what the page needs to
// show the provider's widget, and why the token sent, if any, was not
// enough.
type HumanCheckRequired struct {
	SiteKey, ScriptURL string
	Reason             error // nil when no token was sent
}

func (e HumanCheckRequired) Error() string {
	msg := "pass the human check (the widget of " + e.ScriptURL + ") and send its token in the X-Human-Check-Token header"
	if e.Reason != nil {
		msg = e.Reason.Error() + ": " + msg
	}
	return msg
}
func (e HumanCheckRequired) Unwrap() error { return ErrHumanCheckRequired }

// Details adds the widget's site key and script to the error answer.
func (e HumanCheckRequired) Details() map[string]string {
	return map[string]string{"siteKey": e.SiteKey, "scriptUrl": e.ScriptURL}
}

func (g *Gatekeeper) humanCheckRequired(reason error) error {
	return HumanCheckRequired{SiteKey: g.o.Human.SiteKey(), ScriptURL: g.o.Human.ScriptURL(), Reason: reason}
}

// humanCheck judges the token the caller sent under entry policy turnstile:
// none, or one spent or expired, asks for (another) check; one the
// provider refuses marks a suspect, which the queue's suspects action
// decides about; one it vouches for lets the caller on. A token is spent
// once across every instance (the store's FirstUse, under queue q, as a
// challenge's solution is), before the provider is asked: a replay to
// another instance costs the provider nothing. err wraps
// humancheck.ErrUnavailable when the provider cannot be asked (503).
func (g *Gatekeeper) humanCheck(ctx context.Context, q, token string, addr netip.Addr) (suspect bool, err error) {
	if g.o.Human == nil {
		return false, errNoHumanCheck
	}
	if token == "" {
		return false, g.humanCheckRequired(nil)
	}
	// By its hash: a token is up to 2 KB, and the store keeps its marker.
	sum := sha256.Sum256([]byte(token))
	key := "human:" + base64.RawURLEncoding.EncodeToString(sum[:18])
	first, err := g.o.Claims.FirstUse(ctx, q, key, humancheck.TokenLifetime+replayMargin)
	if err != nil {
		return false, err
	}
	if !first {
		return false, g.humanCheckRequired(errors.New("this token was used already"))
	}
	verdict, err := g.o.Human.Verify(ctx, token, addr)
	switch {
	case err != nil:
		return false, err
	case verdict == humancheck.Passed:
		return false, nil
	case verdict == humancheck.Failed:
		return true, nil
	}
	return false, g.humanCheckRequired(errors.New("the provider says this token is spent or expired"))
}
