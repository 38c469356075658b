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
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/ratelimit"
	"github.com/waitroom/waitroom/internal/suspect"
	"github.com/waitroom/waitroom/internal/telemetry"
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

	// BotScoreHeader names the header a trusted proxy sends the edge's bot
	// score in (1–99, as Cloudflare's; "": none read), and a score below
	// BotScoreBelow marks a suspect (--bot-score-header, --bot-score-below).
	BotScoreHeader string
	BotScoreBelow  int
	// Ranges are the suspect address ranges (--suspect-ranges; nil: none).
	Ranges Ranges
	// PollRate tells sessions that poll too fast (nil: not watched).
	PollRate PollRate
	// MarkKey keys the hash a suspect's address is kept and logged by.
	MarkKey []byte
	// Metrics counts suspects (waitroom_suspects_total; nil: not counted).
	Metrics *telemetry.Metrics
	// Tally hears of each judged suspect: its queue, signals and the
	// action taken (the per-minute tally; nil: nobody).
	Tally func(queue string, signals []string, action string)
	// Logger logs each judged suspect at info (nil: not logged).
	Logger *slog.Logger
	// Clock is the poll-rate signal's (nil: time.Now).
	Clock func() time.Time
	// Human asks the human-check provider about tokens under entry policy
	// turnstile (nil: this instance has no provider's keys, and such a
	// queue answers 503).
	Human *humancheck.Checker
}

// Gatekeeper decides who may take a place in a line (spending the entry
// that comes of it is package spend's).
type Gatekeeper struct {
	o       Options
	shadows shadowsKnown
}

// New returns a Gatekeeper.
func New(o Options) *Gatekeeper { return &Gatekeeper{o: o} }

// Address is the request's client address, what the limits count by.
func (g *Gatekeeper) Address(r *http.Request) netip.Addr { return g.o.Addresses.Addr(r) }

// replayMargin keeps a used solution's marker a little past its challenge's
// expiry, for instances whose clocks lag the one that issued it.
const replayMargin = time.Minute

// Enter takes a place in line for the entrant, or tells them where they
// stand, as queue.Service.Enter does, once the queue's policy allows it:
//
//   - a signed-in caller always may (under "turnstile" with
//     humanCheckSigned, after the human check);
//   - whoever already holds a place (waiting, or READY) is told so
//     whatever the policy: re-entering takes nothing new, and judges
//     nothing;
//   - a newcomer who would be asked for a challenge, a human check or to
//     sign in is refused instead when the queue refuses newcomers whatever
//     they do (closed, full, sold out: knock);
//   - otherwise an anonymous caller under "signed": ErrSignInRequired;
//     under "any": one of the address's entries; under "challenge": one of
//     the address's entries and a solution of a challenge of this queue
//     (proof), unexpired, never used before (ChallengeRequired when it is
//     missing or wrong); under "turnstile": one of the address's entries
//     and the human check's token (ErrHumanCheckRequired when missing).
//
// A newcomer the signals mark (signals; the human check's refusal too)
// then takes its place as the queue's suspects setting says (act): under
// "challenge" only with a solution of a challenge at the suspect's cost.
func (g *Gatekeeper) Enter(ctx context.Context, q string, e Entrant) (queue.View, error) {
	cfg, err := g.o.Queue.ConfigInForce(ctx, q)
	if err != nil {
		return queue.View{}, err
	}
	signals := g.signals(q, e)
	human := cfg.Join == queue.JoinTurnstile && (!e.Caller.Signed || cfg.HumanCheckSigned)
	if missing := g.missing(ctx, q, cfg, e, signals, human); missing != nil {
		return g.refuseNewcomer(ctx, q, e, missing)
	}
	// Counted before a token or solution is checked, so that forged ones
	// cost this server no more checks than the limit allows.
	if !e.Caller.Signed {
		if err := g.take(g.o.Entries, e.Addr, "entries"); err != nil {
			return queue.View{}, err
		}
	}
	if human {
		bot, err := g.humanCheck(ctx, q, e.HumanToken, e.Addr)
		if err != nil {
			return queue.View{}, err
		}
		if bot {
			signals = append(signals, string(suspect.HumanCheck))
		}
	}
	if cost := proofCost(cfg, e, signals); cost > 0 {
		if e.Proof == "" { // the human check marked it: now the dearer proof
			return g.refuseNewcomer(ctx, q, e, ChallengeRequired{URL: g.o.ChallengeURL(q)})
		}
		// Only a suspect's proof is held to its cost: a person's challenge
		// issued before the queue's cost changed still takes its place.
		least := 0
		if len(signals) > 0 {
			least = cost
		}
		if err := g.spendProof(ctx, q, e.Proof, least); err != nil {
			return queue.View{}, err
		}
	}
	if len(signals) == 0 {
		return g.o.Queue.Enter(ctx, q, e.Caller.User, e.Join)
	}
	return g.act(ctx, q, cfg, e, signals)
}

