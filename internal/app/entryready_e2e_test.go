package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/events"
)

// TestEntryReadyTellsEachSignedUserOnce (issue 55): two instances on one
// Redis, a queue with notifyOnReady. Every signed user let in by the ticks,
// whichever instance they entered and polled through, reaches the receiver
// as one entry.ready naming them and their entry's expiry, its id
// entry.ready:<queue>:<user>:<expiry ms>; the anonymous sessions let in
// beside them produce none; one let straight in under passthrough is told
// too; a queue without notifyOnReady tells nobody.
func TestEntryReadyTellsEachSignedUserOnce(t *testing.T) {
	t.Parallel()
	secret := []byte(strings.Repeat("r", 32))
	hooks := startHookReceiver(t, secret)
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	backend := apptest.Backend{Name: "redis", Redis: true}
	a := apptest.Boot(t, backend, func(c *app.Config) { c.Webhooks, c.WebhookSecretFile = []string{hooks.url()}, secretFile })
	b := apptest.Boot(t, backend, func(c *app.Config) {
		c.Webhooks, c.WebhookSecretFile = []string{hooks.url()}, secretFile
		c.KeyPrefix, c.AuthSecret, c.AdminToken = a.KeyPrefix, a.AuthSecret, a.AdminToken
	})
	instances := []*apptest.Instance{a, b}
	line := map[string]any{"ratePerSecond": 40, "batchSize": 4, "intervalMs": 100, "entry": "any"}
	a.PutQueue("silent", line)
	line["notifyOnReady"] = true
	a.PutQueue("told", line)
	a.PutQueue("straight", map[string]any{"queueingMethod": "passthrough", "notifyOnReady": true, "entry": "any"})

	const signed, anonymous = 12, 4
	var cookies []string
	for i := range max(signed, anonymous) {
		in := instances[i%2]
		for _, q := range []string{"told", "silent"} {
			if i < signed {
				if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As(fmt.Sprintf("shopper-%d", i)), nil); r.Status >= 300 {
					t.Fatalf("enter %s: %d %s", q, r.Status, r.Raw)
				}
			}
		}
		if i < anonymous {
			cookies = append(cookies, in.SessionCookie())
			if r := in.Do("POST", "/api/v1/queues/told/entries", "", nil, "Cookie", cookies[i]); r.Status >= 300 {
				t.Fatalf("enter anonymously: %d %s", r.Status, r.Raw)
			}
		}
	}
	expiry := map[string]time.Time{} // user → their entry's expiry, as entries/me answers it
	for i := range signed {
		user := fmt.Sprintf("shopper-%d", i)
		in := instances[(i+1)%2] // polled through the other instance
		in.WaitReady("told", user)
		in.WaitReady("silent", user)
		at, err := time.Parse(time.RFC3339, in.Do("GET", "/api/v1/queues/told/entries/me", in.As(user), nil).Str("expiresAt"))
		if err != nil {
			t.Fatal(err)
		}
		expiry[user] = at
	}
	if r := a.Do("POST", "/api/v1/queues/straight/entries", a.As("walk-in"), nil); r.Str("status") != "READY" {
		t.Fatalf("passthrough enter: %d %s", r.Status, r.Raw)
	}
	got := hooks.waitFor(t, "every signed user's entry.ready", signed, "told")
	hooks.waitFor(t, "the walk-in's entry.ready", 1, "straight")
	for _, cookie := range cookies { // let in, and told of nobody
		waitReadyAnonymously(t, a, "told", cookie)
	}

	_, times := hooks.taken()
	seen := map[string]bool{}
	for _, e := range got {
		user, _ := e.Data["user"].(string)
		exp, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e.Data["expiresAt"]))
		switch {
		case e.Type != events.EntryReady || err != nil:
			t.Errorf("event %+v: want entry.ready with data.expiresAt (%v)", e, err)
		case e.ID != fmt.Sprintf("entry.ready:told:%s:%d", user, exp.UnixMilli()):
			t.Errorf("event id %q: want entry.ready:told:<user>:<expiry ms> (%s, %v)", e.ID, user, exp)
		case expiry[user].IsZero() || exp.Sub(expiry[user]).Abs() >= time.Second:
			t.Errorf("event %s: expires %v; the user's entry %v", e.ID, exp, expiry[user])
		case exp.Sub(e.At) != 5*time.Minute:
			t.Errorf("event %s: let in at %v, expiring %v: want tokenTtlSeconds apart", e.ID, e.At, exp)
		case times[e.ID] != 1 || seen[user]:
			t.Errorf("event %s taken %d times, user seen before: %v", e.ID, times[e.ID], seen[user])
		}
		seen[user] = true
	}
	if len(seen) != signed {
		t.Errorf("%d users told, want %d: %v", len(seen), signed, seen)
	}
	all, _ := hooks.taken()
	for _, e := range all {
		if e.Queue == "silent" && e.Type != events.AdminChanged || e.Type == events.EntryReady && (e.Queue == "told" && strings.HasPrefix(fmt.Sprint(e.Data["user"]), "anon-")) {
			t.Errorf("an event of nobody to tell: %+v", e)
		}
	}
}

// waitReadyAnonymously polls the session's status in queue until READY.
func waitReadyAnonymously(t *testing.T, in *apptest.Instance, queue, cookie string) {
	t.Helper()
	for deadline := time.Now().Add(apptest.Patience); ; time.Sleep(20 * time.Millisecond) {
		r := in.Do("GET", "/api/v1/queues/"+queue+"/entries/me", "", nil, "Cookie", cookie)
		if r.Str("status") == "READY" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("an anonymous session not READY in %s: %s", queue, r.Raw)
		}
	}
}
