package gatekeeper

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/suspect"
)

// Issue 51: a client the signals mark as a likely bot takes its place as
// the queue's suspects setting says (shadow, challenge, refuse, allow).
// The signals are judged once, when a place is taken, in the instance: no
// store round trip, so judging costs a person nothing.

// ErrSuspectedBot: the queue refuses the places of likely bots
// (suspects: refuse), and the signals marked this client (403).
var ErrSuspectedBot = errors.New("this client looks automated, and this line refuses such clients a place")

// ErrSuspectDegraded: the queue's store is away under --on-store-error
// admit, and a likely bot is given no degraded entry: it is told what a
// request that needs the store is told in an outage (503 + Retry-After).
var ErrSuspectDegraded = errors.New("the line's store is unavailable")

// Headers the gate reads a place's credentials from.
const (
	// ChallengeSolutionHeader carries a solved challenge on enter: the
	// ALTCHA payload, base64 JSON.
	ChallengeSolutionHeader = "X-Challenge-Solution"
	// HumanCheckHeader carries the human-check provider's token on enter
	// (entry policy turnstile).
	HumanCheckHeader = "X-Human-Check-Token"
)

// Ranges is the set of suspect address ranges (suspect.Ranges).
type Ranges interface {
	Contains(netip.Addr) bool
}

// PollRate tells sessions that polled much faster than they were told
// (suspect's tracker): Polled hears each status poll, Suspect judges.
type PollRate interface {
	Polled(key string, told time.Duration, now time.Time)
	Suspect(key string, now time.Time) bool
}

// Entrant is who asks for a place, read once from the request (Entrant):
// the caller, the client address, the credentials it brings and the
// edge's score of it.
type Entrant struct {
	Caller identity.Caller
	Addr   netip.Addr
	// Proof is the solved challenge sent (X-Challenge-Solution); HumanToken
	// the human check's token (X-Human-Check-Token); "" when none.
	Proof, HumanToken string
	// Score is the edge's bot score header (Options.BotScoreHeader) as a
	// trusted proxy sent it: "" when it sent none, or the request did not
	// come from a trusted proxy (a client's own copy is never believed).
	Score string
	// Join is the lane a newcomer asks for (issue 53): their claims' lane,
	// or an access code's hash (queue.Service.Enter). A likely bot's place
	// in the shadow line takes none: cleared, it joins the public lane.
	Join lane.Join
}

// Entrant reads who asks for a place from the request made by caller.
func (g *Gatekeeper) Entrant(r *http.Request, caller identity.Caller) Entrant {
	e := Entrant{Caller: caller, Addr: g.Address(r), Proof: r.Header.Get(ChallengeSolutionHeader), HumanToken: r.Header.Get(HumanCheckHeader)}
	if g.o.BotScoreHeader != "" && g.o.Addresses.FromTrusted(r) {
		e.Score = r.Header.Get(g.o.BotScoreHeader)
	}
	return e
}

// signals are what marks e as a likely bot in the queue, judged here
// without the store: the edge's score below the threshold (a score that
// cannot be read, or none, is unknown: neither a suspect nor a human), the
// address in a suspect range, the session polling much faster than told.
// Per-address limits are never a signal: people share carrier-NAT
// addresses.
func (g *Gatekeeper) signals(q string, e Entrant) []string {
	var out []string
	if e.Score != "" && edgeScoreBelow(e.Score, g.o.BotScoreBelow) {
		out = append(out, string(suspect.EdgeScore))
	}
	if g.o.Ranges != nil && e.Addr.IsValid() && g.o.Ranges.Contains(e.Addr) {
		out = append(out, string(suspect.AddressRange))
	}
	if g.o.PollRate != nil && e.Caller.User != "" && g.o.PollRate.Suspect(pollKey(q, e.Caller.User), g.now()) {
		out = append(out, string(suspect.PollRate))
	}
	return out
}

// edgeScoreBelow says whether the edge's score is one of 1–99 below
// threshold; a score that cannot be read is unknown, so not.
func edgeScoreBelow(score string, threshold int) bool {
	n, err := strconv.Atoi(strings.TrimSpace(score))
	return err == nil && n >= 1 && n <= 99 && n < threshold
}

