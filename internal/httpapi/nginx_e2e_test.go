package httpapi_test

// deploy/nginx.conf, as shipped, in front of two real instances on real
// Redis (issue 37's CDN in the box): the front document is answered from
// nginx's cache, keyed without cookies, with at most about one fetch a
// second per queue reaching an instance however many ask, and the places
// pages work out from it are the ones entries/me gives; and no client's
// own bot score header reaches an instance.

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/proxyfront"
	"github.com/waitroom/waitroom/internal/testenv"
)

// startDeployedNginx runs deploy/nginx.conf in front of the instances and
// answers its base URL.
func startDeployedNginx(t *testing.T, instances ...*apptest.Instance) string {
	t.Helper()
	testenv.Nginx(t)
	var upstreams []string
	for _, in := range instances {
		upstreams = append(upstreams, strings.TrimPrefix(in.Base, "http://"))
	}
	n, err := proxyfront.NginxWith(t.Context(), func(dir, addr string) (string, error) {
		return apptest.DeployedNginxConf(dir, addr, upstreams)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return "http://" + n.Addr
}

// frontFetches is how many front documents the instances have answered
// (their waitroom_http_request_duration_seconds count for the route, any
// status): what reached them through nginx.
func frontFetches(t *testing.T, instances ...*apptest.Instance) float64 {
	t.Helper()
	n := 0.0
	for _, in := range instances {
		for series, v := range apptest.Metrics(t, in.Base) {
			if strings.HasPrefix(series, "waitroom_http_request_duration_seconds_count{") &&
				strings.Contains(series, `route="GET /api/v1/queues/{queue}/front"`) {
				n += v
			}
		}
	}
	return n
}

type cachedAnswer struct {
	status int
	cache  string
	body   string
	cookie string
}

func getThrough(t *testing.T, url string, header ...string) cachedAnswer {
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return cachedAnswer{}
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return cachedAnswer{res.StatusCode, res.Header.Get("X-Cache-Status"), string(body), res.Header.Get("Set-Cookie")}
}

// TestNginxCachesTheFront: 200 readers at once, each with a cookie of its
// own, get one document, of which at most one fetch reached an instance;
// it sets no cookie; If-None-Match is answered 304; readers reading as
// fast as they can for three seconds reach the instances about once a
// second; once the line moves the next reader sees it; entries/me is never
// cached.
func TestNginxCachesTheFront(t *testing.T) {
	t.Parallel()
	a := apptest.Boot(t, apptest.Backends[1], nil)
	b := apptest.Boot(t, apptest.Backends[1], func(c *app.Config) { // a second instance on the same line
		c.KeyPrefix, c.AuthSecret, c.AdminToken = a.KeyPrefix, a.AuthSecret, a.AdminToken
	})
	base := startDeployedNginx(t, a, b)
	q := apptest.UniqueID("cdn")
	a.PutQueue(q, map[string]any{"paused": true})
	a.Do("POST", entriesPath(q), a.As(apptest.UniqueID("first")), nil)
	url := base + frontPath(q)

	answers := make([]cachedAnswer, 200)
	var wg sync.WaitGroup
	before := frontFetches(t, a, b)
	burst := time.Now()
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = getThrough(t, url, "Cookie", fmt.Sprintf("wr_session=reader-%d", i))
		}()
	}
	wg.Wait()
	for i, an := range answers {
		if an.status != http.StatusOK || an.body != answers[0].body || an.cookie != "" {
			t.Fatalf("reader %d: %d, cookie %q, body %q; want 200, no cookie, the same document as reader 0", i, an.status, an.cookie, an.body)
		}
	}
	// nginx holds the others for the one fetch up to proxy_cache_lock_timeout
	// (2 s in deploy/nginx.conf), then lets them ask themselves: a loaded
	// machine that takes longer than that to answer is told so, not failed.
	fetched := frontFetches(t, a, b) - before
	switch took := time.Since(burst); {
	case took > 2*time.Second:
		t.Logf("200 readers at once took %v, past the cache lock's 2 s: %v fetches reached the instances", took.Round(time.Millisecond), fetched)
	case fetched > 1:
		t.Errorf("200 readers at once: %v fetches reached the instances in %v, want at most 1 (proxy_cache_lock)", fetched, took.Round(time.Millisecond))
	}

	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if again := getThrough(t, url, "If-None-Match", res.Header.Get("ETag")); again.status != http.StatusNotModified {
		t.Errorf("If-None-Match %s through nginx: %d, want 304", res.Header.Get("ETag"), again.status)
	}

	// Sixteen readers as fast as they can for three seconds: the
	// instances see a fetch when the cached one is a second old, not one
	// per read (a loaded machine only reads less).
	before = frontFetches(t, a, b)
	start := time.Now()
	reads := make([]int, 16)
	for r := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < 3*time.Second {
				if an := getThrough(t, url); an.status != http.StatusOK {
					t.Errorf("a reader got %d %s", an.status, an.body)
					return
				}
				reads[r]++
			}
		}()
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	total := 0
	for _, n := range reads {
		total += n
	}
	if fetched := frontFetches(t, a, b) - before; fetched > math.Ceil(seconds)+1 {
		t.Errorf("%d reads in %.1f s: %v fetches reached the instances, want about one a second (at most %v)",
			total, seconds, fetched, math.Ceil(seconds)+1)
	} else {
		t.Logf("%d reads in %.1f s through nginx, %v of them fetched from an instance", total, seconds, fetched)
	}

	// The line moves; within a second or two every reader sees it.
	a.Do("POST", entriesPath(q), a.As(apptest.UniqueID("second")), nil)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if an := getThrough(t, url); strings.Contains(an.body, `"queueLength":2`) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("nginx still answers %s after the line moved", an.body)
		}
	}

	// A user's own standing is never cached.
	u := apptest.UniqueID("me")
	for range 2 {
		if an := getThrough(t, base+mePath(q), "Authorization", a.As(u)); an.cache != "" {
			t.Errorf("entries/me through nginx: X-Cache-Status %q, want none (not cached)", an.cache)
		}
	}
}

