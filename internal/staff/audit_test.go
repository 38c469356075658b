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

// TestAuditorRateLimitsRefusals: a few refusals a minute per actor and
// address are logged; the rest are counted (Suppressed) and carried by
// the next one logged (Repeats); another address has its own budget.
func TestAuditorRateLimitsRefusals(t *testing.T) {
	store := &logStore{}
	a, clock := newTestAuditor(store, &bytes.Buffer{})
	guess := Entry{Op: "GET /admin/v1/queues", Outcome: Refused, Detail: "a wrong token", Actor: Actor{Kind: KindNobody, Addr: "198.51.100.1"}}
	for range 50 {
		a.Record(context.Background(), guess)
	}
	other := guess
	other.Actor.Addr = "198.51.100.2"
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

// TestAuditorRateLimitIsBounded: refusals from more addresses than are
// tracked share one budget: a flood from many addresses logs less.
func TestAuditorRateLimitIsBounded(t *testing.T) {
	store := &logStore{}
	a, _ := newTestAuditor(store, &bytes.Buffer{})
	for i := range refusalKeys + 100 {
		a.Record(context.Background(), Entry{Op: "x", Outcome: Refused, Actor: Actor{Kind: KindNobody, Addr: strings.Repeat("a", i%7) + string(rune(i))}})
	}
	if len(a.refused) > refusalKeys+1 || len(store.kept) > refusalKeys+refusalBurst {
		t.Errorf("tracked %d, kept %d", len(a.refused), len(store.kept))
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
