package gatekeeper

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/ratelimit"
	"github.com/waitroom/waitroom/internal/suspect"
)

// shadowStore is the in-process line with a shadow line of its own making
// (the real one is the stores'): EnterShadow keeps who entered it, with
// the mark, and answers a shadow standing.
type shadowStore struct {
	*memstore.Store
	shadowed map[string]suspect.Mark
}

func (s *shadowStore) EnterShadow(ctx context.Context, q, user string, mark suspect.Mark) (queue.Standing, error) {
	s.shadowed[user] = mark
	return queue.Standing{State: queue.Waiting, Shadow: true, Ticket: int64(len(s.shadowed)), Position: 1, Length: 1,
		Pace: queue.Pace{Rate: 1, Batch: 1, Interval: time.Second}}, nil
}

func (s *shadowStore) Status(ctx context.Context, q, user string) (queue.Standing, error) {
	if _, ok := s.shadowed[user]; ok {
		return queue.Standing{State: queue.Waiting, Shadow: true, Position: 1, Length: 1}, nil
	}
	return s.Store.Status(ctx, q, user)
}

// ranges is a fake suspect.Ranges.
type ranges []netip.Prefix

func (r ranges) Contains(a netip.Addr) bool {
	return slices.ContainsFunc(r, func(p netip.Prefix) bool { return p.Contains(a) })
}

// polls is a fake poll-rate tracker: the keys it holds suspect.
type polls map[string]bool

func (p polls) Polled(key string, told time.Duration, now time.Time) {}
func (p polls) Suspect(key string, now time.Time) bool               { return p[key] }

type tallied struct {
	queue, action string
	signals       []string
}

type suspectFixture struct {
	fixture
	store   *shadowStore
	tallies *[]tallied
}

var (
	proxy      = netip.MustParseAddr("10.0.0.1")
	datacentre = netip.MustParseAddr("203.0.113.7")
)

// newSuspectFixture is newFixture with the signals on: the score header
// Cf-Bot-Score from the proxy 10.0.0.1, below 30; the range
// 203.0.113.0/24; the poll-rate suspects in fast (queue "sale").
func newSuspectFixture(t *testing.T, policy queue.JoinPolicy, action suspect.Action, burst int, fast ...string) suspectFixture {
	t.Helper()
	store := &shadowStore{Store: memstore.New(nil), shadowed: map[string]suspect.Mark{}}
	line := signals.New()
	svc, op := queue.NewService(store, 0, line), operate.New(store, line)
	c := queue.DefaultConfig()
	c.Paused, c.Join, c.ChallengeCost, c.Suspects = true, policy, leastCost(), action
	c.SuspectChallengeCost = leastCost() + 1
	if err := op.PutConfig(context.Background(), "sale", c); err != nil {
		t.Fatal(err)
	}
	is := challenge.NewIssuer([]byte("gatekeeper test secret, 32 bytes"), nil)
	limit := ratelimit.Limit{Rate: 1e-9, Burst: burst}
	addrs, err := clientaddr.Parse(proxy.String())
	if err != nil {
		t.Fatal(err)
	}
	pr := polls{}
	for _, u := range fast {
		pr[pollKey("sale", u)] = true
	}
	var tallies []tallied
	g := New(Options{Queue: svc, Claims: op, Challenges: is, Entries: ratelimit.New(limit, nil), Sessions: ratelimit.New(limit, nil),
		ChallengeURL: func(q string) string { return "/api/v1/queues/" + q + "/challenge" }, Addresses: addrs,
		BotScoreHeader: "Cf-Bot-Score", BotScoreBelow: 30, Ranges: ranges{netip.MustParsePrefix("203.0.113.0/24")}, PollRate: pr,
		MarkKey: []byte("mark key"),
		Tally: func(q string, s []string, action string) {
			tallies = append(tallies, tallied{q, action, s})
		}})
	return suspectFixture{fixture: fixture{g: g, q: svc, op: op, is: is}, store: store, tallies: &tallies}
}

