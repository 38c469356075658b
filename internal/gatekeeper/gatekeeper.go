// Package gatekeeper decides who may take a place in a line, so that
// entering costs a person nothing they notice and a script a lot: the
// queue's join policy (any, challenge, signed), the proof of work an
// anonymous session solves for each place (package challenge), each
// solution accepted once, and per-address limits on anonymous entries and
// on new sessions. Signed-in users (the shop's JWT) are one identity each:
// they are never challenged nor limited per address.
//
// The built-in API (httpapi) and gateway mode (gateway) both ask it, so a
// place is as dear whichever way it is taken.
package gatekeeper

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/ratelimit"
)

// Errors of the gate. The HTTP layer maps each to a status in its table.
var (
	// ErrChallengeRequired: an anonymous session must solve a challenge to
	// take a place here (403); ChallengeRequired says where to get one.
	ErrChallengeRequired = errors.New("this line asks for a solved challenge to take a place")
	// ErrSignInRequired: only signed-in users may take a place here (403).
	ErrSignInRequired = errors.New("this line is for signed-in users: send Authorization: Bearer <JWT>")
	// ErrTooManyEntries: this address has taken its share for now (429);
	// TooManyEntries says when to try again.
	ErrTooManyEntries = errors.New("too many entries from this address")
)

// ChallengeRequired is ErrChallengeRequired with the URL of a fresh
// challenge and why the one sent, if any, was not enough.
type ChallengeRequired struct {
	URL    string
	Reason error // nil when no solution was sent
}

func (e ChallengeRequired) Error() string {
	msg := "solve the challenge at GET " + e.URL + " and send it in the X-Challenge-Solution header"
	if e.Reason != nil {
		msg = e.Reason.Error() + ": " + msg
	}
	return msg
}
func (e ChallengeRequired) Unwrap() error { return ErrChallengeRequired }

// Details adds the challenge's URL to the error answer.
func (e ChallengeRequired) Details() map[string]string {
	return map[string]string{"challengeUrl": e.URL}
}

// TooManyEntries is ErrTooManyEntries with when the address has a token
// again.
type TooManyEntries struct {
	What  string // "entries" or "new sessions"
	After time.Duration
}

func (e TooManyEntries) Error() string {
	return fmt.Sprintf("too many %s from this address; try again in %d s", e.What, retrySeconds(e.After))
}
func (e TooManyEntries) Unwrap() error { return ErrTooManyEntries }

// RetryAfter is how long until the address may try again.
func (e TooManyEntries) RetryAfter() time.Duration { return e.After }

func retrySeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Options configures a Gatekeeper.
type Options struct {
	Queue *queue.Service
	// Claims spends a solved challenge once across every instance
	// (operate.Operator.FirstUse).
	Claims     *operate.Operator
	Challenges *challenge.Issuer
	// Entries limits the places anonymous sessions take per address, and
	// Sessions the anonymous sessions handed out per address.
	Entries, Sessions *ratelimit.Buckets
	// Addresses tells a request's client address.
	Addresses clientaddr.Resolver
	// ChallengeURL is where a client gets a challenge for a queue.
	ChallengeURL func(queue string) string
	// Human asks the human-check provider about tokens under entry policy
	// turnstile (nil: this instance has no provider's keys, and such a
	// queue answers 503).
	Human *humancheck.Checker
}

// Gatekeeper decides who may take a place in a line (spending the entry
// that comes of it is package spend's).
type Gatekeeper struct{ o Options }

// New returns a Gatekeeper.
func New(o Options) *Gatekeeper { return &Gatekeeper{o: o} }

// Address is the request's client address, what the limits count by.
func (g *Gatekeeper) Address(r *http.Request) netip.Addr { return g.o.Addresses.Addr(r) }

// replayMargin keeps a used solution's marker a little past its challenge's
// expiry, for instances whose clocks lag the one that issued it.
const replayMargin = time.Minute

