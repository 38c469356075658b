package gateway_test

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// commandUpstream is a backend that tells waitroom things: it answers every
// request with the status in ?status= (200 by default) and, when ?spell=
// names a header spelling, X-Waitroom-Command under that spelling, with the
// command in ?cmd= (release by default).
func commandUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if spell := r.URL.Query().Get("spell"); spell != "" {
			w.Header()[spell] = []string{cmp.Or(r.URL.Query().Get("cmd"), "release")}
		}
		status := http.StatusOK
		if s, err := strconv.Atoi(r.URL.Query().Get("status")); err == nil {
			status = s
		}
		w.WriteHeader(status)
		w.Write([]byte("done"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// commandHeaders lists X-Waitroom-Command in any spelling h carries it.
func commandHeaders(h http.Header) []string {
	var found []string
	for k := range h {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "X-Waitroom-Command") {
			found = append(found, k)
		}
	}
	return found
}

// waitState waits (up to 30 s) for user to stand in state in the default
// queue, and returns their token when READY.
func waitState(p *apptest.Proxied, user, state string) string {
	p.T.Helper()
	return waitStanding(p, user, state).Str("token")
}

// waitStanding waits (up to apptest.Patience) for user to stand in state in the
// default queue, and returns that status answer.
func waitStanding(p *apptest.Proxied, user, state string) apptest.Response {
	p.T.Helper()
	deadline := time.Now().Add(apptest.Patience)
	for {
		r := p.Do("GET", apptest.GatewayPrefix+"/api/v1/queues/default/entries/me", p.As(user), nil)
		if r.Str("status") == state {
			return r
		}
		if time.Now().After(deadline) {
			p.T.Fatalf("%s: %s, want %s within %v", user, r.Raw, state, apptest.Patience)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGatewayReleaseFreesTheSlot: under maxActiveTokens 1, the one READY
// user's entry ends when the backend answers X-Waitroom-Command: release
// (on a session route with 200, on a spending route with a 409 that would
// keep the token), or when they give it back with DELETE entries/me; each
// time the next in line becomes READY at the next tick (token TTLs of five
// minutes: nothing else frees the slot), and the header never reaches the
// client in any spelling.
func TestGatewayReleaseFreesTheSlot(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			up := commandUpstream(t)
			p := apptest.BootGateway(t, b, up.URL, []string{"--protect", "POST /done", "--protect-session", "GET /page"}, nil)
			r := p.Do("PATCH", apptest.GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), map[string]any{
				"maxActiveTokens": 1, "intervalMs": 200, "ratePerSecond": 5, "tokenTtlSeconds": 300})
			if r.Status != 200 {
				t.Fatalf("settings: %d %s", r.Status, r.Raw)
			}
			users := []string{"rel-a", "rel-b", "rel-c", "rel-d"}
			for _, u := range users {
				if r := p.Do("POST", apptest.GatewayPrefix+"/api/v1/queues/default/entries", p.As(u), nil); r.Status != 200 {
					t.Fatalf("enter %s: %d %s", u, r.Status, r.Raw)
				}
			}
			tokenA := waitState(p, "rel-a", "READY")
			// The cap holds while rel-a keeps the slot: several ticks pass
			// (a request that is not a release among them) and rel-b waits.
			if r := p.Do("GET", "/page", p.As("rel-a"), nil, "X-Entry-Token", tokenA); r.Status != 200 || commandHeaders(r.Header) != nil {
				t.Fatalf("a plain use: %d %v", r.Status, r.Header)
			}
			time.Sleep(time.Second)
			if got := p.UserStatus("rel-b"); got != "WAITING" {
				t.Fatalf("rel-b is %s while rel-a holds the only slot", got)
			}

			t.Run("release on a session route", func(t *testing.T) {
				r := p.Do("GET", "/page?spell=X-Waitroom-Command", p.As("rel-a"), nil, "X-Entry-Token", tokenA)
				if r.Status != 200 || r.Raw != "done" {
					t.Fatalf("release: %d %s", r.Status, r.Raw)
				}
				if h := commandHeaders(r.Header); h != nil {
					t.Errorf("the client saw %v", h)
				}
				if got := p.UserStatus("rel-a"); got != "NOT_IN_QUEUE" {
					t.Errorf("rel-a after release: %s", got)
				}
				if r := p.Do("GET", "/page", p.As("rel-a"), nil, "X-Entry-Token", tokenA, "Accept", "application/json"); r.Status != http.StatusForbidden {
					t.Errorf("the released token still opens the route: %d", r.Status)
				}
			})
			tokenB := waitState(p, "rel-b", "READY")

			t.Run("release on a spending route with a refusal, in another spelling", func(t *testing.T) {
				r := p.Do("POST", "/done?status=409&spell=x_waitroom_command", p.As("rel-b"), nil, "X-Entry-Token", tokenB)
				if r.Status != http.StatusConflict {
					t.Fatalf("release: %d %s", r.Status, r.Raw)
				}
				if h := commandHeaders(r.Header); h != nil {
					t.Errorf("the client saw %v", h)
				}
				if got := p.UserStatus("rel-b"); got != "NOT_IN_QUEUE" {
					t.Errorf("rel-b after release: %s", got)
				}
			})
			tokenC := waitState(p, "rel-c", "READY")

			t.Run("DELETE entries/me gives the entry back", func(t *testing.T) {
				if r := p.Do("GET", "/page", p.As("rel-c"), nil, "X-Entry-Token", tokenC); r.Status != 200 {
					t.Fatalf("rel-c's use: %d", r.Status)
				}
				if r := p.Do("DELETE", apptest.GatewayPrefix+"/api/v1/queues/default/entries/me", p.As("rel-c"), nil); r.Status != http.StatusNoContent {
					t.Fatalf("DELETE: %d %s", r.Status, r.Raw)
				}
				if got := p.UserStatus("rel-c"); got != "NOT_IN_QUEUE" {
					t.Errorf("rel-c after DELETE: %s", got)
				}
			})
			tokenD := waitState(p, "rel-d", "READY")
			// Whatever the backend's spelling, on a route nobody protects too.
			for _, spell := range []string{"X-WAITROOM-COMMAND", "x-waitroom-command"} {
				if r := p.Do("GET", "/open?spell="+spell, "", nil); r.Status != 200 || commandHeaders(r.Header) != nil {
					t.Errorf("unprotected, %s: %d %v", spell, r.Status, r.Header)
				}
			}
			if r := p.Do("GET", "/page", p.As("rel-d"), nil, "X-Entry-Token", tokenD); r.Status != 200 {
				t.Errorf("rel-d's use: %d", r.Status)
			}
		})
	}
}