// TestSignals: what marks an entrant, read from its request; per-address
// limits never do, and a score is believed only from a trusted proxy.
func TestSignals(t *testing.T) {
	t.Parallel()
	f := newSuspectFixture(t, queue.JoinAny, suspect.Shadow, 100, "fast")
	for _, c := range []struct {
		name, remote, forwarded, score, user string
		want                                 []string
	}{
		{"a person, no score", "198.51.100.1:1", "", "", "p", nil},
		{"a human score from the edge", "10.0.0.1:1", "198.51.100.1", "80", "p", nil},
		{"a bot score from the edge", "10.0.0.1:1", "198.51.100.1", "12", "p", []string{"edge_score"}},
		{"a bot score at the threshold is none", "10.0.0.1:1", "198.51.100.1", "30", "p", nil},
		{"a bot score the client sent itself", "198.51.100.1:1", "", "1", "p", nil},
		{"a score that cannot be read is unknown", "10.0.0.1:1", "198.51.100.1", "bot", "p", nil},
		{"a score out of 1–99 is unknown", "10.0.0.1:1", "198.51.100.1", "0", "p", nil},
		{"a data-centre address", "203.0.113.7:1", "", "", "p", []string{"address_range"}},
		{"a data-centre address behind the edge", "10.0.0.1:1", "203.0.113.9", "5", "p", []string{"edge_score", "address_range"}},
		{"a session polling too fast", "198.51.100.1:1", "", "", "fast", []string{"poll_rate"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/v1/queues/sale/entries", nil)
			r.RemoteAddr = c.remote
			if c.forwarded != "" {
				r.Header.Set("X-Forwarded-For", c.forwarded)
			}
			if c.score != "" {
				r.Header.Set("Cf-Bot-Score", c.score)
			}
			e := f.g.Entrant(r, anon(c.user))
			if got := f.g.signals("sale", e); !slices.Equal(got, c.want) {
				t.Errorf("signals %v, want %v", got, c.want)
			}
		})
	}
}

func (f suspectFixture) enter(user string, signed bool, addr netip.Addr, proof string) (queue.View, error) {
	return f.g.Enter(context.Background(), "sale", Entrant{Caller: identity.Caller{User: user, Signed: signed}, Addr: addr, Proof: proof})
}

// TestSuspectsShadow: a suspect newcomer is put in the shadow line with
// its signals and its address hashed, counted once; entering again
// answers its place and judges nothing; a person is never shadowed.
func TestSuspectsShadow(t *testing.T) {
	t.Parallel()
	f := newSuspectFixture(t, queue.JoinAny, suspect.Shadow, 100)
	v, err := f.enter("bot-1", false, datacentre, "")
	if err != nil || v.State != queue.Waiting || !v.Shadow {
		t.Fatalf("a suspect entering: %+v %v, want a shadow place", v, err)
	}
	mark, ok := f.store.shadowed["bot-1"]
	if !ok || !slices.Equal(mark.Signals, []string{"address_range"}) || len(mark.Address) != 16 || strings.Contains(mark.Address, "203.0") {
		t.Errorf("the mark kept: %+v (in the shadow line: %v)", mark, ok)
	}
	if v, err := f.enter("bot-1", false, datacentre, ""); err != nil || !v.Shadow {
		t.Errorf("entering again: %+v %v", v, err)
	}
	if len(*f.tallies) != 1 || (*f.tallies)[0].action != "shadow" {
		t.Errorf("tallies %+v, want one shadow", *f.tallies)
	}
	if v, err := f.enter("person", false, home, ""); err != nil || v.Shadow || v.Position != 1 {
		t.Errorf("a person: %+v %v, want the real line's first place", v, err)
	}
	// A signed-in user from a data centre is judged too.
	if v, err := f.enter("farm-account", true, datacentre, ""); err != nil || !v.Shadow {
		t.Errorf("a signed-in suspect: %+v %v, want a shadow place", v, err)
	}
}