// missing is what the entrant must bring and did not (nil: nothing), by
// the queue's policy and, for a suspect under "challenge", its action.
// Without a token the human check says itself what it asks for (what the
// page needs to show the provider's widget), without asking the provider.
func (g *Gatekeeper) missing(ctx context.Context, q string, cfg queue.InForce, e Entrant, signals []string, human bool) error {
	switch {
	case !e.Caller.Signed && cfg.Join == queue.JoinSigned:
		return ErrSignInRequired
	case human && e.HumanToken == "":
		if _, err := g.humanCheck(ctx, q, "", e.Addr); err != nil {
			return err
		}
		return ErrHumanCheckRequired
	case proofCost(cfg, e, signals) > 0 && e.Proof == "":
		return ChallengeRequired{URL: g.o.ChallengeURL(q)}
	}
	return nil
}

// refuseNewcomer answers an entrant who lacks what the queue asks
// (missing): where they stand when they hold a place, the refusal the
// queue gives every newcomer now (closed, full, sold out), else missing.
// Asking costs a status read, never a place, so nobody is sent to solve a
// challenge or to sign in for nothing.
//
// Someone waiting who brings an access code (issue 53) is not asked again
// for what took their place: the code moves them to its lane (the store
// redeems it, once), as it does a signed-in user. A shadow place is not
// moved: a likely bot stays where the gate put it.
func (g *Gatekeeper) refuseNewcomer(ctx context.Context, q string, e Entrant, missing error) (queue.View, error) {
	v, err := g.knock(ctx, q, e.Caller.User)
	if err == nil && e.Join.Code != "" && v.State == queue.Waiting && !v.Shadow {
		return g.o.Queue.Enter(ctx, q, e.Caller.User, e.Join)
	}
	if err != nil || v.State != queue.NotInQueue {
		return v, err
	}
	return queue.View{}, missing
}

// knock is entering for a caller who must first do something (solve a
// challenge, sign in, pass the human check), or whom the gate must first
// judge: whoever holds a place is told where they stand, as by Status; a
// newcomer gets the refusal entering would give them now
// (queue.Service.RefusesNewcomers: closed, full, sold out), so a full or
// sold-out line never has someone solve a proof of work only to be turned
// away; any other newcomer is NOT_IN_QUEUE, a place theirs to take. It
// costs a status read and, for a newcomer, the config in force and the
// instance's snapshot of the line, the reads the status polls share.
func (g *Gatekeeper) knock(ctx context.Context, q, user string) (queue.View, error) {
	v, err := g.o.Queue.Status(ctx, q, user)
	if err != nil || v.State != queue.NotInQueue {
		return v, err
	}
	if err := g.o.Queue.RefusesNewcomers(ctx, q); err != nil {
		return queue.View{}, err
	}
	return v, nil
}

