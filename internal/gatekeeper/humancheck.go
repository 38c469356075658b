package gatekeeper

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"

	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
)

// Errors of the human check (entry policy turnstile).
var (
	// ErrHumanCheckRequired: the line asks for a human check from its
	// provider to take a place (403); HumanCheckRequired says what the page
	// needs to show the provider's widget.
	ErrHumanCheckRequired = errors.New("this line asks for a human check to take a place")
	// ErrSuspectedBot: a signal marks the client as a likely bot and the
	// queue's suspects action is refuse (403).
	//
	// (Defined here until the gate's judgement of every signal, which owns
	// it, is merged: then this line goes.)
	ErrSuspectedBot = errors.New("this line does not take a place from this client: it looks like a bot")
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

// humanCheckApplies says whether the caller passes the human check to take
// a place: under turnstile, anonymous sessions always, signed-in users when
// the queue says so.
func humanCheckApplies(cfg queue.Config, c identity.Caller) bool {
	return cfg.Join == queue.JoinTurnstile && (!c.Signed || cfg.HumanCheckSigned)
}

// enterChecked is Enter under turnstile for a caller the check applies to.
// A newcomer without a token is first asked whether the queue takes anyone
// (as for a challenge); an anonymous one spends one of the address's
// entries before the provider is asked, so forged tokens cost the provider
// and this server no more calls than the limit allows.
//
// Of the suspects actions it applies refuse alone; the others take a place
// in the line as allow does. (The gate's judgement of every signal, being
// merged, applies them all and calls humanCheck itself: then this goes.)
func (g *Gatekeeper) enterChecked(ctx context.Context, q string, cfg queue.Config, c identity.Caller, addr netip.Addr, token string) (queue.View, error) {
	if token == "" {
		// Whoever holds a place is told so, whatever this instance can check.
		v, err := g.o.Queue.Knock(ctx, q, c.User)
		if err != nil || v.State != queue.NotInQueue {
			return v, err
		}
	}
	if !c.Signed && token != "" {
		if err := g.take(g.o.Entries, addr, "entries"); err != nil {
			return queue.View{}, err
		}
	}
	suspect, err := g.humanCheck(ctx, q, token, addr)
	if err != nil {
		return queue.View{}, err
	}
	if suspect && cfg.Suspects == queue.SuspectsRefuse {
		return queue.View{}, ErrSuspectedBot
	}
	return g.o.Queue.Enter(ctx, q, c.User)
}