// TestPerAddressLimitIsNoSignal: people behind one carrier-NAT address
// past the address's share get 429, never a shadow place nor a 403.
func TestPerAddressLimitIsNoSignal(t *testing.T) {
	t.Parallel()
	f := newSuspectFixture(t, queue.JoinAny, suspect.Refuse, 2)
	for _, u := range []string{"p1", "p2"} {
		if v, err := f.enter(u, false, home, ""); err != nil || v.Shadow {
			t.Fatalf("%s: %+v %v", u, v, err)
		}
	}
	if _, err := f.enter("p3", false, home, ""); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("past the address's share: %v, want too many entries", err)
	}
	if v, err := f.enter("member", true, home, ""); err != nil || v.Shadow {
		t.Errorf("a signed-in user at the limited address: %+v %v, want a place", v, err)
	}
	if len(*f.tallies) != 0 || len(f.store.shadowed) != 0 {
		t.Errorf("suspects %+v, shadowed %v: want none", *f.tallies, f.store.shadowed)
	}
}

// TestSuspectsRefuseAndAllow: refuse answers a suspect newcomer 403
// suspected_bot but never takes away a place held; allow puts it in the
// real line, counted.
func TestSuspectsRefuseAndAllow(t *testing.T) {
	t.Parallel()
	f := newSuspectFixture(t, queue.JoinAny, suspect.Refuse, 100, "early")
	if _, err := f.enter("early", false, home, ""); !errors.Is(err, ErrSuspectedBot) {
		t.Errorf("a suspect under refuse: %v, want ErrSuspectedBot", err)
	}
	if _, err := f.enter("bot", true, datacentre, ""); !errors.Is(err, ErrSuspectedBot) {
		t.Errorf("a signed-in suspect under refuse: %v", err)
	}
	// Someone who took a place before being marked keeps it.
	held := newSuspectFixture(t, queue.JoinAny, suspect.Refuse, 100)
	if _, err := held.enter("early", false, home, ""); err != nil {
		t.Fatal(err)
	}
	held.g.o.PollRate = polls{pollKey("sale", "early"): true}
	if v, err := held.enter("early", false, home, ""); err != nil || v.Position != 1 {
		t.Errorf("re-entering a place held, since marked: %+v %v", v, err)
	}
	allow := newSuspectFixture(t, queue.JoinAny, suspect.Allow, 100)
	if v, err := allow.enter("bot", false, datacentre, ""); err != nil || v.Shadow || v.Position != 1 {
		t.Errorf("a suspect under allow: %+v %v, want the real line", v, err)
	}
	if len(*allow.tallies) != 1 || (*allow.tallies)[0].action != "allow" {
		t.Errorf("allow's tallies: %+v", *allow.tallies)
	}
}

// TestSuspectsChallenge: a suspect is handed, and must solve, the dearer
// challenge; the queue's own is not enough; a person pays the queue's.
func TestSuspectsChallenge(t *testing.T) {
	t.Parallel()
	f := newSuspectFixture(t, queue.JoinChallenge, suspect.Challenge, 100)
	ctx := context.Background()
	bot := Entrant{Caller: anon("bot"), Addr: datacentre}
	dear, err := f.g.Challenge(ctx, "sale", bot)
	if err != nil || dear.Parameters.Cost != leastCost()+1 {
		t.Fatalf("a suspect's challenge: cost %d %v, want %d", dear.Parameters.Cost, err, leastCost()+1)
	}
	if c, _ := f.g.Challenge(ctx, "sale", Entrant{Caller: anon("p"), Addr: home}); c.Parameters.Cost != leastCost() {
		t.Errorf("a person's challenge: cost %d, want the queue's %d", c.Parameters.Cost, leastCost())
	}
	var cr ChallengeRequired
	if _, err := f.enter("bot", false, datacentre, f.solution(t)); !errors.As(err, &cr) || cr.Reason == nil {
		t.Errorf("a suspect with the queue's own challenge solved: %v, want a dearer one asked", err)
	}
	p, err := challenge.Solve(ctx, dear, 2)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := f.enter("bot", false, datacentre, p.Encode()); err != nil || v.Shadow || v.State != queue.Waiting {
		t.Errorf("a suspect with the dearer challenge solved: %+v %v, want the real line", v, err)
	}
	// Under "any", a suspect is asked for one too; a person is not.
	anyq := newSuspectFixture(t, queue.JoinAny, suspect.Challenge, 100)
	if _, err := anyq.enter("bot", true, datacentre, ""); !errors.Is(err, ErrChallengeRequired) {
		t.Errorf("a signed-in suspect under any: %v, want a challenge asked", err)
	}
	if _, err := anyq.enter("p", false, home, ""); err != nil {
		t.Errorf("a person under any: %v", err)
	}
}

