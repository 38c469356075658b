package gatekeeper

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/ratelimit"
	"github.com/waitroom/waitroom/internal/web"
)

type fixture struct {
	g  *Gatekeeper
	q  *queue.Service
	op *operate.Operator
	is *challenge.Issuer
}

// leastCost is the least proof of work a queue may ask (challengeCost's
// minimum): solved at once.
func leastCost() int {
	s, _ := queue.SettingNamed("challengeCost")
	return int(s.Min)
}

// newFixture is a gatekeeper over an in-process line with a paused queue
// "sale" under policy, and limits of burst places/sessions per address
// (no refill).
func newFixture(t *testing.T, policy queue.JoinPolicy, burst int) fixture {
	t.Helper()
	store, line := memstore.New(nil), signals.New()
	svc, op := queue.NewService(store, 0, line), operate.New(store, line)
	c := queue.DefaultConfig()
	c.Paused, c.Join, c.ChallengeCost = true, policy, leastCost()
	if err := op.PutConfig(context.Background(), "sale", c); err != nil {
		t.Fatal(err)
	}
	is := challenge.NewIssuer([]byte("gatekeeper test secret, 32 bytes"), nil)
	limit := ratelimit.Limit{Rate: 1e-9, Burst: burst}
	g := New(Options{Queue: svc, Claims: op, Challenges: is, Entries: ratelimit.New(limit, nil), Sessions: ratelimit.New(limit, nil),
		ChallengeURL: func(q string) string { return "/api/v1/queues/" + q + "/challenge" }})
	return fixture{g: g, q: svc, op: op, is: is}
}

func (f fixture) solution(t *testing.T) string {
	t.Helper()
	c, err := f.g.Challenge(context.Background(), "sale", Entrant{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := challenge.Solve(context.Background(), c, 2)
	if err != nil {
		t.Fatal(err)
	}
	return p.Encode()
}

var (
	home  = netip.MustParseAddr("198.51.100.1")
	other = netip.MustParseAddr("198.51.100.2")
)

func anon(user string) identity.Caller   { return identity.Caller{User: user} }
func signed(user string) identity.Caller { return identity.Caller{User: user, Signed: true} }

func TestChallengePolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, queue.JoinChallenge, 3)

	_, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home})
	var cr ChallengeRequired
	if !errors.As(err, &cr) || cr.URL != "/api/v1/queues/sale/challenge" || cr.Reason != nil {
		t.Fatalf("no solution: %v, want ChallengeRequired with the URL and no reason", err)
	}
	sol := f.solution(t)
	if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home, Proof: sol}); err != nil || v.State != queue.Waiting || v.Position != 1 {
		t.Fatalf("with a solution: %+v, %v", v, err)
	}
	if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home}); err != nil || v.Position != 1 {
		t.Fatalf("again, in line, no solution: %+v, %v", v, err)
	}
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-b"), Addr: home, Proof: sol}); !errors.As(err, &cr) || cr.Reason == nil {
		t.Fatalf("a used solution: %v, want ChallengeRequired saying why", err)
	}
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-b"), Addr: home, Proof: "forged"}); !errors.Is(err, ErrChallengeRequired) {
		t.Fatalf("a forged solution: %v", err)
	}
	// Three places asked from home (one taken, two refused): its bucket
	// is empty, even for a good solution; another address is not.
	var tm TooManyEntries
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-c"), Addr: home, Proof: f.solution(t)}); !errors.As(err, &tm) || tm.RetryAfter() <= 0 {
		t.Fatalf("a fourth place from one address: %v, want TooManyEntries", err)
	}
	if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-c"), Addr: other, Proof: f.solution(t)}); err != nil || v.Position != 2 {
		t.Fatalf("from another address: %+v, %v", v, err)
	}
	// Signed-in users: neither challenged nor counted.
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: signed(u), Addr: home}); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	// The gateway lets only signed-in users straight in.
	if may, err := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: anon("anon-d"), Addr: other}); may || err != nil {
		t.Fatalf("anonymous walk-in under challenge: %v, %v", may, err)
	}
	if may, err := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: signed("erin"), Addr: home}); !may || err != nil {
		t.Fatalf("signed-in walk-in: %v, %v", may, err)
	}
}

func TestSignedPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, queue.JoinSigned, 100)
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home, Proof: f.solution(t)}); !errors.Is(err, ErrSignInRequired) {
		t.Fatalf("anonymous under signed: %v", err)
	}
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: signed("alice"), Addr: home}); err != nil {
		t.Fatal(err)
	}
	if may, _ := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home}); may {
		t.Fatal("anonymous walk-in under signed")
	}
}

func TestAnyPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, queue.JoinAny, 2)
	for _, u := range []string{"anon-a", "anon-b"} {
		if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon(u), Addr: home}); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-c"), Addr: home}); !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("third anonymous place: %v", err)
	}
	// Walk-ins share the same bucket.
	if may, err := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: anon("anon-c"), Addr: home}); may || !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("walk-in from a spent address: %v, %v", may, err)
	}
	if may, err := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: anon("anon-c"), Addr: other}); !may || err != nil {
		t.Fatalf("walk-in from another address: %v, %v", may, err)
	}
}

func TestNewSessionsPerAddress(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.JoinChallenge, 2)
	for range 2 {
		if err := f.g.NewSession(home); err != nil {
			t.Fatal(err)
		}
	}
	var tm TooManyEntries
	if err := f.g.NewSession(home); !errors.As(err, &tm) || tm.What != "new sessions" {
		t.Fatalf("third session: %v", err)
	}
	if err := f.g.NewSession(other); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

func TestUnknownQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, queue.JoinChallenge, 10)
	if _, err := f.g.Enter(ctx, "nope", Entrant{Caller: anon("anon-a"), Addr: home}); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("Enter: %v", err)
	}
	if _, err := f.g.Challenge(ctx, "nope", Entrant{}); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("Challenge: %v", err)
	}
	if _, err := f.g.Challenge(ctx, "bad name", Entrant{}); !errors.Is(err, queue.ErrInvalidQueue) {
		t.Fatalf("Challenge of a bad name: %v", err)
	}
}

// TestRefusedBeforeAsked: a newcomer to a queue that refuses newcomers
// whatever they do (sold out, closed, full) is told so at once, under every
// policy that would ask them for something (a challenge, a sign-in),
// and is handed no challenge to solve; whoever holds a place is told
// where they stand, asked for nothing (issue 49).
func TestRefusedBeforeAsked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, refusal := range []struct {
		name string
		make func(t *testing.T, f fixture)
		want error
		held queue.State
	}{
		{"sold out", func(t *testing.T, f fixture) {
			if _, err := f.op.SetStock(ctx, "sale", queue.Stock{Known: true, Units: 0}, false); err != nil {
				t.Fatal(err)
			}
		}, queue.ErrSoldOut, queue.SoldOut},
		{"closed", func(t *testing.T, f fixture) {
			c, _ := f.op.Config(ctx, "sale")
			c.Method = queue.MethodReject
			if err := f.op.PutConfig(ctx, "sale", c); err != nil {
				t.Fatal(err)
			}
		}, queue.ErrQueueClosed, queue.Waiting},
		{"full", func(t *testing.T, f fixture) {
			c, _ := f.op.Config(ctx, "sale")
			c.Capacity = 1 // the member waiting fills it
			if err := f.op.PutConfig(ctx, "sale", c); err != nil {
				t.Fatal(err)
			}
		}, queue.ErrQueueFull, queue.Waiting},
	} {
		for _, policy := range []queue.JoinPolicy{queue.JoinChallenge, queue.JoinSigned} {
			t.Run(refusal.name+"/"+string(policy), func(t *testing.T) {
				f := newFixture(t, policy, 100)
				if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: signed("member"), Addr: home}); err != nil {
					t.Fatal(err)
				}
				refusal.make(t, f)
				if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-late"), Addr: home}); !errors.Is(err, refusal.want) {
					t.Errorf("a newcomer: %v, want %v", err, refusal.want)
				}
				if c, err := f.g.Challenge(ctx, "sale", Entrant{}); !errors.Is(err, refusal.want) {
					t.Errorf("a challenge for a newcomer: %+v, %v; want none, %v", c, err, refusal.want)
				}
				if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("member"), Addr: home}); err != nil || v.State != refusal.held {
					t.Errorf("someone holding a place: %+v, %v; want %s", v, err, refusal.held)
				}
			})
		}
	}
}

