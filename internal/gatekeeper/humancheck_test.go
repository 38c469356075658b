package gatekeeper

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/humancheck/localprovider"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/suspect"
)

// newHumanFixture is newFixture under turnstile, its gate asking the local
// stand-in provider (p), with the queue's suspects action and
// humanCheckSigned set; "other-sale" is a second such queue.
func newHumanFixture(t *testing.T, suspects suspect.Action, signedToo bool) (fixture, *localprovider.Provider) {
	t.Helper()
	f := newFixture(t, queue.JoinTurnstile, 100)
	for _, q := range []string{"sale", "other-sale"} {
		c := queue.DefaultConfig()
		c.Paused, c.Join, c.Suspects, c.HumanCheckSigned = true, queue.JoinTurnstile, suspects, signedToo
		if err := f.op.PutConfig(context.Background(), q, c); err != nil {
			t.Fatal(err)
		}
	}
	p := localprovider.New(localprovider.Options{Secret: "local-secret", SiteKey: "local-site-key"})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	h, err := humancheck.New(humancheck.Options{Secret: "local-secret", SiteKey: "local-site-key",
		VerifyURL: srv.URL + localprovider.VerifyPath, ScriptURL: srv.URL + localprovider.ScriptPath})
	if err != nil {
		t.Fatal(err)
	}
	f.g.o.Human = h
	return f, p
}

func TestHumanCheckPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, p := newHumanFixture(t, suspect.Refuse, false)

	_, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home})
	var hr HumanCheckRequired
	if !errors.As(err, &hr) || hr.Reason != nil || hr.SiteKey != "local-site-key" || hr.ScriptURL != f.g.o.Human.ScriptURL() {
		t.Fatalf("no token: %v, want HumanCheckRequired with the widget's key and script", err)
	}
	token := p.Mint("shop.example", "")
	if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home, HumanToken: token}); err != nil || v.State != queue.Waiting || v.Position != 1 {
		t.Fatalf("a good token: %+v, %v", v, err)
	}
	if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home}); err != nil || v.Position != 1 {
		t.Fatalf("again, in line, no token: %+v, %v", v, err)
	}
	// The same token again: spent in the store, refused without asking
	// the provider.
	asked := p.Asked()
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-b"), Addr: home, HumanToken: token}); !errors.As(err, &hr) || hr.Reason == nil {
		t.Fatalf("a used token: %v, want HumanCheckRequired saying why", err)
	}
	if p.Asked() != asked {
		t.Errorf("a replayed token was sent to the provider")
	}
	// In another queue (another key in the store), the provider's own
	// duplicate check refuses it: asked again, not a suspect.
	if _, err := f.g.Enter(ctx, "other-sale", Entrant{Caller: anon("anon-b"), Addr: home, HumanToken: token}); !errors.As(err, &hr) || hr.Reason == nil {
		t.Fatalf("a token spent in another queue: %v, want HumanCheckRequired", err)
	}
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-b"), Addr: home, HumanToken: p.Forge()}); !errors.Is(err, ErrSuspectedBot) {
		t.Fatalf("a forged token under suspects refuse: %v, want ErrSuspectedBot", err)
	}
	// Signed-in users pass without a check unless the queue says so.
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: signed("alice"), Addr: home}); err != nil {
		t.Fatalf("signed-in, humanCheckSigned false: %v", err)
	}
	if may, err := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: anon("anon-c"), Addr: home}); may || err != nil {
		t.Fatalf("anonymous walk-in under turnstile: %v, %v", may, err)
	}
}

func TestHumanCheckOfSignedUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, p := newHumanFixture(t, suspect.Allow, true)
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: signed("alice"), Addr: home}); !errors.Is(err, ErrHumanCheckRequired) {
		t.Fatalf("signed-in without a token, humanCheckSigned true: %v", err)
	}
	if may, err := f.g.MayAdmitNow(ctx, "sale", Entrant{Caller: signed("alice"), Addr: home}); may || err != nil {
		t.Fatalf("signed-in walk-in the queue checks: %v, %v", may, err)
	}
	if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: signed("alice"), Addr: home, HumanToken: p.Mint("shop.example", "")}); err != nil || v.State != queue.Waiting {
		t.Fatalf("signed-in with a token: %+v, %v", v, err)
	}
	// allow: a forged token is counted (by the gate) but takes a place.
	if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: signed("bob"), Addr: home, HumanToken: p.Forge()}); err != nil || v.State != queue.Waiting {
		t.Fatalf("a forged token under suspects allow: %+v, %v", v, err)
	}
}

// Without a provider's keys, or with the provider away, the check cannot be
// made: 503 (ErrUnavailable), never a place nor a suspect.
func TestHumanCheckUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, p := newHumanFixture(t, suspect.Refuse, false)
	token := p.Mint("shop.example", "")
	human := f.g.o.Human
	f.g.o.Human = nil
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home}); !errors.Is(err, humancheck.ErrUnavailable) {
		t.Fatalf("no keys: %v, want ErrUnavailable", err)
	}
	away, err := humancheck.New(humancheck.Options{Secret: "local-secret", SiteKey: "local-site-key", VerifyURL: "http://127.0.0.1:1/siteverify"})
	if err != nil {
		t.Fatal(err)
	}
	f.g.o.Human = away
	if _, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home, HumanToken: token}); !errors.Is(err, humancheck.ErrUnavailable) {
		t.Fatalf("the provider away: %v, want ErrUnavailable", err)
	}
	f.g.o.Human = human
	if v, err := f.g.Enter(ctx, "sale", Entrant{Caller: anon("anon-a"), Addr: home, HumanToken: p.Mint("shop.example", "")}); err != nil || v.State != queue.Waiting {
		t.Fatalf("the provider back, a fresh token: %+v, %v", v, err)
	}
}
