package staff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// logStore is an AuditStore in a slice, which fails while failing is set.
type logStore struct {
	mu      sync.Mutex
	kept    []Entry
	failing bool
}

func (s *logStore) Append(_ context.Context, e Entry, _ time.Duration) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		return Entry{}, errors.New("store away")
	}
	e.ID = string(rune('a' + len(s.kept)))
	s.kept = append(s.kept, e)
	return e, nil
}

func (s *logStore) Audit(context.Context, Filter) ([]Entry, error) { return s.kept, nil }

func newTestAuditor(store AuditStore, logs *bytes.Buffer) (*Auditor, *fakeClock) {
	clock := &fakeClock{now: time.Date(2026, 12, 24, 20, 2, 0, 0, time.UTC)}
	return NewAuditor(AuditorOptions{Store: store, Keep: time.Hour, Clock: clock.Now, Logger: slog.New(slog.NewTextHandler(logs, nil))}), clock
}

// TestAuditorFillsWhoAndWhen: an entry takes the auditor's clock, the
// context's actor and outcome done when it does not say them, and each
// one kept is told (the webhook), those kept before Tell once it is set.
func TestAuditorFillsWhoAndWhen(t *testing.T) {
	store := &logStore{}
	a, clock := newTestAuditor(store, &bytes.Buffer{})
	ana := Actor{Kind: KindSignIn, Email: "ana@shop.example", Role: Operator, Addr: "192.0.2.7"}
	a.Record(WithActor(context.Background(), ana), Entry{Queue: "shoes", Op: "PATCH"})
	var told []Entry
	a.Tell(func(e Entry) { told = append(told, e) })
	a.Record(context.Background(), Entry{Op: "reload", Actor: Actor{Kind: KindQueuesFile}})
	a.Record(context.Background(), Entry{Op: "nobody's"})
	if len(store.kept) != 3 || len(told) != 3 || told[0].ID != "a" || told[2].ID != "c" {
		t.Fatalf("kept %+v, told %+v", store.kept, told)
	}
	e := store.kept[0]
	if e.Actor != ana || !e.At.Equal(clock.now) || e.Outcome != Done {
		t.Errorf("filled: %+v", e)
	}
	if store.kept[1].Actor.Kind != KindQueuesFile || store.kept[2].Actor.Kind != KindNobody {
		t.Errorf("actors: %+v, %+v", store.kept[1].Actor, store.kept[2].Actor)
	}
	var nilAuditor *Auditor
	nilAuditor.Record(context.Background(), e) // keeps nothing, and does not panic
}

// TestAuditorRateLimitsRefusals: a few refusals a minute per actor (or
// address range) are logged; the rest are counted (Suppressed) and carried by
// the next one logged (Repeats); another address range has its own budget.
func TestAuditorRateLimitsRefusals(t *testing.T) {
	store := &logStore{}
	a, clock := newTestAuditor(store, &bytes.Buffer{})
	guess := Entry{Op: "GET /admin/v1/queues", Outcome: Refused, Detail: "a wrong token", Actor: Actor{Kind: KindNobody, Addr: "198.51.100.1"}}
	for range 50 {
		a.Record(context.Background(), guess)
	}
	other := guess
	other.Actor.Addr = "198.51.101.2"
	a.Record(context.Background(), other)
	if len(store.kept) != refusalBurst+1 || a.Suppressed() != 50-refusalBurst {
		t.Fatalf("kept %d, suppressed %d: want %d and %d", len(store.kept), a.Suppressed(), refusalBurst+1, 50-refusalBurst)
	}
	clock.now = clock.now.Add(refusalWindow)
	a.Record(context.Background(), guess)
	last := store.kept[len(store.kept)-1]
	if last.Repeats != 50-refusalBurst || last.Actor.Addr != "198.51.100.1" {
		t.Errorf("the next refusal logged: %+v, want Repeats %d", last, 50-refusalBurst)
	}
	a.Record(context.Background(), Entry{Op: "PATCH", Actor: guess.Actor}) // a change is never limited
	if n := len(store.kept); store.kept[n-1].Op != "PATCH" {
		t.Errorf("a change after refusals was not kept")
	}
}

// TestAuditorRefusalsCannotBeJammed: refusals from thousands of
// addresses, kept up window after window, neither silence a token's
// refusal nor credit it with theirs; those from one /24 share a budget,
// and those from nobody together log at most refusalNobodies a window.
func TestAuditorRefusalsCannotBeJammed(t *testing.T) {
	store := &logStore{}
	a, clock := newTestAuditor(store, &bytes.Buffer{})
	stolen := Entry{Op: "PUT /admin/v1/queues/{queue}", Outcome: Refused, Detail: "needs admin", Actor: Actor{Kind: KindToken, Name: "ops-night", Role: Viewer, Addr: "192.0.2.8"}}
	for window := range 3 {
		for i := range refusalKeys + 100 {
			guess := Entry{Op: "GET /admin/v1/queues", Outcome: Refused, Actor: Actor{Kind: KindNobody, Addr: fmt.Sprintf("10.%d.%d.1", i>>8, i&255)}}
			for range refusalBurst + 1 {
				a.Record(context.Background(), guess)
			}
		}
		before := len(store.kept)
		a.Record(context.Background(), stolen)
		if len(store.kept) != before+1 || store.kept[before].Actor.Name != "ops-night" || store.kept[before].Repeats != 0 {
			t.Fatalf("window %d: the stolen token's refusal amid the flood: kept %d, last %+v", window, len(store.kept)-before, store.kept[len(store.kept)-1])
		}
		if before > (window+1)*refusalNobodies+window {
			t.Fatalf("window %d: %d kept in all, want at most %d from nobody a window", window, before, refusalNobodies)
		}
		clock.Add(refusalWindow)
	}
	if n := len(a.refused.nobody.cur) + len(a.refused.nobody.prev); n > 2*(refusalKeys+1) {
		t.Errorf("%d ranges tracked, want at most %d", n, 2*(refusalKeys+1))
	}
	clock.Add(2 * refusalWindow) // a quiet spell: the flood's windows are dropped, pending or not
	a.Record(context.Background(), stolen)
	if n := len(a.refused.nobody.cur) + len(a.refused.nobody.prev); n != 0 {
		t.Errorf("%d ranges still tracked after two quiet windows", n)
	}
	kept := len(store.kept)
	for i := range 50 {
		a.Record(context.Background(), Entry{Op: "x", Outcome: Refused, Actor: Actor{Kind: KindNobody, Addr: fmt.Sprintf("198.51.100.%d", i)}})
	}
	if n := len(store.kept) - kept; n != refusalBurst {
		t.Errorf("50 addresses of one /24 logged %d refusals, want %d", n, refusalBurst)
	}
}