// DegradedRefusal is ErrSuspectDegraded when e is a likely bot in the
// queue, nil otherwise: asked before a degraded entry is given
// (--on-store-error admit, the store away), when neither the store nor the
// queue's config can be read. A likely bot is a user this instance last
// answered as a shadow place (Answered: marked when it entered, by
// whatever signal, the human check's included), or one the signals judged
// without the store mark (the edge's score, ranges, poll rate). A refusal by the signals is counted and logged as the action
// refuse when count is set (an entry asked for: enter, a protected
// request), never for a status poll, which would count one client again
// at each poll; a known shadow place was counted when it entered.
func (g *Gatekeeper) DegradedRefusal(ctx context.Context, q string, e Entrant, count bool) error {
	if g.shadows.known(q, e.Caller.User) {
		return ErrSuspectDegraded
	}
	signals := g.signals(q, e)
	if len(signals) == 0 {
		return nil
	}
	if count {
		g.note(ctx, q, e, signals, suspect.Refuse)
	}
	return ErrSuspectDegraded
}

// Answered tells the gate the answer v the user was given in the queue
// (enter or status): a shadow place is remembered, so that with the store
// away it gets no degraded entry (DegradedRefusal); any other answer
// forgets it (cleared, let in, gone).
func (g *Gatekeeper) Answered(q, user string, v queue.View) { g.shadows.answered(q, user, v) }

// Polled tells the poll-rate signal of a status poll the user made and the
// answer v it is given. The answer's pollAfterSeconds stands for the one
// before it, which the client was following: it moves slowly with the
// estimate, and where it shrinks (nearing the front) the judgement is only
// more lenient.
func (g *Gatekeeper) Polled(q, user string, v queue.View) {
	if g.o.PollRate == nil || v.PollAfterSeconds == nil || user == "" {
		return
	}
	g.o.PollRate.Polled(pollKey(q, user), time.Duration(*v.PollAfterSeconds)*time.Second, g.now())
}

func pollKey(q, user string) string { return q + "\x00" + user }

func (g *Gatekeeper) now() time.Time {
	if g.o.Clock != nil {
		return g.o.Clock()
	}
	return time.Now()
}

// mark is what a suspect's place keeps: its signals and its address as a
// keyed hash (never in clear), the same for every place the address
// takes, so an operator can see a farm behind one address.
func (g *Gatekeeper) mark(e Entrant, signals []string) suspect.Mark {
	return suspect.Mark{Signals: signals, Address: g.addressHash(e.Addr)}
}

// addressHash is the address as suspects are logged and kept: HMAC-SHA256
// under the instance's secret (MarkKey), 16 hex digits, by the key the
// limits count it by (an IPv6 /64).
func (g *Gatekeeper) addressHash(a netip.Addr) string {
	m := hmac.New(sha256.New, g.o.MarkKey)
	m.Write([]byte(clientaddr.Key(a)))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// act takes e's place, a newcomer the signals mark as a likely bot, as
// the queue's suspects setting says, counting and logging it.
// Whoever already holds a place is told where they stand, as by Enter: a
// place is judged once, when it is taken.
func (g *Gatekeeper) act(ctx context.Context, q string, cfg queue.InForce, e Entrant, signals []string) (queue.View, error) {
	action := cfg.Suspects
	if action == "" {
		action = suspect.Shadow
	}
	if action == suspect.Challenge { // the dearer proof is paid already
		g.note(ctx, q, e, signals, action)
		return g.o.Queue.Enter(ctx, q, e.Caller.User, e.Join)
	}
	v, err := g.knock(ctx, q, e.Caller.User)
	if err != nil || v.State != queue.NotInQueue {
		return v, err
	}
	g.note(ctx, q, e, signals, action)
	switch action {
	case suspect.Refuse:
		return queue.View{}, ErrSuspectedBot
	case suspect.Allow:
		return g.o.Queue.Enter(ctx, q, e.Caller.User, e.Join)
	}
	return g.o.Queue.EnterShadow(ctx, q, e.Caller.User, g.mark(e, signals))
}

// note counts a judged suspect per signal (waitroom_suspects_total, the
// per-minute tally) and logs it, its address hashed.
func (g *Gatekeeper) note(ctx context.Context, q string, e Entrant, signals []string, action suspect.Action) {
	for _, s := range signals {
		g.o.Metrics.Suspect(q, s, string(action))
	}
	if g.o.Tally != nil {
		g.o.Tally(q, signals, string(action))
	}
	if g.o.Logger != nil {
		g.o.Logger.InfoContext(ctx, "suspect", "queue", q, "signals", signals, "action", string(action),
			"address", g.addressHash(e.Addr), "signed", e.Caller.Signed)
	}
}