// TestGatewaySlidingSessions: with tokenTtlSeconds 10 and sessionMaxSeconds
// 20, an entry used on a session route every 300 ms stays good past its
// first expiry and ends at the session's end (its first expiry less the TTL
// plus sessionMaxSeconds, by the server's own expiresAt) while the line is
// busy (a quiet line would let them straight in again); a sessionMaxSeconds
// below tokenTtlSeconds is 400 naming it, and nothing changes. The same
// through waitroom proxy and behind the shop's own proxies asking the
// decision: a session route's entry is checked and extended by the same
// code, whichever asks.
func TestGatewaySlidingSessions(t *testing.T) {
	eachFrontAndBackend(t, slidingSessions)
}

func slidingSessions(t *testing.T, f apptest.Front, b apptest.Backend) {
	p := apptest.BootProxyBehind(t, f, b, apptest.NewUpstreamShop(t, 100), nil)
	settings := apptest.GatewayPrefix + "/admin/v1/queues/default"
	before := p.Do("GET", settings, p.AdminAuth(), nil)
	r := p.Do("PATCH", settings, p.AdminAuth(), map[string]any{"sessionMaxSeconds": 60, "paused": true})
	if r.Status != http.StatusBadRequest || r.ErrorCode() != "invalid_config" || !strings.Contains(r.Raw, "sessionMaxSeconds") {
		t.Fatalf("sessionMaxSeconds below tokenTtlSeconds: %d %s, want 400 invalid_config naming it", r.Status, r.Raw)
	}
	after := p.Do("GET", settings, p.AdminAuth(), nil)
	for _, k := range []string{"sessionMaxSeconds", "tokenTtlSeconds", "paused"} {
		if before.Body[k] != after.Body[k] {
			t.Errorf("%s changed by a refused PATCH: %v → %v", k, before.Body[k], after.Body[k])
		}
	}
	if after.Num("sessionMaxSeconds") != 0 {
		t.Errorf("sessionMaxSeconds by default: %v, want 0", after.Body["sessionMaxSeconds"])
	}

	// A TTL of 10 s: the gateway asks the store at most once a second
	// (spend.CheckTrust), so uses every 300 ms extend the token at
	// least every 1.3 s, and a pause of the machine of 8.7 s is borne
	// (of 1.7 s with the 3 s this test had: too little at a load of 20).
	const ttl, most = 10 * time.Second, 20 * time.Second
	if r := p.Do("PATCH", settings, p.AdminAuth(), map[string]any{"tokenTtlSeconds": 10, "sessionMaxSeconds": 20, "maxActiveTokens": 1}); r.Status != 200 {
		t.Fatalf("settings: %d %s", r.Status, r.Raw)
	}
	if r := p.Do("POST", apptest.GatewayPrefix+"/api/v1/queues/default/entries", p.As("slider"), nil); r.Status != 200 {
		t.Fatalf("enter: %d %s", r.Status, r.Raw)
	}
	ready := waitStanding(p, "slider", "READY")
	token := ready.Str("token")
	first, err := time.Parse(time.RFC3339Nano, ready.Str("expiresAt"))
	if err != nil {
		t.Fatal(err)
	}
	// Someone waits behind the one live token (maxActiveTokens 1): the
	// line is busy, so an ended entry is not replaced by a fresh one.
	if r := p.Do("POST", apptest.GatewayPrefix+"/api/v1/queues/default/entries", p.As("behind"), nil); r.Status != 200 || r.Str("status") != "WAITING" {
		t.Fatalf("enter behind: %d %s", r.Status, r.Raw)
	}
	ends := first.Add(most - ttl)
	// Same machine, one clock; the slack covers the store's ms.
	const slack = 150 * time.Millisecond
	var lastOK time.Time
	deadline := time.Now().Add(most + apptest.Patience)
	for {
		sent := time.Now()
		r := p.Do("GET", "/checkout", p.As("slider"), nil, "X-Entry-Token", token, "Accept", "application/json")
		if r.Status == http.StatusOK {
			if sent.After(ends.Add(slack)) {
				t.Fatalf("the entry still opened the route at %v, past the session's end %v", sent, ends)
			}
			lastOK = sent
		} else {
			if r.Status != http.StatusForbidden {
				t.Fatalf("use: %d %s", r.Status, r.Raw)
			}
			if time.Now().Before(ends.Add(-slack)) {
				t.Fatalf("the entry ended at %v, before the session's end %v (first expiry %v)", time.Now(), ends, first)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the entry never ended")
		}
		time.Sleep(300 * time.Millisecond)
	}
	if !lastOK.After(first.Add(slack)) {
		t.Errorf("the last good use was at %v, not past the first expiry %v", lastOK, first)
	}
	if got := p.UserStatus("slider"); got != "NOT_IN_QUEUE" {
		t.Errorf("after the session's end: %s", got)
	}
}