// TestThePlaceThroughNginxIsTheOneEntriesMeGives: forty enter through
// nginx, one in four leaves; every one still waiting works out, from the
// document nginx serves and their signed ticket, exactly the position
// entries/me (through the same nginx) gives them, and the document names
// none of them.
func TestThePlaceThroughNginxIsTheOneEntriesMeGives(t *testing.T) {
	t.Parallel()
	a := apptest.Boot(t, apptest.Backends[1], nil)
	b := apptest.Boot(t, apptest.Backends[1], func(c *app.Config) {
		c.KeyPrefix, c.AuthSecret, c.AdminToken = a.KeyPrefix, a.AuthSecret, a.AdminToken
	})
	base := startDeployedNginx(t, a, b)
	q := apptest.UniqueID("cdnplace")
	a.PutQueue(q, map[string]any{"paused": true, "ratePerSecond": 5})
	through := &apptest.Instance{Base: base, AuthSecret: a.AuthSecret, AdminToken: a.AdminToken, T: a.T}
	users := freshUsers(40)
	tickets := enterEach(t, through, q, users, func(i int) bool { return i%4 == 2 })
	// The cache may hold the line as it was a second ago: read until it
	// holds everyone who came and went.
	var doc apptest.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		doc = through.Do("GET", frontPath(q), "", nil)
		if doc.Status == http.StatusOK && int(doc.Num("queueLength")) == len(users)-len(users)/4 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the document through nginx: %d %s", doc.Status, doc.Raw)
		}
	}
	for i, u := range users {
		if strings.Contains(doc.Raw, u) {
			t.Fatalf("the front document names %s: %s", u, doc.Raw)
		}
		got, placed := placeFrom(t, doc, tickets[u])
		if i%4 == 2 {
			if placed {
				t.Errorf("%s left, yet the document places them at %d", u, got)
			}
			continue
		}
		me := through.Do("GET", mePath(q), through.As(u), nil)
		if want := int64(me.Num("position")); !placed || got != want {
			t.Errorf("%s: the document through nginx places them at %d (placed %v), entries/me at %d", u, got, placed, want)
		}
	}
}

// deploy/nginx.conf clears a client's own bot score header (issue 51):
// the instances believe --bot-score-header from nginx (--trusted-proxies),
// so a client's X-Bot-Score reaches no instance, on the line's routes and
// the cached front document alike. A recorder between nginx and the
// instance says what reached it.
func TestNginxClearsTheBotScore(t *testing.T) {
	t.Parallel()
	testenv.Nginx(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) {
		c.TrustedProxies, c.BotScoreHeader = "127.0.0.1", "X-Bot-Score"
	})
	rec := apptest.NewRecorder(t, strings.TrimPrefix(in.Base, "http://"))
	n, err := proxyfront.NginxWith(t.Context(), func(dir, addr string) (string, error) {
		return apptest.DeployedNginxConf(dir, addr, []string{rec.Addr})
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	through := &apptest.Instance{Base: "http://" + n.Addr, AuthSecret: in.AuthSecret, AdminToken: in.AdminToken, T: t}
	q := apptest.UniqueID("scored")
	in.PutQueue(q, map[string]any{"paused": true})
	user := apptest.UniqueID("scored")
	for _, c := range []struct{ method, path string }{
		{"POST", entriesPath(q)}, {"GET", entriesPath(q) + "/me"}, {"GET", frontPath(q)},
	} {
		if r := through.Do(c.method, c.path, through.As(user), nil, "X-Bot-Score", "99"); r.Status != http.StatusOK {
			t.Errorf("%s %s through nginx: %d %s", c.method, c.path, r.Status, r.Raw)
		}
	}
	seen := rec.Seen()
	if len(seen) != 3 {
		t.Errorf("the instance saw %d requests through nginx, want the 3 sent", len(seen))
	}
	for _, c := range seen {
		if v := c.Header.Values("X-Bot-Score"); len(v) != 0 {
			t.Errorf("%s %s reached the instance with the client's X-Bot-Score %q", c.Method, c.Path, v)
		}
	}
}
