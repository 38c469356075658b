package app_test

// Access codes across instances (issue 53): a code's redemption and the
// place it gives are one atomic step of the shared store, so of many
// concurrent redemptions of a single-use code through any instances exactly
// one succeeds; and no code ever reaches a log line or a metric.

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
)

// TestCodesOnThreeInstances boots three instances on one real Redis (with
// debug logging, so every request's access log line is written) and shares
// them among its cases.
func TestCodesOnThreeInstances(t *testing.T) {
	t.Parallel()
	redis := apptest.Backends[1]
	debug := func(c *app.Config) { c.LogLevel = "debug" }
	a := apptest.Boot(t, redis, debug)
	shared := func(c *app.Config) {
		debug(c)
		c.KeyPrefix, c.AuthSecret, c.AdminToken = a.KeyPrefix, a.AuthSecret, a.AdminToken
	}
	ins := []*apptest.Instance{a, apptest.Boot(t, redis, shared), apptest.Boot(t, redis, shared)}
	q := apptest.UniqueID("codes")
	if r := a.Do("PUT", "/admin/v1/queues/"+q, a.AdminAuth(), map[string]any{"paused": true, "lanes": []map[string]any{
		{"name": "invited", "codes": true, "share": 0.4}, {"name": "public", "share": 0.6}}}); r.Status != http.StatusOK {
		t.Fatalf("queue: %d %s", r.Status, r.Raw)
	}
	code := accesscode.New()
	if r := a.Do("POST", "/admin/v1/queues/"+q+"/codes", a.AdminAuth(), map[string]any{"lane": "invited", "codes": []string{code}}); r.Num("added") != 1 {
		t.Fatalf("upload: %d %s", r.Status, r.Raw)
	}
	t.Run("one single-use code, 50 redemptions", func(t *testing.T) { redeemOnce(t, ins, q, code) })
	t.Run("metrics by lane", func(t *testing.T) { laneMetrics(t, ins[1], q) })
	t.Run("no code in the logs or metrics", func(t *testing.T) { codeNowhere(t, ins, q, code) })
}

// laneMetrics: the queue's length by lane, and the lane's redemptions.
func laneMetrics(t *testing.T, in *apptest.Instance, q string) {
	m := apptest.Metrics(t, in.Base)
	for series, want := range map[string]float64{
		`waitroom_queue_length{lane="invited",queue="` + q + `"}`:              1,
		`waitroom_queue_length{lane="public",queue="` + q + `"}`:               0,
		`waitroom_lane_codes_redeemed_total{lane="invited",queue="` + q + `"}`: 1,
		`waitroom_lane_admitted_total{lane="invited",queue="` + q + `"}`:       0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
}

// redeemOnce: 50 users redeem the code at once, spread over the three
// instances: exactly one gets a place in the code's lane, the other 49 are
// told 409 code_used, and the lane holds one person, on every instance.
func redeemOnce(t *testing.T, ins []*apptest.Instance, q, code string) {
	const n = 50
	// A client of its own, its connections closed at the end: 50 requests
	// at once leave connections the server has accepted but that never
	// carried a request, and Shutdown counts those idle only after 5 s,
	// longer than the instances' shutdown timeout (Close failed in CI).
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	answers := make([]apptest.Response, n)
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		in := ins[i%len(ins)]
		call := apptest.Call{Method: "POST", Path: "/api/v1/queues/" + q + "/entries", Auth: in.As(apptest.UniqueID("redeemer")),
			Body: map[string]string{"accessCode": code}}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			answers[i], errs[i] = in.Send(client, call)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	placed, used := 0, 0
	for i, r := range answers {
		switch {
		case errs[i] != nil:
			t.Fatalf("redemption %d: %v", i, errs[i])
		case r.Status == http.StatusOK && r.Str("lane") == "invited" && r.Num("position") == 1:
			placed++
		case r.Status == http.StatusConflict && r.ErrorCode() == "code_used":
			used++
		default:
			t.Errorf("redemption %d: %d %s, want a place in invited or 409 code_used", i, r.Status, r.Raw)
		}
	}
	if placed != 1 || used != n-1 {
		t.Errorf("of %d concurrent redemptions on %d instances: %d placed, %d code_used; want 1 and %d", n, len(ins), placed, used, n-1)
	}
	for i, in := range ins {
		for _, l := range in.QueueStats(q).Body["laneStats"].([]any) {
			if l := l.(map[string]any); l["name"] == "invited" && (l["length"] != 1.0 || l["redeemed"] != 1.0 || l["codesLeft"] != 0.0) {
				t.Errorf("instance %d's stats of invited: %v, want 1 waiting, 1 redeemed, none left", i, l)
			}
		}
	}
}

// codeNowhere: after the redemptions, refusals, a code in a URL and a
// malformed one, no instance's log (access log lines included) nor
// metrics hold the code, in any of the forms it was typed or kept.
func codeNowhere(t *testing.T, ins []*apptest.Instance, q, code string) {
	a := ins[0]
	a.Do("GET", "/api/v1/queues/"+q+"/entries/me?accessCode="+code, a.As(apptest.UniqueID("url")), nil)
	a.Do("POST", "/api/v1/queues/"+q+"/entries", a.As(apptest.UniqueID("bad")), map[string]string{"accessCode": code + "-ZZZZ-!"})
	canonical, _ := accesscode.Canonical(code)
	forms := []string{code, canonical, strings.ToLower(canonical), canonical[:8]}
	for i, in := range ins {
		logs := in.Logs.String()
		if !strings.Contains(logs, `msg=request`) {
			t.Fatalf("instance %d logged no request at debug: the check below would prove nothing", i)
		}
		raw := in.Do("GET", "/metrics", "", nil).Raw
		for _, f := range forms {
			if strings.Contains(logs, f) {
				t.Errorf("instance %d's log holds the code (%q)", i, f)
			}
			if strings.Contains(raw, f) {
				t.Errorf("instance %d's metrics hold the code (%q)", i, f)
			}
		}
	}
}