// proofCost is the proof of work the entrant's place costs (0: none): the
// queue's for an anonymous session under "challenge", the dearer
// suspectCost for a suspect where the queue challenges suspects.
func proofCost(cfg queue.InForce, e Entrant, signals []string) int {
	cost := 0
	if !e.Caller.Signed && cfg.Join == queue.JoinChallenge {
		cost = cfg.ChallengeCost
	}
	if len(signals) > 0 && cfg.Suspects == suspect.Challenge {
		cost = max(cost, suspectCost(cfg.Config))
	}
	return cost
}

// suspectCost is the proof of work a suspect solves under suspects
// "challenge": suspectChallengeCost, or ten times the queue's own, within
// what a challenge may cost (challengeCost's maximum).
func suspectCost(c queue.Config) int {
	if c.SuspectChallengeCost > 0 {
		return c.SuspectChallengeCost
	}
	most, _ := queue.SettingNamed("challengeCost")
	return min(10*c.ChallengeCost, int(most.Max))
}

// spendProof checks a solved challenge of the queue issued at least at
// cost least (a challenge carries its cost), and spends it: a solution is
// accepted once (ChallengeRequired otherwise).
func (g *Gatekeeper) spendProof(ctx context.Context, q, proof string, least int) error {
	solved, err := g.o.Challenges.Verify(proof, q)
	if err == nil && solved.Cost < least {
		err = errors.New("this solution is of a cheaper challenge than this place asks: get a new one")
	}
	if err != nil {
		return ChallengeRequired{URL: g.o.ChallengeURL(q), Reason: err}
	}
	first, err := g.o.Claims.FirstUse(ctx, q, "challenge:"+solved.ReplayKey, time.Until(solved.ExpiresAt)+replayMargin)
	if err != nil {
		return err
	}
	if !first {
		return ChallengeRequired{URL: g.o.ChallengeURL(q), Reason: errors.New("this solution was used already")}
	}
	return nil
}

// Challenge issues a challenge for the queue at the cost the entrant's
// place asks (the dearer one for a suspect where the queue challenges
// suspects), unless the queue refuses newcomers now (closed, full, sold
// out: queue.Service.RefusesNewcomers): then that refusal, so that no one
// solves a proof of work for a place they cannot have.
func (g *Gatekeeper) Challenge(ctx context.Context, q string, e Entrant) (challenge.Challenge, error) {
	cfg, err := g.o.Queue.ConfigInForce(ctx, q)
	if err != nil {
		return challenge.Challenge{}, err
	}
	if err := g.o.Queue.RefusesNewcomers(ctx, q); err != nil {
		return challenge.Challenge{}, err
	}
	e.Caller.Signed = false // whoever asks pays at least the queue's cost
	return g.o.Challenges.Issue(q, max(cfg.ChallengeCost, proofCost(cfg, e, g.signals(q, e)))), nil
}

// NewSession spends one of the address's new sessions (TooManyEntries when
// there is none left).
func (g *Gatekeeper) NewSession(addr netip.Addr) error {
	return g.take(g.o.Sessions, addr, "new sessions")
}

// MayAdmitNow says whether the entrant may be let straight in while the
// line is quiet (gateway mode), without the waiting page: a signed-in
// user may; an anonymous one only where the policy is "any", spending one
// of the address's entries. Under any other policy an anonymous session
// goes through the waiting page, where the policy is applied as by Enter,
// and so does anyone the signals mark as a likely bot (Enter judges it).
func (g *Gatekeeper) MayAdmitNow(ctx context.Context, q string, e Entrant) (bool, error) {
	cfg, err := g.o.Queue.ConfigInForce(ctx, q)
	if err != nil {
		return false, err
	}
	if len(g.signals(q, e)) > 0 {
		return false, nil
	}
	if e.Caller.Signed {
		return !(cfg.Join == queue.JoinTurnstile && cfg.HumanCheckSigned), nil
	}
	if cfg.Join != queue.JoinAny {
		return false, nil
	}
	if err := g.take(g.o.Entries, e.Addr, "entries"); err != nil {
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