// Enter takes a place in line for the caller, or tells them where they
// stand, as queue.Service.Enter does, once the queue's policy allows it:
//
//   - a signed-in caller always may;
//   - an anonymous caller who already holds a place (waiting, or READY) is
//     told so whatever the policy: re-entering takes nothing new;
//   - an anonymous newcomer who would be asked for a challenge or to sign
//     in is refused instead when the queue refuses newcomers whatever
//     they do (closed, full, sold out: queue.Service.Knock);
//   - otherwise under "signed": ErrSignInRequired; under "any": one of the
//     address's entries; under "challenge": one of the address's entries
//     and a solution of a challenge of this queue (proof), unexpired,
//     never used before (ChallengeRequired when it is missing or wrong);
//     under "turnstile": a token of the human-check provider's widget
//     (humanToken), which signed-in callers send too when the queue says
//     so (enterChecked).
func (g *Gatekeeper) Enter(ctx context.Context, q string, c identity.Caller, addr netip.Addr, proof, humanToken string) (queue.View, error) {
	cfg, err := g.o.Queue.ConfigInForce(ctx, q)
	if err == nil && humanCheckApplies(cfg.Config, c) {
		return g.enterChecked(ctx, q, cfg.Config, c, addr, humanToken)
	}
	if c.Signed {
		return g.o.Queue.Enter(ctx, q, c.User)
	}
	if err != nil {
		return queue.View{}, err
	}
	if cfg.Join == queue.JoinAny {
		if err := g.take(g.o.Entries, addr, "entries"); err != nil {
			return queue.View{}, err
		}
		return g.o.Queue.Enter(ctx, q, c.User)
	}
	if proof == "" || cfg.Join == queue.JoinSigned {
		// Asking costs a status read, never a place; a newcomer the queue
		// refuses anyway (closed, full, sold out) is told so by it, before being
		// sent to solve a challenge or to sign in for nothing.
		v, err := g.o.Queue.Knock(ctx, q, c.User)
		if err != nil || v.State != queue.NotInQueue {
			return v, err
		}
		if cfg.Join == queue.JoinSigned {
			return queue.View{}, ErrSignInRequired
		}
		return queue.View{}, ChallengeRequired{URL: g.o.ChallengeURL(q)}
	}
	// Counted before the solution is checked, so that forged solutions cost
	// this server no more derivations than the limit allows.
	if err := g.take(g.o.Entries, addr, "entries"); err != nil {
		return queue.View{}, err
	}
	solved, err := g.o.Challenges.Verify(proof, q)
	if err != nil {
		return queue.View{}, ChallengeRequired{URL: g.o.ChallengeURL(q), Reason: err}
	}
	first, err := g.o.Claims.FirstUse(ctx, q, "challenge:"+solved.ReplayKey, time.Until(solved.ExpiresAt)+replayMargin)
	if err != nil {
		return queue.View{}, err
	}
	if !first {
		return queue.View{}, ChallengeRequired{URL: g.o.ChallengeURL(q), Reason: errors.New("this solution was used already")}
	}
	return g.o.Queue.Enter(ctx, q, c.User)
}

// Challenge issues a challenge for the queue at its difficulty, unless
// the queue refuses newcomers now (closed, full, sold out:
// queue.Service.RefusesNewcomers): then that refusal, so that no one
// solves a proof of work for a place they cannot have.
func (g *Gatekeeper) Challenge(ctx context.Context, q string) (challenge.Challenge, error) {
	cfg, err := g.o.Queue.ConfigInForce(ctx, q)
	if err != nil {
		return challenge.Challenge{}, err
	}
	if err := g.o.Queue.RefusesNewcomers(ctx, q); err != nil {
		return challenge.Challenge{}, err
	}
	return g.o.Challenges.Issue(q, cfg.ChallengeCost), nil
}

// NewSession spends one of the address's new sessions (TooManyEntries when
// there is none left).
func (g *Gatekeeper) NewSession(addr netip.Addr) error {
	return g.take(g.o.Sessions, addr, "new sessions")
}

// MayAdmitNow says whether the caller may be let straight in while the line
// is quiet (gateway mode), without the waiting page: a signed-in user may;
// an anonymous one only where the policy is "any", spending one of the
// address's entries. Under "challenge" or "signed" an anonymous session
// goes through the waiting page, where the policy is applied as by Enter.
func (g *Gatekeeper) MayAdmitNow(ctx context.Context, q string, c identity.Caller, addr netip.Addr) (bool, error) {
	cfg, err := g.o.Queue.ConfigInForce(ctx, q)
	if c.Signed {
		// One the queue asks for a human check goes through the page too.
		return err != nil || !humanCheckApplies(cfg.Config, c), nil
	}
	if err != nil || cfg.Join != queue.JoinAny {
		return false, err
	}
	if err := g.take(g.o.Entries, addr, "entries"); err != nil {
		return false, err
	}
	return true, nil
}

func (g *Gatekeeper) take(b *ratelimit.Buckets, addr netip.Addr, what string) error {
	if ok, wait := b.Take(clientaddr.Key(addr)); !ok {
		return TooManyEntries{What: what, After: wait}
	}
	return nil
}