// TestAuditorRefusalsAreCapped: however many actors are refused, at most
// refusalCap refusals a window reach the store (and the webhook); the rest
// are counted, and carried by each actor's next one logged.
func TestAuditorRefusalsAreCapped(t *testing.T) {
	store := &logStore{}
	a, clock := newTestAuditor(store, &bytes.Buffer{})
	const actors = refusalCap
	refuse := func(i int) {
		a.Record(context.Background(), Entry{Op: "x", Outcome: Refused, Actor: Actor{Kind: KindToken, Name: fmt.Sprint("t", i), Addr: "192.0.2.9"}})
	}
	for i := range actors {
		for range refusalBurst {
			refuse(i)
		}
	}
	if len(store.kept) != refusalCap || a.Suppressed() != actors*refusalBurst-refusalCap {
		t.Fatalf("kept %d, suppressed %d: want %d and %d", len(store.kept), a.Suppressed(), refusalCap, actors*refusalBurst-refusalCap)
	}
	clock.Add(refusalWindow)
	refuse(actors - 1) // refused thrice last window, none logged
	if last := store.kept[len(store.kept)-1]; last.Actor.Name != fmt.Sprint("t", actors-1) || last.Repeats != refusalBurst {
		t.Errorf("the next window's first: %+v, want Repeats %d", last, refusalBurst)
	}
}

// TestAuditorSurvivesTheStore: a store that fails fails no change: the
// failure is logged and counted, and nothing is told.
func TestAuditorSurvivesTheStore(t *testing.T) {
	store := &logStore{failing: true}
	var logs bytes.Buffer
	a, _ := newTestAuditor(store, &logs)
	told := 0
	a.Tell(func(Entry) { told++ })
	a.Record(WithActor(context.Background(), Actor{Kind: KindBackend}), Entry{Queue: "shoes", Op: "sold-out"})
	if a.Failed() != 1 || told != 0 || !strings.Contains(logs.String(), "the audit log did not keep an entry") || !strings.Contains(logs.String(), "actor=backend") {
		t.Errorf("failed %d, told %d, logged %q", a.Failed(), told, logs.String())
	}
}

// TestScrubTakesURLsCredentials: a URL's user, password, query and
// fragment never reach the log, however deep in a value.
func TestScrubTakesURLsCredentials(t *testing.T) {
	secret := "s3cr3t"
	in := map[string]any{
		"hook":  "https://shop:" + secret + "@hooks.example/in?key=" + secret + "#" + secret,
		"list":  []any{"http://hooks.example/x?token=" + secret, 3.0, nil, "plain words"},
		"texts": map[string]string{"en": "see https://u:" + secret + "@x.example/"},
		"odd":   "weird://" + secret + "@%zz",
	}
	out := Scrub(in).(map[string]any)
	if all := fmt.Sprint(out); strings.Contains(all, secret) {
		t.Errorf("scrubbed, still a secret: %s", all)
	}
	if out["hook"] != "https://hooks.example/in" || out["list"].([]any)[3] != "plain words" {
		t.Errorf("scrubbed: %v", out)
	}
}

// TestFilterMatches: by queue, by a part of who in any case, by time.
func TestFilterMatches(t *testing.T) {
	at := time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)
	e := Entry{At: at, Queue: "shoes", Actor: Actor{Kind: KindSignIn, Subject: "sub-9", Email: "Ana@Shop.example"}}
	for _, c := range []struct {
		f    Filter
		want bool
	}{
		{Filter{}, true}, {Filter{Queue: "shoes"}, true}, {Filter{Queue: "hats"}, false},
		{Filter{Actor: "ana@shop"}, true}, {Filter{Actor: "SUB-9"}, true}, {Filter{Actor: "oidc"}, true}, {Filter{Actor: "bob"}, false},
		{Filter{Since: at, Until: at}, true}, {Filter{Since: at.Add(time.Millisecond)}, false}, {Filter{Until: at.Add(-time.Millisecond)}, false},
	} {
		if got := c.f.Matches(e); got != c.want {
			t.Errorf("%+v.Matches = %v, want %v", c.f, got, c.want)
		}
	}
	if (Filter{}).Most() != MaxAuditLimit || (Filter{Limit: 5}).Most() != 5 || (Filter{Limit: 5000}).Most() != MaxAuditLimit {
		t.Error("Most")
	}
}