// TestPolicyChangeShowsAtOnce: a config changed through this instance's
// service applies to the next enter (ConfigInForce is forgotten on PutConfig).
func TestPolicyChangeShowsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, queue.JoinChallenge, 10)
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home}); !errors.Is(err, ErrChallengeRequired) {
		t.Fatal(err)
	}
	c, _ := f.op.Config(ctx, "sale")
	c.Join = queue.JoinAny
	if err := f.op.PutConfig(ctx, "sale", c); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home}); err != nil {
		t.Fatalf("right after the change to any: %v (%v later)", err, time.Since(start))
	}
}

// TestChallengeCostFitsTheChallenge: every difficulty a queue may ask for
// (its challengeCost setting, package queue) is one a challenge carries
// (package challenge), and the setting's help says as many attempts as a
// solution takes. The two packages meet here, where challenges are issued
// at a queue's difficulty.
func TestChallengeCostFitsTheChallenge(t *testing.T) {
	s, ok := queue.SettingNamed("challengeCost")
	if !ok {
		t.Fatal("no challengeCost setting")
	}
	is := challenge.NewIssuer([]byte("k"), nil)
	for _, cost := range []int{int(s.Min), queue.DefaultConfig().ChallengeCost, int(s.Max)} {
		if p := is.Issue("q", cost).Parameters; p.Cost != cost {
			t.Errorf("a challenge at cost %d carries %d", cost, p.Cost)
		}
	}
	if s.Max > challenge.MaxCost || s.Min < 1 {
		t.Errorf("the setting's range %v..%v, the challenge's most %d", s.Min, s.Max, challenge.MaxCost)
	}
	if want, help := fmt.Sprintf("%d attempts on average", challenge.ExpectedAttempts), web.SettingHelp(s.Name); !strings.Contains(help, want) {
		t.Errorf("the setting's help %q does not say %q", help, want)
	}
}

// Someone already in line who brings an access code, under a policy that
// would ask a newcomer for a challenge first, has the code judged rather
// than dropped: a good one moves the place to its lane, a wrong one is
// refused (issue 53). A newcomer with a code is still asked for the
// challenge, and nobody's code is used before they bring it.
func TestCodeOfOneInLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, queue.JoinChallenge, 10)
	c, err := f.op.Config(ctx, "sale")
	if err != nil {
		t.Fatal(err)
	}
	c.Lanes = lane.List{{Name: "members", Codes: true, Share: 0.3}, {Name: lane.Public, Share: 0.7}}
	if err := f.op.PutConfig(ctx, "sale", c); err != nil {
		t.Fatal(err)
	}
	code := accesscode.New()
	hash, _ := accesscode.Hash(code)
	if _, err := f.op.AddCodes(ctx, "sale", []accesscode.Code{{Hash: hash, Lane: "members", Uses: 1}}); err != nil {
		t.Fatal(err)
	}
	withCode := func(user, proof, code string) Entrant {
		e := Entrant{Caller: anon(user), Addr: home, Proof: proof}
		if code != "" {
			e.Join.Code, _ = accesscode.Hash(code)
		}
		return e
	}
	if _, err := f.g.Enter(ctx, "sale", withCode("newcomer", "", code)); !errors.Is(err, ErrChallengeRequired) {
		t.Fatalf("a newcomer with a code and no solution: %v, want the challenge first", err)
	}
	if v, err := f.g.Enter(ctx, "sale", withCode("in-line", f.solution(t), "")); err != nil || v.Position != 1 {
		t.Fatalf("a place in the public lane: %+v, %v", v, err)
	}
	if _, err := f.g.Enter(ctx, "sale", withCode("in-line", "", accesscode.New())); !errors.Is(err, accesscode.ErrInvalid) {
		t.Fatalf("in line with a wrong code: %v, want ErrInvalid", err)
	}
	if v, err := f.g.Enter(ctx, "sale", withCode("in-line", "", code)); err != nil || v.Lane != "members" || v.Position != 1 {
		t.Fatalf("in line with the code: %+v, %v; want the first place in members", v, err)
	}
}