// TestSuspectNeverWalksIn: in gateway mode a suspect is never let
// straight in, whatever the policy: it goes through the page.
func TestSuspectNeverWalksIn(t *testing.T) {
	t.Parallel()
	f := newSuspectFixture(t, queue.JoinAny, suspect.Allow, 100)
	ctx := context.Background()
	for _, c := range []identity.Caller{anon("bot"), signed("farm")} {
		if may, err := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: c, Addr: datacentre}); may || err != nil {
			t.Errorf("%+v from a data centre: may %v %v, want the page", c, may, err)
		}
	}
	if may, err := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: anon("p"), Addr: home}); !may || err != nil {
		t.Errorf("a person: may %v %v", may, err)
	}
	if !errors.Is(f.g.DegradedRefusal(ctx, "sale", Entrant{Addr: datacentre}, true), ErrSuspectDegraded) || f.g.DegradedRefusal(ctx, "sale", Entrant{Addr: home}, true) != nil {
		t.Error("DegradedRefusal does not tell the data centre from home")
	}
	if n := len(*f.tallies); n != 1 || (*f.tallies)[0].action != "refuse" {
		t.Errorf("tallies %+v, want the degraded refusal counted as refuse", *f.tallies)
	}
}

// TestDegradedRefusalKnowsShadowPlaces: while the store is away, a user
// this instance knows holds a shadow place gets no degraded entry, even
// from an address no signal marks now (shadowed by the human check, or by
// a range it moved out of); a suspect's status polls are not counted
// again as refusals, its entries are.
func TestDegradedRefusalKnowsShadowPlaces(t *testing.T) {
	t.Parallel()
	f := newSuspectFixture(t, queue.JoinAny, suspect.Shadow, 100)
	ctx := context.Background()
	v, err := f.enter("bot", false, datacentre, "")
	if err != nil || !v.Shadow {
		t.Fatalf("a suspect entering: %+v %v", v, err)
	}
	f.g.Answered("sale", "bot", v)
	f.g.Answered("sale", "cleared", v)
	f.g.Answered("sale", "cleared", queue.View{State: queue.Waiting, Position: 3})
	if err := f.g.DegradedRefusal(ctx, "sale", Entrant{Caller: anon("cleared"), Addr: home}, false); err != nil {
		t.Errorf("a place answered as a person's since: %v", err)
	}
	entered := len(*f.tallies)
	if err := f.g.DegradedRefusal(ctx, "sale", Entrant{Caller: anon("bot"), Addr: home}, false); !errors.Is(err, ErrSuspectDegraded) {
		t.Errorf("the shadow place polling from home: %v, want ErrSuspectDegraded", err)
	}
	if err := f.g.DegradedRefusal(ctx, "sale", Entrant{Caller: anon("p"), Addr: home}, false); err != nil {
		t.Errorf("a person polling: %v", err)
	}
	for range 3 {
		if err := f.g.DegradedRefusal(ctx, "sale", Entrant{Caller: anon("other"), Addr: datacentre}, false); !errors.Is(err, ErrSuspectDegraded) {
			t.Errorf("a suspect polling: %v", err)
		}
	}
	if n := len(*f.tallies) - entered; n != 0 {
		t.Errorf("%d refusals counted for polls, want none", n)
	}
	if err := f.g.DegradedRefusal(ctx, "sale", Entrant{Caller: anon("other"), Addr: datacentre}, true); !errors.Is(err, ErrSuspectDegraded) {
		t.Errorf("a suspect entering: %v", err)
	}
	if n := len(*f.tallies) - entered; n != 1 {
		t.Errorf("%d refusals counted for one entry, want 1", n)
	}
}
